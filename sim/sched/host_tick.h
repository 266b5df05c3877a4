// The host tick on a pCPU (tick_sched_timer): a periodic host hrtimer whose
// work is one cost, forwarded by whole periods; it runs scheduler_tick().
// Its rate is Host::tick_hz_of(): CONFIG_HZ (host.hz) on a stock pCPU, the
// 1 Hz residual tick of nohz_full on an isolated one, or host.tick_hz.
#pragma once

#include "sim/core/dist.h"
#include "sim/sched/pcpu.h"

namespace kvmsim {

class HostTick : public HostHrtimer {
 public:
  HostTick(Tsc period, Sampler cost)
      : HostHrtimer("tick_sched_timer"), period_(period), cost_(std::move(cost)) {}
  Tsc fn(Pcpu& cpu, Tsc now) override {
    cpu.hrtimers().start(this, expires() + period_);  // hrtimer_forward()
    cpu.scheduler_tick(now);  // task_tick_fair(): is the current slice used up?
    return cost_(cpu.rng());
  }

 private:
  Tsc period_;
  Sampler cost_;
};

}  // namespace kvmsim
