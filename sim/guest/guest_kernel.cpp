#include "sim/guest/guest_kernel.h"

#include <algorithm>
#include <stdexcept>

#include "sim/core/context.h"
#include "sim/guest/guest_smp.h"

namespace kvmsim {

namespace {
// x2APIC MSRs of the LAPIC timer registers (APIC_BASE_MSR + reg >> 4).
constexpr std::uint32_t kMsrX2apicLvtt = 0x832;
constexpr std::uint32_t kMsrX2apicTmict = 0x838;
constexpr std::uint64_t kLvttMasked = 1u << 16;
constexpr std::uint64_t kLvttTscDeadline = 2u << 17;
}  // namespace

GuestKernel::GuestKernel(Vcpu& vcpu, GuestCosts costs, std::uint64_t guest_tsc_khz, GuestConfig cfg)
    : vcpu_(vcpu),
      costs_(std::move(costs)),
      cfg_(cfg),
      guest_tsc_khz_(guest_tsc_khz),
      rng_(vcpu.ctx().stream("guest.vcpu" + std::to_string(vcpu.id()))) {
  if (cfg_.hz) {
    // The tick's phase against a workload's timers is set at boot.
    tick_.period = guest_tsc_khz_ * 1000 / cfg_.hz;
    tick_phase_ = boot_phase("tick", tick_.period);
  }
  if (cfg_.watchdog_s) watchdog_.period = guest_tsc_khz_ * 1000 * cfg_.watchdog_s;
  if (cfg_.clocksource_watchdog_ms)
    cs_watchdog_.period = guest_tsc_khz_ * cfg_.clocksource_watchdog_ms;
  cs_watchdog_.wheel = true;  // add_timer_on(): a timer-wheel timer
}

std::uint64_t GuestKernel::boot_phase(const char* timer, std::uint64_t period) const {
  Rng phase = vcpu_.ctx().stream("guest.vcpu" + std::to_string(vcpu_.id()) + "." + timer);
  return static_cast<std::uint64_t>(phase.uniform() * static_cast<double>(period));
}

Tsc GuestKernel::PeriodicTimer::fn(GuestKernel& k, Tsc now) {
  const std::uint64_t g = k.guest_tsc(now);
  while (expires <= g) expires += period;
  k.hrtimer_start(this, expires);
  Tsc cost = (k.costs().*cost_)(k.rng());
  // update_process_times() -> run_local_timers(): before v4.8 it raises
  // TIMER_SOFTIRQ on every tick (the pre-rework wheel is scanned from the
  // softirq); from v4.8 only when a wheel timer is due.
  if (this == &k.tick_ && k.cfg_.tick_timer_softirq) k.softirq_pending_ = true;
  if (this == &k.tick_) k.task_tick_fair(now);  // scheduler_tick() -> task_tick_fair()
  if (wheel) {
    // A wheel timer runs from TIMER_SOFTIRQ. With the tick stopped in idle,
    // tick_nohz_stop_sched_tick() parked the tick's sched_timer at this
    // timer's jiffy, so the interrupt is tick_sched_timer() first
    // (tick_sched_handle() -> update_process_times() raises the softirq).
    k.softirq_pending_ = true;
    if (!k.tick_running_ && k.cfg_.hz) cost += k.costs_.tick(k.rng_);
  }
  return cost;
}

void GuestKernel::tick_start(Tsc now) {
  // The first tick boundary (tick_phase_ + k * period) after now: restarts
  // stay on the same jiffy grid as the first start.
  const std::uint64_t g = guest_tsc(now);
  std::uint64_t next = tick_phase_;
  if (g >= tick_phase_) next += ((g - tick_phase_) / tick_.period + 1) * tick_.period;
  tick_running_ = true;
  hrtimer_start(&tick_, next);
}

void GuestKernel::tick_stop() {
  tick_running_ = false;
  if (!tick_.queued) return;
  timers_.erase(std::find(timers_.begin(), timers_.end(), &tick_));
  tick_.queued = false;
  program_clockevent();
}

// The idle task: idle=poll spins with the tick running; default_idle stops
// the tick when nothing is due within a tick (tick_nohz_idle_stop_tick,
// unless nohz=off) and executes HLT; with cpuidle-haltpoll the governor may
// poll first.
GuestStep GuestKernel::idle_step(Tsc now) {
  if (!cfg_.idle_hlt) {
    // Before v4.17 the polling loop is entered through tick_nohz_idle_enter()
    // too (cpu_idle_loop() of v4.9): tick_nohz_stop_sched_tick() keeps the
    // tick only when the next timer is due before the next tick boundary.
    if (cfg_.idle_poll_stops_tick && tick_running_ && tick_.queued) {
      std::uint64_t next_other = 0;
      for (auto* t : timers_)
        if (t != &tick_ && (next_other == 0 || t->expires < next_other)) next_other = t->expires;
      if (next_other == 0 || next_other > tick_.expires) {
        tick_stop();  // queues the clockevent write for the next timer, if any
        return GuestStep::run(Stage::GuestIdle, costs_.nohz_stop(rng_));
      }
    }
    return GuestStep::idle();
  }
  if (cfg_.nohz && cfg_.hz) {
    // tick_nohz_stop_sched_tick() (v4.x: tick_nohz_idle_enter(), and again
    // from tick_nohz_irq_exit() after every interrupt in idle; v4.17+: the
    // idle loop's tick_nohz_idle_stop_tick() on every pass): the next event
    // is the timer wheel's and RCU's only, because with high-res timers
    // active hrtimer_get_next_event() returns KTIME_MAX (hrtimers program
    // the clockevent themselves). So the tick stops unless a wheel timer
    // is due within a jiffy, however close the next hrtimer is.
    bool wheel_due = false;
    if (tick_running_) {
      const std::uint64_t g = guest_tsc(now);
      for (auto* t : timers_)
        if (t->wheel && t->expires <= g + tick_.period) wheel_due = true;
    }
    if (tick_running_ && !wheel_due) {
      irq_in_idle_ = false;
      tick_stop();  // queues the clockevent write for the next timer, if any
      return GuestStep::run(Stage::GuestIdle, costs_.nohz_stop(rng_));  // HLT comes next
    }
    if (irq_in_idle_ && !tick_running_) {
      // Back in idle after an interrupt that woke nothing, tick stopped:
      // the same next-event evaluation, the stop's work of the same kind
      // (its reprogram happens only if the next event moved).
      irq_in_idle_ = false;
      return GuestStep::run(Stage::GuestIdle, costs_.nohz_stop(rng_));
    }
  }
  irq_in_idle_ = false;
  if (cfg_.haltpoll.max_ns) return haltpoll_idle_step(now);
  ++idle_stats_.hlt;
  in_hlt_ = true;
  idle_enter_ns_ = guest_ns(now);
  return GuestStep::hlt();
}

// haltpoll_select() (drivers/cpuidle/governors/haltpoll.c): poll (state 0)
// unless the limit is 0 or the last poll ran out its limit without an event,
// then HLT (state 1, default_idle()). The poll is poll_idle()
// (drivers/cpuidle/poll_state.c): need_resched with TIF_POLLING_NRFLAG set,
// so a waker on another CPU sends no IPI; an interrupt that wakes nothing
// returns to the loop.
GuestStep GuestKernel::haltpoll_idle_step(Tsc now) {
  if (polling_) haltpoll_poll_done(now, false);  // the poll ran out its limit
  const bool poll = poll_limit_ns_ != 0 && !(last_state_poll_ && poll_time_limit_);
  if (poll) {
    last_state_poll_ = true;
    poll_time_limit_ = false;
    polling_ = true;
    ++idle_stats_.polls;
    idle_enter_ns_ = guest_ns(now);
    const std::uint64_t cycles = guest_tsc_khz_ * poll_limit_ns_ / 1000000;
    return GuestStep::run(Stage::GuestHaltPoll, guest_cycles_to_host(cycles));
  }
  last_state_poll_ = false;
  ++idle_stats_.hlt;
  in_hlt_ = true;
  idle_enter_ns_ = guest_ns(now);
  return GuestStep::hlt();
}

// poll_idle() returns: an event (need_resched, `hit`) or the limit
// (dev->poll_time_limit). haltpoll_reflect() adjusts only after a halt.
void GuestKernel::haltpoll_poll_done(Tsc now, bool hit) {
  polling_ = false;
  idle_stats_.poll_ns += guest_ns(now) - idle_enter_ns_;
  if (hit) {
    ++idle_stats_.poll_hits;
  } else {
    ++idle_stats_.poll_timeouts;
    poll_time_limit_ = true;
  }
}

// adjust_poll_limit() after a halt of block_ns: grow (times grow, at least
// grow_start, at most guest_halt_poll_ns) when the halt outlasted the limit
// but not the maximum; shrink (divide, 0 = reset) when it outlasted the
// maximum. Unlike the host's rule there is no floor at grow_start.
void GuestKernel::adjust_poll_limit(std::uint64_t block_ns) {
  const auto& hp = cfg_.haltpoll;
  if (block_ns > poll_limit_ns_ && block_ns <= hp.max_ns) {
    std::uint64_t val = std::uint64_t{poll_limit_ns_} * hp.grow;
    if (val < hp.grow_start) val = hp.grow_start;
    if (val > hp.max_ns) val = hp.max_ns;
    if (val != poll_limit_ns_) ++idle_stats_.grows;
    poll_limit_ns_ = static_cast<unsigned>(val);
  } else if (block_ns > hp.max_ns && hp.allow_shrink) {
    const unsigned val = hp.shrink == 0 ? 0 : poll_limit_ns_ / hp.shrink;
    if (val != poll_limit_ns_) ++idle_stats_.shrinks;
    poll_limit_ns_ = val;
  }
}

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
  if (t->fair()) place_entity(t, true);
  runqueue_.push_back(t);
  need_resched_ = current_ == nullptr;
}

// pick_next_task(): the RT class first (Fifo tasks in queue order), then
// CFS's leftmost entity (smallest vruntime; queue order breaks ties).
GuestTask* GuestKernel::pick_next(Tsc now) {
  if (runqueue_.empty()) return nullptr;
  auto it = std::find_if(runqueue_.begin(), runqueue_.end(), [](auto* t) { return !t->fair(); });
  if (it == runqueue_.end()) it = std::find(runqueue_.begin(), runqueue_.end(), leftmost_fair());
  GuestTask* t = *it;
  runqueue_.erase(it);
  if (t->fair()) set_next_entity(t, now);
  return t;
}

// --- CFS for Normal tasks ---------------------------------------------------

// rq->clock_task: the guest clock less the steal time the host last wrote to
// the steal-time area (update_rq_clock_task() with paravirt steal accounting).
std::uint64_t GuestKernel::clock_task_ns(Tsc now) const {
  const std::uint64_t ns = guest_ns(now);
  if (!cfg_.fair.steal_accounting) return ns;
  const auto steal = static_cast<std::uint64_t>(
      static_cast<u128>(vcpu_.steal_time().stats().steal_cycles) * 1000000u / guest_tsc_khz_);
  return steal < ns ? ns - steal : 0;
}

unsigned GuestKernel::fair_factor() const {
  const int n = std::min(smp_ ? smp_->nr_cpus() : 1, 8);
  unsigned log = 0;
  while ((2 << log) <= n) ++log;
  return 1 + log;
}

unsigned GuestKernel::nr_fair() const {
  unsigned n = curr_fair() != nullptr ? 1 : 0;
  for (auto* t : runqueue_) n += t->fair() ? 1 : 0;
  return n;
}

GuestTask* GuestKernel::curr_fair() const {
  return current_ != nullptr && !current_blocked_ && current_->fair() ? current_ : nullptr;
}

GuestTask* GuestKernel::leftmost_fair() const {
  GuestTask* left = nullptr;
  for (auto* t : runqueue_)
    if (t->fair() && (left == nullptr || t->vruntime_ < left->vruntime_)) left = t;
  return left;
}

// sched_slice() for a nice-0 entity: __sched_period(nr) / nr, the period
// being the latency up to sched_nr_latency tasks and nr x min_granularity above.
std::uint64_t GuestKernel::sched_slice_ns(unsigned nr) const {
  const std::uint64_t f = fair_factor();
  const std::uint64_t latency = cfg_.fair.latency_ns * f;
  const std::uint64_t min_gran = cfg_.fair.min_granularity_ns * f;
  const std::uint64_t nr_latency =
      (cfg_.fair.latency_ns + cfg_.fair.min_granularity_ns - 1) / cfg_.fair.min_granularity_ns;
  if (nr == 0) nr = 1;
  const std::uint64_t period = nr > nr_latency ? nr * min_gran : latency;
  return period / nr;
}

// update_curr(): the running Normal task's runtime since exec_start goes
// into sum_exec_runtime and (nice 0) one-for-one into its vruntime.
void GuestKernel::update_curr(Tsc now) {
  if (!current_ || !current_->fair()) return;
  const std::uint64_t t = clock_task_ns(now);
  if (t <= current_->exec_start_) return;
  const std::uint64_t d = t - current_->exec_start_;
  current_->exec_start_ = t;
  current_->sum_exec_ += d;
  current_->vruntime_ += static_cast<std::int64_t>(d);
  update_min_vruntime();
}

// update_min_vruntime(): monotonic, the smaller of curr's and the leftmost's.
void GuestKernel::update_min_vruntime() {
  const GuestTask* curr = curr_fair();
  const GuestTask* left = leftmost_fair();
  if (curr == nullptr && left == nullptr) return;
  std::int64_t v = curr != nullptr ? curr->vruntime_ : left->vruntime_;
  if (left != nullptr) v = std::min(v, left->vruntime_);
  min_vruntime_ = std::max(min_vruntime_, v);
}

// place_entity(): a new task starts a virtual slice after min_vruntime
// (START_DEBIT); a waking sleeper gets at most half a latency of credit
// (GENTLE_FAIR_SLEEPERS), never more than it had.
void GuestKernel::place_entity(GuestTask* t, bool initial) {
  std::int64_t v = min_vruntime_;
  if (initial) {
    t->vruntime_ = v + static_cast<std::int64_t>(sched_slice_ns(nr_fair() + 1));
    return;
  }
  v -= static_cast<std::int64_t>(cfg_.fair.latency_ns * fair_factor() / 2);
  t->vruntime_ = std::max(t->vruntime_, v);
}

// set_next_entity(): the slice is counted from here.
void GuestKernel::set_next_entity(GuestTask* t, Tsc now) {
  t->exec_start_ = clock_task_ns(now);
  t->prev_sum_exec_ = t->sum_exec_;
}

// check_preempt_tick() (v4.16): resched when curr ran its ideal slice, or
// (after min_granularity) when it is ahead of the leftmost by a slice.
void GuestKernel::task_tick_fair(Tsc now) {
  if (curr_fair() == nullptr) return;
  update_curr(now);
  const unsigned nr = nr_fair();
  if (nr < 2 || need_resched_) return;
  const std::uint64_t ideal = sched_slice_ns(nr);
  const std::uint64_t delta_exec = current_->sum_exec_ - current_->prev_sum_exec_;
  bool resched = delta_exec > ideal;
  if (!resched && delta_exec >= cfg_.fair.min_granularity_ns * fair_factor()) {
    const GuestTask* left = leftmost_fair();
    resched = left && current_->vruntime_ - left->vruntime_ > static_cast<std::int64_t>(ideal);
  }
  if (resched) {
    need_resched_ = true;
    ++fair_stats_.tick_preemptions;
  }
}

// check_preempt_curr() for a task just queued here: an RT wakee or any task
// on an idle CPU preempts; a Normal wakee preempts a Normal curr only when
// curr's vruntime is ahead by more than the wakeup granularity
// (wakeup_preempt_entity()); nothing preempts an RT curr.
void GuestKernel::check_preempt_curr(GuestTask* woken, Tsc now) {
  if (!woken->fair() || current_ == nullptr || current_blocked_) {
    need_resched_ = true;
    return;
  }
  if (!current_->fair() || need_resched_) return;
  update_curr(now);
  const auto gran = static_cast<std::int64_t>(cfg_.fair.wakeup_granularity_ns * fair_factor());
  if (current_->vruntime_ - woken->vruntime_ > gran) {
    need_resched_ = true;
    ++fair_stats_.wakeup_preemptions;
  }
}

// Order: an interrupt handler in progress, then the step a VM exit cut short,
// queued kernel work, a pending context switch, and finally the current task
// (or the idle loop).
GuestStep GuestKernel::step(Tsc now) {
  if (in_irq_) {
    if (has_irq_resume_) {
      has_irq_resume_ = false;
      return last_ = irq_resume_;
    }
    return last_ = irq_step(now);
  }
  // A spin a VM exit cut short resumes unless another CPU's store may have
  // ended it meanwhile (then its owner re-checks the condition).
  const bool recheck = spin_recheck_;
  spin_recheck_ = false;
  // An interrupt that set need_resched for a Normal task cut a user-mode step:
  // the return to user mode schedules, and the rest of the step runs when
  // the task is picked again.
  if (has_resume_ && need_resched_ && !irqs_off_ && curr_fair() != nullptr &&
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
  if (!tick_started_ && (cfg_.hz || cfg_.watchdog_s || cfg_.clocksource_watchdog_ms)) {
    tick_started_ = true;
    if (cfg_.watchdog_s)
      hrtimer_start(&watchdog_, guest_tsc(now) + 1 + boot_phase("watchdog", watchdog_.period));
    if (cfg_.clocksource_watchdog_ms)  // a timer-wheel timer; its jiffy's wake-up as an hrtimer
      hrtimer_start(&cs_watchdog_,
                    guest_tsc(now) + 1 + boot_phase("cs_watchdog", cs_watchdog_.period));
    if (cfg_.hz) tick_start(now);  // queues the first clockevent write
  }
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
  if (recheck && need_resched_ && current_ == nullptr && (!cfg_.idle_hlt || polling_)) {
    // The polling idle loop saw the waker's TIF_NEED_RESCHED store.
    if (polling_) haltpoll_poll_done(now, true);
    return last_ = GuestStep::run(Stage::GuestIdle, costs_.cacheline_transfer(rng_));
  }
  if (polling_ && need_resched_) haltpoll_poll_done(now, true);  // woken on this CPU
  // No schedule() inside a spin_lock_irqsave() section (preemption is off):
  // the reschedule waits for local_irq_restore().
  if (need_resched_ && !irqs_off_) {
    if (curr_fair() != nullptr && !current_->pending_) {
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
    if (current_ == nullptr && cfg_.hz && !tick_running_) {
      // tick_nohz_idle_exit(): restart the tick before schedule_idle().
      need_resched_ = true;
      tick_start(now);  // queues the clockevent write, which follows this step
      return last_ = GuestStep::run(Stage::GuestSyscall, costs_.nohz_restart(rng_));
    }
    update_curr(now);  // put_prev_task_fair()
    if (current_ && !current_blocked_) runqueue_.push_back(current_);
    if (current_ && current_blocked_) current_->on_rq_ = false;  // deactivate_task()
    GuestTask* next = pick_next(now);
    if (next != current_) {
      if (current_ && next && current_->fair() && next->fair()) ++fair_stats_.switches;
      current_ = next;
      current_blocked_ = false;
      return last_ = GuestStep::run(Stage::GuestContextSwitch, costs_.context_switch(rng_));
    }
  }
  if (current_ == nullptr) return last_ = idle_step(now);
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
  (in_irq_ ? irq_resume_ : resume_) = last_.remainder(remaining);
  (in_irq_ ? has_irq_resume_ : has_resume_) = true;
}

void GuestKernel::hrtimer_start(GuestHrtimer* t, std::uint64_t expires) {
  t->expires = expires;
  if (!t->queued) {
    timers_.push_back(t);
    t->queued = true;
  }
  program_clockevent();
}

// tick_program_event(): write the TSC deadline only when the earliest expiry
// changed (the kernel skips reprogramming a later event).
void GuestKernel::program_clockevent() {
  std::uint64_t earliest = 0;
  for (auto* t : timers_)
    if (earliest == 0 || t->expires < earliest) earliest = t->expires;
  if (earliest == programmed_ || in_hrtirq_) return;
  programmed_ = earliest;
  auto& q = in_irq_ ? irq_q_ : kq_;
  using S = GuestConfig::Shutdown;
  if (earliest == 0) {
    // No timer left (the tick was stopped): clockevents_switch_state(
    // ONESHOT_STOPPED) -> lapic_timer_shutdown(), per guest era.
    if (cfg_.clockevent_shutdown == S::None) return;  // the stale deadline stays armed
    clockevent_stopped_ = true;
    q.push_back(GuestStep::run(Stage::GuestSyscall, costs_.clockevent_program(rng_)));
    q.push_back(
        GuestStep::wrmsr(kMsrX2apicLvtt, kLvttMasked | kLvttTscDeadline | LOCAL_TIMER_VECTOR));
    if (cfg_.clockevent_shutdown == S::LvttDeadline0)
      q.push_back(GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, 0));
    q.push_back(GuestStep::wrmsr(kMsrX2apicTmict, 0));
    return;
  }
  q.push_back(GuestStep::run(Stage::GuestSyscall, costs_.clockevent_program(rng_)));
  if (clockevent_stopped_) {
    // tick_program_event() on a stopped device: clockevents_switch_state(
    // ONESHOT) -> lapic_timer_set_oneshot() unmasks LVTT first.
    clockevent_stopped_ = false;
    q.push_back(GuestStep::wrmsr(kMsrX2apicLvtt, kLvttTscDeadline | LOCAL_TIMER_VECTOR));
  }
  q.push_back(GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, earliest));
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
  check_preempt_curr(t, now_tsc());  // an RT task preempts the idle loop / SCHED_OTHER
}

// ttwu_do_activate() -> enqueue_task(): a Normal task coming from another
// CPU keeps its vruntime relative to min_vruntime (migrate_task_rq_fair()),
// and a sleeper is placed with its credit.
void GuestKernel::enqueue_woken(GuestTask* t) {
  if (t->fair()) {
    if (t->cpu_ && t->cpu_ != this) t->vruntime_ += min_vruntime_ - t->cpu_->min_vruntime_;
    place_entity(t, false);
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
  check_preempt_curr(t, now_tsc());
  if (!need_resched_) return false;
  if (current_ == nullptr && (!cfg_.idle_hlt || polling_)) {
    ++smp_->stats().wakeups_polling;
    remote_store();
    return false;
  }
  return true;
}

void GuestKernel::local_irq_restore(Tsc now) {
  irqs_off_ = false;
  vcpu_.deliver_pending_interrupt(now);
}

void GuestKernel::remote_store() {
  spin_recheck_ = true;
  vcpu_.guest_store_seen();
}

void GuestKernel::queue_work(std::unique_ptr<KernelWork> w) {
  (in_irq_ ? irq_work_ : work_).push_back(std::move(w));
}

void GuestKernel::set_smp(std::shared_ptr<GuestSmp> smp, int cpu) {
  smp_ = std::move(smp);
  cpu_ = cpu;
}

void GuestKernel::deliver_interrupt(std::uint8_t vector, Tsc now) {
  // The interrupted step (if any) was saved by suspend(); it resumes after
  // the handler unless a reschedule switches away from it.
  timer_from_idle_ = vector == LOCAL_TIMER_VECTOR && (in_hlt_ || polling_);
  if (in_hlt_ || polling_) irq_in_idle_ = true;
  if (in_hlt_) {
    // The halt ends: cpuidle's last_residency_ns -> haltpoll_reflect().
    in_hlt_ = false;
    if (cfg_.haltpoll.max_ns) adjust_poll_limit(guest_ns(now) - idle_enter_ns_);
  }
  in_irq_ = true;
  irq_vector_ = vector;
  irq_state_ = Irq::Entry;
}

// The LAPIC timer interrupt: entry, hrtimer_interrupt() running every expired
// timer and reprogramming the next one, irq_exit().
GuestStep GuestKernel::irq_step(Tsc now) {
  if (!irq_q_.empty()) {
    GuestStep s = irq_q_.front();
    irq_q_.pop_front();
    return s;
  }
  while (!irq_work_.empty()) {
    if (auto s = irq_work_.front()->next(*this, now)) return *s;
    irq_work_.pop_front();
    if (!irq_q_.empty()) return irq_step(now);
  }
  switch (irq_state_) {
    case Irq::Entry:
      irq_state_ = Irq::Handler;
      return GuestStep::run(Stage::GuestIrqEntry, costs_.irq_entry(rng_));
    case Irq::Handler: {
      irq_state_ = Irq::Exit;
      // The LAPIC timer and the SMP IPIs have handler bodies; another
      // vector goes from entry straight to irq_exit().
      if (irq_vector_ != LOCAL_TIMER_VECTOR) return irq_handler_ipi(now);
      Tsc cost = costs_.hrtimer_interrupt(rng_);
      const std::uint64_t gnow = guest_tsc(now);
      if (timer_from_idle_ && programmed_ && gnow >= programmed_) {
        // A timer woke the idle CPU: its deadline to hrtimer_interrupt().
        ++idle_stats_.timer_wakeups;
        idle_stats_.timer_wakeup_ns += (gnow - programmed_) * 1000000 / guest_tsc_khz_;
      }
      timer_from_idle_ = false;
      programmed_ = kDeadlineFired;  // the clockevent is unarmed, but not shut down
      in_hrtirq_ = true;
      for (;;) {
        auto it = std::min_element(timers_.begin(), timers_.end(),
                                   [](auto* a, auto* b) { return a->expires < b->expires; });
        if (it == timers_.end() || (*it)->expires > gnow) break;
        GuestHrtimer* t = *it;
        timers_.erase(it);
        t->queued = false;
        cost += t->fn(*this, now);
      }
      in_hrtirq_ = false;
      program_clockevent();  // queues WRMSR steps on irq_q_ if a timer is left
      return GuestStep::run(Stage::GuestHrtimerInterrupt, cost);
    }
    case Irq::Exit:
      irq_state_ = Irq::None;
      if (softirq_pending_) {
        // invoke_softirq() -> __do_softirq(): run_timer_softirq().
        softirq_pending_ = false;
        return GuestStep::run(Stage::GuestIrqExit,
                              costs_.irq_exit(rng_) + costs_.timer_softirq(rng_));
      }
      return GuestStep::run(Stage::GuestIrqExit, costs_.irq_exit(rng_));
    case Irq::None:
      break;
  }
  // Handler done. A reschedule preempts the idle loop (its endless resume is
  // dropped); a task's interrupted step finishes first (no kernel preemption
  // inside a step).
  in_irq_ = false;
  if (need_resched_ && has_resume_ &&
      (resume_.kind == GuestStep::Kind::Idle || resume_.stage == Stage::GuestHaltPoll))
    has_resume_ = false;
  // ack_APIC_irq(): no exit. With APICv the EOI is virtualized; without it
  // a Linux guest on KVM uses PV EOI (KVM_FEATURE_PV_EOI, v3.6+:
  // kvm_guest_apic_eoi_write() clears the flag KVM set at injection by
  // apic_sync_pv_eoi_to_guest() and skips the x2APIC EOI WRMSR; KVM reads it
  // back at the next exit). Not modelled: the EOI that does exit when
  // another vector was pending at injection (KVM then leaves PV EOI off).
  // Then a vector that became pending meanwhile.
  vcpu_.lapic().virtual_eoi();
  vcpu_.deliver_pending_interrupt(now);
  return step(now);
}

}  // namespace kvmsim
