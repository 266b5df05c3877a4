// The guest's idle loop (kernel/sched/idle.c: do_idle(), default_idle(),
// tick_nohz_idle_stop_tick()) and the cpuidle-haltpoll driver's step
// (sim/guest/kernel/haltpoll.h).
#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

// The idle task: idle=poll spins with the tick running; default_idle stops
// the tick when nothing is due within a tick (tick_nohz_idle_stop_tick,
// unless nohz=off) and executes HLT; with cpuidle-haltpoll the governor may
// poll first.
GuestStep GuestKernel::idle_step(Tsc now) {
  if (!cfg_.idle_hlt) {
    // Before v4.17 the polling loop is entered through tick_nohz_idle_enter()
    // too (cpu_idle_loop() of v4.9): tick_nohz_stop_sched_tick() keeps the
    // tick only when the next timer is due before the next tick boundary.
    if (cfg_.idle_poll_stops_tick && tick_.stop_for_idle_poll())
      return GuestStep::run(Stage::GuestIdle, costs_.nohz_stop(rng_));
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
    if (tick_.stop_for_idle(now)) {
      irq_in_idle_ = false;
      return GuestStep::run(Stage::GuestIdle, costs_.nohz_stop(rng_));  // HLT comes next
    }
    if (irq_in_idle_ && !tick_.running()) {
      // Back in idle after an interrupt that woke nothing, tick stopped:
      // the same next-event evaluation, the stop's work of the same kind
      // (its reprogram happens only if the next event moved).
      irq_in_idle_ = false;
      return GuestStep::run(Stage::GuestIdle, costs_.nohz_stop(rng_));
    }
  }
  irq_in_idle_ = false;
  if (haltpoll_.enabled()) return haltpoll_idle_step(now);
  ++idle_stats_.hlt;
  in_hlt_ = true;
  idle_enter_ns_ = guest_ns(now);
  return GuestStep::hlt();
}

// The cpuidle-haltpoll driver's idle step: poll for the governor's limit, or
// HLT (default_idle()). An interrupt that wakes nothing returns to the loop.
GuestStep GuestKernel::haltpoll_idle_step(Tsc now) {
  if (haltpoll_.polling()) haltpoll_done(now, false);  // the poll ran out its limit
  if (haltpoll_.select()) {
    idle_enter_ns_ = guest_ns(now);
    const std::uint64_t cycles = guest_tsc_khz_ * haltpoll_.limit_ns() / 1000000;
    return GuestStep::run(Stage::GuestHaltPoll, guest_cycles_to_host(cycles));
  }
  ++idle_stats_.hlt;
  in_hlt_ = true;
  idle_enter_ns_ = guest_ns(now);
  return GuestStep::hlt();
}

}  // namespace kvmsim
