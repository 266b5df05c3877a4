// cyclictest -N (cyclictest.nsecs): latencies kept in ns, as rt-tests does
// with -N (calcdiff_ns() instead of calcdiff()): min/avg/max in ns, and the
// histogram indexed by the same ns value (1 ns buckets; checked against
// rt-tests 2.4's cyclictest: `-N -h 50` overflows every sample).
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/core/histogram.h"
#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
const std::string kArgs = "scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=2000";
const std::string kRun = "run " + kArgs + " -q";
}  // namespace

TEST_CASE("cyclictest -N: the same run in ns, not truncated to whole us", "[cli][cyclictest]") {
  const auto us_dir = out_dir("ct-us");
  const auto ns_dir = out_dir("ct-ns");
  REQUIRE(run_cli(kRun + " --out " + us_dir.string()).exit_code == 0);
  const auto r = run_cli(kRun +
                         " --set cyclictest.nsecs=true --set cyclictest.histogram_us=20000 "
                         "--out " +
                         ns_dir.string());
  REQUIRE(r.exit_code == 0);
  const auto us = read_json(us_dir / "summary.json").at("metrics");
  const auto ns = read_json(ns_dir / "summary.json").at("metrics");
  // Only the unit changes: the simulation is the same (same seed, same
  // wake-ups), so each us figure is the ns one truncated.
  CHECK(ns.at("sim.fingerprint") == us.at("sim.fingerprint"));
  CHECK(ns.count("cyclictest.avg_us") == 0);
  const double min_ns = ns.at("cyclictest.min_ns"), max_ns = ns.at("cyclictest.max_ns");
  const double avg_ns = ns.at("cyclictest.avg_ns");
  CHECK(std::floor(min_ns / 1000) == us.at("cyclictest.min_us").get<double>());
  CHECK(std::floor(max_ns / 1000) == us.at("cyclictest.max_us").get<double>());
  // Truncating each sample loses up to 1 us each, ~0.5 us on average: the
  // ns mean sits above the us mean by less than 1 us, and is not a whole
  // number of us.
  const double d = avg_ns / 1000 - us.at("cyclictest.avg_us").get<double>();
  CHECK(d > 0);
  CHECK(d < 1);
  CHECK(std::fmod(avg_ns, 1000.0) != 0);
  // The histogram file is cyclictest -N -h output: ns buckets, ns footer.
  const auto h = kvmsim::parse_cyclictest(read_text(ns_dir / "histogram.txt"));
  REQUIRE(h.threads.size() == 1);
  CHECK(h.threads[0].min_us == static_cast<std::int64_t>(min_ns));
  CHECK(h.threads[0].max_us == static_cast<std::int64_t>(max_ns));
  CHECK(h.threads[0].avg_us == static_cast<std::int64_t>(avg_ns));  // printed truncated
  // The run summary (without -q) says which unit it prints.
  const auto text = run_cli("run " + kArgs + " --set cyclictest.nsecs=true");
  CHECK(text.output.find("cyclictest -N: 2000 loops  min " +
                         std::to_string(static_cast<long>(min_ns)) + " ns") != std::string::npos);
}

TEST_CASE("cyclictest -N -h 100: 100 buckets of 1 ns, every latency overflows",
          "[cli][cyclictest]") {
  const auto m = run_metrics("ct-ns-ovf", kArgs + " --set cyclictest.nsecs=true");
  CHECK(m.at("cyclictest.overflows") == m.at("cyclictest.loops"));
}
