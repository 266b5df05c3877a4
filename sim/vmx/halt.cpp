#include "sim/vmx/halt.h"

#include <algorithm>

#include "sim/core/invariants.h"
#include "sim/core/params.h"
#include "sim/sched/host.h"
#include "sim/vmx/exit_handlers.h"
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {

HaltConfig HaltConfig::from(const ParamSet& p, const TscClock& clk) {
  HaltConfig c;
  c.vcpu_block = p.dist("cost.vcpu_block").bind(clk);
  c.vcpu_wakeup = p.dist("cost.vcpu_wakeup").bind(clk);
  c.vcpu_block_abort = p.dist("cost.vcpu_block_abort").bind(clk);
  c.halt_poll_exit = p.dist("cost.halt_poll_exit").bind(clk);
  HaltPollConfig& hp = c.poll;
  hp.max_ns = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns"));
  hp.grow = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_grow"));
  hp.grow_start = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_grow_start"));
  hp.shrink = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_shrink"));
  hp.timer_ns = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_timer"));
  const std::string& rule = p.s("kvm.halt_poll_rule");
  hp.rule = rule == "v4.0"    ? HaltPollRule::V4_0
            : rule == "v4.3"  ? HaltPollRule::V4_3
            : rule == "v4.7"  ? HaltPollRule::V4_7
            : rule == "v5.2"  ? HaltPollRule::V5_2
            : rule == "v5.15" ? HaltPollRule::V5_15
                              : HaltPollRule::V6_2;
  return c;
}

// kvm_emulate_halt(): the vCPU blocks after the handler returns
// (after_handle_exit() -> vcpu_block()).
Tsc KvmHalt::handle_halt() {
  ++stats_.halts;
  return 0;  // the handler's own cost is cost.handle_halt (ExitHandler::cost_key)
}
KVMSIM_EXIT_HANDLER(HLT, "cost.handle_halt",
                    [](Vcpu& v, Tsc /*now*/, Tsc /*cost*/) { return v.halt().handle_halt(); });

// vcpu_block() (x86.c, v5.16+; vmx_pre_block before): the preemption timer
// cannot fire while the thread sleeps, so the deadline moves to an hrtimer;
// then kvm_vcpu_halt() polls (halt_poll_ns) or kvm_vcpu_block() prepares to
// wait and the thread schedules out.
void KvmHalt::vcpu_block(Tsc now) {
  KvmLapic& lapic = v_.lapic_;
  Pcpu& pcpu = *v_.pcpu_;
  // A restart keeps the first block's timer state: KVM's post_block switched
  // back to the hv timer and pre_block away from it again (nothing armed).
  if (!halt_restart_) hv_timer_before_block_ = lapic.hv_timer_in_use();
  // kvm_vcpu_check_block() before any waiting: a vector another vCPU sent
  // during the HLT exit is already in the IRR/PIR. (A timer that fired then
  // is still found only at the end of the block stage, as before.)
  if (pv_unhalted_ || (lapic.has_interrupt() && !v_.guest_->irqs_disabled())) {
    end_block(now, 0);
    return;
  }
  polled_ = false;
  const HaltPollConfig& hp = cfg_.poll;
  // kvm_arch_no_poll(): the guest turned host polling off (cpuidle-haltpoll).
  if (!polling_allowed()) {  // no polling: schedule out
    Tsc cost = cfg_.vcpu_block(v_.rng());
    const Tsc sw = hv_timer_before_block_ ? lapic.switch_to_sw_timer(now) : 0;
    cost += sw;
    halt_start_ = now + sw;  // kvm_vcpu_halt()'s start, after the timer switch
    v_.set_state(VcpuState::Block);
    pcpu.run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cost);
    return;
  }
  const Tsc sw = hv_timer_before_block_ ? lapic.switch_to_sw_timer(now) : 0;
  halt_start_ = now + sw;
  // kvm_vcpu_halt(): the window is capped by halt_poll_ns; poll only while
  // this is the only task on the pCPU and nothing wants it
  // (kvm_vcpu_can_poll(): single_task_running() && !need_resched()).
  std::uint64_t window_ns = halt_poll_window(hp, halt_poll_ns_);
  if (hp.timer_ns && lapic.queued()) {
    // halt_poll_ns_timer (2016 proposal): the vCPU's own LAPIC timer fires
    // within the window, so poll for it instead of scheduling out.
    const Tsc due = lapic.expires() > now ? lapic.expires() - now : 0;
    if (v_.ctx().clock.cycles_to_ns(due) < hp.timer_ns)
      window_ns = std::max<std::uint64_t>(window_ns, hp.timer_ns);
  }
  const bool single_task = pcpu.host().scheduler().nr_running(pcpu.id()) == 1;
  if (window_ns && single_task && !pcpu.need_resched()) {
    polled_ = true;
    ++hp_stats_.attempted;
    poll_start_ = now + sw;
    v_.set_state(VcpuState::Poll);
    v_.kvm_signals().vcpu_poll(v_.id(), pcpu.id(), poll_start_);
    pcpu.run_for(Stage::HaltPoll, SegKind::HostIrqOn, sw + v_.ctx().clock.ns_to_cycles(window_ns));
    return;
  }
  Tsc cost = cfg_.vcpu_block(v_.rng());
  cost += sw;
  v_.set_state(VcpuState::Block);
  pcpu.run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cost);
}

bool KvmHalt::vcpu_runnable() const {
  if (pv_unhalted_) return true;
  if (v_.guest_->irqs_disabled()) return false;
  return v_.lapic_.pending() > 0 || v_.lapic_.has_interrupt();
}

bool KvmHalt::sleeping_in_halt() const {
  return v_.state() == VcpuState::Blocked && (!v_.se().on_rq || !vcpu_runnable());
}

// The poll loop ended: a wake-up (kvm_vcpu_check_block() < 0), the window
// or need_resched. Without a wake-up the vCPU goes on to kvm_vcpu_block().
void KvmHalt::after_poll(Tsc now) {
  poll_end_ = now;
  if (vcpu_runnable()) {
    finish_halt(now, false);
    end_block(now, cfg_.halt_poll_exit(v_.rng()));
    return;
  }
  if (v_.lapic_.pending()) {  // IF clear, its own timer: the poll ended the block
    restart_halt(now, false);
    return;
  }
  v_.set_state(VcpuState::Block);
  v_.pcpu_->run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cfg_.vcpu_block(v_.rng()));
}

// The end of kvm_vcpu_halt(): update_halt_poll_stats(), the window rule
// (shrink when the halt outlasted the maximum, grow when it ended within the
// maximum but after the window, keep otherwise; x86 wake-ups are all
// valid), trace_kvm_vcpu_wakeup().
void KvmHalt::finish_halt(Tsc now, bool waited) {
  const TscClock& clk = v_.ctx().clock;
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
  const HaltPollUpdate u =
      poll_control_ ? halt_poll_update(cfg_.poll, halt_poll_ns_, halt_ns, true) : HaltPollUpdate{};
  if (u.kind != HaltPollUpdate::Kind::Keep) {
    const bool grow = u.kind == HaltPollUpdate::Kind::Grow;
    ++(grow ? hp_stats_.grows : hp_stats_.shrinks);
    v_.kvm_signals().kvm_halt_poll_ns(v_.id(), grow, u.new_ns, u.old_ns, now);
  }
  v_.kvm_signals().kvm_vcpu_wakeup(v_.id(), waited, static_cast<std::int64_t>(halt_ns), now);
}

void KvmHalt::resched_requested(Tsc now) {
  if (v_.state() == VcpuState::Poll) v_.pcpu_->shorten_segment(now);
}

// The thread runs again after sleeping in kvm_vcpu_block().
void KvmHalt::after_sleep(Tsc now) {
  stats_.blocked_cycles += now - block_start_;
  if (!vcpu_runnable()) {  // woken by an interrupt a halt with IF clear cannot take
    if (v_.lapic_.pending()) {
      restart_halt(now, true);
    } else {
      rewait_block(now);
    }
    return;
  }
  // Woken: kvm_vcpu_block() returns (trace kvm_vcpu_wakeup).
  finish_halt(now, true);
  end_block(now, cfg_.vcpu_wakeup(v_.rng()));
}

// The kvm_vcpu_block() loop after a wake-up that kvm_vcpu_check_block()
// rejects (an interrupt, or the vCPU's own timer, reached a halt with
// RFLAGS.IF clear, i.e. the PV qspinlock's kvm_wait() -> halt()): the thread
// was woken and switched in (kvm_sched_in -> vcpu_load; the steal-time
// `preempted` byte stays set, as there is no entry), and goes back to
// schedule() without a trace event; only pv_unhalted ends this halt. The
// waker paid try_to_wake_up(), this pCPU two switches and this stage, and the
// task the wake-up preempted waits meanwhile.
void KvmHalt::rewait_block(Tsc now) {
  ++stats_.spurious_wakeups;
  halt_restart_ = false;
  hp_stats_.wait_cycles += now - block_start_;
  block_start_ = now;
  rewaiting_ = true;
  v_.set_state(VcpuState::Block);
  v_.pcpu_->run_for(Stage::VcpuBlock, SegKind::HostIrqOn, cfg_.vcpu_block(v_.rng()));
}

// The vCPU's own timer fired while it was halted with RFLAGS.IF clear:
// kvm_vcpu_check_block() returns -EINTR for kvm_cpu_has_pending_timer()
// without KVM_REQ_UNHALT, so kvm_vcpu_block() ends (kvm_vcpu_wakeup, the
// poll window update); vcpu_run() moves the timer to the IRR
// (kvm_inject_pending_timer_irqs()) and, the vCPU still halted, calls
// vcpu_block() again: a new kvm_vcpu_block(), which may poll. The halt
// itself goes on (one HLT exit, one `blocks`); only the PV kick ends it.
void KvmHalt::restart_halt(Tsc now, bool waited) {
  ++stats_.spurious_wakeups;
  rewaiting_ = false;
  block_kicked_ = false;
  finish_halt(now, waited);
  v_.set_state(VcpuState::HaltRestart);
  v_.pcpu_->run_for(Stage::VcpuRun, SegKind::HostIrqOn, v_.lapic_.inject_pending_timer_irqs(now));
}

// kvm_vcpu_check_block() just before schedule(): an interrupt that came in
// meanwhile means no sleep.
void KvmHalt::after_block(Tsc now) {
  if (vcpu_runnable()) {
    const bool kicked = block_kicked_ || rewaiting_;
    block_kicked_ = false;
    if (rewaiting_) {  // the PV kick came during a re-check: this block slept
      rewaiting_ = false;
      finish_halt(now, true);
    } else {
      block_start_ = now;
      // kvm_vcpu_block() was entered (vcpu_block() found the vCPU not
      // runnable), so it ends at its `out:` label as any other: the window
      // update and trace_kvm_vcpu_wakeup(waited = false), with or without
      // halt polling (kvm_main.c, v4.0 on). Only a vCPU already runnable at
      // vcpu_block() (KvmHalt::vcpu_block()) skips kvm_vcpu_block().
      finish_halt(now, false);
    }
    end_block(now, kicked ? cfg_.vcpu_block_abort(v_.rng()) : 0);
    return;
  }
  if (v_.lapic_.pending()) {        // IF clear, its own timer: no sleep, this block ends
    restart_halt(now, rewaiting_);  // it slept before if this is a re-check
    return;
  }
  block_kicked_ = false;
  if (!rewaiting_) {                      // a kvm_vcpu_block() sleeps for the first time
    if (!halt_restart_) ++stats_.blocks;  // one per halt that slept
    v_.kvm_signals().vcpu_block(v_.id(), v_.pcpu_->id(), now);
  }
  rewaiting_ = false;
  halt_restart_ = false;
  block_start_ = now;
  v_.set_state(VcpuState::Blocked);
  v_.pcpu_->sleep_current(now);  // schedule(): the idle task or another thread runs
}

// Back from kvm_vcpu_halt() (woken after `sched_cost` of getting the thread
// running again, or without sleeping): kvm_lapic_switch_to_hv_timer(), which
// has nothing to re-arm while the expired timer is pending.
void KvmHalt::end_block(Tsc now, Tsc sched_cost) {
  // kvm_vcpu_has_events(): with RFLAGS.IF clear only pv_unhalted makes a
  // halted vCPU runnable.
  if (v_.guest_->irqs_disabled() && !pv_unhalted_)
    invariant_failed(v_.comm(), "a halt with IRQs off ended without the PV kick");
  halt_restart_ = false;
  v_.set_state(VcpuState::Wakeup);
  pv_unhalted_ = false;  // vcpu_block(): the halt is over
  if (hv_timer_before_block_) sched_cost += v_.lapic_.switch_to_hv_timer(now);
  v_.pcpu_->run_for(Stage::VcpuWakeup, SegKind::HostIrqOn, sched_cost);
}

// kvm_vcpu_kick() from the LAPIC timer: the hrtimer is pinned to this
// vCPU's pCPU, so apic_timer_fn runs here in root mode. A polling vCPU sees
// the pending timer at its next kvm_vcpu_check_block(); a blocked one is
// woken (rcuwait_wake_up -> try_to_wake_up) and runs once the interrupt
// returns.
bool KvmHalt::wake_up(Tsc now, int from_cpu) {
  if (v_.state() == VcpuState::Poll) {
    // Not waiting on the rcuwait: nothing to wake; the poll loop sees the
    // pending timer at its next kvm_vcpu_check_block().
    v_.pcpu_->shorten_segment(now);
    return true;
  }
  if (v_.state() != VcpuState::Blocked) return false;
  // Already woken (another vCPU's IPI kicked it): the wake-up is on its way.
  if (v_.se().on_rq) return true;
  // rcuwait_wake_up(): a blocked vCPU thread is asleep, so the wake-up succeeds.
  // kvm_vcpu_wake_up() -> WRITE_ONCE(vcpu->ready, true) (v5.3+). Halted
  // with IF clear (kvm_wait()) the thread is woken all the same; its
  // kvm_vcpu_check_block() then sees this pending timer and the block
  // ends without the halt (restart_halt()).
  v_.ready_ = true;
  ++(v_.pcpu_->host().wake_up(&v_, from_cpu, now) ? v_.stats_.kicks : v_.stats_.kicks_lost);
  return true;
}

// kvm_vcpu_wake_up() on another vCPU's thread: wakes a vCPU waiting in
// kvm_vcpu_block() (a task already off its CPU needs the reschedule IPI to
// leave the idle loop). A second kick before the first landed does nothing
// (the task is already running).
bool KvmHalt::wake_up_from(LapicVcpu& sender, Tsc at, Tsc* cost) {
  *cost = 0;
  switch (v_.state()) {
    case VcpuState::Blocked: {
      if (v_.se().on_rq) return true;  // already woken: the wake-up is on its way
      // Halted with IF clear, KVM wakes the thread all the same
      // (kvm_vcpu_kick() -> kvm_vcpu_wake_up() does not look at RFLAGS.IF); its
      // kvm_vcpu_check_block() finds nothing it can take and it sleeps again
      // (rewait_block()). The vector waits in the IRR.
      v_.lapic_.count_kick();
      v_.ready_ = true;  // kvm_vcpu_wake_up(): vcpu->ready (v5.3+)
      const Tsc c = v_.lapic_.costs().kick_wakeup(sender.rng());
      // try_to_wake_up() at the end of the sender's kick; a remote target pCPU
      // is reached with the reschedule IPI leaving then.
      v_.pcpu_->host().wake_up(&v_, sender.pcpu().id(), now_tsc(), at + c);
      *cost = c;
      return true;
    }
    case VcpuState::Poll:  // the poll loop sees the vector at its next check
      v_.pcpu_->shorten_segment(at);
      return true;
    case VcpuState::Block:
      // rcuwait_wake_up() of a task that has not left its run queue yet
      // (ttwu_runnable): the schedule() under way returns to it at once and
      // kvm_vcpu_check_block() sees the vector. The thread is already on the
      // wait queue, so kvm_vcpu_wake_up() finds a sleeper: vcpu->ready (v5.3+).
      v_.lapic_.count_kick();
      v_.ready_ = true;
      if (!block_kicked_) {
        block_kicked_ = true;
        v_.pcpu_->shorten_segment(at);
      }
      return true;
    default:
      return false;
  }
}

// vcpu.halts / blocks / blocked_s / spurious_wakeups, and halt polling
// under the kernel's stat names (halt_attempted_poll, ...).
static const RegisterVcpuMetrics halt_metrics([](const std::vector<Vcpu*>& vcpus, Metrics& m,
                                                 const TscClock& clk) {
  const HaltStats hs = sum_over(vcpus, [](const Vcpu& v) { return v.halt().stats(); });
  m["vcpu.halts"] = static_cast<double>(hs.halts);
  m["vcpu.blocks"] = static_cast<double>(hs.blocks);
  m["vcpu.blocked_s"] = clk.to_s(static_cast<double>(hs.blocked_cycles));
  if (hs.spurious_wakeups)  // only guests that halt with IF clear (PV qspinlock waits)
    m["vcpu.spurious_wakeups"] = static_cast<double>(hs.spurious_wakeups);
  const HaltPollStats hp = sum_over(vcpus, [](const Vcpu& v) { return v.halt().poll_stats(); });
  m["halt_poll.attempted"] = static_cast<double>(hp.attempted);
  m["halt_poll.successful"] = static_cast<double>(hp.successful);
  m["halt_poll.invalid"] = static_cast<double>(hp.invalid);
  m["halt_poll.grow"] = static_cast<double>(hp.grows);
  m["halt_poll.shrink"] = static_cast<double>(hp.shrinks);
  m["halt_poll.success_ns"] = clk.to_ns(static_cast<double>(hp.success_cycles));
  m["halt_poll.fail_ns"] = clk.to_ns(static_cast<double>(hp.fail_cycles));
  m["halt_poll.poll_ns_total"] = clk.to_ns(static_cast<double>(hp.success_cycles + hp.fail_cycles));
  m["halt_poll.wait_ns"] = clk.to_ns(static_cast<double>(hp.wait_cycles));
});

}  // namespace kvmsim
