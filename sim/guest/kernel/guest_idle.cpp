// The guest's idle loop (kernel/sched/idle.c: do_idle(), default_idle(),
// tick_nohz_idle_stop_tick()) and the cpuidle-haltpoll driver's step
// (sim/guest/kernel/haltpoll.h).
#include "sim/guest/kernel/guest_idle.h"

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

// The idle task: idle=poll spins with the tick running; default_idle stops
// the tick when nothing is due within a tick (tick_nohz_idle_stop_tick,
// unless nohz=off) and executes HLT; with cpuidle-haltpoll the governor may
// poll first.
GuestStep GuestIdle::step(Tsc now) {
  if (!cfg_.idle_hlt) {
    // Before v4.17 the polling loop is entered through tick_nohz_idle_enter()
    // too (cpu_idle_loop() of v4.9): tick_nohz_stop_sched_tick() keeps the
    // tick only when the next timer is due before the next tick boundary.
    if (cfg_.idle_poll_stops_tick && k_.tick_.stop_for_idle_poll())
      return GuestStep::run(Stage::GuestIdle, k_.costs_.nohz_stop(k_.rng_));
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
    if (k_.tick_.stop_for_idle(now)) {
      irq_in_idle_ = false;
      return GuestStep::run(Stage::GuestIdle, k_.costs_.nohz_stop(k_.rng_));  // HLT comes next
    }
    if (irq_in_idle_ && !k_.tick_.running()) {
      // Back in idle after an interrupt that woke nothing, tick stopped:
      // the same next-event evaluation, the stop's work of the same kind
      // (its reprogram happens only if the next event moved).
      irq_in_idle_ = false;
      return GuestStep::run(Stage::GuestIdle, k_.costs_.nohz_stop(k_.rng_));
    }
  }
  irq_in_idle_ = false;
  if (haltpoll_.enabled()) return haltpoll_step(now);
  return hlt(now);
}

// The cpuidle-haltpoll driver's idle step: poll for the governor's limit, or
// HLT (default_idle()). An interrupt that wakes nothing returns to the loop.
GuestStep GuestIdle::haltpoll_step(Tsc now) {
  if (haltpoll_.polling()) poll_done(now, false);  // the poll ran out its limit
  if (haltpoll_.select()) {
    idle_enter_ns_ = k_.guest_ns(now);
    const std::uint64_t cycles = k_.guest_tsc_khz_ * haltpoll_.limit_ns() / 1000000;
    return GuestStep::run(Stage::GuestHaltPoll, k_.guest_cycles_to_host(cycles));
  }
  return hlt(now);
}

GuestStep GuestIdle::hlt(Tsc now) {
  ++stats_.hlt;
  in_hlt_ = true;
  idle_enter_ns_ = k_.guest_ns(now);
  return GuestStep::hlt();
}

void GuestIdle::poll_done(Tsc now, bool hit) {
  haltpoll_.poll_done(k_.guest_ns(now) - idle_enter_ns_, hit);
}

void GuestIdle::interrupt(std::uint8_t vector, Tsc now) {
  timer_from_idle_ = vector == LOCAL_TIMER_VECTOR && (in_hlt_ || haltpoll_.polling());
  if (in_hlt_ || haltpoll_.polling()) irq_in_idle_ = true;
  if (in_hlt_) {
    // The halt ends: cpuidle's last_residency_ns -> haltpoll_reflect().
    in_hlt_ = false;
    if (haltpoll_.enabled()) haltpoll_.reflect(k_.guest_ns(now) - idle_enter_ns_);
  }
}

void GuestIdle::timer_interrupt(std::uint64_t gnow, std::uint64_t programmed) {
  if (timer_from_idle_ && programmed && gnow >= programmed) {
    // A timer woke the idle CPU: its deadline to hrtimer_interrupt().
    ++stats_.timer_wakeups;
    stats_.timer_wakeup_ns += (gnow - programmed) * 1000000 / k_.guest_tsc_khz_;
  }
  timer_from_idle_ = false;
}

}  // namespace kvmsim
