// Comparison of two cyclictest latency histograms (`kvmsim compare`): summary
// statistics of both sides and their deltas, the 1-Wasserstein distance and
// the two-sample Kolmogorov-Smirnov statistic over the buckets, and checks
// against tolerances.
//
// Overflows. W1 and KS run on bucket counts (wasserstein1_buckets,
// ks_statistic_buckets over [0, C]). Both sides are censored at the same
// bucket C = min(buckets of A, buckets of B): buckets 0..C-1 as counted, and
// every sample >= C (overflows, and buckets >= C of the longer histogram) in
// one bucket at C, i.e. at its lower bound. So KS is exact over the range a
// histogram can see, W1 is a lower bound on the distance of the uncensored
// samples, and a file in which every sample overflowed still compares. With
// no overflows and equal bucket counts this is exactly what the T1 golden
// regression (tests/cli/t1_regression_test.cpp) computes over buckets 0..99.
//
// Summary statistics come from histogram_from_report(): overflow samples are
// placed at max_us (one) and at max(buckets, min_us) (the rest), so with
// overflows the average and the percentiles that land in the overflow region
// are lower bounds; `lower_bound` marks them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/histogram.h"

namespace kvmsim {

// The tolerances of the T1 golden regression (tests/golden/), used when no
// tolerance is given.
inline constexpr double kDefaultToleranceW1Us = 0.05;
inline constexpr double kDefaultToleranceKs = 0.02;

// A check holds when measured <= limit; the limit is widened by a relative
// 1e-6 (absolute 1e-12 near 0) so that a limit typed from the printed value
// (7 significant digits) is not failed by rounding. avg and p99 are checked
// on |B - A|.
struct CompareTolerances {
  std::optional<double> w1_us;
  std::optional<double> ks;
  std::optional<double> avg_us;
  std::optional<double> p99_us;

  [[nodiscard]] bool any() const { return w1_us || ks || avg_us || p99_us; }
  // W1 0.05 us and KS 0.02.
  [[nodiscard]] static CompareTolerances defaults();
};

struct CompareOptions {
  // false: thread i of A against thread i of B (same thread count required);
  // true: each file's threads summed into one histogram first.
  bool merge_threads = false;
  // Names of the two inputs in error messages (the file names in the CLI).
  std::string name_a = "A";
  std::string name_b = "B";
};

// One side's statistics (µs). NaN for an empty histogram.
struct HistogramStats {
  struct Value {
    double us = 0;
    bool lower_bound = false;  // the true value may be larger (overflows)
  };
  Value min, avg, max, p50, p90, p99, p999;
  std::uint64_t samples = 0;
  std::uint64_t overflows = 0;
  std::size_t buckets = 0;
};

HistogramStats histogram_stats(const LatencyHistogram& h);

struct ToleranceCheck {
  std::string metric;  // "W1", "KS", "avg", "p99"
  std::string unit;    // "us" or ""
  double measured = 0;
  double limit = 0;
  bool pass = false;
};

struct ThreadComparison {
  std::string label;  // "thread N" or "merged"
  HistogramStats a, b;
  std::size_t censor_bucket = 0;  // C: samples >= C are counted in bucket C
  double w1_us = 0;
  double ks = 0;
  std::vector<ToleranceCheck> checks;

  [[nodiscard]] bool pass() const;
};

struct HistogramComparison {
  std::vector<ThreadComparison> threads;
  CompareTolerances tolerances;  // as checked (defaults filled in)
  bool merged = false;
  std::size_t threads_a = 0, threads_b = 0;

  [[nodiscard]] bool pass() const;
  [[nodiscard]] std::size_t failed_checks() const;
  [[nodiscard]] std::size_t checks() const;
};

// Inputs that cannot be compared (thread count mismatch, empty histogram).
struct HistogramCompareError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Counts 0..censor-1 as they are, then everything >= censor in bucket censor.
std::vector<std::uint64_t> censored_counts(const LatencyHistogram& h, std::size_t censor);

// One pair of histograms; a tolerances object without any set uses defaults().
ThreadComparison compare_histograms(const LatencyHistogram& a, const LatencyHistogram& b,
                                    const CompareTolerances& tol = {}, std::string label = "");

// Every thread of two parsed files. Throws HistogramCompareError when the
// thread counts differ (without merge) or a thread has no samples, and
// std::invalid_argument for a report without a histogram.
HistogramComparison compare_histograms(const CyclictestReport& a, const CyclictestReport& b,
                                       const CompareTolerances& tol = {},
                                       const CompareOptions& opts = {});

// The readable table and verdict lines; name_a/name_b label the two sides.
std::string comparison_text(const HistogramComparison& c, const std::string& name_a,
                            const std::string& name_b);
// The same as a JSON document (NaN as null).
std::string comparison_json(const HistogramComparison& c, const std::string& name_a,
                            const std::string& name_b);

}  // namespace kvmsim
