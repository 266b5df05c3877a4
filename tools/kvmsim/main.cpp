// kvmsim command line: run a scenario, list parameters.
//   kvmsim run SCENARIO [--set key=value]... [--seed N] [--out DIR] [--trace FILE]
//   kvmsim params [--markdown]
//   kvmsim metrics [PREFIX] [--markdown]
//   kvmsim trace-stats FILE [--json]
//   kvmsim run ... [--perfetto FILE] [--vcd FILE]; kvmsim explain SCENARIO [--sample N]
//   kvmsim --version
// Exit codes (cli_checks.h): 0 ok, 1 failed (run, check, output write),
// 2 usage or bad input, 130 / 143 interrupted by SIGINT / SIGTERM.
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <systemc>

#include "sim/core/invariants.h"
#include "sim/core/metric_decl.h"
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

// kvmsim metrics [PREFIX] [--markdown]: the declarations whose pattern starts
// with PREFIX, or that the key PREFIX is an instance of.
void print_metrics(const std::string& prefix, bool markdown) {
  const auto decls = kvmsim::MetricRegistry::instance().select(prefix);
  if (decls.empty())
    throw kvmsim::cli::UsageError("no metric key starts with or matches '" + prefix +
                                  "' (kvmsim metrics lists them all)");
  std::cout << (markdown ? kvmsim::format_metric_markdown(decls)
                         : kvmsim::format_metric_table(decls));
}

}  // namespace

int main(int argc, char* argv[]) {
  // KVMSIM_PARENT_PID (set by the Python package for its child runs): die
  // with that parent, even a SIGKILL'd one (PR_SET_PDEATHSIG), and exit at
  // once if it is already gone (it died between fork and this line).
  if (const char* parent = std::getenv("KVMSIM_PARENT_PID")) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (std::to_string(::getppid()) != parent) std::_Exit(1);
  }
  g_cerr = std::cerr.rdbuf(g_systemc_banner.rdbuf());
  return sc_core::sc_elab_and_sim(argc, argv);
}

// stdout's write errors, for every command: flushed here, checked once.
int check_stdout(int rc) {
  errno = 0;
  std::cout.flush();
  const bool ok = std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (ok) return rc;
  const int err = errno;  // 0 when the failed write was an earlier one
  std::cerr << "kvmsim: error: stdout: write failed"
            << (err ? std::string(": ") + std::strerror(err) : " (a full disk or an I/O error)")
            << "\n";
  return rc ? rc : kvmsim::cli::kExitFailed;
}

// The terminal's width (COLUMNS, else the tty's, else 100).
std::size_t terminal_width() {
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 0)
    return static_cast<std::size_t>(std::atoi(c));
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 100;
}

void print_params(const std::string& prefix, bool markdown) {
  using namespace kvmsim;
  if (prefix.empty()) {
    std::cout << (markdown ? format_param_markdown(model_params())
                           : format_param_table(model_params()));
    return;
  }
  if (markdown)
    throw kvmsim::cli::UsageError("params: --markdown lists every parameter; drop PREFIX");
  const std::string text = format_param_blocks(model_params(), prefix, terminal_width());
  if (text.empty())
    throw kvmsim::cli::UsageError(
        "params: no parameter key starts with '" + prefix +
        "' (the first parts: platform, host, kvm, vm, guest, workload, cost, noise, "
        "sim and the workloads' names)");
  std::cout << text;
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
  std::string params_prefix;
  params->add_option("PREFIX", params_prefix,
                     "Only the parameters whose key starts with PREFIX (e.g. kvm.halt_poll, "
                     "host., guest.haltpoll), one block each, wrapped to the terminal width");
  params->add_flag("--markdown", markdown, "As a Markdown table (docs/reference/parameters.md)");
  auto* metrics = app.add_subcommand(
      "metrics", "List what each key of summary.json's \"metrics\" means: unit, emitter, meaning");
  std::string metrics_prefix;
  metrics->add_option("PREFIX", metrics_prefix,
                      "Only the keys that start with PREFIX, or the declaration of the key PREFIX "
                      "(e.g. vcpu, halt_poll., vcpu.3.steal_s)");
  metrics->add_flag("--markdown", markdown,
                    "As Markdown tables, one per key prefix (docs/reference/metrics.md)");

  const auto trace_stats = add_trace_stats_command(app);
  const auto compare = add_compare_command(app);
  const auto explain = add_explain_command(app);
  const auto validate = add_validate_command(app);
  const auto new_scenario = add_new_scenario_command(app);
  const auto python_commands = add_python_commands(app);  // sweep, plot

  // CLI11 reports a misspelt subcommand as "A subcommand is required", which
  // hides the typo: name it and list the subcommands instead.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == word;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "kvmsim: error: unknown subcommand '" << word << "' (one of: " << names << ")\n"
                << "Run 'kvmsim --help' or 'kvmsim SUBCOMMAND --help' for usage.\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return check_stdout(app.exit(e));  // --help, --version
    std::cerr << "kvmsim: error: " << e.what() << "\n"
              << "Run 'kvmsim --help' or 'kvmsim SUBCOMMAND --help' for usage.\n";
    return kExitUsage;
  }
  try {
    int rc = 0;
    if (run.app->parsed())
      rc = run.run();
    else if (explain.app->parsed())
      rc = explain.run();
    else if (compare.app->parsed())
      rc = compare.run();
    else if (validate.app->parsed())
      rc = validate.run();
    else if (new_scenario.app->parsed())
      rc = new_scenario.run();
    else if (trace_stats.app->parsed())
      rc = trace_stats.run();
    else if (params->parsed())
      print_params(params_prefix, markdown);
    else if (metrics->parsed())
      print_metrics(metrics_prefix, markdown);
    else
      for (const auto& c : python_commands)  // sweep, plot
        if (c.app->parsed()) rc = c.run();
    // Whatever the command, what it printed must have reached stdout (a
    // full disk, /dev/full, an I/O error): else it is an error, not exit 0.
    return check_stdout(rc);
  } catch (const kvmsim::ScenarioError& e) {
    // A scenario file with several bad entries: one error line each.
    std::istringstream lines(e.what());
    for (std::string line; std::getline(lines, line);)
      std::cerr << "kvmsim: error: " << line << "\n";
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
