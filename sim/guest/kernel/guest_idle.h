// The guest's idle task on one vCPU (kernel/sched/idle.c: do_idle(),
// default_idle(); arch/x86 idle=poll) with the cpuidle-haltpoll driver and
// governor (sim/guest/kernel/haltpoll.h): what the idle loop executes (HLT,
// a poll, or a spin), the NO_HZ_IDLE tick stop on the way in, and what an
// interrupt does to an idle CPU.
#pragma once

#include <cstdint>

#include "sim/core/time.h"
#include "sim/guest/kernel/guest_config.h"
#include "sim/guest/kernel/haltpoll.h"
#include "sim/vmx/guest_step.h"

namespace kvmsim {

class GuestKernel;

class GuestIdle {
 public:
  GuestIdle(GuestKernel& k, const GuestConfig& cfg) : k_(k), cfg_(cfg) {}

  // One pass of the idle loop: stop the tick, then HLT, a haltpoll poll,
  // or the idle=poll spin.
  GuestStep step(Tsc now);
  // The idle loop watches need_resched itself (TIF_POLLING_NRFLAG: idle=poll,
  // or haltpoll's poll state), so a waker sends no IPI.
  [[nodiscard]] bool polls() const { return !cfg_.idle_hlt || haltpoll_.polling(); }
  // haltpoll's poll state is on.
  [[nodiscard]] bool haltpoll_polling() const { return haltpoll_.polling(); }
  // poll_idle() returns at `now`: an event (`hit`) or the limit.
  void poll_done(Tsc now, bool hit);
  // An interrupt with `vector` arrives: an HLT ends (haltpoll_reflect()),
  // and the idle loop re-evaluates the tick when it comes back.
  void interrupt(std::uint8_t vector, Tsc now);
  // hrtimer_interrupt() at guest TSC `gnow`, the device's deadline
  // `programmed`: a timer that woke the idle CPU counts its wake-up latency.
  void timer_interrupt(std::uint64_t gnow, std::uint64_t programmed);

  [[nodiscard]] const GuestIdleStats& stats() const { return stats_; }
  [[nodiscard]] unsigned haltpoll_limit_ns() const { return haltpoll_.limit_ns(); }

 private:
  GuestStep haltpoll_step(Tsc now);
  GuestStep hlt(Tsc now);

  GuestKernel& k_;
  const GuestConfig& cfg_;
  bool in_hlt_ = false;              // HLT executed and no interrupt since
  bool timer_from_idle_ = false;     // the timer interrupt being handled found the CPU idle
  bool irq_in_idle_ = false;         // an interrupt ended the HLT; the loop re-evaluates the tick
  std::uint64_t idle_enter_ns_ = 0;  // guest ns when the HLT / poll began
  GuestIdleStats stats_;
  GuestHaltpoll haltpoll_{cfg_.haltpoll, stats_.haltpoll};
};

}  // namespace kvmsim
