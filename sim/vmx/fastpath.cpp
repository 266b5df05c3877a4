// vmx_exit_handlers_fastpath() (vmx.c, v5.6+): exits handled right after the
// world switch, with interrupts still off, and the REENTER_GUEST loop back to
// vmx_vcpu_run().
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_run.h"

namespace kvmsim {

// vmx_exit_handlers_fastpath(), called at the end of vmx_vcpu_run() with
// interrupts still off: the TSC-deadline WRMSR (only when the hv timer can
// be used) and the preemption timer are handled here. REENTER_GUEST goes
// straight back to vmx_vcpu_run(), skipping handle_exit_irqoff, IRQ enable,
// vmx_handle_exit() and vcpu_enter_guest()'s request processing.
bool VcpuRunLoop::try_exit_fastpath(Tsc now) {
  fastpath_ = ExitFastpath::None;
  if (!vmx_.exit_fastpath) return false;
  Tsc cost = 0;
  const bool timer_paths = vmx_.exit_fastpath_timer;  // v5.8+
  if (timer_paths && exit_reason_ == ExitReason::MSR_WRITE &&
      exit_step_.msr == MSR_IA32_TSC_DEADLINE && vcpu().lapic_.can_use_hv_timer()) {
    // handle_fastpath_set_tscdeadline(): kvm_set_lapic_tscdeadline_msr() +
    // skip the instruction.
    vcpu().kvm_signals().kvm_msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);
    cost = costs_.fastpath_wrmsr(rng()) + vcpu().lapic_.set_tscdeadline_msr(exit_step_.value, now);
  } else if (exit_reason_ == ExitReason::MSR_WRITE && exit_step_.msr == MSR_X2APIC_ICR &&
             KvmLapic::icr_fastpath_ok(exit_step_.value)) {
    // handle_fastpath_set_x2apic_icr_irqoff() (Wanpeng Li, v5.6): the IPI
    // is sent before interrupts are enabled and before vmx_handle_exit();
    // EXIT_FASTPATH_EXIT_HANDLED (REENTER_GUEST only since 2024): the slow
    // path's vcpu_enter_guest() still runs.
    fastpath_ = ExitFastpath::ExitHandled;
    ++vcpu().stats_.fastpath_exit_handled;
    icr_send_pending_ = true;
    state_ = VcpuState::Fastpath;
    pcpu_->run_for(Stage::ExitFastpath, SegKind::HostIrqOff,
                   costs_.exit_fastpath(rng()) + costs_.fastpath_wrmsr(rng()) +
                       vcpu().lapic_.costs().x2apic_icr_write(rng()));
    return true;
  } else if (timer_paths && exit_reason_ == ExitReason::PREEMPTION_TIMER) {
    // handle_fastpath_preemption_timer(): kvm_lapic_expired_hv_timer(),
    // which with APICv posts the vector straight into the vIRR. (The kernel
    // sends a soft-disabled timer or a req_immediate_exit down the slow
    // path instead; the model loads the timer only with a deadline and has
    // no immediate exits, so neither happens here.)
    cost = vcpu().lapic_.expired_hv_timer(now);
  } else {
    return false;
  }
  // The REENTER_GUEST loop: sync_pir_to_irr(), then kvm_vcpu_exit_request():
  // a pending request (the timer interrupt waiting for
  // kvm_inject_pending_timer_irqs() without APICv) ends the loop with
  // EXIT_HANDLED and the slow path runs vcpu_enter_guest() again.
  fastpath_ = vcpu().lapic_.pending() || event_request_ || pcpu_->need_resched()
                  ? ExitFastpath::ExitHandled
                  : ExitFastpath::ReenterGuest;
  ++(fastpath_ == ExitFastpath::ReenterGuest ? vcpu().stats_.fastpath_reenter
                                             : vcpu().stats_.fastpath_exit_handled);
  state_ = VcpuState::Fastpath;
  pcpu_->run_for(Stage::ExitFastpath, SegKind::HostIrqOff, cost + costs_.exit_fastpath(rng()));
  return true;
}

void VcpuRunLoop::after_fastpath(Tsc now) {
  if (icr_send_pending_) {
    send_icr_ipi(now);
    return;
  }
  if (fastpath_ == ExitFastpath::ReenterGuest) {
    vcpu().kvm_signals().fastpath_reenter(vcpu_id_, now);
    // The REENTER_GUEST loop's sync_pir_to_irr() (the timer the fastpath
    // just injected is in the PIR).
    if (vcpu().lapic_.config().apicv) vcpu().lapic_.sync_pir_to_irr(false);
    begin_vmx_vcpu_run(now);
    return;
  }
  handle_exit(now);  // EXIT_HANDLED: IRQ enable, vmx_handle_exit() returns at once
}

}  // namespace kvmsim
