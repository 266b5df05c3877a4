#include "sim/core/histogram.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using kvmsim::CyclictestReport;
using kvmsim::HistogramParseError;
using kvmsim::LatencyHistogram;
using Counts = std::vector<std::uint64_t>;

namespace {

std::string read_fixture(const std::string& name) {
  const std::string path = std::string(KVMSIM_SOURCE_DIR) + "/tests/data/cyclictest/" + name;
  std::ifstream in(path);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* const kTwoThreads = "cyclictest-2.40_histogram_2threads_format-fixture.txt";
const char* const kAllOverflow = "cyclictest-2.40_histogram_all-overflow_format-fixture.txt";

// The fixture as cyclictest printed it: without our provenance comments.
std::string strip_provenance(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("# source:", 0) == 0 || line.rfind("# what:", 0) == 0 ||
        line.rfind("# setup:", 0) == 0) {
      continue;
    }
    out += line + "\n";
  }
  return out;
}

std::size_t parse_error_line(const std::string& text) {
  try {
    kvmsim::parse_cyclictest(text);
  } catch (const HistogramParseError& e) {
    return e.line;
  }
  return 0;
}

}  // namespace

TEST_CASE("add_ns truncates to whole microseconds like cyclictest") {
  LatencyHistogram h(10);
  h.add_ns(0, 0);
  h.add_ns(999, 1);
  h.add_ns(1000, 2);
  h.add_ns(1999, 3);
  h.add_ns(2000, 4);
  CHECK(h.count(0) == 2);
  CHECK(h.count(1) == 2);
  CHECK(h.count(2) == 1);
  CHECK(h.samples() == 5);
  CHECK(h.max_us() == 2);
}

TEST_CASE("negative latencies count in bucket 0 but keep their real value") {
  LatencyHistogram h(10);
  h.add_ns(-1500, 0);  // truncated toward zero: -1 us
  h.add_ns(3000, 1);
  CHECK(h.count(0) == 1);
  CHECK(h.min_us() == -1);
  CHECK(h.percentile_us(0) == -1.0);
  CHECK(h.percentile_us(100) == 3.0);
  CHECK(h.avg_us() == Approx(1.0));
}

TEST_CASE("latencies at or above the bucket count are overflows with their cycle numbers") {
  LatencyHistogram h(10);
  h.add_us(9, 0);
  h.add_us(10, 7);
  h.add_us(250, 9);
  CHECK(h.count(9) == 1);
  CHECK(h.samples() == 3);
  CHECK(h.in_histogram() == 1);
  CHECK(h.overflows() == 2);
  CHECK(h.overflow_cycles() == Counts{7, 9});
  CHECK(h.max_us() == 250);
}

TEST_CASE("min, max and avg cover every sample, overflows included") {
  LatencyHistogram h(5);
  for (std::int64_t us : {3, 1, 4, 100}) h.add_us(us, 0);
  CHECK(h.min_us() == 1);
  CHECK(h.max_us() == 100);
  CHECK(h.avg_us() == Approx(27.0));  // 108 / 4, exact, not truncated
  CHECK(std::isnan(LatencyHistogram(5).avg_us()));
}

TEST_CASE("percentile is nearest-rank over the exact integer samples, overflows included") {
  LatencyHistogram h(10);
  // Sorted: 1 1 2 3 4 5 6 9 15 35 (15 and 35 overflow).
  for (std::int64_t us : {3, 1, 4, 1, 5, 9, 2, 6, 35, 15}) h.add_us(us, 0);
  CHECK(h.percentile_us(0) == 1.0);
  CHECK(h.percentile_us(10) == 1.0);   // rank 1
  CHECK(h.percentile_us(11) == 1.0);   // rank ceil(1.1) = 2
  CHECK(h.percentile_us(21) == 2.0);   // rank 3
  CHECK(h.percentile_us(50) == 4.0);   // rank 5
  CHECK(h.percentile_us(90) == 15.0);  // rank 9
  CHECK(h.percentile_us(95) == 35.0);  // rank 10
  CHECK(h.percentile_us(100) == 35.0);
  CHECK_THROWS_AS(h.percentile_us(101), std::invalid_argument);
}

TEST_CASE("to_cyclictest_text prints cyclictest's -q -h layout") {
  LatencyHistogram h(3);
  h.add_us(1, 0);
  h.add_us(1, 1);
  h.add_us(2, 2);
  h.add_us(7, 3);
  CHECK(h.to_cyclictest_text() ==
        "# /dev/cpu_dma_latency set to 0us\n"
        "# Histogram\n"
        "000000 000000\n"
        "000001 000002\n"
        "000002 000001\n"
        "# Total: 000000003\n"
        "# Min Latencies: 00001\n"
        "# Avg Latencies: 00002\n"  // 11 / 4 truncated
        "# Max Latencies: 00007\n"
        "# Histogram Overflows: 00001\n"
        "# Histogram Overflow at cycle number:\n"
        "# Thread 0: 00003\n"
        "\n");
}

TEST_CASE("overflow cycle list stops at the bucket count and counts the others") {
  LatencyHistogram h(2);
  for (std::uint64_t c = 0; c < 5; ++c) h.add_us(50, c);
  CHECK(h.overflow_cycles().size() == 5);
  CHECK(h.to_cyclictest_text().find("# Thread 0: 00000 00001 # 00003 others\n") !=
        std::string::npos);
}

TEST_CASE("writer and reader round trip byte-identically without overflows") {
  LatencyHistogram h(64);
  std::uint64_t cycle = 0;
  for (std::int64_t us = 3; us < 60; ++us) {
    for (std::int64_t k = 0; k < (us * 7919) % 13; ++k) h.add_ns(us * 1000 + 999 - k, cycle++);
  }
  const std::string text = h.to_cyclictest_text();
  const CyclictestReport report = kvmsim::parse_cyclictest(text);
  REQUIRE(report.threads.size() == 1);
  CHECK(report.buckets == 64);
  const LatencyHistogram back = kvmsim::histogram_from_report(report);
  CHECK(back.counts() == h.counts());
  CHECK(back.in_histogram() == h.in_histogram());
  CHECK(back.overflows() == 0);
  CHECK(back.min_us() == h.min_us());
  CHECK(back.max_us() == h.max_us());
  CHECK(back.avg_us() == Approx(h.avg_us()));
  CHECK(back.to_cyclictest_text() == text);
}

TEST_CASE("round trip with overflows keeps counts, totals, overflows, min and max") {
  LatencyHistogram h(20);
  for (std::uint64_t c = 0; c < 100; ++c) h.add_us(static_cast<std::int64_t>(c % 30) + 2, c);
  const LatencyHistogram back =
      kvmsim::histogram_from_report(kvmsim::parse_cyclictest(h.to_cyclictest_text()));
  CHECK(back.counts() == h.counts());
  CHECK(back.in_histogram() == h.in_histogram());
  CHECK(back.overflows() == h.overflows());
  CHECK(back.min_us() == h.min_us());
  CHECK(back.max_us() == h.max_us());
  CHECK(back.overflow_cycles() ==
        Counts(h.overflow_cycles().begin(), h.overflow_cycles().begin() + 20));
  // Everything but the Avg line (exact overflow values are not in the text)
  // comes back byte for byte, the "others" tail included.
  auto without_avg = [](std::string s) {
    const auto at = s.find("# Avg Latencies:");
    return s.erase(at, s.find('\n', at) - at);
  };
  CHECK(without_avg(back.to_cyclictest_text()) == without_avg(h.to_cyclictest_text()));
}

TEST_CASE("parses the real 2-thread cyclictest 2.40 fixture") {
  const CyclictestReport r = kvmsim::parse_cyclictest(read_fixture(kTwoThreads));
  REQUIRE(r.threads.size() == 2);
  CHECK(r.buckets == 600);
  const auto& t0 = r.threads[0];
  const auto& t1 = r.threads[1];
  CHECK(t0.counts.size() == 600);
  CHECK(t0.counts[599] == 1);
  CHECK(t1.counts[13] == 1);
  CHECK(t0.counts[0] == 0);
  CHECK(t0.total == 4951);
  CHECK(t1.total == 4994);
  CHECK(t0.min_us == 28);
  CHECK(t1.min_us == 13);
  CHECK(t0.avg_us == 151);
  CHECK(t1.avg_us == 117);
  CHECK(t0.max_us == 3525);
  CHECK(t1.max_us == 3330);
  CHECK(t0.overflows == 29);
  CHECK(t1.overflows == 6);
  CHECK(t0.overflow_cycles.size() == 29);
  CHECK(t0.overflow_cycles.front() == 623);
  CHECK(t0.overflow_cycles.back() == 4974);
  CHECK(t1.overflow_cycles == Counts{185, 800, 1877, 1982, 2951, 3989});
  CHECK(t0.overflow_others == 0);
  for (const auto& t : r.threads) {
    std::uint64_t sum = 0;
    for (std::uint64_t c : t.counts) sum += c;
    CHECK(sum == t.total);
  }
  const LatencyHistogram h1 = kvmsim::histogram_from_report(r, 1);
  CHECK(h1.in_histogram() == 4994);
  CHECK(h1.overflows() == 6);
  CHECK(h1.min_us() == 13);
  CHECK(h1.max_us() == 3330);
  CHECK_THROWS_AS(kvmsim::histogram_from_report(r, 2), std::out_of_range);
}

TEST_CASE("parses the real all-overflow fixture with its others count") {
  const std::string text = read_fixture(kAllOverflow);
  const CyclictestReport r = kvmsim::parse_cyclictest(text);
  REQUIRE(r.threads.size() == 1);
  CHECK(r.buckets == 20);
  const auto& t = r.threads[0];
  CHECK(t.total == 0);
  CHECK(t.overflows == 3000);
  CHECK(t.overflow_cycles.size() == 20);
  CHECK(t.overflow_cycles[19] == 19);
  CHECK(t.overflow_others == 2980);
  CHECK(t.min_us == 45);
  CHECK(t.avg_us == 131);
  CHECK(t.max_us == 405);

  const LatencyHistogram h = kvmsim::histogram_from_report(r);
  CHECK(h.in_histogram() == 0);
  CHECK(h.overflows() == 3000);
  CHECK(h.min_us() == 45);  // all samples overflowed, so min bounds them from below
  CHECK(h.max_us() == 405);
  // Re-emitting gives cyclictest's own text except the Avg line.
  std::string expected = strip_provenance(text);
  expected.replace(expected.find("# Avg Latencies: 00131"), 22, "# Avg Latencies: 00045");
  CHECK(h.to_cyclictest_text() == expected);
}

TEST_CASE("malformed input throws HistogramParseError naming the line") {
  const std::string head = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000001\n";
  CHECK(parse_error_line(head + "000001 0x0002\n") == 4);           // bad count
  CHECK(parse_error_line(head + "000000 000002\n") == 4);           // index not increasing
  CHECK(parse_error_line(head + "000001 000002\t000003\n") == 4);   // column count changes
  CHECK(parse_error_line(head + "# Min Latencies: 000a1\n") == 4);  // bad number
  CHECK(parse_error_line(head + "# Min Latencies: 00001 00002 00003\n") ==
        4);  // 3 threads, 1 column
  CHECK(parse_error_line(head + "# Min Latencies: 00001\n# Thread 1: 00005\n") == 5);
  CHECK(parse_error_line(head + "# Thread 0: 00005 # 00003 otters\n") == 4);
  CHECK(parse_error_line(head + "# Total: 000000001\n000001 000001\n") == 5);  // row after footer
  CHECK(parse_error_line("000000 000001\n") == 2);  // no "# Histogram" before the end
  try {
    kvmsim::parse_cyclictest(head + "000001 0x0002\n");
    FAIL("no exception");
  } catch (const HistogramParseError& e) {
    CHECK(std::string(e.what()) == "LINE 4: bad count '0x0002': '000001 0x0002'");
  }
}

TEST_CASE("parser tolerates omitted rows, old footers, CRLF, status lines and -H summaries") {
  // Non-quiet status output before the histogram, rows left out, no Total or
  // overflow-cycle section (old cyclictest), CRLF line ends.
  const CyclictestReport old = kvmsim::parse_cyclictest(
      "policy: fifo: loadavg: 0.00 0.01 0.01 1/152 2441\r\n"
      "T: 0 ( 2440) P:95 I:200 C:   6 Min:  6 Act:7 Avg:7 Max:  12\r\n"
      "# Histogram\r\n"
      "000006 000005\r\n"
      "000012 000001\r\n"
      "\r\n"
      "# Min Latencies: 00006\r\n"
      "# Avg Latencies: 00007\r\n"
      "# Max Latencies: 00012\r\n"
      "# Histogram Overflows: 00000\r\n");
  REQUIRE(old.threads.size() == 1);
  CHECK(old.buckets == 13);
  CHECK(old.threads[0].counts[6] == 5);
  CHECK(old.threads[0].counts[7] == 0);
  CHECK(old.threads[0].total == 6);
  CHECK(old.threads[0].max_us == 12);

  // -H: an extra summary column on rows, Total, Max and Overflows.
  const CyclictestReport sum = kvmsim::parse_cyclictest(
      "# Histogram\n"
      "000000 000001\t000002\t000003\n"
      "# Total: 000000001 000000002 000000003\n"
      "# Min Latencies: 00000 00000\n"
      "# Avg Latencies: 00000 00000\n"
      "# Max Latencies: 00000 00000 00000\n"
      "# Histogram Overflows: 00000 00000 00000\n"
      "# Histogram Overflow at cycle number:\n"
      "# Thread 0:\n"
      "# Thread 1:\n");
  REQUIRE(sum.threads.size() == 2);
  CHECK(sum.threads[1].counts == Counts{2});
  CHECK(sum.threads[1].total == 2);
}

TEST_CASE("merge adds samples, overflows and cycle numbers") {
  LatencyHistogram a(10), b(10), all(10);
  for (std::int64_t us : {1, 5, 12}) {
    a.add_us(us, 1);
    all.add_us(us, 1);
  }
  for (std::int64_t us : {0, 30}) {
    b.add_us(us, 2);
    all.add_us(us, 2);
  }
  a.merge(b);
  CHECK(a.counts() == all.counts());
  CHECK(a.overflow_cycles() == all.overflow_cycles());
  CHECK(a.to_cyclictest_text() == all.to_cyclictest_text());
  CHECK(a.percentile_us(100) == 30.0);
  CHECK_THROWS_AS(a.merge(LatencyHistogram(11)), std::invalid_argument);
}

TEST_CASE("W1 counts how many buckets the mass moves") {
  const Counts a{0, 0, 4, 0, 0};
  const Counts b{0, 0, 0, 4, 0};
  CHECK(kvmsim::wasserstein1_buckets(a, b, 0, 4) == Approx(1.0));  // shift by one bucket
  CHECK(kvmsim::wasserstein1_buckets(Counts{3, 0, 0, 0}, Counts{0, 0, 0, 1}, 0, 3) == Approx(3.0));
  // Half the mass moves 3 buckets: CDFs .5 .5 .5 1 vs 0 0 0 1.
  CHECK(kvmsim::wasserstein1_buckets(Counts{1, 0, 0, 1}, Counts{0, 0, 0, 5}, 0, 3) == Approx(1.5));
  // Normalised: scale does not matter; unequal lengths are padded with zeros.
  CHECK(kvmsim::wasserstein1_buckets(Counts{1, 2, 3}, Counts{10, 20, 30, 0, 0}, 0, 100) == 0.0);
  // Restricted to [1, 3]: the outlier in bucket 6 is ignored.
  CHECK(kvmsim::wasserstein1_buckets(Counts{0, 2, 0, 0, 0, 0, 1}, Counts{0, 0, 7}, 1, 3) ==
        Approx(1.0));
  CHECK(std::isnan(kvmsim::wasserstein1_buckets(Counts{0, 0}, Counts{1, 1}, 0, 1)));
  CHECK_THROWS_AS(kvmsim::wasserstein1_buckets(a, b, 3, 2), std::invalid_argument);
}

TEST_CASE("KS statistic is the largest CDF gap") {
  CHECK(kvmsim::ks_statistic_buckets(Counts{0, 4, 0}, Counts{0, 0, 4}, 0, 2) == Approx(1.0));
  CHECK(kvmsim::ks_statistic_buckets(Counts{1, 0, 0, 1}, Counts{0, 0, 0, 5}, 0, 3) == Approx(0.5));
  // CDFs .25 .75 1 vs .5 .5 1.
  CHECK(kvmsim::ks_statistic_buckets(Counts{1, 2, 1}, Counts{2, 0, 2}, 0, 2) == Approx(0.25));
  CHECK(kvmsim::ks_statistic_buckets(Counts{5, 5}, Counts{1, 1}, 0, 1) == 0.0);
}

TEST_CASE("mean over a bucket range and the mode bucket") {
  CHECK(kvmsim::mean_over_buckets(Counts{0, 2, 0, 2}, 0, 3) == Approx(2.0));
  CHECK(kvmsim::mean_over_buckets(Counts{0, 2, 0, 2}, 1, 1) == Approx(1.0));
  CHECK(kvmsim::mean_over_buckets(Counts{1, 0, 0, 3}, 0, 1000) == Approx(2.25));
  CHECK(std::isnan(kvmsim::mean_over_buckets(Counts{1, 0}, 1, 1)));
  CHECK(kvmsim::mode_bucket(Counts{0, 3, 7, 7, 1}) == 2);  // first of a tie
  CHECK(kvmsim::mode_bucket(Counts{}) == 0);
}

TEST_CASE("the reader refuses cut, inconsistent and binary files", "[histogram][reliability]") {
  const std::string good =
      "# Histogram\n000000 000001\n000001 000002\n# Total: 000000003\n"
      "# Min Latencies: 00000\n# Avg Latencies: 00001\n# Max Latencies: 00001\n"
      "# Histogram Overflows: 00000\n";
  CHECK_NOTHROW(kvmsim::parse_cyclictest(good));
  auto message = [](const std::string& text) {
    try {
      kvmsim::parse_cyclictest(text);
    } catch (const HistogramParseError& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  // Cut in the middle of the last row: "000001 0000" would read as a count of 0.
  CHECK(message(good.substr(0, good.find("000001 0000") + 11)).find("cut in the middle") !=
        std::string::npos);
  // Cut after a whole row: no footer.
  CHECK(message(good.substr(0, good.find("# Total"))).find("no summary line") != std::string::npos);
  std::string bad = good;
  bad.replace(bad.find("000000003"), 9, "000000004");
  CHECK(message(bad).find("says 4 for thread 0 but its histogram rows add up to 3") !=
        std::string::npos);
  CHECK(message(std::string("# Histogram\n000000 00\0001\n", 23)).find("binary data") !=
        std::string::npos);
  // The real cyclictest fixtures stay readable.
  CHECK_NOTHROW(kvmsim::parse_cyclictest(
      read_fixture("cyclictest-2.40_histogram_2threads_format-fixture.txt")));
  CHECK_NOTHROW(kvmsim::parse_cyclictest(
      read_fixture("cyclictest-2.40_histogram_all-overflow_format-fixture.txt")));
}

TEST_CASE("a bucket index far above any cyclictest -h is refused, not allocated",
          "[histogram][reliability]") {
  // fuzz_histogram: "8060020 001399006" made the reader and compare allocate
  // and walk 8 million buckets (12 s; 1e9 would need gigabytes).
  try {
    kvmsim::parse_cyclictest("# Histogram\n000000 000001\n8060020 000001\n# Total: 000000002\n");
    FAIL("no exception");
  } catch (const HistogramParseError& e) {
    CHECK(std::string(e.what()).find("bucket index 8060020 is not below 100000") !=
          std::string::npos);
  }
  CHECK_NOTHROW(
      kvmsim::parse_cyclictest("# Histogram\n000000 000001\n099999 000001\n# Total: 000000002\n"));
}

TEST_CASE("thread columns times buckets are bounded", "[histogram][reliability]") {
  // fuzz_histogram: 12 columns at bucket 551615 (6.6 M cells, 15 s under ASan).
  std::string row = "099999", total = "# Total:";
  for (int i = 0; i < 41; ++i) {
    row += " 00001";
    total += " 000000001";
  }
  try {
    kvmsim::parse_cyclictest("# Histogram\n" + row + "\n" + total + "\n");
    FAIL("no exception");
  } catch (const HistogramParseError& e) {
    CHECK(std::string(e.what()).find("41 threads x 100000 buckets is above 4000000") !=
          std::string::npos);
  }
}

TEST_CASE("a huge overflow count is held per value, not per sample", "[histogram][reliability]") {
  // fuzz_histogram (fifth run): '# Histogram Overflows: 736229' took 13 s
  // under ASan (one vector element per overflow sample), 7362290000 ended in
  // std::bad_alloc; a real long run with a short -h can have that many.
  const std::string text =
      "# Histogram\n000000 000000\n000001 000002\n# Total: 000000002\n"
      "# Min Latencies: 00001\n# Avg Latencies: 00001\n# Max Latencies: 00405\n"
      "# Histogram Overflows: 7362290000\n";
  const auto h = kvmsim::histogram_from_report(kvmsim::parse_cyclictest(text), 0);
  CHECK(h.samples() == 7362290002ULL);
  CHECK(h.overflows() == 7362290000ULL);
  CHECK(h.percentile_us(0) == 1);
  CHECK(h.percentile_us(50) == 2);     // the overflows count at the floor, bucket 2
  CHECK(h.percentile_us(100) == 405);  // and one at the maximum
}
