// A CPU-bound guest task (sysbench --test=cpu, a `while (1)` loop): it never
// sleeps, so the vCPU stays in the guest and only the guest's tick (and host
// interrupts) make it exit. Runs in 100 us chunks of guest work.
#pragma once

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

class CpuHog : public GuestTask {
 public:
  CpuHog() : GuestTask("sysbench") {}
  GuestStep run(GuestKernel& k, Tsc /*now*/) override {
    return GuestStep::run(Stage::GuestUser, k.vcpu().ctx().clock.from_ns(100000.0));
  }
};

}  // namespace kvmsim
