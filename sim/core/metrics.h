// Metrics are a flat map of "dotted.key" -> number (summary.json's "metrics").
// Every component and workload writes its own keys through report(); the
// system that assembled them only asks each one in turn (gem5's regStats).
#pragma once

#include <map>
#include <string>

#include "sim/core/time.h"

namespace kvmsim {

using Metrics = std::map<std::string, double>;  // sorted: summary.json is stable

class MetricSource {
 public:
  virtual ~MetricSource() = default;
  // Adds this component's metrics at the end of the run.
  virtual void report(Metrics& m, const TscClock& clk) const = 0;
};

}  // namespace kvmsim
