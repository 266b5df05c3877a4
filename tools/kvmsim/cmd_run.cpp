// kvmsim run SCENARIO [--set key=value]... [--seed N] [--out DIR] [--trace FILE]
//                     [--perfetto FILE] [--vcd FILE] [--allow-partial] [-q]
//
// What a run may not do silently (docs/guide/errors-and-outputs.md):
//   - outputs are checked before the run and written complete or not at all
//     (outputs.h); a write error fails the run with the path;
//   - a run whose workload did not finish (cut by sim.max_simulated_s) fails,
//     unless --allow-partial: then its outputs say sim.partial = 1;
//   - SIGINT / SIGTERM stop it at the next event, exit 130 / 143 (stop_signal.h).
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/core/advisory.h"
#include "sim/core/metric_decl.h"
#include "sim/core/observer.h"
#include "sim/core/output_errors.h"
#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "sim/report.h"
#include "sim/sched/host.h"
#include "sim/system.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"
#include "tools/kvmsim/outputs.h"
#include "tools/kvmsim/stop_signal.h"

namespace kvmsim::cli {

namespace {

struct RunArgs {
  std::string scenario, out, trace, seed;
  CLI::Option* seed_opt = nullptr;
  std::vector<std::string> sets;
  bool quiet = false;
  bool allow_partial = false;
  CLI::Option* out_opt = nullptr;
  CLI::Option* trace_opt = nullptr;
  CLI::Option* perfetto_opt = nullptr;
  CLI::Option* vcd_opt = nullptr;
  RunOptions view;
};

double metric(const RunResult& r, const std::string& key) {
  const auto it = r.metrics.find(key);
  return it == r.metrics.end() ? 0.0 : it->second;
}

// "cyclictest 1234/600000 loops": how far the workload got.
std::string progress_text(const RunResult& r, const ParamSet& p) {
  const std::string& w = p.s("workload.type");
  if (w == "cyclictest")
    return fmt::format("cyclictest {:.0f}/{} loops", metric(r, "cyclictest.loops"),
                       p.i("cyclictest.loops"));
  if (w == "tscdeadline_latency")
    return fmt::format("tscdeadline_latency {:.0f}/{} samples",
                       metric(r, "tscdeadline_latency.samples"), p.i("tscdeadline_latency.size"));
  if (w == "vmexit") {
    int done = 0, total = 0;
    const std::string& list = p.s("vmexit.tests");
    for (std::size_t pos = 0; pos <= list.size(); ++total) {
      const std::size_t comma = std::min(list.find(',', pos), list.size());
      std::string name = list.substr(pos, comma - pos);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (r.metrics.count("vmexit." + name + ".cycles")) ++done;
      pos = comma + 1;
    }
    return fmt::format("vmexit {}/{} tests", done, total);
  }
  return w;
}

// Parameter sets that make a run crawl or never finish: said before the run.
// Host noise that takes every cycle of the pCPUs leaves the workload none: the
// run could only end at sim.max_simulated_s, incomplete, so it is refused
// (unless a partial result is asked for).
void check_pathological(const ParamSet& p, bool allow_partial) {
  const TscClock clk{static_cast<std::uint64_t>(p.i("platform.tsc_khz"))};
  const double irq_us = clk.to_us(p.dist("noise.irq.duration").mean_cycles(clk));
  const double soft_us = clk.to_us(p.dist("noise.softirq.duration").mean_cycles(clk));
  const double load =
      (p.d("noise.irq.rate_hz") * irq_us + p.d("noise.softirq.rate_hz") * soft_us) / 1e6;
  if (load >= 0.5) {
    const std::string what = fmt::format(
        "host noise takes {:.0f}% of every pCPU (noise.irq.rate_hz {} x mean noise.irq.duration "
        "{:.1f} us + noise.softirq.rate_hz {} x {:.1f} us)",
        100 * load, p.text("noise.irq.rate_hz"), irq_us, p.text("noise.softirq.rate_hz"), soft_us);
    if (load >= 1 && !allow_partial)
      throw ScenarioError(fmt::format(
          "{}: key 'noise.irq.rate_hz': {}: the pCPUs are saturated and the workload can never "
          "finish (--allow-partial runs it anyway, to sim.max_simulated_s)",
          p.origin("noise.irq.rate_hz"), what));
    std::cerr << "kvmsim: warning: " << what << ": the workload "
              << (load >= 1 ? "can never finish" : "hardly progresses")
              << "; expect a very slow run\n";
  }
  // Host events per simulated second over all pCPUs: noise, softirqs, ticks.
  const double pcpus = static_cast<double>(p.i("vm.count") * p.i("vm.vcpus"));
  const auto& iso = p.ints("host.isolcpus");
  const double tick_hz =
      static_cast<double>(Host::tick_hz_of(p, iso.empty() ? -1 : static_cast<int>(iso.front())));
  const double rate = pcpus * (p.d("noise.irq.rate_hz") + p.d("noise.softirq.rate_hz") + tick_hz);
  double span_s = p.d("sim.max_simulated_s");
  if (p.s("workload.type") == "cyclictest")
    span_s = std::min(span_s, static_cast<double>(p.i("cyclictest.loops")) *
                                  static_cast<double>(p.i("cyclictest.interval_us")) * 1e-6);
  // About 10 model events per host interrupt, about 5 M events per wall second.
  const double wall_s = rate * span_s * 10 / 5e6;
  if (wall_s > 600)
    std::cerr << fmt::format(
        "kvmsim: warning: about {:.0f} host interrupts per simulated second over {:.0f} s "
        "simulated: this run will take roughly {:.0f} minutes\n",
        rate, span_s, wall_s / 60);
}

struct Outputs {
  OutputFile summary, histogram, trace, perfetto, vcd;
  void discard() {
    for (auto* f : {&summary, &histogram, &trace, &perfetto, &vcd}) f->discard();
  }
  void commit() {
    for (auto* f : {&trace, &perfetto, &vcd, &histogram, &summary})
      if (f->active()) f->commit();
  }
  // A writer's message names the temporary it wrote: name the user's path.
  [[nodiscard]] std::string user_path(std::string message) const {
    for (const auto* f : {&summary, &histogram, &trace, &perfetto, &vcd}) {
      if (!f->active() || f->temp().empty()) continue;
      for (std::size_t at; (at = message.find(f->temp())) != std::string::npos;)
        message.replace(at, f->temp().size(), f->path());
    }
    return message;
  }
};

int run(RunArgs& a) {
  std::vector<std::string> overrides = a.sets;
  if (a.seed_opt->count()) overrides.push_back(seed_override(a.seed));  // '' is refused
  const auto params = load_scenario(model_params(), a.scenario, overrides);

  // Every output path is checked (and its temporary created) before the run.
  Outputs out;
  std::optional<OutDirGuard> out_dir;  // a run that writes nothing leaves no stale result
  if (a.out_opt->count()) {
    out_dir.emplace(a.out);
    prepare_out_dir(a.out);
    out.summary = OutputFile("--out", (std::filesystem::path(a.out) / "summary.json").string());
    out.histogram = OutputFile("--out", (std::filesystem::path(a.out) / "histogram.txt").string());
  }
  RunOptions opts = a.view;
  if (a.trace_opt->count()) {
    out.trace = OutputFile("--trace", a.trace);
    opts.trace_path = out.trace.temp();
  }
  if (a.perfetto_opt->count()) {
    out.perfetto = OutputFile("--perfetto", a.view.perfetto_path);
    opts.perfetto_path = out.perfetto.temp();
  }
  if (a.vcd_opt->count()) {
    out.vcd = OutputFile("--vcd", a.view.vcd_path);
    opts.vcd_path = out.vcd.temp();
  }
  check_pathological(params, a.allow_partial);

  opts.progress = !a.quiet;
  install_stop_signals();
  RunResult result = run_simulation(params, opts);

  const std::string where =
      fmt::format("at {:.6f} s simulated ({})", result.simulated_s, progress_text(result, params));
  if (!output_errors().empty()) {
    for (const auto& e : output_errors())
      std::cerr << "kvmsim: error: " << out.user_path(e) << "\n";
    std::cerr << "kvmsim: the run stopped " << where << "; no output written\n";
    return kExitFailed;
  }
  const int sig = stop_signal();
  const bool partial = sig || !result.completed;
  if (partial && !a.allow_partial) {
    out.discard();
    if (sig)
      std::cerr << fmt::format("kvmsim: interrupted by {} {}; no output written\n",
                               sig == SIGINT ? "SIGINT" : "SIGTERM", where);
    else
      std::cerr << fmt::format(
          "kvmsim: error: the run reached sim.max_simulated_s = {} s before its workload "
          "finished ({}); no output written. Raise sim.max_simulated_s, or pass "
          "--allow-partial to keep a partial result\n",
          params.text("sim.max_simulated_s"), progress_text(result, params));
    return sig ? 128 + sig : kExitFailed;
  }
  if (partial) {
    result.metrics["sim.partial"] = 1;
    std::cerr << fmt::format(
        "kvmsim: warning: partial result: the run stopped {}{}; outputs "
        "say sim.partial = 1\n",
        where, sig ? " by a signal" : " at sim.max_simulated_s");
  }
  // Every key has a declaration (sim/core/metric_decl.h); the declaration
  // test runs every scenario, this catches the runs it does not.
  for (const auto& key : undeclared_metrics(result.metrics))
    std::cerr << "kvmsim: warning: metric '" << key
              << "' has no declaration (declare it beside its emitter, sim/core/metric_decl.h)\n";
  // A setting that could not act, a result one artefact dominates
  // (sim/*/advisories.cpp).
  for (const auto& adv : AdvisoryRegistry::instance().check(params, result.metrics))
    std::cerr << "kvmsim: warning: " << adv.key << ": " << adv.text << "\n";
  if (out.summary.active()) out.summary.write(summary_json(result, params, a.scenario));
  if (out.histogram.active()) {
    if (result.histogram)
      out.histogram.write(result.histogram->to_cyclictest_text());
    else
      out.histogram.discard();
  }
  out.commit();
  if (out_dir) out_dir->commit();
  if (!a.quiet) {
    std::cout << summary_text(result, params, a.scenario) << std::flush;
    if (!std::cout) throw OutputError(std::string("stdout: write failed: ") + std::strerror(errno));
  }
  return sig ? 128 + sig : kExitOk;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* run_cmd = app.add_subcommand("run", "Run a scenario");
  run_cmd->add_option("scenario", a->scenario, "Scenario YAML file")->required();
  run_cmd->add_option("--set", a->sets, "Override a parameter: key=value (repeatable)");
  a->seed_opt =
      run_cmd->add_option("--seed", a->seed, "Run seed (same scenario + seed = same outputs)")
          ->type_name("N");
  a->out_opt = run_cmd->add_option("--out", a->out, "Write summary.json and histogram.txt here")
                   ->type_name("DIR");
  a->trace_opt = run_cmd->add_option(
      "--trace", a->trace, "Write the host's kvm tracepoints as trace-cmd report text to FILE");
  run_cmd->add_flag("-q,--quiet", a->quiet, "No summary on stdout");
  run_cmd->add_flag("--allow-partial", a->allow_partial,
                    "Keep the result of a run cut by sim.max_simulated_s or a signal "
                    "(summary.json then has sim.partial = 1)");
  add_view_options(*run_cmd, a->view);
  run_cmd->add_flag("!--no-run-ahead", a->view.run_ahead,
                    "One event per pCPU decision point (no inline run-ahead; same "
                    "outputs, slower)");
  run_cmd->add_flag("--systemc-kernel", a->view.systemc_kernel,
                    "Run the pCPUs' events on SystemC's own kernel instead of the model's "
                    "(same outputs, slower)");
  a->perfetto_opt = run_cmd->get_option("--perfetto");
  a->vcd_opt = run_cmd->get_option("--vcd");
  return {run_cmd, [a] { return run(*a); }};
}

}  // namespace kvmsim::cli
