// kvm_vcpu_kick() (virt/kvm/kvm_main.c) and the delivery of interrupts to the
// guest: the timer's kick from apic_timer_fn, IPIs from other vCPUs (wake a
// halted vCPU, or force an exit with a reschedule IPI), posted-interrupt
// notifications in non-root mode, and the ICR write's send.
#include "sim/sched/host.h"
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_run.h"

namespace kvmsim {

// kvm_vcpu_kick() from the LAPIC timer: the hrtimer is pinned to this
// vCPU's pCPU, so apic_timer_fn runs here in root mode. A halted vCPU is
// woken (KvmHalt::wake_up()); a running one sees the pending request before
// its next entry (no IPI needed), unless it runs in guest mode on another
// pCPU.
void Vcpu::kick(Tsc now, int from_cpu) {
  if (halt_.wake_up(now, from_cpu)) return;
  if (in_guest_mode() && pcpu_->id() != from_cpu && from_cpu >= 0 && pcpu_->current() == this) {
    ++stats_.kicks;
    // smp_send_reschedule(): forces a VM exit.
    pcpu_->host().pcpu(from_cpu).send_ipi(*pcpu_, HostIpi::Reschedule, now);
  }
}

bool VcpuRunLoop::in_guest_mode_for_ipi() const {
  switch (state_) {
    case VcpuState::WaitEarly:
    case VcpuState::VmxVcpuRun:
    case VcpuState::WaitLate:
    case VcpuState::VmEntry:
    case VcpuState::InGuest:
    case VcpuState::VmExit:
    case VcpuState::Fastpath:
      return true;
    default:
      return false;
  }
}

// kvm_vcpu_kick() on another vCPU's thread: kvm_vcpu_wake_up() wakes a
// vCPU waiting in kvm_vcpu_block() (KvmHalt::wake_up_from()); otherwise, if
// the target is in guest mode, kvm_arch_vcpu_should_kick() flips it to
// EXITING_GUEST_MODE and smp_send_reschedule() forces the exit. A second
// kick before the first landed does nothing (the task is already exiting).
Tsc Vcpu::kick_from(LapicVcpu& sender, Tsc at) {
  Tsc cost = 0;
  if (halt_.wake_up_from(sender, at, &cost)) return cost;
  if (should_kick()) {
    lapic_.count_kick();
    const Tsc c = lapic_.costs().kick_ipi(sender.rng());
    sender.pcpu().send_ipi(*pcpu_, HostIpi::Reschedule, at + c);
    return c;
  }
  return 0;
}

// The CPU's posted-interrupt processing in non-root mode: PIR -> vIRR and,
// if the guest can take it, virtual-interrupt delivery; the guest step the
// notification cut short continues after the handler.
void VcpuRunLoop::posted_interrupt(Pcpu& cpu, Tsc now) {
  vcpu().guest_->suspend(suspend_remaining(cpu, now));
  vcpu().lapic_.sync_pir_to_irr(true);
  vcpu().deliver_pending_interrupt(now);
  guest_step(now);
}

// Virtual-interrupt delivery (or the injection done at entry): the highest
// deliverable vector is taken if the guest is interruptible.
void Vcpu::deliver_pending_interrupt(Tsc now) {
  if (!guest_->interruptible()) return;
  const int v = lapic_.ack_interrupt();
  if (v >= 0) guest_->deliver_interrupt(static_cast<std::uint8_t>(v), now);
}

bool Vcpu::guest_irq_enabled(Tsc now) {
  if (lapic_.config().apicv) {
    deliver_pending_interrupt(now);
    return false;
  }
  // A vector that arrived in guest mode without the window armed is
  // injected after the exit the sender's kick forces.
  return irq_window_requested() && lapic_.has_interrupt();
}

// The ICR write's kvm_apic_send_ipi() at the end of the decode stage; the
// rest (accept on the target, notify or kick) is the next stage of the
// same kind.
void VcpuRunLoop::send_icr_ipi(Tsc now) {
  icr_send_pending_ = false;
  KvmLapic& lapic = vcpu().lapic_;
  const auto icr_low = static_cast<std::uint32_t>(exit_step_.value);
  const auto dest_id = static_cast<std::uint32_t>(exit_step_.value >> 32);
  // kvm_apic: before v5.18 kvm_x2apic_msr_write() writes ICR2, then ICR,
  // through kvm_lapic_reg_write(), which traces each before it sends. The
  // fastpath (handle_fastpath_set_x2apic_icr_irqoff()) sends first and
  // traces the ICR once, the busy bit cleared: its low word before v5.18,
  // all 64 bits from v5.18 (kvm_x2apic_icr_write(), the slow path's too).
  const bool icr64 = lapic.config().x2apic_icr_64bit;
  const bool trace_after = state_ == VcpuState::Fastpath || icr64;
  if (!trace_after) {
    lapic.trace_reg_write(APIC_ICR2, dest_id, now);
    lapic.trace_reg_write(APIC_ICR, icr_low, now);
  }
  const Tsc cost = lapic.send_ipi(icr_low, dest_id, now);
  if (trace_after) {
    const std::uint64_t icr = exit_step_.value & ~APIC_ICR_BUSY;
    lapic.trace_reg_write(APIC_ICR, icr64 ? icr : static_cast<std::uint32_t>(icr), now);
  }
  // trace_kvm_msr_write() follows the write in both paths (kvm_emulate_wrmsr,
  // handle_fastpath_set_msr_irqoff).
  vcpu().kvm_signals().kvm_msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);
  if (state_ == VcpuState::Fastpath) {
    pcpu_->run_for(Stage::ExitFastpath, SegKind::HostIrqOff, cost);
  } else {
    pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, cost);
  }
}

}  // namespace kvmsim
