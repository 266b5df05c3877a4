// The vcpu_run() / vcpu_enter_guest() loop (x86.c) with vmx_vcpu_run() and
// vmx_handle_exit() (vmx.c): the stages from one VM entry to the next. The
// exit handlers, the fastpath, halting and kicks are in their own files
// (vcpu.h lists them).
#include "sim/vmx/vcpu_run.h"

#include "sim/core/invariants.h"
#include "sim/core/params.h"
#include "sim/vmx/exit_handlers.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

VcpuCosts VcpuCosts::from(const ParamSet& p, const TscClock& clk) {
  VcpuCosts c;
  c.vmexit = p.dist("cost.vmexit").bind(clk);
  c.vmx_vcpu_run = p.dist("cost.vmx_vcpu_run").bind(clk);
  c.vmentry = p.dist("cost.vmentry").bind(clk);
  c.exit_fastpath = p.dist("cost.exit_fastpath").bind(clk);
  c.fastpath_wrmsr = p.dist("cost.fastpath_wrmsr").bind(clk);
  c.vcpu_enter_guest_exit_share = p.d("cost.vcpu_enter_guest_exit_share");
  c.vcpu_enter_guest = p.dist("cost.vcpu_enter_guest").bind(clk);
  c.handle_exit = p.dist("cost.handle_exit").bind(clk);
  for (std::size_t r = 0; r < c.exit_handler.size(); ++r)
    if (const char* key = g_kvm_vmx_exit_handlers[r].cost_key)
      c.exit_handler[r] = p.dist(key).bind(clk);
  return c;
}

Tsc VcpuRunLoop::take_enter_guest_exit_side() {
  const Tsc veg = costs_.vcpu_enter_guest(rng());
  const auto exit_side =
      static_cast<Tsc>(static_cast<double>(veg) * costs_.vcpu_enter_guest_exit_share);
  enter_guest_entry_side_ = veg - exit_side;
  return exit_side;
}

void VcpuRunLoop::run(Pcpu& /*cpu*/, Tsc now) {
  switch (state_) {
    case VcpuState::EnterGuest:
      after_vcpu_enter_guest(now);
      break;
    case VcpuState::VcpuRun:
      begin_vcpu_enter_guest(now);
      break;
    case VcpuState::WaitEarly:
      begin_vmx_vcpu_run(now);
      break;
    case VcpuState::VmxVcpuRun:
      after_vmx_vcpu_run(now);
      break;
    case VcpuState::WaitLate:
      begin_vmentry(now);
      break;
    case VcpuState::VmEntry:
      enter_guest_mode(now);
      break;
    case VcpuState::InGuest:
      if (vcpu().ple_.window_ran_out(now)) {  // the spin goes on after the exit
        vcpu().guest_->suspend(vcpu().ple_.take_spin_left(now));
        exit_step_ = GuestStep{};
        vmexit(ExitReason::PAUSE_INSTRUCTION, now);
        break;
      }
      guest_step(now);  // a spin another vCPU's store ended, or a finished step
      break;
    case VcpuState::VmExit:
      if (!try_exit_fastpath(now)) handle_exit(now);
      break;
    case VcpuState::Fastpath:
      after_fastpath(now);
      break;
    case VcpuState::HostIrq: {
      state_ = VcpuState::HandleExit;
      pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
      break;
    }
    case VcpuState::HandleExit:
      after_handle_exit(now);
      break;
    case VcpuState::Block:
      vcpu().halt_.after_block(now);
      break;
    case VcpuState::Poll:
      vcpu().halt_.after_poll(now);
      break;
    case VcpuState::Blocked:
      vcpu().halt_.after_sleep(now);
      break;
    case VcpuState::Wakeup:
    case VcpuState::Preempted:
      begin_vcpu_enter_guest(now);
      break;
    case VcpuState::HaltRestart:
      vcpu().halt_.halt_restart(now);
      break;
  }
}

void VcpuRunLoop::after_handle_exit(Tsc now) {
  if (icr_send_pending_) {
    send_icr_ipi(now);
    return;
  }
  if (exit_reason_ == ExitReason::HLT) {  // kvm_emulate_halt(): the vCPU is halted
    vcpu().halt_.vcpu_block(now);
    return;
  }
  // The vcpu_run() loop: need_resched -> schedule() (cond_resched(), or
  // xfer_to_guest_mode_handle_work() since v5.11) before the next entry.
  if (pcpu_->preempt_point(now)) {
    state_ = VcpuState::Preempted;
    return;
  }
  begin_vcpu_enter_guest(now);
}

// vcpu_enter_guest(): process requests (a pending timer is injected here),
// disable interrupts, load guest state.
void VcpuRunLoop::begin_vcpu_enter_guest(Tsc now) {
  // vcpu_run(): a timer apic_timer_expired() left pending (from the hrtimer,
  // or from the exit path before v5.8) is injected between two
  // vcpu_enter_guest() calls, interrupts on (kvm_inject_pending_timer_irqs()).
  if (vcpu().lapic_.pending() && state_ != VcpuState::VcpuRun) {
    state_ = VcpuState::VcpuRun;
    pcpu_->run_for(Stage::VcpuRun, SegKind::HostIrqOn,
                   vcpu().lapic_.inject_pending_timer_irqs(now));
    return;
  }
  state_ = VcpuState::EnterGuest;
  Tsc cost = vcpu().steal_.update_pending() ? vcpu().steal_.record_steal_time(now) : 0;
  if (enter_guest_entry_side_ != kTscNever) {  // the exit side ran before the handler
    cost += enter_guest_entry_side_;
    enter_guest_entry_side_ = kTscNever;
  } else {
    cost += costs_.vcpu_enter_guest(rng());
  }
  cost += vcpu().lapic_.inject_pending_timer_irqs(now);
  if (event_request_) {  // KVM_REQ_EVENT: inject_pending_event()
    event_request_ = false;
    cost += vcpu().lapic_.inject_event();
  }
  pcpu_->run_for(Stage::VcpuEnterGuest, SegKind::HostIrqOff, cost);
}

// Before v5.3 the advance busy-wait ended vcpu_enter_guest().
void VcpuRunLoop::after_vcpu_enter_guest(Tsc now) {
  if (!vcpu().lapic_.config().apicv && vcpu().guest_interruptible() && inj_vector_ < 0) {
    // inject_pending_event() -> vmx_inject_irq() (trace_kvm_inj_virq), before
    // the advance's busy-wait and the entry: the vector the entry delivers
    // (enter_guest_mode()). One not delivered yet (an entry a host interrupt
    // ended first, see enter_guest_mode()) is not traced again.
    const int v = vcpu().lapic_.irq_state().deliverable();
    if (v != ApicIrqState::kNone) {
      vcpu().kvm_signals().kvm_inj_virq(vcpu_id_, static_cast<std::uint8_t>(v), false, now);
      inj_vector_ = v;
    }
  }
  vcpu().steal_.write_back();  // pre-v5.6 record_steal_time(): kvm_write_guest_cached() of the copy
  // vcpu_enter_guest(): with APICv, sync_pir_to_irr() before the entry (and
  // before kvm_wait_lapic_expire() looks for the timer vector in the vIRR).
  if (vcpu().lapic_.config().apicv) vcpu().lapic_.sync_pir_to_irr(false);
  if (!wait_lapic_expire_at(WaitLapicExpireSite::VcpuEnterGuest, VcpuState::WaitEarly, now))
    begin_vmx_vcpu_run(now);
}

// kvm_wait_lapic_expire() if this kernel calls it at `site`: a busy-wait
// segment, after which run() continues from `after`. False if it did nothing.
bool VcpuRunLoop::wait_lapic_expire_at(WaitLapicExpireSite site, VcpuState after, Tsc now) {
  if (vcpu().lapic_.config().wait_site != site) return false;
  const Tsc spin = vcpu().lapic_.wait_lapic_expire(now);
  if (!spin) return false;
  state_ = after;
  pcpu_->run_for(Stage::WaitLapicExpire, SegKind::HostIrqOff, spin);
  return true;
}

// vmx_vcpu_run(): the software entry half (register and MSR state,
// mitigations, perf MSRs).
void VcpuRunLoop::begin_vmx_vcpu_run(Tsc now) {
  if (const Tsc c = costs_.vmx_vcpu_run(rng())) {
    state_ = VcpuState::VmxVcpuRun;
    pcpu_->run_for(Stage::VmxVcpuRun, SegKind::HostIrqOff, c);
    return;
  }
  after_vmx_vcpu_run(now);
}

// The end of vmx_vcpu_run(): vmx_update_hv_timer() loads the counter from
// the absolute deadline with rdtsc() now, then (since v5.3)
// kvm_wait_lapic_expire(), then the world switch. The counter only starts
// once the guest runs, so the rest of the entry path makes the timer late by
// its length.
void VcpuRunLoop::after_vmx_vcpu_run(Tsc now) {
  preemption_timer_loaded_ = vcpu().hv_deadline_tsc_ != kHvDeadlineNone;
  if (preemption_timer_loaded_) {
    preemption_timer_value_ =
        vmx_preemption_timer_value(vcpu().hv_deadline_tsc_, now, vmx_.preemption_timer_rate);
    // Invariant: vmx_set_hv_timer()'s fit check keeps the VMCS value in 32 bits.
    if (vcpu().hv_deadline_tsc_ > now &&
        (vcpu().hv_deadline_tsc_ - now) >> vmx_.preemption_timer_rate >> 32)
      invariant_failed(comm(), "the preemption-timer value does not fit in 32 bits");
  }
  if (!wait_lapic_expire_at(WaitLapicExpireSite::VmxVcpuRun, VcpuState::WaitLate, now))
    begin_vmentry(now);
}

void VcpuRunLoop::begin_vmentry(Tsc /*now*/) {
  state_ = VcpuState::VmEntry;
  pcpu_->run_for(Stage::VmEntry, SegKind::HostIrqOff, costs_.vmentry(rng()));
}

// What ends an entry at once, before the guest runs: a host interrupt that
// arrived with interrupts off, or a loaded preemption timer already at zero.
// *fire gets the loaded timer's fire time (kTscNever without one) when no
// host interrupt ends the entry first.
bool VcpuRunLoop::exits_at_entry(Tsc now, ExitReason* reason, Tsc* fire) const {
  if (pcpu_->irq_pending()) {
    *reason = ExitReason::EXTERNAL_INTERRUPT;
    return true;
  }
  *fire = preemption_timer_loaded_ ? vmx_preemption_timer_fire_tsc(now, preemption_timer_value_,
                                                                   vmx_.preemption_timer_rate)
                                   : kTscNever;
  if (*fire <= now) {
    *reason = ExitReason::PREEMPTION_TIMER;
    return true;
  }
  return false;
}

// Without APICv the model takes the vector to deliver at the entry itself:
// one accepted after vcpu_enter_guest() chose (during the entry's last
// stages, or for a fastpath re-entry, which has no inject_pending_event())
// is delivered by this entry, where KVM would inject it at a later one. Its
// kvm_inj_virq is written here, so that every delivered vector has one.
// Not called for an entry that exits at once (exits_at_entry()): the CPU
// then completes no delivery.
void VcpuRunLoop::trace_late_injection(Tsc now) {
  if (!vcpu().guest_interruptible()) return;  // nothing delivered now
  const int v = vcpu().lapic_.irq_state().deliverable();
  if (v != ApicIrqState::kNone && v != inj_vector_)
    vcpu().kvm_signals().kvm_inj_virq(vcpu_id_, static_cast<std::uint8_t>(v), false, now);
}

void VcpuRunLoop::enter_guest_mode(Tsc now) {
  vcpu().steal_.check_entry();
  state_ = VcpuState::InGuest;
  exiting_ = false;
  ++vcpu().stats_.entries;
  ExitReason at_once = ExitReason::EXTERNAL_INTERRUPT;
  Tsc fire = kTscNever;
  const bool exits = exits_at_entry(now, &at_once, &fire);
  if (!exits && !vcpu().lapic_.config().apicv) trace_late_injection(now);
  vcpu().kvm_signals().kvm_entry(vcpu_id_, pcpu_->id(), now);
  // A host interrupt that arrived with interrupts off exits right away, and
  // so does a preemption timer loaded at zero.
  if (exits) {
    vmexit(at_once, now);
    return;
  }
  if (preemption_timer_loaded_) pcpu_->arm_vmx_preemption_timer(fire);
  // Vectors posted meanwhile: vcpu_enter_guest()'s sync_pir_to_irr() after
  // IN_GUEST_MODE, or a notification pending with interrupts off, which the
  // CPU processes as posted once in non-root mode (no exit).
  vcpu().lapic_.sync_pir_to_irr(pcpu_->take_posted_intr_notification());
  // Virtual-interrupt delivery: a vector in the vIRR is taken on entry.
  vcpu().deliver_pending_interrupt(now);
  inj_vector_ = -1;
  if (!vcpu().lapic_.config().apicv) {
    // Without APICv, inject_pending_event() -> enable_irq_window() when a
    // deliverable vector is still pending (the guest's RFLAGS.IF is clear,
    // or one waits behind the injected one). apic_sync_pv_eoi_to_guest(),
    // on every entry, leaves PV EOI off while the IRR is not empty, so the
    // EOI of the handler in service exits and KVM re-evaluates then.
    const KvmLapic& lapic = vcpu().lapic_;
    irq_window_ = lapic.has_interrupt();
    eoi_exit_ = lapic.isr_pending() && lapic.irr_pending();
  }
  guest_step(now);
}

void VcpuRunLoop::guest_step(Tsc now) {
  const GuestStep s = vcpu().guest_->step(now);
  vcpu().ple_.step_begins(s.pause_loop, s.kind == GuestStep::Kind::Exit);
  switch (s.kind) {
    case GuestStep::Kind::Run:
      if (s.pause_loop) {  // a spin ends at a time: no cold refill
        pcpu_->run_for_wait(s.stage, SegKind::Guest, vcpu().ple_.bounded_spin(now, s.cycles));
        break;
      }
      pcpu_->run_for(s.stage, SegKind::Guest, s.cycles);
      break;
    case GuestStep::Kind::Idle:
      // Pause-Loop Exiting: a PAUSE loop (gaps below ple_gap) that lasts
      // ple_window cycles exits with PAUSE_INSTRUCTION.
      if (s.pause_loop && vcpu().ple_.enabled()) {
        pcpu_->run_for_wait(s.stage, SegKind::Guest, vcpu().ple_.open_spin(now));
        break;
      }
      pcpu_->run_until(s.stage, SegKind::Guest, kTscNever);
      break;
    case GuestStep::Kind::Exit:
      exit_step_ = s;
      vmexit(s.reason, now);
      break;
  }
}

// What is left of the guest step a VM exit or a posted interrupt cuts short.
Tsc VcpuRunLoop::suspend_remaining(Pcpu& cpu, Tsc now) {
  return vcpu().ple_.suspend_remaining(cpu.segment_end(), now);
}

void VcpuRunLoop::guest_interrupted(Pcpu& cpu, Tsc now) {
  vcpu().guest_->suspend(suspend_remaining(cpu, now));
  vmexit(ExitReason::EXTERNAL_INTERRUPT, now);
}

void VcpuRunLoop::preemption_timer_expired(Pcpu& cpu, Tsc now) {
  vcpu().guest_->suspend(suspend_remaining(cpu, now));
  vmexit(ExitReason::PREEMPTION_TIMER, now);
}

void VcpuRunLoop::vmexit(ExitReason reason, Tsc now) {
  pcpu_->disarm_vmx_preemption_timer();
  vcpu().ple_.vmexit();
  in_kernel_at_exit_ = vcpu().guest_->in_kernel_mode();
  state_ = VcpuState::VmExit;
  exit_reason_ = reason;
  ++vcpu().stats_.exits;
  vcpu().kvm_signals().kvm_exit(vcpu_id_, pcpu_->id(), reason, now);
  pcpu_->run_for(Stage::VmExit, SegKind::HostIrqOff, costs_.vmexit(rng()));
}

// After the exit half: handle_exit_irqoff() runs the host handler of an
// external interrupt (vmx_handle_external_intr), then local_irq_enable()
// lets any other pending interrupt in; then the exit handler proper.
void VcpuRunLoop::handle_exit(Tsc now) {
  const Tsc irq = pcpu_->take_pending_irqs(now);
  if (irq) {
    state_ = VcpuState::HostIrq;
    pcpu_->run_for(Stage::HostIrq, SegKind::HostIrqOff, irq);
    return;
  }
  state_ = VcpuState::HandleExit;
  pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
}

// vmx_handle_exit() -> kvm_vmx_exit_handlers[reason] (exit_handlers.h);
// effects apply now, the returned cost is the length of the handle_exit stage.
Tsc VcpuRunLoop::run_exit_handler(Tsc now) {
  vcpu().kvm_signals().before_handle_exit(vcpu_id_, now);
  // kvm_lapic_sync_from_vapic() (apic_attention): a PV EOI since the entry.
  vcpu().lapic_.sync_pv_eoi_from_guest(now);
  // vmx_handle_exit() returns at once for an exit the fastpath handled.
  if (fastpath_ == ExitFastpath::ExitHandled) return 0;
  Tsc cost = costs_.handle_exit(rng());
  const auto r = static_cast<std::size_t>(exit_reason_);
  const ExitHandler& h = g_kvm_vmx_exit_handlers[r];
  if (!h.fn) return cost;
  if (h.cost_key) cost += costs_.exit_handler[r](rng());
  return cost + h.fn(vcpu(), now, cost);
}

}  // namespace kvmsim
