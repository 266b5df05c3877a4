// The residual host tick on a pCPU (tick_sched_timer): a periodic host
// hrtimer whose work is one cost, forwarded by whole periods.
#pragma once

#include "sim/core/dist.h"
#include "sim/sched/pcpu.h"

namespace kvmsim {

class HostTick : public HostHrtimer {
 public:
  HostTick(Tsc period, Sampler cost)
      : HostHrtimer("tick_sched_timer"), period_(period), cost_(std::move(cost)) {}
  Tsc fn(Pcpu& cpu, Tsc /*now*/) override {
    cpu.hrtimers().start(this, expires() + period_);  // hrtimer_forward()
    return cost_(cpu.rng());
  }

 private:
  Tsc period_;
  Sampler cost_;
};

}  // namespace kvmsim
