#include "sim/guest/kernel/guest_kernel.h"

#include <algorithm>
#include <stdexcept>

#include "sim/core/context.h"
#include "sim/guest/kernel/guest_smp.h"

namespace kvmsim {

GuestKernel::GuestKernel(Vcpu& vcpu, GuestCosts costs, std::uint64_t guest_tsc_khz, GuestConfig cfg)
    : vcpu_(vcpu),
      costs_(std::move(costs)),
      cfg_(cfg),
      guest_tsc_khz_(guest_tsc_khz),
      rng_(vcpu.ctx().stream("guest.vcpu" + std::to_string(vcpu.id()))) {}

std::uint64_t GuestKernel::guest_ns(Tsc host_now) const {
  return static_cast<std::uint64_t>((static_cast<u128>(guest_tsc(host_now)) * 1000000u) /
                                    guest_tsc_khz_);
}

std::uint64_t GuestKernel::ns_to_guest_tsc_ceil(std::uint64_t ns) const {
  const u128 p = static_cast<u128>(ns) * guest_tsc_khz_;
  return static_cast<std::uint64_t>((p + 999999u) / 1000000u);
}

Tsc GuestKernel::guest_cycles_to_host(std::uint64_t guest_cycles) const {
  if (!vcpu_.tsc().scaled()) return guest_cycles;
  return vcpu_.tsc().guest_delta_to_host(guest_cycles).value_or(guest_cycles);
}

void GuestKernel::add_task(GuestTask* t) {
  t->cpu_ = this;
  t->on_rq_ = true;
  if (t->fair()) fair_.place_entity(t, true);
  runqueue_.push_back(t);
  need_resched_ = current_ == nullptr;
}

// pick_next_task(): the RT class first (Fifo tasks in queue order), then
// CFS's leftmost entity (smallest vruntime; queue order breaks ties).
GuestTask* GuestKernel::pick_next(Tsc now) {
  if (runqueue_.empty()) return nullptr;
  auto it = std::find_if(runqueue_.begin(), runqueue_.end(), [](auto* t) { return !t->fair(); });
  if (it == runqueue_.end()) it = std::find(runqueue_.begin(), runqueue_.end(), fair_.leftmost());
  GuestTask* t = *it;
  runqueue_.erase(it);
  if (t->fair()) fair_.set_next_entity(t, now);
  return t;
}

// Order: an interrupt handler in progress, then the step a VM exit cut short,
// queued kernel work, a pending context switch, and finally the current task
// (or the idle loop).
GuestStep GuestKernel::step(Tsc now) {
  if (irq_.active()) {
    if (auto s = irq_.step(now)) return last_ = *s;
    return last_ = irq_return(now);
  }
  // A spin a VM exit cut short resumes unless another CPU's store may have
  // ended it meanwhile (then its owner re-checks the condition).
  const bool recheck = spin_recheck_;
  spin_recheck_ = false;
  // An interrupt that set need_resched for a Normal task cut a user-mode step:
  // the return to user mode schedules, and the rest of the step runs when
  // the task is picked again.
  if (has_resume_ && need_resched_ && !irqs_off_ && fair_.curr() != nullptr &&
      resume_.kind == GuestStep::Kind::Run && resume_.stage == Stage::GuestUser &&
      !resume_.pause_loop) {
    has_resume_ = false;
    current_->pending_ = resume_;
  }
  if (has_resume_) {
    has_resume_ = false;
    // (The haltpoll poll is such a spin too, with a time limit.)
    if (!(recheck && (resume_.kind == GuestStep::Kind::Idle || resume_.pause_loop ||
                      resume_.stage == Stage::GuestHaltPoll)))
      return last_ = resume_;
  }
  tick_.boot(now);  // the first step: the tick and the watchdogs start
  if (!kq_.empty()) {
    last_ = kq_.front();
    kq_.pop_front();
    return last_;
  }
  // Kernel work (remote wake-ups, cross calls) runs with preemption off:
  // before a pending schedule().
  while (!work_.empty()) {
    if (auto s = work_.front()->next(*this, now)) return last_ = *s;
    work_.pop_front();
    if (!kq_.empty()) return step(now);
  }
  if (recheck && need_resched_ && current_ == nullptr && idle_.polls()) {
    // The polling idle loop saw the waker's TIF_NEED_RESCHED store.
    if (idle_.haltpoll_polling()) idle_.poll_done(now, true);
    return last_ = GuestStep::run(Stage::GuestIdle, costs_.cacheline_transfer(rng_));
  }
  if (idle_.haltpoll_polling() && need_resched_)  // woken on this CPU
    idle_.poll_done(now, true);
  // No schedule() inside a spin_lock_irqsave() section (preemption is off):
  // the reschedule waits for local_irq_restore().
  if (need_resched_ && !irqs_off_) {
    if (fair_.curr() != nullptr && !current_->pending_) {
      // A Normal task in kernel code is not preempted (PREEMPT_NONE /
      // VOLUNTARY guest): it runs on, and the switch happens before its
      // next user-mode step (exit_to_usermode_loop()), or when it sleeps.
      GuestTask* self = current_;
      const GuestStep s = self->run(*this, now);
      if (current_ != self || current_blocked_ || !need_resched_ || irqs_off_ ||
          s.kind != GuestStep::Kind::Run || s.stage != Stage::GuestUser || s.pause_loop)
        return last_ = s;
      self->pending_ = s;
    }
    need_resched_ = false;
    if (current_ == nullptr && cfg_.hz && !tick_.running()) {
      // tick_nohz_idle_exit(): restart the tick before schedule_idle().
      need_resched_ = true;
      tick_.start(now);  // queues the clockevent write, which follows this step
      return last_ = GuestStep::run(Stage::GuestSyscall, costs_.nohz_restart(rng_));
    }
    fair_.update_curr(now);  // put_prev_task_fair()
    if (current_ && !current_blocked_) runqueue_.push_back(current_);
    if (current_ && current_blocked_) current_->on_rq_ = false;  // deactivate_task()
    GuestTask* next = pick_next(now);
    if (next != current_) {
      if (current_ && next && current_->fair() && next->fair()) ++fair_.stats().switches;
      current_ = next;
      current_blocked_ = false;
      return last_ = GuestStep::run(Stage::GuestContextSwitch, costs_.context_switch(rng_));
    }
  }
  if (current_ == nullptr) return last_ = idle_.step(now);
  if (current_->pending_) {
    const GuestStep s = *current_->pending_;
    current_->pending_.reset();
    return last_ = s;
  }
  return last_ = current_->run(*this, now);
}

// A VM exit cut the step in flight short: continue it after the exit (an
// interrupt delivered on entry runs first).
void GuestKernel::suspend(Tsc remaining) {
  if (remaining == 0) return;
  if (irq_.active()) {
    irq_.suspend(last_.remainder(remaining));
    return;
  }
  resume_ = last_.remainder(remaining);
  has_resume_ = true;
}

void GuestKernel::deliver_interrupt(std::uint8_t vector, Tsc now) {
  // The interrupted step (if any) was saved by suspend(); it resumes after
  // the handler unless a reschedule switches away from it.
  idle_.interrupt(vector, now);
  irq_.enter(vector);
}

// The handler returned. A reschedule preempts the idle loop (its endless
// resume is dropped); a task's interrupted step finishes first (no kernel
// preemption inside a step).
GuestStep GuestKernel::irq_return(Tsc now) {
  if (need_resched_ && has_resume_ &&
      (resume_.kind == GuestStep::Kind::Idle || resume_.stage == Stage::GuestHaltPoll))
    has_resume_ = false;
  // ack_APIC_irq(): no exit. With APICv the EOI is virtualized; without it
  // a Linux guest on KVM uses PV EOI (KVM_FEATURE_PV_EOI, v3.6+:
  // kvm_guest_apic_eoi_write() clears the flag KVM set at injection by
  // apic_sync_pv_eoi_to_guest() and skips the x2APIC EOI WRMSR; KVM reads it
  // back at the next exit). When another vector was pending at the
  // injection KVM left PV EOI off: the EOI is a trapped x2APIC WRMSR.
  // Then a vector that became pending meanwhile.
  if (vcpu_.take_eoi_exit()) return GuestStep::wrmsr(MSR_X2APIC_EOI, 0);
  if (vcpu_.lapic().config().apicv)
    vcpu_.lapic().virtual_eoi();
  else
    vcpu_.lapic().pv_eoi();
  if (vcpu_.guest_irq_enabled(now))  // IRET: no APICv, the window exit
    return GuestStep::exit_with(ExitReason::INTERRUPT_WINDOW, 0, 0);
  return step(now);
}

// local_irq_restore() takes a vector that became pending (with APICv at
// once; without, through the interrupt-window exit, the step it returns).
std::optional<GuestStep> GuestKernel::local_irq_restore(Tsc now) {
  irqs_off_ = false;
  if (vcpu_.guest_irq_enabled(now)) return GuestStep::exit_with(ExitReason::INTERRUPT_WINDOW, 0, 0);
  return std::nullopt;
}

void GuestKernel::block_current() {
  current_blocked_ = true;
  need_resched_ = true;
}

void GuestKernel::wake_up(GuestTask* t) {
  GuestKernel* target = smp_ ? smp_->select_task_rq(*t, *this) : this;
  if (target == this) {
    wake_up_local(t);
    return;
  }
  queue_remote_wake(t);
}

// try_to_wake_up() on this CPU's own run queue.
void GuestKernel::wake_up_local(GuestTask* t) {
  if (t->on_rq_) {
    // ttwu_runnable(): already runnable; woken before its schedule()
    // dequeued it, it stays (no lost wake-up).
    if (t == current_ && current_blocked_) current_blocked_ = false;
    need_resched_ = true;
    return;
  }
  enqueue_woken(t);
  fair_.check_preempt_curr(t, now_tsc());  // an RT task preempts the idle loop / SCHED_OTHER
}

// ttwu_do_activate() -> enqueue_task(): a Normal task coming from another
// CPU keeps its vruntime relative to min_vruntime (migrate_task_rq_fair()),
// and a sleeper is placed with its credit.
void GuestKernel::enqueue_woken(GuestTask* t) {
  if (t->fair()) {
    if (t->cpu_ && t->cpu_ != this)
      t->vruntime_ += fair_.min_vruntime() - t->cpu_->fair_.min_vruntime();
    fair_.place_entity(t, false);
  }
  t->cpu_ = this;
  t->on_rq_ = true;
  runqueue_.push_back(t);
}

// The part of try_to_wake_up() the waker does on this (the wakee's) CPU's
// run queue, v4.x with a shared LLC (ttwu_queue() -> ttwu_do_activate()
// under the remote rq lock, then check_preempt_curr() -> resched_curr()):
// the wakee preempts what runs here. resched_curr() sends no IPI when
// need_resched is already set, nor to an idle loop that polls
// (set_nr_and_not_polling(): TIF_POLLING_NRFLAG, idle=poll), which sees
// the flag itself. (Since v5.8 a wake-up onto an idle CPU may go through
// the wakelist as a CALL_FUNCTION_SINGLE IPI instead: not modelled.)
bool GuestKernel::ttwu_remote_enqueue(GuestTask* t) {
  if (t->on_rq_) {
    if (t == t->cpu_->current_ && t->cpu_->current_blocked_) t->cpu_->current_blocked_ = false;
    return false;
  }
  enqueue_woken(t);
  if (need_resched_) return false;
  fair_.check_preempt_curr(t, now_tsc());
  if (!need_resched_) return false;
  if (current_ == nullptr && idle_.polls()) {
    ++smp_->stats().wakeups_polling;
    remote_store();
    return false;
  }
  return true;
}

void GuestKernel::hrtimer_start(GuestHrtimer* t, std::uint64_t expires) {
  clockevent_.start(t, expires);
}

void GuestKernel::remote_store() {
  spin_recheck_ = true;
  vcpu_.guest_store_seen();
}

void GuestKernel::queue_work(std::unique_ptr<KernelWork> w) {
  if (irq_.active())
    irq_.queue_work(std::move(w));
  else
    work_.push_back(std::move(w));
}

void GuestKernel::set_smp(std::shared_ptr<GuestSmp> smp, int cpu) {
  smp_ = std::move(smp);
  cpu_ = cpu;
}

}  // namespace kvmsim
