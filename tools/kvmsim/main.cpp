// kvmsim command line: run a scenario, list parameters.
//   kvmsim run SCENARIO [--set key=value]... [--seed N] [--out DIR] [--trace FILE]
//   kvmsim params [--markdown]
//   kvmsim trace-stats FILE [--json]
//   kvmsim run ... [--perfetto FILE] [--vcd FILE]; kvmsim explain SCENARIO [--sample N]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <systemc>

#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "sim/report.h"
#include "sim/system.h"
#include "tools/kvmsim/commands.h"

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw kvmsim::ScenarioError("cannot write " + path.string());
}

int cmd_run(const std::string& scenario, const std::vector<std::string>& sets, long long seed,
            const std::string& out, const std::string& trace, bool quiet, kvmsim::RunOptions opts) {
  std::vector<std::string> overrides = sets;
  if (seed >= 0) overrides.push_back("sim.seed=" + std::to_string(seed));
  const auto params = kvmsim::load_scenario(kvmsim::model_params(), scenario, overrides);
  opts.progress = !quiet;
  opts.trace_path = trace;
  if (!trace.empty() && std::filesystem::path(trace).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(trace).parent_path());
  kvmsim::cli::prepare_view_outputs(opts);
  const auto result = kvmsim::run_simulation(params, opts);
  if (!out.empty()) {
    std::filesystem::create_directories(out);
    write_file(std::filesystem::path(out) / "summary.json",
               kvmsim::summary_json(result, params, scenario));
    if (result.histogram)
      write_file(std::filesystem::path(out) / "histogram.txt",
                 result.histogram->to_cyclictest_text());
  }
  if (!quiet) std::cout << kvmsim::summary_text(result, params, scenario) << std::flush;
  return 0;
}

}  // namespace

// libsystemc provides main() and calls this (it prints its banner on stderr first).
int sc_main(int argc, char* argv[]) {
  CLI::App app{"kvmsim: cycle-level simulator of the x86 KVM virtualization stack"};
  app.require_subcommand(1);

  auto* run = app.add_subcommand("run", "Run a scenario");
  std::string scenario, out;
  std::vector<std::string> sets;
  long long seed = -1;
  bool quiet = false;
  run->add_option("scenario", scenario, "Scenario YAML file")->required();
  run->add_option("--set", sets, "Override a parameter: key=value (repeatable)");
  run->add_option("--seed", seed, "Run seed (same scenario + seed = same outputs)");
  run->add_option("--out", out, "Write summary.json and histogram.txt here");
  std::string trace;
  run->add_option("--trace", trace,
                  "Write the host's kvm tracepoints as trace-cmd report text to FILE");
  run->add_flag("-q,--quiet", quiet, "No summary on stdout");
  kvmsim::RunOptions view_opts;
  kvmsim::cli::add_view_options(*run, view_opts);
  run->add_flag("!--no-run-ahead", view_opts.run_ahead,
                "One SystemC event per pCPU decision point (no inline run-ahead; same outputs, "
                "slower)");

  auto* params = app.add_subcommand("params", "List every parameter with default, unit, range");
  bool markdown = false;
  params->add_flag("--markdown", markdown, "As a Markdown table (docs/parameters.md)");

  const auto trace_stats = kvmsim::cli::add_trace_stats_command(app);
  const auto compare = kvmsim::cli::add_compare_command(app);
  const auto explain = kvmsim::cli::add_explain_command(app);
  const auto validate = kvmsim::cli::add_validate_command(app);
  const auto python_commands = kvmsim::cli::add_python_commands(app);  // sweep, plot (issue 11)

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (run->parsed()) return cmd_run(scenario, sets, seed, out, trace, quiet, view_opts);
    if (explain.app->parsed()) return explain.run();
    if (compare.app->parsed()) return compare.run();
    if (validate.app->parsed()) return validate.run();
    if (trace_stats.app->parsed()) return trace_stats.run();
    for (const auto& c : python_commands)  // sweep, plot (issue 11)
      if (c.app->parsed()) return c.run();
    if (params->parsed()) {
      std::cout << (markdown ? kvmsim::format_param_markdown(kvmsim::model_params())
                             : kvmsim::format_param_table(kvmsim::model_params()));
      return 0;
    }
  } catch (const kvmsim::ScenarioError& e) {
    std::cerr << "kvmsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvmsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
