// The exits that interrupts cause: handle_external_interrupt() (the host's
// handler already ran in handle_exit_irqoff(), vmx_handle_external_intr),
// handle_preemption_timer() -> kvm_lapic_expired_hv_timer() and, without
// APICv, handle_interrupt_window() (vmx.c).
#include "sim/vmx/exit_handlers.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

KVMSIM_EXIT_HANDLER(EXTERNAL_INTERRUPT, "cost.handle_external_interrupt",
                    [](Vcpu& /*v*/, Tsc /*now*/, Tsc /*cost*/) -> Tsc { return 0; });

// handle_interrupt_window(): clear the window control, KVM_REQ_EVENT; the
// next vcpu_enter_guest() injects the vector.
KVMSIM_EXIT_HANDLER(INTERRUPT_WINDOW, "cost.handle_interrupt_window",
                    [](Vcpu& v, Tsc /*now*/, Tsc /*cost*/) -> Tsc {
                      v.request_event();
                      return 0;
                    });

KVMSIM_EXIT_HANDLER(PREEMPTION_TIMER, "cost.handle_preemption_timer",
                    [](Vcpu& v, Tsc now, Tsc /*cost*/) { return v.lapic().expired_hv_timer(now); });

}  // namespace kvmsim
