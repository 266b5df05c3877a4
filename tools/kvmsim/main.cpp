// kvmsim command line: run a scenario, list parameters.
//   kvmsim run SCENARIO [--set key=value]... [--seed N] [--out DIR]
//   kvmsim params [--markdown]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <systemc>

#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "sim/report.h"
#include "sim/system.h"

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw kvmsim::ScenarioError("cannot write " + path.string());
}

int cmd_run(const std::string& scenario, const std::vector<std::string>& sets, long long seed,
            const std::string& out, bool quiet) {
  std::vector<std::string> overrides = sets;
  if (seed >= 0) overrides.push_back("sim.seed=" + std::to_string(seed));
  const auto params = kvmsim::load_scenario(kvmsim::model_params(), scenario, overrides);
  kvmsim::RunOptions opts;
  opts.progress = !quiet;
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
