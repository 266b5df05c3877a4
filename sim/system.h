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
  std::vector<ExitRow> exits;       // by count, descending
  std::vector<StageRow> breakdown;  // where the latency went
  double simulated_s = 0;
  // The workload ran to its end (cyclictest's loops, the test's samples; a
  // busy guest runs until sim.max_simulated_s by design). False when the run
  // was cut by sim.max_simulated_s or stopped by an observer (a signal, explain).
  bool completed = false;
};

class ModelObserver;

struct RunOptions {
  std::string trace_path;  // --trace FILE: trace-cmd report text of the host's kvm events
  bool progress = false;   // a progress line on stderr
  // Teaching views (sim/views), each attached only when its path is given.
  std::string perfetto_path;      // --perfetto FILE: Chrome trace-event JSON
  double perfetto_limit_ms = 50;  // nothing after this much simulated time
  std::string vcd_path;           // --vcd FILE: VCD waveform through sc_trace
  double vcd_limit_ms = 50;       // nothing after this much simulated time
  double vcd_sample_ns = 1000;    // preemption-timer countdown sampling (0: boundaries only)
  std::vector<ModelObserver*> observers;  // more observers (kvmsim explain), attached last
};

RunResult run_simulation(const ParamSet& params, const RunOptions& opts = {});

}  // namespace kvmsim
