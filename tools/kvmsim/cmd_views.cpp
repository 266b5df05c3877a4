// The teaching views on the command line (sim/views):
//   kvmsim run ... [--perfetto FILE [--perfetto-limit-ms MS]]
//                  [--vcd FILE [--vcd-limit-ms MS] [--vcd-sample-ns NS]]
//   kvmsim explain SCENARIO [--set key=value]... [--seed N] [--sample N]
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "sim/system.h"
#include "sim/views/explain.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {

namespace {

constexpr double kMaxViewMs = 1000;

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
  std::string seed;
  CLI::Option* seed_opt = nullptr;
  std::uint64_t sample = 100;
};

int run_explain(const ExplainArgs& a) {
  std::vector<std::string> overrides = a.sets;
  if (a.seed_opt->count()) overrides.push_back(seed_override(a.seed));  // '' is refused
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
  if (workload == "cyclictest" && obs.capture().latency_ns >= 0) {
    // cyclictest -h N: buckets 0..N-1 us (ns with -N); anything above is an overflow.
    const bool nsecs = p.b("cyclictest.nsecs");
    const std::int64_t value = nsecs ? obs.capture().latency_ns : obs.capture().latency_ns / 1000;
    const std::int64_t buckets = p.i("cyclictest.histogram_us");
    const char* unit = nsecs ? "ns" : "us";
    if (value >= buckets) {
      std::cout << fmt::format(
          "cyclictest counts this sample ({} {}) as a histogram overflow: it is beyond the {} "
          "buckets of -h {} (cyclictest.histogram_us); it is in 'Histogram Overflows' and its "
          "loop number in the overflow list\n",
          value, unit, buckets, buckets);
    } else {
      std::cout << fmt::format("cyclictest counts this sample in its {} {} histogram bucket\n",
                               value, unit);
    }
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

void add_view_options(CLI::App& run, RunOptions& opts) {
  // Teaching views are for a few milliseconds: a 10-minute VCD is tens of GB.
  run.add_option("--perfetto", opts.perfetto_path,
                 "Write a Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing) to FILE");
  run.add_option("--perfetto-limit-ms", opts.perfetto_limit_ms,
                 "Simulated ms written to the --perfetto file (the file also stops at 64 MiB)")
      ->capture_default_str()
      ->check(number_in(0, kMaxViewMs, "ms", true));
  run.add_option("--vcd", opts.vcd_path,
                 "Write a VCD waveform (GTKWave) of the vCPU modes and preemption timers to FILE");
  run.add_option("--vcd-limit-ms", opts.vcd_limit_ms, "Simulated ms written to the --vcd file")
      ->capture_default_str()
      ->check(number_in(0, kMaxViewMs, "ms", true));
  run.add_option("--vcd-sample-ns", opts.vcd_sample_ns,
                 "Sampling period of the preemption-timer countdown in the VCD (0: segment "
                 "boundaries only)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) {
            const std::string r = number_in(0, 1e9, "ns").operator()(s);
            if (!r.empty()) return r;
            const double v = std::stod(s);
            return v == 0 || v >= 10 ? std::string() : s + " is out of range: 0 or at least 10 ns";
          },
          "0 or [10, 1e9] ns", "RANGE"));
}

Command add_explain_command(CLI::App& app) {
  auto args = std::make_shared<ExplainArgs>();
  auto* sub = app.add_subcommand(
      "explain",
      "Follow one timer interrupt from its arming to the guest's wake-up, stage by stage");
  sub->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  sub->add_option("--set", args->sets, "Override a parameter: key=value (repeatable)");
  args->seed_opt = sub->add_option("--seed", args->seed, "Run seed")->type_name("N");
  sub->add_option("--sample", args->sample, "Which latency sample to follow (1 = the first)")
      ->capture_default_str()
      ->check(number_in(1, 1e9, ""));
  sub->footer(kExplainFooter);
  return {sub, [args] { return run_explain(*args); }};
}

}  // namespace kvmsim::cli
