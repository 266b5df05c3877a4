// The guest's hrtimer queue and its clockevent device (kernel/time/hrtimer.c,
// tick-oneshot.c, clockevents.c) on the LAPIC TSC-deadline timer
// (arch/x86/kernel/apic/apic.c: lapic_next_deadline(), lapic_timer_shutdown(),
// lapic_timer_set_oneshot()). A reprogram is a run of guest steps (the
// kernel's bookkeeping, then the WRMSRs) queued in the context that changed
// the earliest expiry: task context, or the interrupt handler.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/time.h"

namespace kvmsim {

class GuestKernel;
class GuestHrtimer;

class GuestClockevent {
 public:
  explicit GuestClockevent(GuestKernel& k) : k_(k) {}

  // hrtimer_start(): queue `t` (or move it) to expire at guest TSC `expires`;
  // tick_program_event() when the earliest expiry changed.
  void start(GuestHrtimer* t, std::uint64_t expires);
  // hrtimer_cancel() of a queued timer, then the same reprogram check.
  void cancel(GuestHrtimer* t);
  // hrtimer_interrupt(): the device fired at host time `now` (guest TSC
  // `gnow`) and the handler has spent `spent` cycles; run every timer expired
  // at `gnow` (their callbacks may re-queue; no reprogramming meanwhile),
  // again while the next expiry has passed by the time the pass ends (the
  // hang path after the third pass), then program the next expiry or shut
  // the device down. Returns the callbacks' extra cost.
  Tsc hrtimer_interrupt(std::uint64_t gnow, Tsc now, Tsc spent);
  // hrtimer_interrupt()'s attempts to program the next expiry ("We give it 3
  // attempts": two retries) before its hang path (kernel/time/hrtimer.c).
  static constexpr unsigned kHrtimerAttempts = 3;

  // The earliest expiry of the queued timers other than `except` (0: none).
  [[nodiscard]] std::uint64_t next_expiry(const GuestHrtimer* except = nullptr) const;
  // A timer-wheel timer is queued to expire at or before guest TSC `limit`.
  [[nodiscard]] bool wheel_due_by(std::uint64_t limit) const;
  // The TSC deadline last written (0: none, or shut down; kFired: it fired
  // and hrtimer_interrupt() has not reprogrammed yet).
  [[nodiscard]] std::uint64_t programmed() const { return programmed_; }
  static constexpr std::uint64_t kFired = ~std::uint64_t{0};

  // What the device was told (for tests and views; not a metric).
  struct Stats {
    std::uint64_t programs = 0;   // TSC-deadline writes (lapic_next_deadline())
    std::uint64_t shutdowns = 0;  // lapic_timer_shutdown() with the last timer gone
    std::uint64_t rearms = 0;     // lapic_timer_set_oneshot() after a shutdown
    std::uint64_t retries = 0;    // hrtimer_interrupt() passes after an -ETIME
    std::uint64_t hangs = 0;      // its hang path: a delay programmed instead
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  void program();                               // tick_program_event()
  void write_deadline(std::uint64_t earliest);  // the device write (0: shut down)

  GuestKernel& k_;
  std::vector<GuestHrtimer*> timers_;
  std::uint64_t programmed_ = 0;
  bool stopped_ = false;        // lapic_timer_shutdown() masked LVTT
  bool in_hrtirq_ = false;      // hrtimer_interrupt(): no reprogramming from callbacks
  bool hang_detected_ = false;  // the hang path's delay stays until its interrupt
  Stats stats_;
};

}  // namespace kvmsim
