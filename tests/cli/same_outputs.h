// Two runs of one scenario that must give the same outputs: summary.json
// (sim.wall_s aside), histogram.txt and the --trace file, byte for byte.
// Used where a switch changes how the simulation runs but not what it
// computes (--no-run-ahead, --systemc-kernel).
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/cli_runner.h"

namespace kvmsim::test {

inline std::string summary_without_wall(const std::filesystem::path& summary) {
  auto j = nlohmann::ordered_json::parse(read_text(summary));
  j["metrics"].erase("sim.wall_s");
  return j.dump(1);
}

// `kvmsim run ARGS` with FLAGS_A and with FLAGS_B (--allow-partial: a case
// may be cut by sim.max_simulated_s on purpose).
inline void check_same_outputs(const std::string& name, const std::string& args,
                               const std::string& flags_a, const std::string& flags_b) {
  const auto a = out_dir(name + "-a");
  const auto b = out_dir(name + "-b");
  const auto r_a = run_cli("run " + args + " -q --allow-partial " + flags_a + " --out " +
                           a.string() + " --trace " + (a / "t.txt").string());
  const auto r_b = run_cli("run " + args + " -q --allow-partial " + flags_b + " --out " +
                           b.string() + " --trace " + (b / "t.txt").string());
  INFO(name << ": " << args << " [" << flags_a << "] vs [" << flags_b << "]\n"
            << r_a.output << r_b.output);
  REQUIRE(r_a.exit_code == 0);
  REQUIRE(r_b.exit_code == 0);
  CHECK(summary_without_wall(a / "summary.json") == summary_without_wall(b / "summary.json"));
  CHECK(read_text(a / "histogram.txt") == read_text(b / "histogram.txt"));
  const std::string trace = read_text(a / "t.txt");
  CHECK(!trace.empty());
  CHECK(trace == read_text(b / "t.txt"));
}

}  // namespace kvmsim::test
