// Assembles a host, its VMs and their workloads from a ParamSet, runs the
// simulation and collects the results. SystemC elaborates once per process:
// run_simulation() may be called once per process (the CLI and the Python
// bindings run each simulation in its own process).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/histogram.h"
#include "sim/core/params.h"

namespace kvmsim {

struct ExitRow {
  std::string reason;
  std::uint64_t count = 0;
  double total_ns = 0, min_ns = 0, max_ns = 0;
};

struct StageRow {
  std::string stage;
  double mean_ns = 0;  // per sample, after the deadline
};

struct RunResult {
  std::map<std::string, double> metrics;  // "dotted.key" -> value (sorted)
  std::optional<LatencyHistogram> histogram;
  std::vector<std::int64_t> tscdeadline_latencies;  // cycles, tscdeadline_latency workload
  std::vector<ExitRow> exits;             // by count, descending
  std::vector<StageRow> breakdown;        // where the latency went
  double simulated_s = 0;
};

struct RunOptions {
  std::string trace_path;  // --trace FILE: trace-cmd report text of the host's kvm events
  bool progress = false;  // a progress line on stderr
};

RunResult run_simulation(const ParamSet& params, const RunOptions& opts = {});

}  // namespace kvmsim
