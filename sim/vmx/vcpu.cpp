#include "sim/vmx/vcpu.h"

#include "sim/core/invariants.h"

namespace kvmsim {

Vcpu::Vcpu(int vcpu_id, int vm_id, Pcpu& pcpu, VcpuCosts costs, VmxConfig vmx,
           LapicConfig lapic_cfg, LapicCosts lapic_costs, TscScaling tsc)
    : HostThread("CPU " + std::to_string(vcpu_id) + "/KVM", 1000 + vcpu_id),
      vcpu_id_(vcpu_id),
      vm_id_(vm_id),
      pcpu_(pcpu),
      costs_(std::move(costs)),
      vmx_(vmx),
      tsc_(tsc),
      lapic_(*this, lapic_cfg, std::move(lapic_costs)) {}

void Vcpu::start() {
  state_ = State::EnterGuest;
  pcpu_.set_thread(this);
}

// vmx_set_hv_timer(): the absolute host-TSC deadline that every entry reloads.
bool Vcpu::set_hv_timer(std::uint64_t guest_deadline_tsc, Tsc now, bool* expired) {
  // Kernels before 2019 did not subtract the advance on this path.
  const std::uint64_t advance =
      lapic_.config().hv_timer_advance ? lapic_.timer_advance_cycles() : 0;
  const auto r =
      vmx_set_hv_timer(tsc_, vmx_.preemption_timer_rate, now, guest_deadline_tsc, advance);
  if (!r.ok) {
    ++stats_.hv_timer_fallbacks;
    return false;
  }
  hv_deadline_tsc_ = r.hv_deadline_tsc;
  *expired = r.expired;
  return true;
}

// kvm_vcpu_kick(): the LAPIC hrtimer is pinned to this vCPU's pCPU, so
// apic_timer_fn runs here in root mode. A running vCPU sees the pending
// request before its next entry (no IPI needed); a blocked one is woken
// (rcuwait_wake_up -> try_to_wake_up) and runs once the interrupt returns.
void Vcpu::kick(Tsc /*now*/) {
  if (state_ == State::Blocked) pcpu_.wake_current();
}

// kvm_vcpu_check_block() / kvm_arch_vcpu_runnable(): a timer interrupt is
// pending or already in the (v)IRR.
bool Vcpu::vcpu_runnable() const { return lapic_.pending() > 0 || lapic_.timer_irr(); }

void Vcpu::run(Pcpu& /*cpu*/, Tsc now) {
  switch (state_) {
    case State::EnterGuest:
      after_vcpu_enter_guest(now);
      break;
    case State::WaitEarly:
      begin_vmx_vcpu_run(now);
      break;
    case State::VmxVcpuRun:
      after_vmx_vcpu_run(now);
      break;
    case State::WaitLate:
      begin_vmentry(now);
      break;
    case State::VmEntry:
      enter_guest_mode(now);
      break;
    case State::InGuest:
      guest_step(now);
      break;
    case State::VmExit:
      if (!try_exit_fastpath(now)) handle_exit(now);
      break;
    case State::Fastpath:
      after_fastpath(now);
      break;
    case State::HostIrq: {
      state_ = State::HandleExit;
      pcpu_.run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
      break;
    }
    case State::HandleExit:
      after_handle_exit(now);
      break;
    case State::Block:
      after_block(now);
      break;
    case State::Blocked:
      // Woken: kvm_vcpu_block() returns (trace kvm_vcpu_wakeup).
      stats_.blocked_cycles += now - block_start_;
      ctx().obs.vcpu_wakeup(vcpu_id_, true,
                            static_cast<std::int64_t>(ctx().clock.cycles_to_ns(now - block_start_)),
                            now);
      end_block(now, costs_.vcpu_wakeup(rng()));
      break;
    case State::Wakeup:
      begin_vcpu_enter_guest(now);
      break;
  }
}

void Vcpu::after_handle_exit(Tsc now) {
  if (exit_reason_ == ExitReason::HLT) {  // kvm_emulate_halt(): the vCPU is halted
    vcpu_block(now);
    return;
  }
  begin_vcpu_enter_guest(now);
}

// vcpu_block() (x86.c, v5.16+; vmx_pre_block before): the preemption timer
// cannot fire while the thread sleeps, so the deadline moves to an hrtimer;
// then kvm_vcpu_halt() -> kvm_vcpu_block() prepares to wait. Halt polling is
// not modelled (kvm.halt_poll_ns = 0): the thread schedules out.
void Vcpu::vcpu_block(Tsc now) {
  hv_timer_before_block_ = lapic_.hv_timer_in_use();
  Tsc cost = costs_.vcpu_block(rng());
  if (hv_timer_before_block_) cost += lapic_.switch_to_sw_timer(now);
  state_ = State::Block;
  pcpu_.run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cost);
}

// kvm_vcpu_check_block() just before schedule(): an interrupt that came in
// meanwhile means no sleep.
void Vcpu::after_block(Tsc now) {
  if (vcpu_runnable()) {
    end_block(now, 0);
    return;
  }
  ++stats_.blocks;
  ctx().obs.vcpu_block(vcpu_id_, pcpu_.id(), now);
  block_start_ = now;
  state_ = State::Blocked;
  pcpu_.run_until(Stage::HostIdle, SegKind::HostIrqOn, kTscNever);
}

// Back from kvm_vcpu_halt() (woken after `sched_cost` of getting the thread
// running again, or without sleeping): kvm_lapic_switch_to_hv_timer(), which
// has nothing to re-arm while the expired timer is pending.
void Vcpu::end_block(Tsc now, Tsc sched_cost) {
  state_ = State::Wakeup;
  if (hv_timer_before_block_) sched_cost += lapic_.switch_to_hv_timer(now);
  pcpu_.run_for(Stage::VcpuWakeup, SegKind::HostIrqOn, sched_cost);
}

// vcpu_enter_guest(): process requests (a pending timer is injected here),
// disable interrupts, load guest state.
void Vcpu::begin_vcpu_enter_guest(Tsc now) {
  state_ = State::EnterGuest;
  Tsc cost = costs_.vcpu_enter_guest(rng());
  cost += lapic_.inject_pending_timer_irqs(now);
  pcpu_.run_for(Stage::VcpuEnterGuest, SegKind::HostIrqOff, cost);
}

// Before v5.3 the advance busy-wait ended vcpu_enter_guest().
void Vcpu::after_vcpu_enter_guest(Tsc now) {
  if (!wait_lapic_expire_at(WaitLapicExpireSite::VcpuEnterGuest, State::WaitEarly, now))
    begin_vmx_vcpu_run(now);
}

// kvm_wait_lapic_expire() if this kernel calls it at `site`: a busy-wait
// segment, after which run() continues from `after`. False if it did nothing.
bool Vcpu::wait_lapic_expire_at(WaitLapicExpireSite site, State after, Tsc now) {
  if (lapic_.config().wait_site != site) return false;
  const Tsc spin = lapic_.wait_lapic_expire(now);
  if (!spin) return false;
  state_ = after;
  pcpu_.run_for(Stage::WaitLapicExpire, SegKind::HostIrqOff, spin);
  return true;
}

// vmx_vcpu_run(): the software entry half (register and MSR state,
// mitigations, perf MSRs).
void Vcpu::begin_vmx_vcpu_run(Tsc now) {
  if (const Tsc c = costs_.vmx_vcpu_run(rng())) {
    state_ = State::VmxVcpuRun;
    pcpu_.run_for(Stage::VmxVcpuRun, SegKind::HostIrqOff, c);
    return;
  }
  after_vmx_vcpu_run(now);
}

// The end of vmx_vcpu_run(): vmx_update_hv_timer() loads the counter from
// the absolute deadline with rdtsc() now, then (since v5.3)
// kvm_wait_lapic_expire(), then the world switch. The counter only starts
// once the guest runs, so the rest of the entry path makes the timer late by
// its length.
void Vcpu::after_vmx_vcpu_run(Tsc now) {
  preemption_timer_loaded_ = hv_deadline_tsc_ != kHvDeadlineNone;
  if (preemption_timer_loaded_) {
    preemption_timer_value_ =
        vmx_preemption_timer_value(hv_deadline_tsc_, now, vmx_.preemption_timer_rate);
    // Invariant: vmx_set_hv_timer()'s fit check keeps the VMCS value in 32 bits.
    if (hv_deadline_tsc_ > now && (hv_deadline_tsc_ - now) >> vmx_.preemption_timer_rate >> 32)
      invariant_failed(comm(), "the preemption-timer value does not fit in 32 bits");
  }
  if (!wait_lapic_expire_at(WaitLapicExpireSite::VmxVcpuRun, State::WaitLate, now))
    begin_vmentry(now);
}

void Vcpu::begin_vmentry(Tsc /*now*/) {
  state_ = State::VmEntry;
  pcpu_.run_for(Stage::VmEntry, SegKind::HostIrqOff, costs_.vmentry(rng()));
}

// vmx_exit_handlers_fastpath(), called at the end of vmx_vcpu_run() with
// interrupts still off: the TSC-deadline WRMSR (only when the hv timer can
// be used) and the preemption timer are handled here. REENTER_GUEST goes
// straight back to vmx_vcpu_run(), skipping handle_exit_irqoff, IRQ enable,
// vmx_handle_exit() and vcpu_enter_guest()'s request processing.
bool Vcpu::try_exit_fastpath(Tsc now) {
  fastpath_ = ExitFastpath::None;
  if (!vmx_.exit_fastpath) return false;
  Tsc cost = 0;
  if (exit_reason_ == ExitReason::MSR_WRITE && exit_step_.msr == MSR_IA32_TSC_DEADLINE &&
      lapic_.can_use_hv_timer()) {
    // handle_fastpath_set_tscdeadline(): kvm_set_lapic_tscdeadline_msr() +
    // skip the instruction.
    ctx().obs.msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);
    cost = costs_.fastpath_wrmsr(rng()) + lapic_.set_tscdeadline_msr(exit_step_.value, now);
  } else if (exit_reason_ == ExitReason::PREEMPTION_TIMER) {
    // handle_fastpath_preemption_timer(): a soft-disabled (spurious) timer
    // just re-enters; otherwise kvm_lapic_expired_hv_timer(), which with
    // APICv posts the vector straight into the vIRR.
    cost = lapic_.expired_hv_timer(now);
  } else {
    return false;
  }
  // The REENTER_GUEST loop: sync_pir_to_irr(), then kvm_vcpu_exit_request():
  // a pending request (the timer interrupt waiting for
  // kvm_inject_pending_timer_irqs() without APICv) ends the loop with
  // EXIT_HANDLED and the slow path runs vcpu_enter_guest() again.
  fastpath_ = lapic_.pending() ? ExitFastpath::ExitHandled : ExitFastpath::ReenterGuest;
  ++(fastpath_ == ExitFastpath::ReenterGuest ? stats_.fastpath_reenter
                                             : stats_.fastpath_exit_handled);
  state_ = State::Fastpath;
  pcpu_.run_for(Stage::ExitFastpath, SegKind::HostIrqOff, cost + costs_.exit_fastpath(rng()));
  return true;
}

void Vcpu::after_fastpath(Tsc now) {
  if (fastpath_ == ExitFastpath::ReenterGuest) {
    begin_vmx_vcpu_run(now);
    return;
  }
  handle_exit(now);  // EXIT_HANDLED: IRQ enable, vmx_handle_exit() returns at once
}

void Vcpu::enter_guest_mode(Tsc now) {
  state_ = State::InGuest;
  ++stats_.entries;
  ctx().obs.vmentry(vcpu_id_, pcpu_.id(), now);
  // A host interrupt that arrived with interrupts off exits right away.
  if (pcpu_.irq_pending()) {
    vmexit(ExitReason::EXTERNAL_INTERRUPT, now);
    return;
  }
  if (preemption_timer_loaded_) {
    const Tsc fire =
        vmx_preemption_timer_fire_tsc(now, preemption_timer_value_, vmx_.preemption_timer_rate);
    if (fire <= now) {
      vmexit(ExitReason::PREEMPTION_TIMER, now);
      return;
    }
    pcpu_.arm_vmx_preemption_timer(fire);
  }
  // Virtual-interrupt delivery: a vector in the vIRR is taken on entry.
  if (lapic_.timer_irr() && guest_->interruptible()) {
    lapic_.ack_timer_irr();
    guest_->deliver_interrupt(LOCAL_TIMER_VECTOR, now);
  }
  guest_step(now);
}

void Vcpu::guest_step(Tsc now) {
  const GuestStep s = guest_->step(now);
  switch (s.kind) {
    case GuestStep::Kind::Run:
      pcpu_.run_for(s.stage, SegKind::Guest, s.cycles);
      break;
    case GuestStep::Kind::Idle:
      pcpu_.run_until(s.stage, SegKind::Guest, kTscNever);
      break;
    case GuestStep::Kind::Exit:
      exit_step_ = s;
      vmexit(s.reason, now);
      break;
  }
}

void Vcpu::guest_interrupted(Pcpu& cpu, Tsc now) {
  const Tsc end = cpu.segment_end();
  guest_->suspend(end == kTscNever ? kTscNever : end - now);
  vmexit(ExitReason::EXTERNAL_INTERRUPT, now);
}

void Vcpu::preemption_timer_expired(Pcpu& cpu, Tsc now) {
  const Tsc end = cpu.segment_end();
  guest_->suspend(end == kTscNever ? kTscNever : end - now);
  vmexit(ExitReason::PREEMPTION_TIMER, now);
}

void Vcpu::vmexit(ExitReason reason, Tsc now) {
  pcpu_.disarm_vmx_preemption_timer();
  state_ = State::VmExit;
  exit_reason_ = reason;
  ++stats_.exits;
  ctx().obs.vmexit(vcpu_id_, pcpu_.id(), reason, now);
  pcpu_.run_for(Stage::VmExit, SegKind::HostIrqOff, costs_.vmexit(rng()));
}

// After the exit half: handle_exit_irqoff() runs the host handler of an
// external interrupt (vmx_handle_external_intr), then local_irq_enable()
// lets any other pending interrupt in; then the exit handler proper.
void Vcpu::handle_exit(Tsc now) {
  const Tsc irq = pcpu_.take_pending_irqs(now);
  if (irq) {
    state_ = State::HostIrq;
    pcpu_.run_for(Stage::HostIrq, SegKind::HostIrqOff, irq);
    return;
  }
  state_ = State::HandleExit;
  pcpu_.run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
}

// vmx_handle_exit() -> kvm_vmx_exit_handlers[reason]; effects apply now, the
// returned cost is the length of the handle_exit stage.
Tsc Vcpu::run_exit_handler(Tsc now) {
  // vmx_handle_exit() returns at once for an exit the fastpath handled.
  if (fastpath_ == ExitFastpath::ExitHandled) return 0;
  Tsc cost = costs_.handle_exit(rng());
  switch (exit_reason_) {
    case ExitReason::MSR_WRITE:
      cost += costs_.handle_wrmsr(rng());
      ctx().obs.msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);  // trace_kvm_msr_write
      if (exit_step_.msr == MSR_IA32_TSC_DEADLINE) {
        cost += lapic_.set_tscdeadline_msr(exit_step_.value, now);
      } else if (exit_step_.msr == MSR_X2APIC_EOI) {
        cost += lapic_.eoi();  // x2APIC EOI trapped without APICv
      }
      break;
    case ExitReason::PREEMPTION_TIMER:
      cost += costs_.handle_preemption_timer(rng());
      cost += lapic_.expired_hv_timer(now);
      break;
    case ExitReason::EXTERNAL_INTERRUPT:
      cost += costs_.handle_external_interrupt(rng());
      break;
    case ExitReason::HLT:
      // kvm_emulate_halt(): the vCPU blocks after the handler returns.
      cost += costs_.handle_halt(rng());
      ++stats_.halts;
      break;
    default:
      break;
  }
  return cost;
}

}  // namespace kvmsim
