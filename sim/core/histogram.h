// Latency histogram in cyclictest's terms, its `-q -h N` text format (writer
// and reader), and statistics for comparing two bucketed distributions.
//
// cyclictest (rt-tests) measures each cycle's wake-up latency in whole µs,
// truncated (diff_ns / 1000). With -h N a latency 0 <= us < N lands in bucket
// us; us >= N is a histogram overflow, and the cycle number at which it
// happened is recorded (cyclictest lists at most N of them, then
// "# NNNNN others"). Avg is over all samples, overflows included; Total is
// the number of samples inside the histogram.
#pragma once

#include "sim/core/time.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvmsim {

struct CyclictestReport;

class LatencyHistogram {
 public:
  explicit LatencyHistogram(std::size_t buckets = 100);  // cyclictest -h value

  // us = latency_ns / 1000 truncated toward zero. A negative latency counts in
  // bucket 0 but min_us() and percentiles keep its real value.
  void add_ns(std::int64_t latency_ns, std::uint64_t cycle_number);
  void add_us(std::int64_t us, std::uint64_t cycle_number);

  [[nodiscard]] std::size_t buckets() const { return counts_.size(); }
  [[nodiscard]] std::uint64_t count(std::size_t bucket) const { return counts_.at(bucket); }
  [[nodiscard]] const std::vector<std::uint64_t>& counts() const { return counts_; }
  [[nodiscard]] std::uint64_t samples() const { return samples_; }  // incl. overflows
  [[nodiscard]] std::uint64_t in_histogram() const { return samples_ - overflows_; }  // "Total"
  [[nodiscard]] std::uint64_t overflows() const { return overflows_; }
  // 0 when there are no samples.
  [[nodiscard]] std::int64_t min_us() const { return samples_ ? min_us_ : 0; }
  [[nodiscard]] std::int64_t max_us() const { return samples_ ? max_us_ : 0; }
  // Exact mean of the integer µs samples (cyclictest prints it truncated);
  // NaN when empty.
  [[nodiscard]] double avg_us() const;
  // Nearest-rank percentile over the integer µs samples, p in [0, 100]
  // (p = 0 gives the minimum). Exact, overflows included. NaN when empty.
  [[nodiscard]] double percentile_us(double p) const;
  // Cycle number of every overflow, in order of arrival.
  [[nodiscard]] const std::vector<std::uint64_t>& overflow_cycles() const {
    return overflow_cycles_;
  }

  // The `cyclictest -q -h N` output for one thread, byte for byte.
  [[nodiscard]] std::string to_cyclictest_text() const;

  // Adds other's samples; both must have the same number of buckets.
  void merge(const LatencyHistogram& other);

 private:
  friend LatencyHistogram histogram_from_report(const CyclictestReport&, std::size_t);
  void add_n(std::int64_t us, std::uint64_t n);  // n samples of us; no cycle numbers

  std::vector<std::uint64_t> counts_;
  std::vector<std::uint64_t> overflow_cycles_;
  // Exact values of the samples < 0 or >= buckets, value -> count (a read
  // file may say 1e15 overflows: one entry per value, not per sample).
  std::map<std::int64_t, std::uint64_t> outside_us_;
  std::uint64_t samples_ = 0;
  std::uint64_t overflows_ = 0;
  s128 sum_us_ = 0;  // 128 bits: count x latency products of a read file cannot overflow
  std::int64_t min_us_ = 0;
  std::int64_t max_us_ = 0;
};

// One thread's column of a parsed cyclictest histogram. Fields missing from
// the text stay at their defaults (-1 for min/avg/max).
struct CyclictestThread {
  std::vector<std::uint64_t> counts;  // one per bucket; rows not printed are 0
  std::uint64_t total = 0;            // "# Total:" (sum of counts if absent)
  std::uint64_t overflows = 0;
  std::int64_t min_us = -1, avg_us = -1, max_us = -1;
  // The exact average when a source other than the text knows it (a kvmsim run's
  // summary.json); NaN when unknown. "# Avg Latencies" is truncated to the unit.
  double exact_avg = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::uint64_t> overflow_cycles;  // as listed
  std::uint64_t overflow_others = 0;           // "# NNNNN others"
};

struct CyclictestReport {
  std::vector<CyclictestThread> threads;
  std::size_t buckets = 0;  // highest printed row + 1 (at least the number of
                            // listed overflow cycles when the list was cut)
};

// Message: "LINE N: <problem>: '<line text>'" (N is 1-based).
struct HistogramParseError : std::runtime_error {
  HistogramParseError(std::size_t line_number, const std::string& problem,
                      const std::string& line_text);
  std::size_t line;
};

// Reads cyclictest -h output (one or more threads; an -H summary column is
// dropped). Lines before "# Histogram" (status output, "# /dev/cpu_dma_latency",
// provenance comments) and unknown '#' lines are skipped; omitted rows and a
// missing overflow-cycle section are tolerated.
CyclictestReport parse_cyclictest(const std::string& text);

// Rebuilds one thread's histogram. Exact values of overflows are unknown: one
// is put at max_us (when max_us >= buckets) and the rest at the lower bound
// max(buckets, min_us). Listed overflow cycle numbers are kept.
LatencyHistogram histogram_from_report(const CyclictestReport& report, std::size_t thread = 0);

// Distribution comparison on bucket counts. Each histogram is restricted to
// buckets [lo, hi] (inclusive; hi is clamped to the longer vector) and
// normalised to probability there. Counts beyond a vector's end are 0. The
// result is NaN if either side has no samples in the range.
double mean_over_buckets(const std::vector<std::uint64_t>& counts, std::size_t lo, std::size_t hi);
// Earth mover's distance in bucket units (µs): sum over k of |CDF_a(k) - CDF_b(k)|.
double wasserstein1_buckets(const std::vector<std::uint64_t>& a,
                            const std::vector<std::uint64_t>& b, std::size_t lo, std::size_t hi);
// Kolmogorov-Smirnov statistic: max over k of |CDF_a(k) - CDF_b(k)|.
double ks_statistic_buckets(const std::vector<std::uint64_t>& a,
                            const std::vector<std::uint64_t>& b, std::size_t lo, std::size_t hi);
// Index of the largest count (the first on ties; 0 for an empty histogram).
std::size_t mode_bucket(const std::vector<std::uint64_t>& counts);

}  // namespace kvmsim
