// The model emits events as open signals (sim/core/signal.h): each mechanism
// declares its own (the core's stage segments and latency samples in
// model_signals.h, KVM's tracepoints beside the code that fires them).
// Statistics, traces, views and checks are observers: attached to a run, an
// observer connects to the signals it needs, and only those call it.
#pragma once

#include "sim/core/signal.h"

namespace kvmsim {

class Observer {
 public:
  virtual ~Observer() = default;
  // Connects this observer's handlers; called once, before the run starts.
  virtual void connect(SignalRegistry& signals) = 0;
};

}  // namespace kvmsim
