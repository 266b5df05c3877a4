// The teaching views on the command line (sim/views):
//   kvmsim run ... [--perfetto FILE [--perfetto-limit-ms MS]]
//                  [--vcd FILE [--vcd-limit-ms MS] [--vcd-sample-ns NS]]
//   kvmsim explain SCENARIO [--set key=value]... [--seed N] [--sample N]
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "sim/system.h"
#include "sim/views/explain.h"
#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {

namespace {

void make_parent_dir(const std::string& path) {
  if (!path.empty() && std::filesystem::path(path).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
}

constexpr const char* kExplainFooter = R"(
Runs the scenario and follows one timer interrupt: the N-th latency sample
(default 100, after the warm-up), from the guest arming its timer to the
workload's measurement. Every segment the measuring vCPU's pCPU ran in
between is printed in order: its start in ns relative to the timer deadline
(negative: before it), its duration in ns, its stage and what the stage
models in the kernel, with the VM exits, entries and LAPIC timer events on
the way. The rows after the deadline add up to the total, the latency as the
host sees it; the workload's own measurement is printed beside it.

Works with the workloads that measure a timer latency: cyclictest and
tscdeadline_latency. The run stops right after the sample.)";

struct ExplainArgs {
  std::string scenario;
  std::vector<std::string> sets;
  long long seed = -1;
  std::uint64_t sample = 100;
};

int run_explain(const ExplainArgs& a) {
  std::vector<std::string> overrides = a.sets;
  if (a.seed >= 0) overrides.push_back("sim.seed=" + std::to_string(a.seed));
  const auto p = load_scenario(model_params(), a.scenario, overrides);
  const std::string& workload = p.s("workload.type");
  std::int64_t total = 0;
  const char* total_key = "";
  if (workload == "cyclictest") {
    total_key = "cyclictest.loops";
  } else if (workload == "tscdeadline_latency") {
    total_key = "tscdeadline_latency.size";
  } else {
    throw ScenarioError(fmt::format(
        "{}: key 'workload.type': kvmsim explain follows a timer latency sample; workload '{}' "
        "takes none (use cyclictest or tscdeadline_latency)",
        p.origin("workload.type"), workload));
  }
  total = p.i(total_key);
  if (static_cast<std::int64_t>(a.sample) > total)
    throw ScenarioError(fmt::format("--sample {}: the scenario takes {} samples ({} = {})",
                                    a.sample, total, total_key, total));

  // Stop once the sample is in, unless it is the last one (the workload stops then).
  views::ExplainObserver obs(a.sample, static_cast<std::int64_t>(a.sample) < total);
  RunOptions opts;
  opts.observers.push_back(&obs);
  run_simulation(p, opts);
  if (!obs.capture().captured) {
    std::cerr << "kvmsim: error: the run ended after " << obs.samples_seen()
              << " latency samples, before sample " << a.sample << "\n";
    return 1;
  }
  TscClock clk;
  clk.tsc_khz = static_cast<std::uint64_t>(p.i("platform.tsc_khz"));
  std::cout << fmt::format(
      "kvmsim explain {} (workload {})\n  kvm.enable_hv_timer={} kvm.lapic_timer_advance_ns={} "
      "kvm.exit_fastpath={} platform.apicv={}\n",
      a.scenario, workload, p.text("kvm.enable_hv_timer"), p.text("kvm.lapic_timer_advance_ns"),
      p.text("kvm.exit_fastpath"), p.text("platform.apicv"));
  std::cout << views::format_explanation(obs.capture(), clk);
  if (workload == "cyclictest" && obs.capture().latency_ns >= 0)
    std::cout << fmt::format("cyclictest counts this sample in its {} us histogram bucket\n",
                             obs.capture().latency_ns / 1000);
  std::cout << std::flush;
  return 0;
}

}  // namespace

void add_view_options(CLI::App& run, RunOptions& opts) {
  run.add_option("--perfetto", opts.perfetto_path,
                 "Write a Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing) to FILE");
  run.add_option("--perfetto-limit-ms", opts.perfetto_limit_ms,
                 "Simulated ms written to the --perfetto file")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run.add_option("--vcd", opts.vcd_path,
                 "Write a VCD waveform (GTKWave) of the vCPU modes and preemption timers to FILE");
  run.add_option("--vcd-limit-ms", opts.vcd_limit_ms, "Simulated ms written to the --vcd file")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run.add_option("--vcd-sample-ns", opts.vcd_sample_ns,
                 "Sampling period of the preemption-timer countdown in the VCD (0: segment "
                 "boundaries only)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void prepare_view_outputs(const RunOptions& opts) {
  make_parent_dir(opts.perfetto_path);
  make_parent_dir(opts.vcd_path);
}

Command add_explain_command(CLI::App& app) {
  auto args = std::make_shared<ExplainArgs>();
  auto* sub = app.add_subcommand(
      "explain",
      "Follow one timer interrupt from its arming to the guest's wake-up, stage by stage");
  sub->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  sub->add_option("--set", args->sets, "Override a parameter: key=value (repeatable)");
  sub->add_option("--seed", args->seed, "Run seed");
  sub->add_option("--sample", args->sample, "Which latency sample to follow (1 = the first)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->footer(kExplainFooter);
  return {sub, [args] { return run_explain(*args); }};
}

}  // namespace kvmsim::cli
