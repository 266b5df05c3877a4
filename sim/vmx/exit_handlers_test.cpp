// The exit-handler and hypercall tables (exit_handlers.h, hypercall.h): what
// the model handles, and that each handler's cost is a declared parameter.
#include "sim/vmx/exit_handlers.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "sim/model_params.h"
#include "sim/vmx/hypercall.h"
#include "sim/vmx/kvm_para.h"

using namespace kvmsim;

TEST_CASE("exit handlers: the reasons the model's guests cause have handlers", "[vmx][exit]") {
  std::set<std::string> handled;
  for (std::size_t r = 0; r < g_kvm_vmx_exit_handlers.size(); ++r)
    if (g_kvm_vmx_exit_handlers[r].fn)
      handled.insert(std::string(exit_reason_name(static_cast<ExitReason>(r))));
  CHECK(handled == std::set<std::string>{"EXTERNAL_INTERRUPT", "HLT", "VMCALL", "MSR_WRITE",
                                         "PAUSE_INSTRUCTION", "PREEMPTION_TIMER",
                                         "INTERRUPT_WINDOW"});
}

TEST_CASE("exit handlers: every handler and hypercall cost key is a declared parameter",
          "[vmx][exit]") {
  const ParamRegistry& reg = model_params();
  for (const ExitHandler& h : g_kvm_vmx_exit_handlers) {
    if (!h.cost_key) continue;
    INFO(h.cost_key);
    CHECK(reg.find(h.cost_key) != nullptr);
  }
  for (const Hypercall& h : g_kvm_hypercalls) {
    if (!h.fn) continue;
    INFO(h.name);
    REQUIRE(h.cost_key != nullptr);
    CHECK(reg.find(h.cost_key) != nullptr);
  }
}

TEST_CASE("hypercalls: KVM_HC_KICK_CPU and KVM_HC_SCHED_YIELD are registered under their numbers",
          "[vmx][hypercall]") {
  CHECK(std::string(g_kvm_hypercalls[KVM_HC_KICK_CPU].name) == "KVM_HC_KICK_CPU");
  CHECK(std::string(g_kvm_hypercalls[KVM_HC_SCHED_YIELD].name) == "KVM_HC_SCHED_YIELD");
  int registered = 0;
  for (const Hypercall& h : g_kvm_hypercalls) registered += static_cast<int>(h.fn != nullptr);
  CHECK(registered == 2);
}

TEST_CASE("exit handlers: a second handler for one reason is refused", "[vmx][exit]") {
  CHECK_THROWS_AS(
      RegisterExitHandler(ExitReason::HLT, nullptr, [](Vcpu&, Tsc, Tsc) -> Tsc { return 0; }),
      std::logic_error);
  CHECK_THROWS_AS(RegisterHypercall(KVM_HC_KICK_CPU, "dup", nullptr,
                                    [](Vcpu&, std::uint64_t, Tsc) -> Tsc { return 0; }),
                  std::logic_error);
}
