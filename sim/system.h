// A simulated system assembled from parts (gem5's configuration tree): the
// host (topology, pCPUs, host tick), the VMs (vCPUs with their LAPICs), the
// workload (from the registry, sim/workload.h) and the observers
// (statistics, traces, teaching views). Every part reports its own metrics.
//
// SystemC elaborates once per process: one System (one run_simulation()) per
// process; the CLI and the Python bindings run each simulation in a child.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/breakdown.h"
#include "sim/core/context.h"
#include "sim/core/histogram.h"
#include "sim/core/metrics.h"
#include "sim/core/params.h"
#include "sim/core_observers.h"
#include "sim/workload.h"

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
  Metrics metrics;  // "dotted.key" -> value (sorted)
  std::optional<LatencyHistogram> histogram;
  std::vector<ExitRow> exits;       // by count, descending
  std::vector<StageRow> breakdown;  // where the latency went
  std::string headline;             // the workload's own summary lines (Workload::headline)
  double simulated_s = 0;
  bool completed = false;  // the workload finished (false: sim.max_simulated_s ended the run)
};

class Observer;

struct RunOptions {
  std::string trace_path;  // --trace FILE: trace-cmd report text of the host's kvm events
  bool progress = false;   // a progress line on stderr
  // A pCPU runs its next decision points inline in one SystemC activation
  // while nothing else can act before them (Pcpu::dispatch); false
  // (--no-run-ahead): one SystemC event per decision point. Every output is
  // the same either way (tests/cli/run_ahead_test.cpp); --vcd turns it off.
  bool run_ahead = true;
  // The pCPUs' events run on the model's event kernel (sim/core/event_kernel.h),
  // which reproduces SystemC's scheduling order; true (--systemc-kernel): on
  // SystemC's own kernel. Every output is the same either way
  // (tests/cli/event_kernel_test.cpp); --vcd needs SystemC's.
  bool systemc_kernel = false;
  // Teaching views (sim/views), each attached only when its path is given.
  std::string perfetto_path;         // --perfetto FILE: Chrome trace-event JSON
  double perfetto_limit_ms = 50;     // nothing after this much simulated time
  std::string vcd_path;              // --vcd FILE: VCD waveform through sc_trace
  double vcd_limit_ms = 50;          // nothing after this much simulated time
  double vcd_sample_ns = 1000;       // preemption-timer countdown sampling (0: boundaries only)
  std::vector<Observer*> observers;  // more observers (kvmsim explain), attached last
};

RunResult run_simulation(const ParamSet& params, const RunOptions& opts = {});

class Host;

class System final : public Machine {
 public:
  System(const ParamSet& p, const RunOptions& opts);
  ~System();
  System(const System&) = delete;
  System& operator=(const System&) = delete;

  RunResult run();

  // What a workload builds itself on (sim/workload.h).
  [[nodiscard]] const ParamSet& params() const override { return p_; }
  [[nodiscard]] const TscClock& clock() const override { return ctx_.clock; }
  [[nodiscard]] const std::vector<std::unique_ptr<Vm>>& vms() const override { return vms_; }
  [[nodiscard]] const std::vector<Vcpu*>& vcpus() const override { return vcpus_; }
  [[nodiscard]] int vcpus_per_vm() const override { return vcpus_per_vm_; }
  void add_observer(Observer* o) override { o->connect(ctx_.signals); }
  void stop() override;

  // The whole model, for tests and tools that look inside a run.
  SimContext& ctx() { return ctx_; }
  Host& host() { return *host_; }

 private:
  void attach_views(const RunOptions& opts);

  const ParamSet& p_;
  SimContext ctx_;
  CoreObservers core_;  // exit statistics, latency breakdown, run guard
  std::unique_ptr<Host> host_;
  std::vector<std::unique_ptr<Vm>> vms_;
  std::vector<Vcpu*> vcpus_;
  int vcpus_per_vm_ = 0;
  std::unique_ptr<Workload> workload_;
  std::vector<std::unique_ptr<class HostTask>> host_tasks_;
  std::vector<const MetricSource*> metric_sources_;
  std::vector<std::unique_ptr<Observer>> owned_observers_;
  std::unique_ptr<MetricSource> vcpu_metrics_;
  std::unique_ptr<class SchedInvariants> invariants_;
  class Progress;
  Progress* progress_ = nullptr;
  struct Views;
  std::unique_ptr<Views> views_;
  bool stopped_ = false;
};

}  // namespace kvmsim
