// The guest's hrtimers and clockevent (kernel/time/hrtimer.c, tick-sched.c,
// clockevents.c) on the LAPIC TSC-deadline timer (arch/x86/kernel/apic/apic.c:
// lapic_next_deadline(), lapic_timer_shutdown(), lapic_timer_set_oneshot()):
// hrtimer_start(), tick_program_event(), the periodic tick, the watchdogs.
#include "sim/guest/kernel/guest_kernel.h"

#include <algorithm>

namespace kvmsim {

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
  if (this == &k.tick_) k.fair_.task_tick(now);  // scheduler_tick() -> task_tick_fair()
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
  clockevent_.cancel(&tick_);
}

void GuestKernel::hrtimer_start(GuestHrtimer* t, std::uint64_t expires) {
  clockevent_.start(t, expires);
}

}  // namespace kvmsim
