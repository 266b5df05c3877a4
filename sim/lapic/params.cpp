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
  r.declare({"cost.lapic.x2apic_icr_write", ParamType::Dist, "100ns", "time", {}, {}, {},
             "kvm_x2apic_icr_write(): decode, ICR/ICR2 update, kvm_apic_send_ipi() -> "
             "kvm_irq_delivery_to_apic_fast() destination lookup."});
  r.declare({"cost.lapic.x2apic_msr_write", ParamType::Dist, "50ns", "time", {}, {}, {},
             "Slow path only: kvm_x2apic_msr_write() -> kvm_lapic_reg_write() of ICR2 and then "
             "ICR (the generic register path the ICR fastpath bypasses)."});
  r.declare({"cost.lapic.accept_irq", ParamType::Dist, "40ns", "time", {}, {}, {},
             "__apic_accept_irq() for a fixed IPI: PIR/ON (APICv) or IRR + KVM_REQ_EVENT."});
  r.declare({"cost.lapic.posted_intr_notify", ParamType::Dist, "60ns", "time", {}, {}, {},
             "kvm_vcpu_trigger_posted_interrupt(): the host's ICR write of POSTED_INTR_VECTOR."});
  r.declare({"cost.lapic.kick_wakeup", ParamType::Dist, "300ns", "time", {}, {}, {},
             "kvm_vcpu_kick() of a blocked vCPU: rcuwait_wake_up() -> try_to_wake_up() of a task "
             "on another pCPU, incl. sending the reschedule IPI."});
  r.declare({"cost.lapic.kick_ipi", ParamType::Dist, "60ns", "time", {}, {}, {},
             "kvm_vcpu_kick() of a vCPU in guest mode: mode cmpxchg + smp_send_reschedule()."});
  r.declare({"cost.lapic.inject_irq", ParamType::Dist, "100ns", "time", {}, {}, {},
             "inject_pending_event() of an IRR vector for KVM_REQ_EVENT (no APICv)."});
  r.declare({"cost.lapic.eoi", ParamType::Dist, "100ns", "time", {}, {}, {},
             "apic_set_eoi() + apic_update_ppr() for an EOI write trapped without APICv."});
}

// clang-format on

}  // namespace kvmsim
