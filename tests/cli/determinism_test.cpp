// Same scenario + seed gives byte-identical outputs (sim.wall_s aside, which
// is the wall-clock time of the run); another seed gives another trajectory.
#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
nlohmann::json without_wall(nlohmann::json j) {
  j["metrics"].erase("sim.wall_s");
  return j;
}
}  // namespace

TEST_CASE("same scenario and seed give byte-identical histogram and summary",
          "[cli][determinism]") {
  const auto a = out_dir("det-a"), b = out_dir("det-b"), c = out_dir("det-c");
  const std::string common = "run scenarios/cyclictest_pinned.yaml -q --set cyclictest.loops=5000 ";
  REQUIRE(run_cli(common + "--seed 7 --out " + a.string()).exit_code == 0);
  REQUIRE(run_cli(common + "--seed 7 --out " + b.string()).exit_code == 0);
  REQUIRE(run_cli(common + "--seed 8 --out " + c.string()).exit_code == 0);
  CHECK(read_text(a / "histogram.txt") == read_text(b / "histogram.txt"));
  CHECK(without_wall(read_json(a / "summary.json")).dump() ==
        without_wall(read_json(b / "summary.json")).dump());
  // A different seed changes the stage-cost draws, hence the histogram.
  CHECK(read_text(a / "histogram.txt") != read_text(c / "histogram.txt"));
}

TEST_CASE("summary.json carries the contract metric keys", "[cli][contract]") {
  const auto d = out_dir("keys");
  REQUIRE(run_cli("run scenarios/cyclictest_pinned.yaml -q --set cyclictest.loops=2000 --out " +
                  d.string())
              .exit_code == 0);
  const auto m = read_json(d / "summary.json")["metrics"];
  for (const char* k :
       {"sim.events", "sim.wall_s", "sim.simulated_s", "exits.MSR_WRITE.count",
        "exits.MSR_WRITE.avg_ns", "exits.PREEMPTION_TIMER.count", "exits.PREEMPTION_TIMER.avg_ns",
        "cyclictest.loops", "cyclictest.min_us", "cyclictest.avg_us", "cyclictest.max_us",
        "cyclictest.p50_us", "cyclictest.p99_us"}) {
    INFO(k);
    CHECK(m.contains(k));
  }
  CHECK(m["cyclictest.loops"].get<double>() == 2000);
  // 2000 loops of 1 ms plus the first interval.
  CHECK(m["sim.simulated_s"].get<double>() == Approx(2.001).margin(0.001));
}
