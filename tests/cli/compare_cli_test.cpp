// `kvmsim compare A B`: exit 0 when every tolerance holds, 1 when one is
// exceeded, 2 on input it cannot read or compare; and the T1 golden histogram
// checked through the CLI with the same limits as t1_regression_test.cpp.
#include <string>

#include <catch2/catch.hpp>

#include "sim/core/histogram.h"
#include "tests/cli/cli_runner.h"

using namespace kvmsim;
using namespace kvmsim::test;

namespace {

const std::string kGoldenOn = "tests/golden/t1_hv_on_60k.txt";
const std::string kTwoThreads =
    "tests/data/cyclictest/cyclictest-2.40_histogram_2threads_format-fixture.txt";
const std::string kAllOverflow =
    "tests/data/cyclictest/cyclictest-2.40_histogram_all-overflow_format-fixture.txt";

// The golden histogram with every sample one bucket higher.
std::filesystem::path shifted_golden() {
  const auto dir = out_dir("compare-shifted");
  std::filesystem::create_directories(dir);
  const auto rep =
      parse_cyclictest(read_text(std::filesystem::path(KVMSIM_SOURCE_DIR) / kGoldenOn));
  REQUIRE(rep.threads.size() == 1);
  REQUIRE(rep.threads[0].overflows == 0);
  LatencyHistogram h(rep.buckets);
  std::uint64_t cycle = 0;
  for (std::size_t b = 0; b < rep.buckets; ++b)
    for (std::uint64_t i = 0; i < rep.threads[0].counts[b]; ++i)
      h.add_us(static_cast<std::int64_t>(b) + 1, cycle++);
  const auto path = dir / "shifted.txt";
  std::ofstream(path, std::ios::binary) << h.to_cyclictest_text();
  return path;
}

}  // namespace

TEST_CASE("compare: a golden histogram against itself passes", "[cli][compare]") {
  const auto r = run_cli("compare " + kGoldenOn + " " + kGoldenOn);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("PASS W1 (thread 0): 0 us <= 0.05 us"));
  CHECK_THAT(r.output, Catch::Contains("PASS KS (thread 0): 0 <= 0.02"));
  CHECK_THAT(r.output, Catch::Contains("result: PASS (2 checks)"));
}

TEST_CASE("compare: a copy shifted by one bucket fails on W1", "[cli][compare]") {
  const auto shifted = shifted_golden();
  const auto r = run_cli("compare " + kGoldenOn + " " + shifted.string());
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("FAIL W1 (thread 0): "));
  CHECK_THAT(r.output, Catch::Contains("> 0.05 us"));
  CHECK_THAT(r.output, Catch::Contains("result: FAIL (2 of 2 checks exceeded)"));

  SECTION("a wide enough tolerance passes, and only the given ones are checked") {
    const auto p = run_cli("compare " + kGoldenOn + " " + shifted.string() +
                           " --tolerance-w1 1 --tolerance-avg 1 --tolerance-p99 1");
    INFO(p.output);
    CHECK(p.exit_code == 0);
    CHECK_THAT(p.output, Catch::Contains("PASS W1 (thread 0): 1 us <= 1 us"));
    CHECK_THAT(p.output, Catch::Contains("PASS p99 (thread 0): |B - A| 1 us <= 1 us"));
    CHECK_THAT(p.output, !Catch::Contains("KS (thread 0)"));
  }
  SECTION("JSON") {
    const auto j = run_cli("compare " + kGoldenOn + " " + shifted.string() + " --json");
    CHECK(j.exit_code == 1);
    // libsystemc's banner comes first (on stderr, merged here).
    const auto doc = nlohmann::json::parse(j.output.substr(j.output.find('{')));
    CHECK(doc["pass"] == false);
    CHECK(doc["comparisons"][0]["w1_us"].get<double>() == Approx(1.0));
    CHECK(doc["comparisons"][0]["delta"]["min_us"] == 1.0);
  }
}

TEST_CASE("compare: unreadable or unparsable input exits 2 and names the file", "[cli][compare]") {
  const auto missing = run_cli("compare " + kGoldenOn + " tests/golden/no_such_file.txt");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains("tests/golden/no_such_file.txt: cannot read"));

  const auto bad = run_cli("compare scenarios/cyclictest_pinned.yaml " + kGoldenOn);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("scenarios/cyclictest_pinned.yaml: LINE "));
}

TEST_CASE("compare: real cyclictest fixtures", "[cli][compare]") {
  SECTION("two thread columns against themselves, thread by thread") {
    const auto r = run_cli("compare " + kTwoThreads + " " + kTwoThreads);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("PASS W1 (thread 1)"));
    CHECK_THAT(r.output, Catch::Contains("result: PASS (4 checks)"));
  }
  SECTION("different thread counts exit 2") {
    const auto r = run_cli("compare " + kTwoThreads + " " + kAllOverflow);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("has 2 thread columns but"));
  }
  SECTION("merged: censored at the all-overflow file's 20 buckets") {
    const auto r = run_cli("compare " + kTwoThreads + " " + kAllOverflow +
                           " --merge --tolerance-ks 0.02 --tolerance-p99 100");
    INFO(r.output);
    CHECK_THAT(r.output, Catch::Contains("(buckets 0..20, samples >= 20 counted at 20)"));
    CHECK_THAT(r.output, Catch::Contains("PASS KS (merged)"));
    // p99: 2-thread file from its buckets, all-overflow file only ">= 45".
    CHECK_THAT(r.output, Catch::Contains("FAIL p99 (merged)"));
    CHECK(r.exit_code == 1);
  }
}

TEST_CASE("compare: --help states the default tolerances", "[cli][compare]") {
  const auto r = run_cli("compare --help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("W1 <= 0.05 us and KS <= 0.02"));
}

// The T1 golden regression through the CLI (60000 loops as in
// t1_regression_test.cpp, so it matches tests/golden/t1_hv_on_60k.txt).
TEST_CASE("compare: a T1 run matches its golden histogram through the CLI", "[t1][compare]") {
  const auto dir = out_dir("compare-t1-on");
  const auto run = run_cli(
      "run scenarios/cyclictest_pinned.yaml -q --set kvm.enable_hv_timer=true "
      "--set cyclictest.loops=60000 --out " +
      dir.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto r = run_cli("compare " + kGoldenOn + " " + (dir / "histogram.txt").string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

TEST_CASE(
    "compare: a run --out folder stands for its histogram.txt, a folder without one is an "
    "input error, and a single check is one check",
    "[cli][compare]") {
  const auto dir = out_dir("compare-run-dir");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(KVMSIM_SOURCE_DIR) + "/" + kGoldenOn,
                             dir / "histogram.txt");
  const auto r = run_cli("compare " + dir.string() + " " + kGoldenOn + " --tolerance-avg 0.5");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("result: PASS (1 check)"));
  const auto empty = out_dir("compare-empty-dir");
  std::filesystem::create_directories(empty);
  const auto e = run_cli("compare " + empty.string() + " " + kGoldenOn);
  CHECK(e.exit_code == 2);
  CHECK_THAT(e.output, Catch::Contains("a directory without histogram.txt"));
}

TEST_CASE(
    "compare: with overflows the avg comes from the best source: a run folder's summary.json "
    "(exact), else the file's Avg Latencies line when above the buckets' lower bound",
    "[cli][compare]") {
  SECTION("real cyclictest, every sample overflowed: the file's 131 us, not the 45 us floor") {
    const auto r = run_cli("compare " + kAllOverflow + " " + kAllOverflow);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains(">=131.000"));
  }
  SECTION("a kvmsim run with 6 buckets against the same run with 100") {
    const auto narrow = out_dir("compare-avg-narrow");
    const auto wide = out_dir("compare-avg-wide");
    const std::string run = "run scenarios/cyclictest_pinned.yaml -q --set cyclictest.loops=2000 ";
    REQUIRE(run_cli(run + "--set cyclictest.histogram_us=6 --out " + narrow.string()).exit_code ==
            0);
    REQUIRE(run_cli(run + "--out " + wide.string()).exit_code == 0);
    // Folders: both averages exact (summary.json), equal, so a zero tolerance holds.
    const auto dirs =
        run_cli("compare " + wide.string() + " " + narrow.string() + " --tolerance-avg 0");
    INFO(dirs.output);
    CHECK(dirs.exit_code == 0);
    CHECK_THAT(dirs.output, Catch::Contains("6.081        6.081"));  // no ">=" on avg
    CHECK_THAT(dirs.output, Catch::Contains("PASS avg (thread 0): |B - A| 0 us"));
    // The narrow file alone: its average is only known to be >= the truncated 6 us.
    const auto file = run_cli("compare " + wide.string() + " " +
                              (narrow / "histogram.txt").string() + " --tolerance-avg 0");
    INFO(file.output);
    CHECK(file.exit_code == 1);
    CHECK_THAT(file.output, Catch::Contains(">=6.000"));
  }
}
