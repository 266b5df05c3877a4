#include "sim/vmx/vcpu.h"

#include <algorithm>
#include <stdexcept>

#include "sim/core/invariants.h"
#include "sim/sched/host.h"

namespace kvmsim {

Vcpu::Vcpu(int vcpu_id, int vm_id, Pcpu& pcpu, CpuMask allowed, VcpuCosts costs, VmxConfig vmx,
           LapicConfig lapic_cfg, LapicCosts lapic_costs, TscScaling tsc)
    : HostThread("CPU " + std::to_string(vcpu_id) + "/KVM", 1000 + vcpu_id, 0, std::move(allowed)),
      vcpu_id_(vcpu_id),
      vm_id_(vm_id),
      pcpu_(&pcpu),
      costs_(std::move(costs)),
      vmx_(vmx),
      tsc_(tsc),
      lapic_(*this, lapic_cfg, std::move(lapic_costs)) {}

void Vcpu::start() {
  state_ = State::EnterGuest;
  pcpu_->host().start_thread(this, pcpu_->id(), now_tsc());
}

// kvm_sched_out(): preempted while still runnable -> vcpu->preempted; then
// kvm_arch_vcpu_put() -> kvm_steal_time_set_preempted().
void Vcpu::sched_out(Pcpu& /*cpu*/, Tsc /*now*/, bool preempted) {
  if (preempted) {
    preempted_ = true;
    ready_ = true;
    ++stats_.preemptions;
  }
  if (preempted || vmx_.preempted_on_block) st_preempted_ |= KVM_VCPU_PREEMPTED;
}

// kvm_sched_in() -> kvm_arch_vcpu_load(): on another pCPU the LAPIC hrtimer
// follows (__kvm_migrate_apic_timer); the steal time is updated before the
// next entry (KVM_REQ_STEAL_UPDATE).
void Vcpu::sched_in(Pcpu& cpu, Tsc /*now*/) {
  preempted_ = false;
  ready_ = false;
  // A vCPU that yielded in kvm_vcpu_on_spin() returns from yield_to()'s
  // schedule() and leaves it: kvm_vcpu_set_in_spin_loop(me, false), and
  // kvm_vcpu_set_dy_eligible(me, false) for its next spin loop.
  if (in_spin_loop_) {
    in_spin_loop_ = false;
    dy_eligible_ = false;
  }
  // vmx_sched_in() -> shrink_ple_window(): ple_window_shrink 0 (v4.16's
  // default) resets the window to ple_window.
  if (vmx_.ple_gap && ple_window_cur_) {
    const std::uint32_t s = vmx_.ple_window_shrink;
    const std::uint32_t v = s == 0                ? vmx_.ple_window
                            : s < vmx_.ple_window ? ple_window_cur_ / s
                                                  : ple_window_cur_ - std::min(ple_window_cur_, s);
    ple_window_cur_ = std::max(v, vmx_.ple_window);
  }
  if (&cpu != pcpu_) {
    pcpu_ = &cpu;
    lapic_.migrate_timer(cpu);
  }
  steal_update_ = true;
}

// record_steal_time(): the run delay since the last report goes into the
// guest's steal-time area, and `preempted` is cleared (xchg) for the guest.
// With KVM_FEATURE_PV_TLB_FLUSH (v4.16, "KVM: X86: Add Paravirt TLB
// Shootdown") a KVM_VCPU_FLUSH_TLB the guest set while this vCPU was
// preempted makes the host flush the guest's TLB here, before the entry
// (kvm_vcpu_flush_tlb(), kvm_vcpu_flush_tlb_guest() in later kernels), and
// the xchg is traced as kvm_pv_tlb_flush.
Tsc Vcpu::record_steal_time(Tsc now) {
  steal_update_ = false;
  const Tsc delay = se().run_delay_at(now);
  stats_.steal_cycles += delay - steal_recorded_;
  steal_recorded_ = delay;
  const std::uint8_t old = st_preempted_;
  if (vmx_.steal_time_atomic_preempted)
    st_preempted_ = 0;
  else
    st_writeback_ = true;  // the guest's byte is overwritten with 0 at the end of this stage
  if (!vmx_.pv_tlb_flush) return 0;
  const bool flush = (old & KVM_VCPU_FLUSH_TLB) != 0;
  ctx().obs.pv_tlb_flush(vcpu_id_, flush, now);
  if (!flush) return 0;
  ++stats_.pv_tlb_flushes;
  return costs_.pv_tlb_flush(rng());
}

// kvm_vcpu_on_spin(me, yield_to_kernel_mode = true) of v4.16: two passes
// over the VM's vCPUs starting after kvm->last_boosted_vcpu; a candidate is
// preempted (runnable, not running: vcpu->preempted), not me, was in guest
// kernel mode (kvm_arch_vcpu_in_kernel(): preempted_in_kernel, the CPL at
// the exit before it was put) and passes
// kvm_vcpu_eligible_for_directed_yield(); kvm_vcpu_yield_to() -> yield_to()
// makes it the next buddy of its run queue and yields this thread. A
// candidate yield_to() fails on (running by now: 0) is passed over; only
// -ESRCH (both queues have one runnable task) uses up one of the three
// tries. me->spin_loop.in_spin_loop is set for the scan; when me yielded it
// stays set until me runs again (sched_in), as me sits in yield_to()'s
// schedule() meanwhile.
void Vcpu::kvm_vcpu_on_spin(Tsc now) {
  if (!vm_vcpus_) return;
  in_spin_loop_ = true;  // kvm_vcpu_set_in_spin_loop(me, true)
  auto& list = vm_vcpus_->vcpus;
  const int n = static_cast<int>(list.size());
  const int last = vm_vcpus_->last_boosted_vcpu;
  int tries = 3;
  for (int pass = 0; pass < 2 && tries; ++pass) {
    for (int i = 0; i < n; ++i) {
      if (!pass && i <= last) {
        i = last;
        continue;
      }
      if (pass && i > last) break;
      Vcpu* v = list[static_cast<std::size_t>(i)];
      if (v == this) continue;
      if (vmx_.directed_yield_ready) {
        // v5.3: READ_ONCE(vcpu->ready); a woken vCPU is a candidate in any
        // mode, a preempted one only if it was preempted in kernel mode.
        if (!v->ready_ || (v->preempted_ && !v->in_kernel_at_exit_)) continue;
      } else if (!v->preempted_ || !v->in_kernel_at_exit_) {
        continue;
      }
      if (!v->eligible_for_directed_yield()) {
        ++stats_.dy_ineligible;
        continue;
      }
      const bool woken = !v->preempted_;
      const YieldTo y = kvm_vcpu_yield_to(*v, now);
      const int yielded = y.yielded;
      if (yielded > 0) {
        vm_vcpus_->last_boosted_vcpu = i;
        ++stats_.directed_yields;
        if (woken) ++stats_.directed_yields_woken;
        if (y.remote) ++stats_.directed_yields_remote;
        if (y.ipi_saved) ++stats_.directed_yield_ipis_saved;
        return;  // in_spin_loop stays set until this vCPU runs again
      }
      if (yielded == 0) {
        ++stats_.yield_to_failed;
        continue;
      }
      ++stats_.yield_to_esrch;
      if (--tries == 0) break;
    }
  }
  // No yield: kvm_vcpu_set_in_spin_loop(me, false); dy_eligible(me, false).
  in_spin_loop_ = false;
  dy_eligible_ = false;
}

// kvm_vcpu_yield_to() -> yield_to(task, preempt = 1): `v` becomes the next
// buddy of its run queue (a remote queue is rescheduled) and this thread
// yields its pCPU.
Vcpu::YieldTo Vcpu::kvm_vcpu_yield_to(Vcpu& v, Tsc now) {
  HostScheduler& s = pcpu_->host().scheduler();
  YieldTo r;
  const int cpu = v.se().cpu;
  // resched_curr(p_rq) sends no IPI when the target pCPU's current task
  // already has TIF_NEED_RESCHED (test_tsk_need_resched(): an earlier
  // yield or wake-up is still on its way there).
  const bool resched_pending = cpu >= 0 && s.need_resched(cpu);
  r.yielded = s.yield_to(pcpu_->id(), v.se(), now);
  if (r.yielded > 0 && cpu != pcpu_->id()) {
    r.remote = true;
    r.ipi_saved = resched_pending;
    if (!resched_pending) pcpu_->host().pcpu(cpu).resched_curr(now, pcpu_, now);
  }
  return r;
}

// kvm_sched_yield(kvm, dest_id) (v5.2 x86.c): yield to the hypercall's
// target if it may use the pCPU: vcpu->ready (`ready`: d73eb57b80b on), else
// vcpu->preempted (v5.2). True when this thread yielded.
bool Vcpu::kvm_sched_yield(Vcpu& target, bool ready, Tsc now) {
  const bool candidate = ready ? target.ready_ : target.preempted_;
  return &target != this && candidate && kvm_vcpu_yield_to(target, now).yielded > 0;
}

// The vCPU a hypercall names (a0/a1: the APIC ID, the model's vCPU index).
Vcpu& Vcpu::hypercall_target(const char* hypercall) const {
  const auto idx = static_cast<std::size_t>(exit_step_.value);
  if (idx >= vm_vcpus_->vcpus.size())
    throw std::logic_error(std::string(hypercall) + ": no such vCPU in the VM");
  return *vm_vcpus_->vcpus[idx];
}

// kvm_vcpu_eligible_for_directed_yield() (v4.16 virt/kvm/kvm_main.c): a
// vCPU not in a spin loop is eligible; one that is (it yielded in its own
// kvm_vcpu_on_spin() and waits to run) is eligible every other time it is
// considered, so that spinners do not keep boosting each other.
bool Vcpu::eligible_for_directed_yield() {
  const bool eligible = !in_spin_loop_ || dy_eligible_;
  if (in_spin_loop_) dy_eligible_ = !dy_eligible_;
  return eligible;
}

bool Vcpu::steal_time_cmpxchg_flush(std::uint8_t state) {
  if (st_preempted_ != state) return false;
  st_preempted_ = static_cast<std::uint8_t>(state | KVM_VCPU_FLUSH_TLB);
  ++stats_.pv_tlb_flush_requests;
  return true;
}

bool Vcpu::running_on_pcpu() const { return pcpu_->current() == this; }

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
void Vcpu::kick(Tsc now, int from_cpu) {
  if (state_ == State::Poll) {
    // Not waiting on the rcuwait: nothing to wake; the poll loop sees the
    // pending timer at its next kvm_vcpu_check_block().
    pcpu_->shorten_segment(now);
  } else if (state_ == State::Blocked) {
    // Already woken (another vCPU's IPI kicked it): the wake-up is on its way.
    if (se().on_rq) return;
    // rcuwait_wake_up(): a blocked vCPU thread is asleep, so the wake-up succeeds.
    // kvm_vcpu_wake_up() -> WRITE_ONCE(vcpu->ready, true) (v5.3+). Halted
    // with IF clear (kvm_wait()) the thread is woken all the same; its
    // kvm_vcpu_check_block() then sees this pending timer and the block
    // ends without the halt (restart_halt()).
    ready_ = true;
    ++(pcpu_->host().wake_up(this, from_cpu, now) ? stats_.kicks : stats_.kicks_lost);
  } else if (state_ == State::InGuest && pcpu_->id() != from_cpu && from_cpu >= 0 &&
             pcpu_->current() == this) {
    ++stats_.kicks;
    // smp_send_reschedule(): forces a VM exit.
    pcpu_->host().pcpu(from_cpu).send_ipi(*pcpu_, HostIpi::Reschedule, now);
  }
}

// kvm_vcpu_check_block() / kvm_arch_vcpu_runnable(): a timer interrupt is
// pending, or a vector is deliverable from the (v)IRR or waits in the PIR.
// A halt with RFLAGS.IF clear (the PV qspinlock's kvm_wait() -> halt()) ends
// only on pv_unhalted (a pending timer would end it too, but the guest
// halts again at once; not modelled).
bool Vcpu::vcpu_runnable() const {
  if (pv_unhalted_) return true;
  if (guest_->irqs_disabled()) return false;
  return lapic_.pending() > 0 || lapic_.has_interrupt();
}

// kvm_pv_kick_cpu_op() (v4.16 x86.c): kvm_irq_delivery_to_apic() with
// APIC_DM_REMRD -> __apic_accept_irq(): pv_unhalted = 1, KVM_REQ_EVENT,
// kvm_vcpu_kick(). A vCPU that has not halted yet finds pv_unhalted at its
// halt's kvm_vcpu_check_block() and does not sleep.
Tsc Vcpu::pv_kick(Vcpu& sender, Tsc at) {
  // A blocked thread that is asleep, or was woken in vain (IF clear) and is
  // not running yet, is still in this halt, which the kick ends.
  if (state_ == State::Blocked && (!se().on_rq || !vcpu_runnable()))
    ++sender.stats_.pv_kick_wakeups;
  pv_unhalted_ = true;
  ++sender.stats_.pv_kicks;
  return kick_from(sender, at);
}

// --- IPIs from other vCPUs ----------------------------------------------------

bool Vcpu::in_guest_mode_for_ipi() const {
  switch (state_) {
    case State::WaitEarly:
    case State::VmxVcpuRun:
    case State::WaitLate:
    case State::VmEntry:
    case State::InGuest:
    case State::VmExit:
    case State::Fastpath:
      return true;
    default:
      return false;
  }
}

// kvm_vcpu_kick() on another vCPU's thread: kvm_vcpu_wake_up() wakes a
// vCPU waiting in kvm_vcpu_block() (a task already off its CPU needs the
// reschedule IPI to leave the idle loop); otherwise, if the target is in
// guest mode, kvm_arch_vcpu_should_kick() flips it to EXITING_GUEST_MODE
// and smp_send_reschedule() forces the exit. A second kick before the
// first landed does nothing (the task is already running / exiting).
Tsc Vcpu::kick_from(Vcpu& sender, Tsc at) {
  if (state_ == State::Blocked) {
    if (se().on_rq) return 0;  // already woken: the wake-up is on its way
    // Halted with IF clear, KVM wakes the thread all the same
    // (kvm_vcpu_kick() -> kvm_vcpu_wake_up() does not look at RFLAGS.IF); its
    // kvm_vcpu_check_block() finds nothing it can take and it sleeps again
    // (rewait_block()). The vector waits in the IRR.
    lapic_.count_kick();
    ready_ = true;  // kvm_vcpu_wake_up(): vcpu->ready (v5.3+)
    const Tsc c = lapic_.costs().kick_wakeup(sender.rng());
    // try_to_wake_up() at the end of the sender's kick; a remote target pCPU
    // is reached with the reschedule IPI leaving then.
    pcpu_->host().wake_up(this, sender.pcpu().id(), now_tsc(), at + c);
    return c;
  }
  if (state_ == State::Poll) {  // the poll loop sees the vector at its next check
    pcpu_->shorten_segment(at);
    return 0;
  }
  if (state_ == State::Block) {
    // rcuwait_wake_up() of a task that has not left its run queue yet
    // (ttwu_runnable): the schedule() under way returns to it at once and
    // kvm_vcpu_check_block() sees the vector. The thread is already on the
    // wait queue, so kvm_vcpu_wake_up() finds a sleeper: vcpu->ready (v5.3+).
    lapic_.count_kick();
    ready_ = true;
    if (!block_kicked_) {
      block_kicked_ = true;
      pcpu_->shorten_segment(at);
    }
    return 0;
  }
  if (in_guest_mode_for_ipi() && !exiting_) {
    exiting_ = true;
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
void Vcpu::posted_interrupt(Pcpu& cpu, Tsc now) {
  guest_->suspend(suspend_remaining(cpu, now));
  lapic_.sync_pir_to_irr(true);
  deliver_pending_interrupt(now);
  guest_step(now);
}

// Virtual-interrupt delivery (or the injection done at entry): the highest
// deliverable vector is taken if the guest is interruptible.
void Vcpu::deliver_pending_interrupt(Tsc now) {
  if (!guest_->interruptible()) return;
  const int v = lapic_.ack_interrupt();
  if (v >= 0) guest_->deliver_interrupt(static_cast<std::uint8_t>(v), now);
}

// The ICR write's kvm_apic_send_ipi() at the end of the decode stage; the
// rest (accept on the target, notify or kick) is the next stage of the
// same kind.
void Vcpu::send_icr_ipi(Tsc now) {
  icr_send_pending_ = false;
  const Tsc cost = lapic_.send_ipi(static_cast<std::uint32_t>(exit_step_.value),
                                   static_cast<std::uint32_t>(exit_step_.value >> 32), now);
  // trace_kvm_msr_write() follows the write in both paths (kvm_emulate_wrmsr,
  // handle_fastpath_set_msr_irqoff).
  ctx().obs.msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);
  if (state_ == State::Fastpath) {
    pcpu_->run_for(Stage::ExitFastpath, SegKind::HostIrqOff, cost);
  } else {
    pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, cost);
  }
}

void Vcpu::run(Pcpu& /*cpu*/, Tsc now) {
  switch (state_) {
    case State::EnterGuest:
      after_vcpu_enter_guest(now);
      break;
    case State::VcpuRun:
      begin_vcpu_enter_guest(now);
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
      if (ple_armed_) {
        ple_armed_ = false;
        if (now >= ple_deadline_) {  // the window ran out: the spin goes on after the exit
          const bool bounded = spin_bounded_;
          spin_bounded_ = false;
          guest_->suspend(bounded ? bounded_spin_left(now) : kTscNever);
          exit_step_ = GuestStep{};
          vmexit(ExitReason::PAUSE_INSTRUCTION, now);
          break;
        }
      }
      guest_step(now);  // a spin another vCPU's store ended, or a finished step
      break;
    case State::VmExit:
      if (!try_exit_fastpath(now)) handle_exit(now);
      break;
    case State::Fastpath:
      after_fastpath(now);
      break;
    case State::HostIrq: {
      state_ = State::HandleExit;
      pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
      break;
    }
    case State::HandleExit:
      after_handle_exit(now);
      break;
    case State::Block:
      after_block(now);
      break;
    case State::Poll:
      after_poll(now);
      break;
    case State::Blocked:
      stats_.blocked_cycles += now - block_start_;
      if (!vcpu_runnable()) {  // woken by an interrupt a halt with IF clear cannot take
        if (lapic_.pending()) {
          restart_halt(now, true);
        } else {
          rewait_block(now);
        }
        break;
      }
      // Woken: kvm_vcpu_block() returns (trace kvm_vcpu_wakeup).
      finish_halt(now, true);
      end_block(now, costs_.vcpu_wakeup(rng()));
      break;
    case State::Wakeup:
    case State::Preempted:
      begin_vcpu_enter_guest(now);
      break;
    case State::HaltRestart:
      halt_restart_ = true;
      vcpu_block(now);
      break;
  }
}

void Vcpu::after_handle_exit(Tsc now) {
  if (icr_send_pending_) {
    send_icr_ipi(now);
    return;
  }
  if (exit_reason_ == ExitReason::HLT) {  // kvm_emulate_halt(): the vCPU is halted
    vcpu_block(now);
    return;
  }
  // The vcpu_run() loop: need_resched -> schedule() (cond_resched(), or
  // xfer_to_guest_mode_handle_work() since v5.11) before the next entry.
  if (pcpu_->preempt_point(now)) {
    state_ = State::Preempted;
    return;
  }
  begin_vcpu_enter_guest(now);
}

// vcpu_block() (x86.c, v5.16+; vmx_pre_block before): the preemption timer
// cannot fire while the thread sleeps, so the deadline moves to an hrtimer;
// then kvm_vcpu_halt() -> kvm_vcpu_block() prepares to wait. Halt polling is
// not modelled (kvm.halt_poll_ns = 0): the thread schedules out.
void Vcpu::vcpu_block(Tsc now) {
  // A restart keeps the first block's timer state: KVM's post_block switched
  // back to the hv timer and pre_block away from it again (nothing armed).
  if (!halt_restart_) hv_timer_before_block_ = lapic_.hv_timer_in_use();
  // kvm_vcpu_check_block() before any waiting: a vector another vCPU sent
  // during the HLT exit is already in the IRR/PIR. (A timer that fired then
  // is still found only at the end of the block stage, as before.)
  if (pv_unhalted_ || (lapic_.has_interrupt() && !guest_->irqs_disabled())) {
    end_block(now, 0);
    return;
  }
  polled_ = false;
  const HaltPollConfig& hp = vmx_.halt_poll;
  // kvm_arch_no_poll(): the guest turned host polling off (cpuidle-haltpoll).
  if ((hp.max_ns == 0 && hp.timer_ns == 0) || !poll_control_) {  // no polling: schedule out
    Tsc cost = costs_.vcpu_block(rng());
    const Tsc sw = hv_timer_before_block_ ? lapic_.switch_to_sw_timer(now) : 0;
    cost += sw;
    halt_start_ = now + sw;  // kvm_vcpu_halt()'s start, after the timer switch
    state_ = State::Block;
    pcpu_->run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cost);
    return;
  }
  const Tsc sw = hv_timer_before_block_ ? lapic_.switch_to_sw_timer(now) : 0;
  halt_start_ = now + sw;
  // kvm_vcpu_halt(): the window is capped by halt_poll_ns; poll only while
  // this is the only task on the pCPU and nothing wants it
  // (kvm_vcpu_can_poll(): single_task_running() && !need_resched()).
  std::uint64_t window_ns = halt_poll_window(hp, halt_poll_ns_);
  if (hp.timer_ns && lapic_.queued()) {
    // halt_poll_ns_timer (2016 proposal): the vCPU's own LAPIC timer fires
    // within the window, so poll for it instead of scheduling out.
    const Tsc due = lapic_.expires() > now ? lapic_.expires() - now : 0;
    if (ctx().clock.cycles_to_ns(due) < hp.timer_ns)
      window_ns = std::max<std::uint64_t>(window_ns, hp.timer_ns);
  }
  const bool single_task = pcpu_->host().scheduler().rq(pcpu_->id()).nr_running() == 1;
  if (window_ns && single_task && !pcpu_->need_resched()) {
    polled_ = true;
    ++hp_stats_.attempted;
    poll_start_ = now + sw;
    state_ = State::Poll;
    ctx().obs.vcpu_poll(vcpu_id_, pcpu_->id(), poll_start_);
    pcpu_->run_for(Stage::HaltPoll, SegKind::HostIrqOn, sw + ctx().clock.ns_to_cycles(window_ns));
    return;
  }
  Tsc cost = costs_.vcpu_block(rng());
  cost += sw;
  state_ = State::Block;
  pcpu_->run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cost);
}

// The poll loop ended: a wake-up (kvm_vcpu_check_block() < 0), the window
// or need_resched. Without a wake-up the vCPU goes on to kvm_vcpu_block().
void Vcpu::after_poll(Tsc now) {
  poll_end_ = now;
  if (vcpu_runnable()) {
    finish_halt(now, false);
    end_block(now, costs_.halt_poll_exit(rng()));
    return;
  }
  if (lapic_.pending()) {  // IF clear, its own timer: the poll ended the block
    restart_halt(now, false);
    return;
  }
  state_ = State::Block;
  pcpu_->run_for(Stage::VcpuBlock, SegKind::HostIrqOn, costs_.vcpu_block(rng()));
}

// The end of kvm_vcpu_halt(): update_halt_poll_stats(), the window rule
// (shrink when the halt outlasted the maximum, grow when it ended within the
// maximum but after the window, keep otherwise; x86 wake-ups are all
// valid), trace_kvm_vcpu_wakeup().
void Vcpu::finish_halt(Tsc now, bool waited) {
  const TscClock& clk = ctx().clock;
  if (polled_) {
    const Tsc polled = (waited ? poll_end_ : now) - poll_start_;
    if (waited) {
      hp_stats_.fail_cycles += polled;
    } else {
      ++hp_stats_.successful;
      hp_stats_.success_cycles += polled;
    }
  }
  if (waited) hp_stats_.wait_cycles += now - block_start_;
  // halt_ns = cur - start of kvm_vcpu_halt(), polled or not: a halt whose
  // wake-up raced the block (no poll, no sleep) lasted the block stage's
  // length, not 0 (which would never grow the window from 0).
  const std::uint64_t halt_ns = clk.cycles_to_ns(now - halt_start_);
  // x86 wake-ups are all valid (vcpu_valid_wakeup() is s390's).
  // halt_poll_allowed = !kvm_arch_no_poll(): no window update either.
  const HaltPollUpdate u = poll_control_
                               ? halt_poll_update(vmx_.halt_poll, halt_poll_ns_, halt_ns, true)
                               : HaltPollUpdate{};
  if (u.kind != HaltPollUpdate::Kind::Keep) {
    const bool grow = u.kind == HaltPollUpdate::Kind::Grow;
    ++(grow ? hp_stats_.grows : hp_stats_.shrinks);
    ctx().obs.halt_poll_ns(vcpu_id_, grow, u.new_ns, u.old_ns, now);
  }
  ctx().obs.vcpu_wakeup(vcpu_id_, waited, static_cast<std::int64_t>(halt_ns), now);
}

// need_resched on this pCPU ends a poll (kvm_vcpu_can_poll()).
void Vcpu::resched_requested(Pcpu& /*cpu*/, Tsc now) {
  if (state_ == State::Poll) pcpu_->shorten_segment(now);
}

// The kvm_vcpu_block() loop after a wake-up that kvm_vcpu_check_block()
// rejects (an interrupt, or the vCPU's own timer, reached a halt with
// RFLAGS.IF clear, i.e. the PV qspinlock's kvm_wait() -> halt()): the thread
// was woken and switched in (kvm_sched_in -> vcpu_load; the steal-time
// `preempted` byte stays set, as there is no entry), and goes back to
// schedule() without a trace event; only pv_unhalted ends this halt. The
// waker paid try_to_wake_up(), this pCPU two switches and this stage, and the
// task the wake-up preempted waits meanwhile.
void Vcpu::rewait_block(Tsc now) {
  ++stats_.spurious_wakeups;
  halt_restart_ = false;
  hp_stats_.wait_cycles += now - block_start_;
  block_start_ = now;
  rewaiting_ = true;
  state_ = State::Block;
  pcpu_->run_for(Stage::VcpuBlock, SegKind::HostIrqOn, costs_.vcpu_block(rng()));
}

// The vCPU's own timer fired while it was halted with RFLAGS.IF clear:
// kvm_vcpu_check_block() returns -EINTR for kvm_cpu_has_pending_timer()
// without KVM_REQ_UNHALT, so kvm_vcpu_block() ends (kvm_vcpu_wakeup, the
// poll window update); vcpu_run() moves the timer to the IRR
// (kvm_inject_pending_timer_irqs()) and, the vCPU still halted, calls
// vcpu_block() again: a new kvm_vcpu_block(), which may poll. The halt
// itself goes on (one HLT exit, one `blocks`); only the PV kick ends it.
void Vcpu::restart_halt(Tsc now, bool waited) {
  ++stats_.spurious_wakeups;
  rewaiting_ = false;
  block_kicked_ = false;
  finish_halt(now, waited);
  state_ = State::HaltRestart;
  pcpu_->run_for(Stage::VcpuRun, SegKind::HostIrqOn, lapic_.inject_pending_timer_irqs(now));
}

// kvm_vcpu_check_block() just before schedule(): an interrupt that came in
// meanwhile means no sleep.
void Vcpu::after_block(Tsc now) {
  if (vcpu_runnable()) {
    const bool kicked = block_kicked_ || rewaiting_;
    block_kicked_ = false;
    if (rewaiting_) {  // the PV kick came during a re-check: this block slept
      rewaiting_ = false;
      finish_halt(now, true);
    } else {
      block_start_ = now;
      // With halt polling configured the halt ends through the window update
      // and kvm_vcpu_wakeup as any other (without it the model keeps the
      // pre-polling behaviour: no event for a halt that never slept).
      if ((vmx_.halt_poll.max_ns || vmx_.halt_poll.timer_ns) && poll_control_)
        finish_halt(now, false);
    }
    end_block(now, kicked ? costs_.vcpu_block_abort(rng()) : 0);
    return;
  }
  if (lapic_.pending()) {           // IF clear, its own timer: no sleep, this block ends
    restart_halt(now, rewaiting_);  // it slept before if this is a re-check
    return;
  }
  block_kicked_ = false;
  if (!rewaiting_) {                      // a kvm_vcpu_block() sleeps for the first time
    if (!halt_restart_) ++stats_.blocks;  // one per halt that slept
    ctx().obs.vcpu_block(vcpu_id_, pcpu_->id(), now);
  }
  rewaiting_ = false;
  halt_restart_ = false;
  block_start_ = now;
  state_ = State::Blocked;
  pcpu_->sleep_current(now);  // schedule(): the idle task or another thread runs
}

// Back from kvm_vcpu_halt() (woken after `sched_cost` of getting the thread
// running again, or without sleeping): kvm_lapic_switch_to_hv_timer(), which
// has nothing to re-arm while the expired timer is pending.
void Vcpu::end_block(Tsc now, Tsc sched_cost) {
  // kvm_vcpu_has_events(): with RFLAGS.IF clear only pv_unhalted makes a
  // halted vCPU runnable.
  if (guest_->irqs_disabled() && !pv_unhalted_)
    invariant_failed(comm(), "a halt with IRQs off ended without the PV kick");
  halt_restart_ = false;
  state_ = State::Wakeup;
  pv_unhalted_ = false;  // vcpu_block(): the halt is over
  if (hv_timer_before_block_) sched_cost += lapic_.switch_to_hv_timer(now);
  pcpu_->run_for(Stage::VcpuWakeup, SegKind::HostIrqOn, sched_cost);
}

// vcpu_enter_guest(): process requests (a pending timer is injected here),
// disable interrupts, load guest state.
void Vcpu::begin_vcpu_enter_guest(Tsc now) {
  // vcpu_run(): a timer apic_timer_expired() left pending (from the hrtimer,
  // or from the exit path before v5.8) is injected between two
  // vcpu_enter_guest() calls, interrupts on (kvm_inject_pending_timer_irqs()).
  if (lapic_.pending() && state_ != State::VcpuRun) {
    state_ = State::VcpuRun;
    pcpu_->run_for(Stage::VcpuRun, SegKind::HostIrqOn, lapic_.inject_pending_timer_irqs(now));
    return;
  }
  state_ = State::EnterGuest;
  Tsc cost = steal_update_ ? record_steal_time(now) : 0;
  if (enter_guest_entry_side_ != kTscNever) {  // the exit side ran before the handler
    cost += enter_guest_entry_side_;
    enter_guest_entry_side_ = kTscNever;
  } else {
    cost += costs_.vcpu_enter_guest(rng());
  }
  cost += lapic_.inject_pending_timer_irqs(now);
  if (event_request_) {  // KVM_REQ_EVENT: inject_pending_event()
    event_request_ = false;
    cost += lapic_.inject_event();
  }
  pcpu_->run_for(Stage::VcpuEnterGuest, SegKind::HostIrqOff, cost);
}

// Before v5.3 the advance busy-wait ended vcpu_enter_guest().
void Vcpu::after_vcpu_enter_guest(Tsc now) {
  if (st_writeback_) {  // pre-v5.6 record_steal_time(): kvm_write_guest_cached() of the copy
    st_writeback_ = false;
    st_preempted_ = 0;
  }
  // vcpu_enter_guest(): with APICv, sync_pir_to_irr() before the entry (and
  // before kvm_wait_lapic_expire() looks for the timer vector in the vIRR).
  if (lapic_.config().apicv) lapic_.sync_pir_to_irr(false);
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
  pcpu_->run_for(Stage::WaitLapicExpire, SegKind::HostIrqOff, spin);
  return true;
}

// vmx_vcpu_run(): the software entry half (register and MSR state,
// mitigations, perf MSRs).
void Vcpu::begin_vmx_vcpu_run(Tsc now) {
  if (const Tsc c = costs_.vmx_vcpu_run(rng())) {
    state_ = State::VmxVcpuRun;
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
  pcpu_->run_for(Stage::VmEntry, SegKind::HostIrqOff, costs_.vmentry(rng()));
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
  const bool timer_paths = vmx_.exit_fastpath_timer;  // v5.8+
  if (timer_paths && exit_reason_ == ExitReason::MSR_WRITE &&
      exit_step_.msr == MSR_IA32_TSC_DEADLINE && lapic_.can_use_hv_timer()) {
    // handle_fastpath_set_tscdeadline(): kvm_set_lapic_tscdeadline_msr() +
    // skip the instruction.
    ctx().obs.msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);
    cost = costs_.fastpath_wrmsr(rng()) + lapic_.set_tscdeadline_msr(exit_step_.value, now);
  } else if (exit_reason_ == ExitReason::MSR_WRITE && exit_step_.msr == MSR_X2APIC_ICR &&
             KvmLapic::icr_fastpath_ok(exit_step_.value)) {
    // handle_fastpath_set_x2apic_icr_irqoff() (Wanpeng Li, v5.6): the IPI
    // is sent before interrupts are enabled and before vmx_handle_exit();
    // EXIT_FASTPATH_EXIT_HANDLED (REENTER_GUEST only since 2024): the slow
    // path's vcpu_enter_guest() still runs.
    fastpath_ = ExitFastpath::ExitHandled;
    ++stats_.fastpath_exit_handled;
    icr_send_pending_ = true;
    state_ = State::Fastpath;
    pcpu_->run_for(Stage::ExitFastpath, SegKind::HostIrqOff,
                   costs_.exit_fastpath(rng()) + costs_.fastpath_wrmsr(rng()) +
                       lapic_.costs().x2apic_icr_write(rng()));
    return true;
  } else if (timer_paths && exit_reason_ == ExitReason::PREEMPTION_TIMER) {
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
  fastpath_ = lapic_.pending() || event_request_ || pcpu_->need_resched()
                  ? ExitFastpath::ExitHandled
                  : ExitFastpath::ReenterGuest;
  ++(fastpath_ == ExitFastpath::ReenterGuest ? stats_.fastpath_reenter
                                             : stats_.fastpath_exit_handled);
  state_ = State::Fastpath;
  pcpu_->run_for(Stage::ExitFastpath, SegKind::HostIrqOff, cost + costs_.exit_fastpath(rng()));
  return true;
}

void Vcpu::after_fastpath(Tsc now) {
  if (icr_send_pending_) {
    send_icr_ipi(now);
    return;
  }
  if (fastpath_ == ExitFastpath::ReenterGuest) {
    // The REENTER_GUEST loop's sync_pir_to_irr() (the timer the fastpath
    // just injected is in the PIR).
    if (lapic_.config().apicv) lapic_.sync_pir_to_irr(false);
    begin_vmx_vcpu_run(now);
    return;
  }
  handle_exit(now);  // EXIT_HANDLED: IRQ enable, vmx_handle_exit() returns at once
}

void Vcpu::enter_guest_mode(Tsc now) {
  // Invariant (no flush is lost): a KVM_VCPU_FLUSH_TLB the guest set is
  // consumed by record_steal_time() before the vCPU runs guest code again.
  if (st_preempted_ & KVM_VCPU_FLUSH_TLB)
    invariant_failed(comm(), "entered the guest with KVM_VCPU_FLUSH_TLB still set");
  state_ = State::InGuest;
  exiting_ = false;
  ++stats_.entries;
  ctx().obs.vmentry(vcpu_id_, pcpu_->id(), now);
  // A host interrupt that arrived with interrupts off exits right away.
  if (pcpu_->irq_pending()) {
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
    pcpu_->arm_vmx_preemption_timer(fire);
  }
  // Vectors posted meanwhile: vcpu_enter_guest()'s sync_pir_to_irr() after
  // IN_GUEST_MODE, or a notification pending with interrupts off, which the
  // CPU processes as posted once in non-root mode (no exit).
  lapic_.sync_pir_to_irr(pcpu_->take_posted_intr_notification());
  // Virtual-interrupt delivery: a vector in the vIRR is taken on entry.
  deliver_pending_interrupt(now);
  guest_step(now);
}

void Vcpu::guest_step(Tsc now) {
  const GuestStep s = guest_->step(now);
  spin_bounded_ = false;
  // One PAUSE loop to the hardware: consecutive pause_loop steps with no
  // exit and no other guest work between them (a waiter re-checking after
  // a store, the next 256-loop chunk) keep the PLE window running.
  if (!s.pause_loop || s.kind == GuestStep::Kind::Exit) pause_loop_since_ = kTscNever;
  switch (s.kind) {
    case GuestStep::Kind::Run:
      if (s.pause_loop) {
        // A spin of at most s.cycles (the PV qspinlock's SPIN_THRESHOLD
        // loops): another vCPU's store ends it early, and Pause-Loop
        // Exiting cuts it at the window as an open-ended spin.
        spin_bounded_ = true;
        spin_end_ = now + s.cycles;
        if (vmx_.ple_gap) {
          const Tsc deadline = ple_window_end(now);
          if (deadline < spin_end_) {
            ple_armed_ = true;
            ple_deadline_ = deadline;
            pcpu_->run_for(s.stage, SegKind::Guest, deadline - now);
            break;
          }
        }
      }
      pcpu_->run_for(s.stage, SegKind::Guest, s.cycles);
      break;
    case GuestStep::Kind::Idle:
      if (s.pause_loop && vmx_.ple_gap) {
        // Pause-Loop Exiting: a PAUSE loop (gaps below ple_gap) that lasts
        // ple_window cycles exits with PAUSE_INSTRUCTION.
        ple_armed_ = true;
        ple_deadline_ = ple_window_end(now);
        pcpu_->run_for(s.stage, SegKind::Guest, ple_deadline_ - now);
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

// When the guest's PAUSE loop (begun now, or at pause_loop_since_ if it
// goes on) has run ple_window cycles.
Tsc Vcpu::ple_window_end(Tsc now) {
  if (!ple_window_cur_) ple_window_cur_ = vmx_.ple_window;
  if (pause_loop_since_ == kTscNever) pause_loop_since_ = now;
  return std::max(now, pause_loop_since_ + ple_window_cur_);
}

// What is left of the guest step a VM exit or a posted interrupt cuts short
// (a PLE-bounded spin is open-ended).
Tsc Vcpu::suspend_remaining(Pcpu& cpu, Tsc now) {
  const Tsc end = cpu.segment_end();
  const bool open = end == kTscNever || ple_armed_;
  ple_armed_ = false;
  if (spin_bounded_) {  // a bounded spin keeps its own end, PLE window or not
    spin_bounded_ = false;
    return bounded_spin_left(now);
  }
  return open ? kTscNever : end - now;
}

void Vcpu::guest_interrupted(Pcpu& cpu, Tsc now) {
  guest_->suspend(suspend_remaining(cpu, now));
  vmexit(ExitReason::EXTERNAL_INTERRUPT, now);
}

void Vcpu::preemption_timer_expired(Pcpu& cpu, Tsc now) {
  guest_->suspend(suspend_remaining(cpu, now));
  vmexit(ExitReason::PREEMPTION_TIMER, now);
}

void Vcpu::vmexit(ExitReason reason, Tsc now) {
  pcpu_->disarm_vmx_preemption_timer();
  ple_armed_ = false;
  pause_loop_since_ = kTscNever;  // the PLE count starts again after the entry
  in_kernel_at_exit_ = guest_->in_kernel_mode();
  state_ = State::VmExit;
  exit_reason_ = reason;
  ++stats_.exits;
  ctx().obs.vmexit(vcpu_id_, pcpu_->id(), reason, now);
  pcpu_->run_for(Stage::VmExit, SegKind::HostIrqOff, costs_.vmexit(rng()));
}

// After the exit half: handle_exit_irqoff() runs the host handler of an
// external interrupt (vmx_handle_external_intr), then local_irq_enable()
// lets any other pending interrupt in; then the exit handler proper.
void Vcpu::handle_exit(Tsc now) {
  const Tsc irq = pcpu_->take_pending_irqs(now);
  if (irq) {
    state_ = State::HostIrq;
    pcpu_->run_for(Stage::HostIrq, SegKind::HostIrqOff, irq);
    return;
  }
  state_ = State::HandleExit;
  pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
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
      // trace_kvm_msr_write (after the write; for the ICR in send_icr_ipi())
      if (exit_step_.msr != MSR_X2APIC_ICR)
        ctx().obs.msr_write(vcpu_id_, exit_step_.msr, exit_step_.value, now);
      if (exit_step_.msr == MSR_IA32_TSC_DEADLINE) {
        cost += lapic_.set_tscdeadline_msr(exit_step_.value, now);
      } else if (exit_step_.msr == MSR_X2APIC_EOI) {
        cost += lapic_.eoi();  // x2APIC EOI trapped without APICv
      } else if (exit_step_.msr == MSR_X2APIC_ICR) {
        // kvm_x2apic_msr_write() -> kvm_lapic_reg_write(ICR2), (ICR) ->
        // kvm_apic_send_ipi(): the IPI goes out at the end of this stage
        // (send_icr_ipi). What lies between the exit and the send includes
        // vcpu_enter_guest()'s exit side, which the model otherwise counts
        // after the handler: drawn now, its entry side is kept for later.
        const Tsc veg = costs_.vcpu_enter_guest(rng());
        const auto exit_side =
            static_cast<Tsc>(static_cast<double>(veg) * costs_.vcpu_enter_guest_exit_share);
        enter_guest_entry_side_ = veg - exit_side;
        cost += exit_side + lapic_.costs().x2apic_msr_write(rng()) +
                lapic_.costs().x2apic_icr_write(rng());
        icr_send_pending_ = true;
      }
      break;
    case ExitReason::PREEMPTION_TIMER:
      cost += costs_.handle_preemption_timer(rng());
      cost += lapic_.expired_hv_timer(now);
      break;
    case ExitReason::EXTERNAL_INTERRUPT:
      cost += costs_.handle_external_interrupt(rng());
      break;
    case ExitReason::PAUSE_INSTRUCTION:
      // handle_pause() (v4.16): grow_ple_window(), then
      // kvm_vcpu_on_spin(vcpu, true); the guest's PAUSE loop resumes after.
      cost += costs_.handle_pause(rng());
      ++stats_.pause_exits;
      {
        const std::uint32_t old = ple_window_cur_;
        ple_window_cur_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(
            std::uint64_t{ple_window_cur_} * vmx_.ple_window_grow, vmx_.ple_window_max));
        if (ple_window_cur_ > old) ++stats_.ple_window_grows;
        stats_.ple_window_peak = std::max(stats_.ple_window_peak, ple_window_cur_);
      }
      kvm_vcpu_on_spin(now);
      break;
    case ExitReason::VMCALL:
      // handle_vmcall() -> kvm_emulate_hypercall(): KVM_HC_KICK_CPU (the PV
      // qspinlock's pv_kick()) or KVM_HC_SCHED_YIELD (PV sched yield).
      cost += exit_step_.msr == KVM_HC_SCHED_YIELD ? costs_.handle_sched_yield(rng())
                                                   : costs_.handle_kick_cpu(rng());
      // trace_kvm_hypercall(nr, a0 = flags 0, a1 = APIC ID, the model's
      // vCPU index).
      ctx().obs.hypercall(vcpu_id_, exit_step_.msr, 0, exit_step_.value, now);
      if (exit_step_.msr == KVM_HC_KICK_CPU && vm_vcpus_) {
        Vcpu& target = hypercall_target("KVM_HC_KICK_CPU");
        cost += target.pv_kick(*this, now + cost);
        // 266e85a5ec9 (v5.3, "Boost queue head vCPU to mitigate lock waiter
        // preemption"): kvm_sched_yield(kvm, a1) after the kick. It came
        // after d73eb57b80b, so its test is always vcpu->ready.
        if (vmx_.kick_cpu_yield && kvm_sched_yield(target, true, now + cost)) ++stats_.kick_yields;
      } else if (exit_step_.msr == KVM_HC_SCHED_YIELD && vm_vcpus_) {
        ++stats_.sched_yield_calls;
        if (kvm_sched_yield(hypercall_target("KVM_HC_SCHED_YIELD"), vmx_.directed_yield_ready,
                            now + cost))
          ++stats_.sched_yields;
      }
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
