// Runs the kvmsim CLI as a child process (SystemC elaborates once per
// process, so every simulation in the test suite is its own process).
#pragma once

#include <unistd.h>
#include <cstdio>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/kvmsim/published_targets.h"

namespace kvmsim::test {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// A shell command line run from the source directory as is (redirections
// are the caller's); output is what reaches the pipe.
inline CliResult run_cli_raw(const std::string& command_line) {
  const std::string cmd = std::string("cd ") + KVMSIM_SOURCE_DIR + " && " + command_line;
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline CliResult run_cli(const std::string& args) {
  return run_cli_raw(std::string(KVMSIM_BINARY) + " " + args + " 2>&1");
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  return nlohmann::json::parse(read_text(p));
}

// The number under `key` in a run's summary.json (throws on a missing key,
// which fails the test that asked).
inline double metric(const nlohmann::json& j, const std::string& key) {
  return j.at(key).get<double>();
}

// The same, 0 for a key the run did not report (a counter that never
// counted, e.g. exits.<REASON>.* of a reason that never exited).
inline double metric_or_zero(const nlohmann::json& j, const std::string& key) {
  return j.contains(key) ? j.at(key).get<double>() : 0.0;
}

// The test process's own temp area, kvmsim-test-<pid>, removed when the
// process ends: test binaries of several build trees (or worktrees) that run
// at once must not write into each other's output directories.
inline const std::filesystem::path& test_temp_root() {
  struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kvmsim-test-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Root root;
  return root.path;
}

// A fresh output directory in this process's temp area.
inline std::filesystem::path out_dir(const std::string& name) {
  std::filesystem::create_directories(test_temp_root());
  auto d = test_temp_root() / name;
  std::filesystem::remove_all(d);
  return d;
}

// `kvmsim run ARGS -q --out <fresh dir>`, which must succeed; its metrics.
inline nlohmann::json run_metrics(const std::string& name, const std::string& args) {
  const auto dir = out_dir(name);
  const auto r = run_cli("run " + args + " -q --out " + dir.string());
  if (r.exit_code != 0) throw std::runtime_error("kvmsim run " + args + " failed:\n" + r.output);
  return read_json(dir / "summary.json").at("metrics");
}

// A published figure of validation/targets.yaml (the built-in copy); throws
// when the target or figure is missing.
inline const validate::Figure& published_figure(const std::string& target, const std::string& id) {
  const validate::Target* t = validate::embedded_targets().find(target);
  const validate::Figure* f = t ? t->figure(id) : nullptr;
  if (!f) throw std::runtime_error("no published figure " + target + " " + id);
  return *f;
}

}  // namespace kvmsim::test
