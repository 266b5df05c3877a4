#include "sim/vmx/hypercall.h"

#include <stdexcept>
#include <string>

#include "sim/core/invariants.h"
#include "sim/core/params.h"
#include "sim/vmx/exit_handlers.h"
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {

RegisterHypercall::RegisterHypercall(std::uint32_t nr, const char* name, const char* cost_key,
                                     Tsc (*fn)(Vcpu&, std::uint64_t, Tsc)) {
  Hypercall& h = g_kvm_hypercalls.at(nr);
  if (h.fn) throw std::logic_error(std::string("two handlers for hypercall ") + name);
  h = Hypercall{fn, name, cost_key};
}

HypercallConfig HypercallConfig::from(const ParamSet& p, const TscClock& clk) {
  HypercallConfig c;
  c.kick_cpu_yield = p.b("kvm.kick_cpu_yield");
  for (std::size_t nr = 0; nr < kMaxHypercall; ++nr)
    if (const char* key = g_kvm_hypercalls[nr].cost_key) c.cost[nr] = p.dist(key).bind(clk);
  return c;
}

Vcpu& hypercall_target(Vcpu& caller, std::uint64_t a1, const char* hypercall) {
  const auto idx = static_cast<std::size_t>(a1);
  if (idx >= caller.vm_vcpus()->vcpus.size())
    throw std::logic_error(std::string(hypercall) + ": no such vCPU in the VM");
  return *caller.vm_vcpus()->vcpus[idx];
}

namespace {

// handle_vmcall() -> kvm_emulate_hypercall(): the hypercall's own cost, then
// trace_kvm_hypercall(nr, a0 = flags 0, a1 = APIC ID, the model's vCPU
// index), then its effects.
Tsc handle_vmcall(Vcpu& v, Tsc now, Tsc cost) {
  const GuestStep& call = v.exit_step();
  const std::uint32_t nr = call.msr;
  const Hypercall* h = nr < kMaxHypercall ? &g_kvm_hypercalls[nr] : nullptr;
  if (!h || !h->fn) {
    invariant_failed(v.comm(), "VMCALL of hypercall " + std::to_string(nr) +
                                   ", which the model does not handle");
    return 0;
  }
  Tsc c = v.vmx().hypercall.cost[nr](v.rng());
  v.kvm_signals().kvm_hypercall(v.id(), nr, 0, call.value, now);
  if (v.vm_vcpus()) c += h->fn(v, call.value, now + cost + c);
  return c;
}

}  // namespace

KVMSIM_EXIT_HANDLER(VMCALL, nullptr, handle_vmcall);

static const RegisterVcpuMetrics hypercall_metrics([](const std::vector<Vcpu*>& vcpus, Metrics& m,
                                                      const TscClock& /*clk*/) {
  const HypercallStats hc = sum_over(vcpus, [](const Vcpu& v) { return v.hypercall_stats(); });
  if (hc.pv_kicks) {  // only guests whose PV qspinlocks halted waiters
    m["vcpu.pv_kicks"] = static_cast<double>(hc.pv_kicks);
    m["vcpu.pv_kick_wakeups"] = static_cast<double>(hc.pv_kick_wakeups);
    m["vcpu.kick_yields"] = static_cast<double>(hc.kick_yields);
  }
  if (hc.sched_yield_calls) {  // only guests with PV sched yield that found a target preempted
    m["vcpu.sched_yield_calls"] = static_cast<double>(hc.sched_yield_calls);
    m["vcpu.sched_yields"] = static_cast<double>(hc.sched_yields);
  }
});

}  // namespace kvmsim
