// LAPIC timer emulation: back ends, advance, costs.
#include "sim/model_params.h"

namespace kvmsim {

void declare_lapic_params(ParamRegistry& r) {
  r.declare({"kvm.lapic_timer_advance_ns", ParamType::Int, "0", "ns", 0, 5000, {},
             "Fixed timer advance: the timer is armed this early (adaptive -1 not yet modelled)."});
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
}

}  // namespace kvmsim
