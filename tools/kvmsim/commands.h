// Subcommands of the kvmsim CLI that live in their own files.
//
// Each add_*_command() adds its CLI11 subcommand (options included) to `app`
// and returns it with the function that runs it; sc_main parses once and then
// calls run() of the subcommand that was parsed:
//   const auto compare = kvmsim::cli::add_compare_command(app);
//   ...
//   if (compare.app->parsed()) return compare.run();
// run() returns the process exit code (cli_checks.h: 2 for bad arguments or
// input that cannot be read, as elsewhere in the CLI).
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/system.h"

namespace kvmsim::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// kvmsim run SCENARIO [--set k=v]... [--seed N] [--out DIR] [--trace FILE] ... (cmd_run.cpp)
Command add_run_command(CLI::App& app);

// kvmsim compare A B [--tolerance-*] [--merge] [--json]  (cmd_compare.cpp)
Command add_compare_command(CLI::App& app);

// kvmsim trace-stats FILE [--json] [--raw-clock-hz HZ]  (cmd_trace_stats.cpp)
Command add_trace_stats_command(CLI::App& app);

// kvmsim validate [--quick] [--markdown] [--jobs N] [--scenarios DIR]  (cmd_validate.cpp)
Command add_validate_command(CLI::App& app);

// kvmsim explain SCENARIO [--set k=v]... [--seed N] [--sample N]  (cmd_views.cpp)
Command add_explain_command(CLI::App& app);
// kvmsim run's --perfetto/--vcd options (cmd_views.cpp), stored in `opts`.
void add_view_options(CLI::App& run, RunOptions& opts);

// kvmsim new-scenario --platform P --workload W --out FILE [--force]  (cmd_new_scenario.cpp)
Command add_new_scenario_command(CLI::App& app);

// kvmsim sweep ... / kvmsim plot ...: run by the Python package (cmd_python.cpp).
std::vector<Command> add_python_commands(CLI::App& app);

}  // namespace kvmsim::cli
