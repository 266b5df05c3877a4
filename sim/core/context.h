// What every model component shares: the host TSC clock, the run seed, the
// signals, the event counter and the run-ahead dispatcher.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "sim/core/event_kernel.h"
#include "sim/core/model_time.h"
#include "sim/core/random.h"
#include "sim/core/run_ahead.h"
#include "sim/core/signal.h"
#include "sim/core/time.h"

namespace kvmsim {

struct SimContext {
  TscClock clock;
  std::uint64_t seed = 1;
  SignalRegistry signals;    // the open signals (sim/core/signal.h)
  std::uint64_t events = 0;  // model events dispatched (sim.events)
  EventKernel kernel;        // what runs the pCPUs' events (sim/core/event_kernel.h)
  RunAhead run_ahead;        // how one pCPU activation runs (sim/core/run_ahead.h)

  [[nodiscard]] Rng stream(const std::string& component) const { return {seed, component}; }
};

}  // namespace kvmsim
