// vmx_handle_exit() -> kvm_vmx_exit_handlers[exit_reason] (vmx.c): the exit
// handlers by basic exit reason. Each handler family registers itself from
// its own file:
//
//   KVMSIM_EXIT_HANDLER(HLT, "cost.handle_halt", [](Vcpu& v, Tsc now, Tsc cost) {
//     return v.halt().handle_halt();
//   });
//
// `cost_key` names the handler's own cost parameter (drawn before the handler
// runs, after vmx_handle_exit()'s common dispatch; nullptr: none); the
// function applies the handler's effects at `now` (`cost`: the handle_exit
// stage so far) and returns the cycles it adds to the stage. A reason with
// no handler costs only the dispatch.
//
//   handle_msr.cpp        MSR_WRITE (TSC deadline, x2APIC EOI and ICR)
//   handle_interrupt.cpp  EXTERNAL_INTERRUPT, PREEMPTION_TIMER
//   halt.cpp              HLT
//   ple.cpp               PAUSE_INSTRUCTION
//   hypercall.cpp         VMCALL
#pragma once

#include <array>

#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim {

class Vcpu;

struct ExitHandler {
  Tsc (*fn)(Vcpu& vcpu, Tsc now, Tsc cost) = nullptr;
  const char* cost_key = nullptr;
};

// Zero-initialised before any registration runs (constant initialisation).
inline std::array<ExitHandler, kMaxExitReason> g_kvm_vmx_exit_handlers{};

struct RegisterExitHandler {
  RegisterExitHandler(ExitReason r, const char* cost_key, Tsc (*fn)(Vcpu&, Tsc, Tsc));
};

#define KVMSIM_EXIT_HANDLER_CAT2(a, b) a##b
#define KVMSIM_EXIT_HANDLER_CAT(a, b) KVMSIM_EXIT_HANDLER_CAT2(a, b)
#define KVMSIM_EXIT_HANDLER(reason, cost_key, ...)                                           \
  static const ::kvmsim::RegisterExitHandler KVMSIM_EXIT_HANDLER_CAT(exit_handler_, reason)( \
      ::kvmsim::ExitReason::reason, cost_key, __VA_ARGS__)

}  // namespace kvmsim
