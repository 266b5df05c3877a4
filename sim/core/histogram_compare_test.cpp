#include "sim/core/histogram_compare.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using namespace kvmsim;

namespace {

// tests/golden/t1_hv_on_60k.txt (60000 samples), shift µs added to every sample.
LatencyHistogram bell(std::int64_t shift = 0, std::size_t buckets = 100) {
  const std::vector<std::pair<std::int64_t, std::uint64_t>> shape = {
      {4, 197}, {5, 4743}, {6, 48186}, {7, 6637}, {8, 220}, {9, 6},  {10, 1}, {12, 3},
      {14, 1},  {15, 1},   {16, 1},    {17, 1},   {19, 1},  {21, 1}, {24, 1}};
  LatencyHistogram h(buckets);
  std::uint64_t cycle = 0;
  for (const auto& [us, n] : shape)
    for (std::uint64_t i = 0; i < n; ++i) h.add_us(us + shift, cycle++);
  return h;
}

CyclictestReport report_of(const std::vector<LatencyHistogram>& threads) {
  CyclictestReport r;
  r.buckets = threads.front().buckets();
  for (const auto& h : threads) {
    CyclictestThread t;
    t.counts = h.counts();
    t.total = h.in_histogram();
    t.overflows = h.overflows();
    t.min_us = h.min_us();
    t.max_us = h.max_us();
    t.avg_us = static_cast<std::int64_t>(h.avg_us());
    r.threads.push_back(t);
  }
  return r;
}

const ToleranceCheck* find_check(const ThreadComparison& c, const std::string& metric) {
  for (const auto& k : c.checks)
    if (k.metric == metric) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("compare: identical histograms give W1 = 0, KS = 0 and pass the defaults") {
  const auto c = compare_histograms(bell(), bell());
  CHECK(c.w1_us == 0.0);
  CHECK(c.ks == 0.0);
  REQUIRE(c.checks.size() == 2);  // the defaults: W1 and KS
  CHECK(c.checks[0].metric == "W1");
  CHECK(c.checks[0].limit == kDefaultToleranceW1Us);
  CHECK(c.checks[1].metric == "KS");
  CHECK(c.checks[1].limit == kDefaultToleranceKs);
  CHECK(c.pass());
  CHECK(c.a.samples == 60000);
  CHECK(c.a.min.us == 4);
  CHECK(c.a.max.us == 24);
  CHECK(c.a.p50.us == 6);
  CHECK(c.b.p999.us == c.a.p999.us);
  CHECK(c.censor_bucket == 100);
}

TEST_CASE("compare: a histogram shifted by 1 us gives W1 = 1 and fails") {
  const auto c = compare_histograms(bell(), bell(1));
  CHECK(c.w1_us == Approx(1.0).epsilon(1e-12));
  // KS of a one-bucket shift: the largest single-bucket probability (bucket 6).
  CHECK(c.ks == Approx(48186.0 / 60000.0).epsilon(1e-12));
  CHECK_FALSE(c.pass());
  CHECK_FALSE(find_check(c, "W1")->pass);
  CHECK_FALSE(find_check(c, "KS")->pass);
  CHECK(c.b.avg.us - c.a.avg.us == Approx(1.0));
  CHECK(c.b.p99.us - c.a.p99.us == 1.0);
}

TEST_CASE("compare: a tolerance exactly at the measured value passes") {
  const auto measured = compare_histograms(bell(), bell(1));
  CompareTolerances tol;
  tol.w1_us = measured.w1_us;
  tol.ks = measured.ks;
  tol.avg_us = std::abs(measured.b.avg.us - measured.a.avg.us);
  tol.p99_us = 1.0;
  const auto c = compare_histograms(bell(), bell(1), tol);
  REQUIRE(c.checks.size() == 4);
  CHECK(c.pass());

  SECTION("as typed in decimal (W1 1, avg 1)") {
    CompareTolerances typed;
    typed.w1_us = 1.0;
    typed.avg_us = 1.0;
    CHECK(compare_histograms(bell(), bell(1), typed).pass());
  }
  SECTION("just below fails") {
    CompareTolerances below;
    below.w1_us = measured.w1_us * (1 - 1e-5);
    const auto b = compare_histograms(bell(), bell(1), below);
    REQUIRE(b.checks.size() == 1);  // only the given tolerance is checked
    CHECK_FALSE(b.pass());
  }
}

TEST_CASE("compare: thread count mismatch is an error unless merged") {
  const auto one = report_of({bell()});
  const auto two = report_of({bell(), bell(1)});
  CompareOptions opts;
  opts.name_a = "one.txt";
  opts.name_b = "two.txt";
  CHECK_THROWS_AS(compare_histograms(one, two, {}, opts), HistogramCompareError);
  CHECK_THROWS_WITH(
      compare_histograms(one, two, {}, opts),
      Catch::Contains("one.txt has 1 thread column") && Catch::Contains("two.txt has 2"));

  SECTION("same count: thread by thread") {
    const auto c = compare_histograms(two, two, {}, opts);
    REQUIRE(c.threads.size() == 2);
    CHECK(c.threads[1].label == "thread 1");
    CHECK(c.pass());
    const auto d = compare_histograms(two, report_of({bell(), bell()}), {}, opts);
    CHECK(d.threads[0].pass());
    CHECK_FALSE(d.threads[1].pass());
    CHECK_FALSE(d.pass());
  }
  SECTION("merged: one histogram per file") {
    opts.merge_threads = true;
    const auto c = compare_histograms(two, two, {}, opts);
    REQUIRE(c.threads.size() == 1);
    CHECK(c.threads[0].label == "merged");
    CHECK(c.threads[0].a.samples == 120000);
    // A one-thread file against itself merged with a shifted copy: half the
    // mass moved by 1 us.
    const auto d = compare_histograms(one, two, {}, opts);
    CHECK(d.threads[0].w1_us == Approx(0.5));
  }
}

TEST_CASE("compare: overflows count in one bucket at the smaller histogram's edge") {
  LatencyHistogram a(20);
  LatencyHistogram b(20);
  for (std::uint64_t i = 0; i < 90; ++i) a.add_us(5, i);
  for (std::uint64_t i = 0; i < 10; ++i) a.add_us(30, 90 + i);  // overflows at 20
  for (std::uint64_t i = 0; i < 90; ++i) b.add_us(5, i);
  for (std::uint64_t i = 0; i < 10; ++i) b.add_us(500, 90 + i);  // further out: unseen
  const auto c = compare_histograms(a, b);
  CHECK(c.censor_bucket == 20);
  CHECK(c.w1_us == 0.0);  // both put 10% at >= 20: W1 is a lower bound
  CHECK(c.ks == 0.0);
  CHECK(c.a.overflows == 10);

  SECTION("different -h: the longer histogram is censored at the shorter's edge") {
    LatencyHistogram wide(100);
    for (std::uint64_t i = 0; i < 90; ++i) wide.add_us(5, i);
    for (std::uint64_t i = 0; i < 10; ++i) wide.add_us(40, 90 + i);  // in a bucket of wide
    const auto d = compare_histograms(a, wide);
    CHECK(d.censor_bucket == 20);
    CHECK(d.w1_us == 0.0);
    CHECK(censored_counts(wide, 20)[20] == 10);
  }
  SECTION("percentiles among overflows are lower bounds after a file round trip") {
    const auto rep = parse_cyclictest(b.to_cyclictest_text());
    const auto s = histogram_stats(histogram_from_report(rep));
    CHECK(s.p99.us == 20);  // 9 of the 10 overflows are placed at 20, one at max
    CHECK(s.p99.lower_bound);
    CHECK(s.max.us == 500);
    CHECK_FALSE(s.max.lower_bound);
    CHECK(s.avg.lower_bound);
    CHECK_FALSE(s.p50.lower_bound);
  }
}

TEST_CASE("compare: text and JSON rendering") {
  const auto rep = report_of({bell()});
  const auto shifted = report_of({bell(1)});
  CompareTolerances tol;
  tol.w1_us = 0.5;
  tol.p99_us = 1;
  const auto c = compare_histograms(rep, shifted, tol);
  const std::string text = comparison_text(c, "a.txt", "b.txt");
  CHECK_THAT(text, Catch::Contains("A: a.txt (1 thread, 100 buckets)"));
  CHECK_THAT(text, Catch::Contains("p99.9 (us)"));
  CHECK_THAT(text, Catch::Contains("FAIL W1 (thread 0): "));
  CHECK_THAT(text, Catch::Contains("PASS p99 (thread 0): |B - A| 1 us <= 1 us"));
  CHECK_THAT(text, Catch::Contains("result: FAIL (1 of 2 checks exceeded)"));

  const auto j = nlohmann::json::parse(comparison_json(c, "a.txt", "b.txt"));
  CHECK(j["pass"] == false);
  CHECK(j["a"]["file"] == "a.txt");
  CHECK(j["tolerances"]["w1_us"] == 0.5);
  CHECK_FALSE(j["tolerances"].contains("ks"));
  const auto& t = j["comparisons"][0];
  CHECK(t["w1_us"].get<double>() == Approx(1.0));
  CHECK(t["delta"]["p99_9_us"] == 1.0);
  CHECK(t["a"]["samples"] == 60000);
  CHECK(t["checks"].size() == 2);
  CHECK(t["checks"][1]["metric"] == "p99");
  CHECK(t["checks"][1]["pass"] == true);
}
