#include "sim/guest/kernel/guest_tick.h"

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

GuestTick::GuestTick(GuestKernel& k, const GuestConfig& cfg, std::uint64_t guest_tsc_khz)
    : k_(k), cfg_(cfg) {
  if (cfg_.hz) {
    tick_.period = guest_tsc_khz * 1000 / cfg_.hz;
    phase_ = boot_phase("tick", tick_.period);
  }
  if (cfg_.watchdog_s) watchdog_.period = guest_tsc_khz * 1000 * cfg_.watchdog_s;
  if (cfg_.clocksource_watchdog_ms)
    cs_watchdog_.period = guest_tsc_khz * cfg_.clocksource_watchdog_ms;
  cs_watchdog_.wheel = true;  // add_timer_on(): a timer-wheel timer
}

std::uint64_t GuestTick::boot_phase(const char* timer, std::uint64_t period) const {
  Vcpu& v = k_.vcpu_;
  Rng phase = v.ctx().stream("guest.vcpu" + std::to_string(v.id()) + "." + timer);
  return static_cast<std::uint64_t>(phase.uniform() * static_cast<double>(period));
}

void GuestTick::boot(Tsc now) {
  if (booted_ || !(cfg_.hz || cfg_.watchdog_s || cfg_.clocksource_watchdog_ms)) return;
  booted_ = true;
  if (cfg_.watchdog_s)
    k_.hrtimer_start(&watchdog_, k_.guest_tsc(now) + 1 + boot_phase("watchdog", watchdog_.period));
  if (cfg_.clocksource_watchdog_ms)  // a timer-wheel timer; its jiffy's wake-up as an hrtimer
    k_.hrtimer_start(&cs_watchdog_,
                     k_.guest_tsc(now) + 1 + boot_phase("cs_watchdog", cs_watchdog_.period));
  if (cfg_.hz) start(now);  // queues the first clockevent write
}

Tsc GuestTick::PeriodicTimer::fn(GuestKernel& k, Tsc now) {
  const std::uint64_t g = k.guest_tsc(now);
  while (expires <= g) expires += period;
  k.hrtimer_start(this, expires);
  Tsc cost = (k.costs().*cost_)(k.rng());
  const bool is_tick = this == &owner_.tick_;
  if (is_tick) ++owner_.stats_.ticks;
  // update_process_times() -> run_local_timers(): before v4.8 it raises
  // TIMER_SOFTIRQ on every tick (the pre-rework wheel is scanned from the
  // softirq); from v4.8 only when a wheel timer is due.
  if (is_tick && owner_.cfg_.tick_timer_softirq) k.irq_.raise_timer_softirq();
  if (is_tick) k.fair_.task_tick(now);  // scheduler_tick() -> task_tick_fair()
  if (wheel) {
    // A wheel timer runs from TIMER_SOFTIRQ. With the tick stopped in idle,
    // tick_nohz_stop_sched_tick() parked the tick's sched_timer at this
    // timer's jiffy, so the interrupt is tick_sched_timer() first
    // (tick_sched_handle() -> update_process_times() raises the softirq).
    k.irq_.raise_timer_softirq();
    if (!owner_.running_ && owner_.cfg_.hz) cost += k.costs_.tick(k.rng_);
  }
  return cost;
}

void GuestTick::start(Tsc now) {
  // The first tick boundary (phase_ + k * period) after now: restarts stay
  // on the same jiffy grid as the first start.
  const std::uint64_t g = k_.guest_tsc(now);
  std::uint64_t next = phase_;
  if (g >= phase_) next += ((g - phase_) / tick_.period + 1) * tick_.period;
  running_ = true;
  ++stats_.starts;
  k_.hrtimer_start(&tick_, next);
}

void GuestTick::stop() {
  if (running_) ++stats_.stops;
  running_ = false;
  k_.clockevent_.cancel(&tick_);
}

bool GuestTick::stop_for_idle_poll() {
  if (!running_ || !tick_.queued) return false;
  const std::uint64_t next_other = k_.clockevent_.next_expiry(&tick_);
  if (next_other != 0 && next_other <= tick_.expires) return false;
  stop();
  return true;
}

bool GuestTick::stop_for_idle(Tsc now) {
  if (!running_ || k_.clockevent_.wheel_due_by(k_.guest_tsc(now) + tick_.period)) return false;
  stop();
  return true;
}

}  // namespace kvmsim
