// The guest's periodic kernel timers on its hrtimer queue: the scheduler tick
// (kernel/time/tick-sched.c: tick_sched_timer(), and its NO_HZ_IDLE stop in
// tick_nohz_stop_sched_tick()), the softlockup watchdog (kernel/watchdog.c:
// watchdog_timer_fn()) and the clocksource watchdog (kernel/time/clocksource.c:
// clocksource_watchdog()). Each has a boot-time phase, so the tick's phase
// against a workload's timers is set once, as at boot.
#pragma once

#include <cstdint>

#include "sim/core/dist.h"
#include "sim/guest/kernel/guest_config.h"
#include "sim/guest/kernel/guest_task.h"

namespace kvmsim {

class GuestKernel;

class GuestTick {
 public:
  // Periods and phases from the guest's configuration (guest TSC at
  // `guest_tsc_khz`); the random phases come from `k`'s vCPU's streams.
  GuestTick(GuestKernel& k, const GuestConfig& cfg, std::uint64_t guest_tsc_khz);

  // The kernel's first step: start the watchdogs and the tick (their first
  // clockevent write follows). Later calls do nothing.
  void boot(Tsc now);
  // tick_nohz_restart_sched_tick(): re-arm the tick at the next boundary of
  // its boot-time jiffy grid.
  void start(Tsc now);
  // tick_nohz_stop_sched_tick(): cancel the tick's hrtimer.
  void stop();
  [[nodiscard]] bool running() const { return running_; }

  // What the tick did (for tests and views; not a metric).
  struct Stats {
    std::uint64_t ticks = 0;   // tick_sched_timer() runs
    std::uint64_t starts = 0;  // arms at boot and restarts (tick_nohz_restart_sched_tick())
    std::uint64_t stops = 0;   // NO_HZ_IDLE stops of a running tick
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

  // NO_HZ_IDLE decisions of the idle loop; each stops the tick (queuing the
  // clockevent write for the next timer) and returns true when it applies.
  // The idle=poll loop of guests before v4.17: stop unless another timer is
  // due before the next tick.
  bool stop_for_idle_poll();
  // High-res mode: the next event is the timer wheel's only, so stop unless a
  // wheel timer is due within a jiffy of `now`.
  bool stop_for_idle(Tsc now);

 private:
  // A kernel's own periodic hrtimer: its work, then hrtimer_forward() past now
  // by whole periods.
  class PeriodicTimer : public GuestHrtimer {
   public:
    PeriodicTimer(GuestTick& owner, Sampler GuestCosts::*cost) : owner_(owner), cost_(cost) {}
    Tsc fn(GuestKernel& k, Tsc now) override;
    std::uint64_t period = 0;  // guest TSC cycles

   private:
    GuestTick& owner_;
    Sampler GuestCosts::*cost_;
  };
  // A boot-time phase in [0, period) from its own random stream, so paired
  // runs see the same one.
  [[nodiscard]] std::uint64_t boot_phase(const char* timer, std::uint64_t period) const;

  GuestKernel& k_;
  const GuestConfig& cfg_;
  PeriodicTimer tick_{*this, &GuestCosts::tick};
  PeriodicTimer watchdog_{*this, &GuestCosts::watchdog};
  PeriodicTimer cs_watchdog_{*this, &GuestCosts::clocksource_watchdog};
  std::uint64_t phase_ = 0;  // guest TSC of a tick boundary (boot-time phase)
  bool running_ = false;
  bool booted_ = false;
  Stats stats_;
};

}  // namespace kvmsim
