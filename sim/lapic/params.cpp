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
  r.declare({"kvm.lapic_timer_advance_tuning", ParamType::String, "always", "", {}, {}, {"always", "spin_then_tune", "until_done", "until_done_retry"},
             "Adaptive advance rule of __kvm_wait_lapic_expire(): until_done (v4.20..v5.2: spin, then step min(error, advance/8), stop once within 100 cycles, above 5000 ns set 0 and stop), until_done_retry (v5.3: the same, but above 5000 ns back to 1000 ns and tuning resumes), spin_then_tune (v5.4..v5.13: spin, then tune by 1/8 of each 100..10000-cycle error, never stop, above 5000 ns back to 1000) or always (v5.14+: the same tuning first, re-read the TSC, then spin)."});
  r.declare({"kvm.hv_timer_advance", ParamType::Bool, "true", "bool", {}, {}, {},
             "vmx_set_hv_timer() subtracts the advance (c5ce8235cffa, v4.18+; false = older kernels)."});
  r.declare({"kvm.apic_timer_expired_inject", ParamType::Bool, "true", "bool", {}, {}, {},
             "apic_timer_expired() from the exit path with APICv injects the timer interrupt at "
             "once (kvm_apic_inject_pending_timer_irqs(), v5.8+); false = it only marks the timer "
             "pending and vcpu_run() injects it before the next vcpu_enter_guest()."});
  r.declare({"kvm.x2apic_icr_64bit", ParamType::Bool, "true", "bool", {}, {}, {},
             "An x2APIC ICR write is one 64-bit register write: kvm_x2apic_icr_write() sends the "
             "IPI, then traces one kvm_apic with all 64 bits (APIC_ICR = 0x100000020, v5.18+); "
             "false = kvm_x2apic_msr_write() writes ICR2, then ICR, through "
             "kvm_lapic_reg_write(), which traces each before the send, and the exit fastpath "
             "traces the ICR's low word after it. Acts on the trace only."});
  r.declare({"kvm.pi_inject_timer", ParamType::Int, "0", "", -1, 1, {},
             "kvm.pi_inject_timer (v5.3+, 0c5f81dad46c \"KVM: LAPIC: Inject timer interrupt via "
             "posted interrupt\", Wanpeng Li 2019): with APICv the LAPIC timer's hrtimer runs on a "
             "housekeeping pCPU, which busy-waits the advance and posts the vector (no VM exit) "
             "while the vCPU is in guest mode; the preemption timer and the TSC-deadline exit "
             "fastpath are not used. -1 = the module default: on when the host has nohz_full "
             "CPUs (host.isolcpus), 1 = on, 0 = off (kernels before v5.3). The hrtimer always moves to "
             "the lowest non-isolated pCPU (the kernel keeps it local when it expires before that "
             "CPU's next event)."});
  r.declare({"kvm.pi_inject_timer_needs_hlt_in_guest", ParamType::Bool, "false", "bool", {}, {}, {},
             "Kernel-version switch: kvm_can_post_timer_interrupt() also requires MWAIT or HLT "
             "in guest (1714a4eb6fb0, v5.18; in stable 5.4.214+ and 5.15.85+). The model's VMs "
             "always exit on HLT, so with it posted timer interrupts are off whatever "
             "kvm.pi_inject_timer says."});
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

// The host kernels' defaults of the LAPIC version switches (host.kernel).
void declare_lapic_eras(ParamRegistry& r) {
  r.set_eras("kvm.lapic_timer_advance_ns", "host.kernel",
             {{"4.0", "0", "d0659d946be0 (v4.0): a fixed advance, module default 0"},
              {"4.20", "-1", "3b8a5df6c4dc (v4.20): tuned automatically from 1000 ns"}});
  r.set_eras("kvm.lapic_timer_advance_tuning", "host.kernel",
             {{"4.0", "until_done", "3b8a5df6c4dc (v4.20): tuning ends once within 100 cycles"},
              {"5.3", "until_done_retry",
               "v5.3 'Retry tune per-vCPU timer_advance_ns if adaptive tuning goes insane': "
               "above 5000 ns back to 1000 ns, tuning resumes"},
              {"5.4", "spin_then_tune",
               "v5.4 'Tune lapic_timer_advance_ns smoothly' + loosened filter: continuous, "
               "errors of 100..10000 cycles, spin then adjust"},
              {"5.14", "always", "v5.14: adjust first, re-read the TSC, then spin"}});
  r.set_eras("kvm.wait_lapic_expire_site", "host.kernel",
             {{"4.0", "vcpu_enter_guest", "the wait ends vcpu_enter_guest()"},
              {"5.3", "vmx_vcpu_run",
               "v5.3 (Wanpeng Li 2019, timer-latency ref 3): the wait moves next to the world "
               "switch"}});
  r.set_eras("kvm.enable_hv_timer", "host.kernel",
             {{"3.10", "false", "the LAPIC timer is a host hrtimer only"},
              {"4.8", "true",
               "ce7a058a2117 (v4.8): kvm_intel.preemption_timer, on where the CPU has it"}});
  r.set_eras(
      "kvm.hv_timer_advance", "host.kernel",
      {{"4.8", "false", "ce7a058a2117 (v4.8): the preemption timer without the advance"},
       {"4.18", "true", "c5ce8235cffa (2018-05-29, v4.18): vmx_set_hv_timer() subtracts it"}});
  r.set_eras("kvm.x2apic_icr_64bit", "host.kernel",
             {{"4.0", "false", "ICR2 then ICR through kvm_lapic_reg_write()"},
              {"5.18", "true",
               "a57a31684d7b: x2APIC's ICR is one 64-bit register (kvm_x2apic_icr_write())"}});
  r.set_eras("kvm.pi_inject_timer", "host.kernel",
             {{"4.0", "0", "no posted timer interrupts"},
              {"5.3", "-1",
               "0c5f81dad46c: module default -1 = on with nohz_full "
               "(housekeeping_enabled(HK_FLAG_TIMER))"}});
  r.set_eras("kvm.pi_inject_timer_needs_hlt_in_guest", "host.kernel",
             {{"4.0", "false", "posting needs APICv only"},
              {"5.18", "true", "1714a4eb6fb0: and MWAIT or HLT in guest"}});
  r.set_eras("kvm.apic_timer_expired_inject", "host.kernel",
             {{"4.0", "false", "pending + KVM_REQ_PENDING_TIMER, injected by vcpu_run()"},
              {"5.8", "true",
               "v5.8 timer fastpath series (Wanpeng Li 2020): direct injection with APICv"}});
}

}  // namespace kvmsim
