// LAPIC timer emulation: back ends, advance, costs.
#include "sim/model_params.h"

namespace kvmsim {

// One declaration per parameter, one per row: kept compact by hand.
// clang-format off
void declare_lapic_params(ParamRegistry& r) {
  r.declare({"kvm.lapic_timer_advance_ns", ParamType::Int, "0", "ns", -1, 5000, {},
             "Timer advance: the deadline is armed this early and kvm_wait_lapic_expire() "
             "busy-waits the rest before entry. 0 = off, N = fixed ns, -1 = adaptive (starts "
             "at 1000 ns, tuned by 1/8 of each 100..10000-cycle error, reset above 5000)."});
  r.declare({"kvm.wait_lapic_expire_site", ParamType::String, "vmx_vcpu_run", "", {}, {},
             {"vmx_vcpu_run", "vcpu_enter_guest"},
             "Where kvm_wait_lapic_expire() runs: right before the world switch (v5.3+) or at "
             "the end of vcpu_enter_guest() before vmx_vcpu_run() (earlier kernels)."});
  r.declare({"kvm.lapic_timer_advance_tuning", ParamType::String, "always", "", {}, {}, {"always", "until_done"},
             "Adaptive advance rule: always (v5.5+: tune by 1/8 of 100..10000-cycle errors, never stop; tune, then spin to the deadline) or until_done (v4.20..v5.4: step min(error, advance/8), stop once within 100 cycles, above 5000 ns set 0 and stop; spin, then tune)."});
  r.declare({"kvm.hv_timer_advance", ParamType::Bool, "true", "bool", {}, {}, {},
             "vmx_set_hv_timer() subtracts the advance (false = kernels before 2019)."});
  r.declare({"cost.lapic.start_hv_timer", ParamType::Dist, "150ns", "time", {}, {}, {},
             "start_hv_timer() + vmx_set_hv_timer()."});
  r.declare({"cost.lapic.start_sw_tscdeadline", ParamType::Dist, "400ns", "time", {}, {}, {},
             "start_sw_tscdeadline() incl. host hrtimer_start() and clockevent reprogram."});
  r.declare({"cost.lapic.cancel_hrtimer", ParamType::Dist, "100ns", "time", {}, {}, {},
             "hrtimer_cancel() of an armed LAPIC hrtimer."});
  r.declare({"cost.lapic.apic_timer_fn", ParamType::Dist, "150ns", "time", {}, {}, {},
             "apic_timer_fn() -> apic_timer_expired() + kvm_vcpu_kick() in host IRQ context."});
  r.declare({"cost.lapic.inject_timer_irq", ParamType::Dist, "100ns", "time", {}, {}, {},
             "kvm_apic_local_deliver(LVTT): set the vector in the (v)IRR."});
  r.declare({"cost.lapic.expired_hv_timer", ParamType::Dist, "80ns", "time", {}, {}, {},
             "kvm_lapic_expired_hv_timer() bookkeeping and cancel_hv_timer()."});
  r.declare({"cost.lapic.wait_lapic_expire", ParamType::Dist, "30ns", "time", {}, {}, {},
             "__kvm_wait_lapic_expire() itself (rdtsc, tracepoint, tuning), besides the spin."});
  r.declare({"cost.lapic.eoi", ParamType::Dist, "100ns", "time", {}, {}, {},
             "apic_set_eoi() + apic_update_ppr() for an EOI write trapped without APICv."});
}

// clang-format on

}  // namespace kvmsim
