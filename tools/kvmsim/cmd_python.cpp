// kvmsim sweep / kvmsim plot: implemented in the Python package
// (bindings/kvmsim/__main__.py); the CLI replaces itself with
//   $KVMSIM_PYTHON (default /usr/bin/python3) -m kvmsim <command> <args...>
// with the package of this build (<dir of this binary>/python) first on
// PYTHONPATH and KVMSIM_BINARY set to this binary, so the runs use it.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {
namespace {

int exec_python(const std::string& command, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::canonical("/proc/self/exe", ec);
  if (!ec) {
    const std::string pkg = (self.parent_path() / "python").string();
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = old && *old ? pkg + ":" + old : pkg;
    setenv("PYTHONPATH", path.c_str(), 1);
    if (!std::getenv("KVMSIM_BINARY")) setenv("KVMSIM_BINARY", self.c_str(), 1);
  }
  const char* env_python = std::getenv("KVMSIM_PYTHON");
  const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
  std::vector<std::string> argv_s = {python, "-m", "kvmsim", command};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(python.c_str(), argv.data());
  throw std::runtime_error("cannot start " + python + " for `kvmsim " + command +
                           "`: " + std::strerror(errno));
}

Command add_python_command(CLI::App& app, const std::string& name, const std::string& help) {
  auto* sub = app.add_subcommand(name, help);
  sub->prefix_command();  // everything after the name goes to Python as is
  sub->set_help_flag();   // --help too
  return {sub, [sub, name] { return exec_python(name, sub->remaining()); }};
}

}  // namespace

std::vector<Command> add_python_commands(CLI::App& app) {
  return {add_python_command(app, "sweep",
                             "Run a scenario over a grid (its sweep: section, or --grid): sweep "
                             "SCENARIO -j N --out results.csv [--resume], or on a Dask cluster: "
                             "--scheduler tcp://HOST:8786"),
          add_python_command(app, "plot",
                             "Write a PNG from a run's --out folder or a sweep CSV (plot DIR)")};
}

}  // namespace kvmsim::cli
