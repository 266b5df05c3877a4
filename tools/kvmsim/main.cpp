// kvmsim command line: run a scenario, list parameters.
//   kvmsim run SCENARIO [--set key=value]... [--seed N] [--out DIR] [--trace FILE]
//   kvmsim params [--markdown]
//   kvmsim trace-stats FILE [--json]
//   kvmsim run ... [--perfetto FILE] [--vcd FILE]; kvmsim explain SCENARIO [--sample N]
//   kvmsim --version
// Exit codes (cli_checks.h): 0 ok, 1 failed (run, check, output write),
// 2 usage or bad input, 130 / 143 interrupted by SIGINT / SIGTERM.
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <systemc>

#include "sim/core/invariants.h"
#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"
#include "tools/kvmsim/outputs.h"

namespace {

// libsystemc prints its banner on std::cerr in sc_elab_and_sim(), before
// sc_main(), and Debian's build has no switch to silence it: main() sends
// std::cerr here until sc_main() starts; `kvmsim --version` shows it.
std::ostringstream g_systemc_banner;
std::streambuf* g_cerr = nullptr;

std::string version_text() {
  std::string banner = g_systemc_banner.str();
  while (!banner.empty() && (banner.front() == '\n')) banner.erase(0, 1);
  return "kvmsim " + std::string(KVMSIM_VERSION) + "\n" + banner;
}

}  // namespace

int main(int argc, char* argv[]) {
  g_cerr = std::cerr.rdbuf(g_systemc_banner.rdbuf());
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char* argv[]) {
  if (g_cerr) std::cerr.rdbuf(g_cerr);
  using namespace kvmsim::cli;
  CLI::App app{"kvmsim: cycle-level simulator of the x86 KVM virtualization stack"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "Print the kvmsim and SystemC versions");

  const auto run = add_run_command(app);
  auto* params = app.add_subcommand("params", "List every parameter with default, unit, range");
  bool markdown = false;
  params->add_flag("--markdown", markdown, "As a Markdown table (docs/parameters.md)");

  const auto trace_stats = add_trace_stats_command(app);
  const auto compare = add_compare_command(app);
  const auto explain = add_explain_command(app);
  const auto validate = add_validate_command(app);
  const auto python_commands = add_python_commands(app);  // sweep, plot (issue 11)

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "kvmsim: error: " << e.what() << "\n"
              << "Run 'kvmsim --help' or 'kvmsim SUBCOMMAND --help' for usage.\n";
    return kExitUsage;
  }
  try {
    if (run.app->parsed()) return run.run();
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
    return kExitUsage;
  } catch (const UsageError& e) {
    std::cerr << "kvmsim: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const kvmsim::InvariantError& e) {
    std::cerr << "kvmsim: internal error (a model bug, please report it): " << e.what() << "\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "kvmsim: error: " << e.what() << "\n";
    return kExitFailed;
  }
  return 0;
}
