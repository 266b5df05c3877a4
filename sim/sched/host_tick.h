// Periodic pinned host hrtimers: PeriodicHostHrtimer does one cost of work in
// the interrupt and re-arms itself one period on from the expiry that fired
// (hrtimer_forward(), or mod_timer() from a wheel timer's function). The
// host kernel's own per-CPU timers (host_kernel_timers.cpp) are plain ones.
//
// HostTick is the host tick on a pCPU (tick_sched_timer), which also runs
// scheduler_tick(). Its rate is Host::tick_hz_of(): CONFIG_HZ (host.hz) on a
// stock pCPU, the 1 Hz residual tick of nohz_full on an isolated one, or
// host.tick_hz.
#pragma once

#include <string>
#include <utility>

#include "sim/core/dist.h"
#include "sim/sched/pcpu.h"

namespace kvmsim {

class PeriodicHostHrtimer : public HostHrtimer {
 public:
  PeriodicHostHrtimer(std::string name, Tsc period, Sampler work)
      : HostHrtimer(std::move(name)), period_(period), work_(std::move(work)) {}
  Tsc fn(Pcpu& cpu, Tsc now) final {
    cpu.hrtimers().start(this, expires() + period_);
    on_expiry(cpu, now);
    return work_(cpu.rng());
  }

 protected:
  // What the timer function does besides its cost, before the cost's draw.
  virtual void on_expiry(Pcpu& /*cpu*/, Tsc /*now*/) {}

 private:
  Tsc period_;
  Sampler work_;
};

class HostTick final : public PeriodicHostHrtimer {
 public:
  HostTick(Tsc period, Sampler cost)
      : PeriodicHostHrtimer("tick_sched_timer", period, std::move(cost)) {}

 private:
  // task_tick_fair(): is the current slice used up?
  void on_expiry(Pcpu& cpu, Tsc now) override { cpu.scheduler_tick(now); }
};

}  // namespace kvmsim
