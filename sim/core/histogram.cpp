#include "sim/core/histogram.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace kvmsim {

// ---------------------------------------------------------------- histogram

LatencyHistogram::LatencyHistogram(std::size_t buckets) : counts_(buckets, 0) {
  if (buckets == 0) throw std::invalid_argument("LatencyHistogram needs at least one bucket");
}

void LatencyHistogram::add_ns(std::int64_t latency_ns, std::uint64_t cycle_number) {
  add_us(latency_ns / 1000, cycle_number);  // C++ division truncates toward zero
}

void LatencyHistogram::add_us(std::int64_t us, std::uint64_t cycle_number) {
  add_n(us, 1);
  if (us >= static_cast<std::int64_t>(buckets())) overflow_cycles_.push_back(cycle_number);
}

void LatencyHistogram::add_n(std::int64_t us, std::uint64_t n) {
  if (n == 0) return;
  min_us_ = samples_ ? std::min(min_us_, us) : us;
  max_us_ = samples_ ? std::max(max_us_, us) : us;
  samples_ += n;
  sum_us_ += static_cast<s128>(us) * static_cast<s128>(n);
  if (us >= static_cast<std::int64_t>(buckets())) {
    overflows_ += n;
    outside_us_[us] += n;
  } else {
    counts_[us < 0 ? 0 : us] += n;
    if (us < 0) outside_us_[us] += n;
  }
}

double LatencyHistogram::avg_us() const {
  if (samples_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(sum_us_) / static_cast<double>(samples_);
}

double LatencyHistogram::percentile_us(double p) const {
  if (!(p >= 0 && p <= 100)) throw std::invalid_argument("percentile outside [0, 100]");
  if (samples_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const auto n = static_cast<double>(samples_);
  auto rank = static_cast<std::uint64_t>(std::max(1.0, std::ceil(p * n / 100)));
  // Sorted sample order: negative samples (counted in bucket 0), bucket 0's
  // real zeros, buckets 1.., overflow samples.
  std::uint64_t negatives = 0;
  for (const auto& [us, c] : outside_us_) {
    if (us >= 0) break;
    if (rank <= c) return static_cast<double>(us);
    rank -= c;
    negatives += c;
  }
  for (std::size_t b = 0; b < buckets(); ++b) {
    const std::uint64_t c = counts_[b] - (b == 0 ? negatives : 0);
    if (rank <= c) return static_cast<double>(b);
    rank -= c;
  }
  for (auto it = outside_us_.lower_bound(0); it != outside_us_.end(); ++it) {
    if (rank <= it->second) return static_cast<double>(it->first);
    rank -= it->second;
  }
  return static_cast<double>(max_us_);  // not reached: ranks stop at samples_
}

std::string LatencyHistogram::to_cyclictest_text() const {
  std::string out = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n";
  auto it = std::back_inserter(out);
  for (std::size_t b = 0; b < buckets(); ++b) fmt::format_to(it, "{:06d} {:06d}\n", b, counts_[b]);
  const auto avg = static_cast<std::int64_t>(samples_ ? sum_us_ / static_cast<s128>(samples_) : 0);
  fmt::format_to(it, "# Total: {:09d}\n", in_histogram());
  fmt::format_to(it, "# Min Latencies: {:05d}\n", min_us());
  fmt::format_to(it, "# Avg Latencies: {:05d}\n", avg);
  fmt::format_to(it, "# Max Latencies: {:05d}\n", max_us());
  fmt::format_to(it, "# Histogram Overflows: {:05d}\n", overflows_);
  out += "# Histogram Overflow at cycle number:\n# Thread 0:";
  // cyclictest keeps as many overflow cycle numbers as it has buckets.
  const std::size_t listed = std::min({overflow_cycles_.size(), buckets(), overflows_});
  for (std::size_t i = 0; i < listed; ++i) fmt::format_to(it, " {:05d}", overflow_cycles_[i]);
  if (listed < overflows_) fmt::format_to(it, " # {:05d} others", overflows_ - listed);
  out += "\n\n";
  return out;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.buckets() != buckets()) {
    throw std::invalid_argument(fmt::format(
        "cannot merge a {}-bucket histogram into a {}-bucket one", other.buckets(), buckets()));
  }
  if (other.samples_ == 0) return;
  min_us_ = samples_ ? std::min(min_us_, other.min_us_) : other.min_us_;
  max_us_ = samples_ ? std::max(max_us_, other.max_us_) : other.max_us_;
  samples_ += other.samples_;
  sum_us_ += other.sum_us_;
  overflows_ += other.overflows_;
  for (std::size_t b = 0; b < buckets(); ++b) counts_[b] += other.counts_[b];
  overflow_cycles_.insert(overflow_cycles_.end(), other.overflow_cycles_.begin(),
                          other.overflow_cycles_.end());
  for (const auto& [us, c] : other.outside_us_) outside_us_[us] += c;
}

// ------------------------------------------------------------------- reader

HistogramParseError::HistogramParseError(std::size_t line_number, const std::string& problem,
                                         const std::string& line_text)
    : std::runtime_error(fmt::format("LINE {}: {}: '{}'", line_number, problem, line_text)),
      line(line_number) {}

namespace {

std::vector<std::string_view> split_fields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == '\t') {
      ++i;
      continue;
    }
    const std::size_t j = std::min(s.find_first_of(" \t", i), s.size());
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// The largest count or latency a cyclictest file may carry (see the row reader).
constexpr std::uint64_t kMaxCount = 1000000000000000ULL;

template <typename T>
std::optional<T> to_number(std::string_view s) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// A footer line's numbers, with where they came from for later checks.
template <typename T>
struct Values {
  std::vector<T> v;
  std::size_t line = 0;
  std::string text;
};

struct ThreadOverflows {
  std::size_t thread = 0;
  std::vector<std::uint64_t> cycles;
  std::uint64_t others = 0;
  std::size_t line = 0;
  std::string text;
};

// 100 ms of 1 us buckets: kvmsim's own cyclictest.histogram_us maximum, and
// far above any real cyclictest -h.
constexpr std::size_t kMaxBuckets = 100000;
constexpr std::size_t kMaxCells = 4000000;  // threads x buckets (32 MB of counts)

class CyclictestParser {
 public:
  CyclictestReport parse(const std::string& text) {
    std::istringstream in(text);
    std::string raw;
    while (std::getline(in, raw)) {
      ++line_no_;
      line_ = raw;
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      for (const char c : line_) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 && c != '\t' && c != '\f' && c != '\v') {
          line_ = fmt::format("byte 0x{:02x}", u);
          fail("binary data: not a cyclictest text file");
        }
      }
      parse_line(line_);
    }
    if (!in_histogram_) {
      ++line_no_;
      line_.clear();
      fail("no '# Histogram' line before end of input");
    }
    // A file cut while being written (a full disk, a killed cyclictest).
    if (!text.empty() && text.back() != '\n' && !footer_started_)
      fail("the last line has no newline: the file was cut in the middle of a histogram row");
    if (!rows_.empty() && !footer_started_) {
      ++line_no_;
      line_.clear();
      fail(
          "no summary line ('# Total:', '# Min Latencies:', ...) after the histogram rows: "
          "the file was cut");
    }
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw HistogramParseError(line_no_, problem, line_);
  }
  [[noreturn]] static void fail_at(std::size_t line, const std::string& problem,
                                   const std::string& text) {
    throw HistogramParseError(line, problem, text);
  }

  template <typename T>
  Values<T> numbers(std::string_view rest) const {
    Values<T> out{{}, line_no_, line_};
    for (std::string_view f : split_fields(rest)) {
      const auto v = to_number<T>(f);
      if (!v) fail(fmt::format("bad number '{}'", f));
      if (*v > static_cast<T>(kMaxCount) ||
          (std::is_signed_v<T> && *v < -static_cast<T>(kMaxCount)))
        fail(fmt::format("value {} is outside +-{}", *v, kMaxCount));
      out.v.push_back(*v);
    }
    if (out.v.empty()) fail("no values");
    return out;
  }

  void parse_line(std::string_view s) {
    if (s == "# Histogram") {
      if (in_histogram_) fail("second '# Histogram' line");
      in_histogram_ = true;
      return;
    }
    // Before the histogram: cyclictest status output and comments.
    if (!in_histogram_ || split_fields(s).empty()) return;
    if (s[0] != '#') return parse_row(s);
    footer_started_ = true;
    if (starts_with(s, "# Total:")) {
      total_ = numbers<std::uint64_t>(s.substr(8));
    } else if (starts_with(s, "# Min Latencies:")) {
      min_ = numbers<std::int64_t>(s.substr(16));
    } else if (starts_with(s, "# Avg Latencies:")) {
      avg_ = numbers<std::int64_t>(s.substr(16));
    } else if (starts_with(s, "# Max Latencies:")) {
      max_ = numbers<std::int64_t>(s.substr(16));
    } else if (starts_with(s, "# Histogram Overflows:")) {
      overflows_ = numbers<std::uint64_t>(s.substr(22));
    } else if (starts_with(s, "# Thread ")) {
      parse_thread_overflows(s.substr(9));
    }
    // Other comments ("# Histogram Overflow at cycle number:", "# SMIs:", ...)
    // carry nothing we keep.
  }

  // "000042 000017\t000003": bucket index, then one count per column.
  void parse_row(std::string_view s) {
    if (footer_started_) fail("histogram row after the summary lines");
    const auto fields = split_fields(s);
    if (fields.size() < 2) fail("histogram row needs a bucket and at least one count");
    const auto bucket = to_number<std::size_t>(fields[0]);
    if (!bucket) fail(fmt::format("bad bucket index '{}'", fields[0]));
    // Every row below the highest is materialised: a stray huge index would
    // allocate gigabytes (found by fuzz_histogram: 8060020 took 12 s).
    if (*bucket >= kMaxBuckets)
      fail(fmt::format("bucket index {} is not below {} (cyclictest -h takes at most that)",
                       *bucket, kMaxBuckets));
    if (!rows_.empty() && *bucket <= rows_.back().first) fail("bucket index not increasing");
    std::vector<std::uint64_t> counts;
    for (std::size_t i = 1; i < fields.size(); ++i) {
      const auto c = to_number<std::uint64_t>(fields[i]);
      if (!c) fail(fmt::format("bad count '{}'", fields[i]));
      // No real run has 1e15 samples (31 years at 1 us); larger counts would
      // only overflow the statistics (fuzz_histogram, fourth run).
      if (*c > kMaxCount) fail(fmt::format("count {} is above {}", *c, kMaxCount));
      counts.push_back(*c);
    }
    if (!rows_.empty() && counts.size() != rows_.front().second.size()) {
      fail(fmt::format("{} counts where earlier rows have {}", counts.size(),
                       rows_.front().second.size()));
    }
    rows_.emplace_back(*bucket, std::move(counts));
  }

  // After "# Thread ": "N: 00623 02813 ... [# 02980 others]". "# Thread Ids:"
  // and the like are not overflow lists and are skipped.
  void parse_thread_overflows(std::string_view s) {
    const std::size_t colon = s.find(':');
    const auto thread = to_number<std::size_t>(s.substr(0, colon));
    if (colon == std::string_view::npos || !thread) return;
    ThreadOverflows t{*thread, {}, 0, line_no_, line_};
    const auto fields = split_fields(s.substr(colon + 1));
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i] == "#") {
        const auto others =
            i + 1 < fields.size() ? to_number<std::uint64_t>(fields[i + 1]) : std::nullopt;
        if (!others || i + 3 != fields.size() || fields[i + 2] != "others") {
          fail("expected '# NNNNN others' at the end of the overflow list");
        }
        t.others = *others;
        break;
      }
      const auto cycle = to_number<std::uint64_t>(fields[i]);
      if (!cycle) fail(fmt::format("bad cycle number '{}'", fields[i]));
      t.cycles.push_back(*cycle);
    }
    thread_overflows_.push_back(std::move(t));
  }

  // Per-thread value of a footer line that may carry an extra -H summary.
  template <typename T>
  void check_width(const std::optional<Values<T>>& values, std::size_t threads,
                   bool summary_allowed) const {
    if (!values) return;
    const std::size_t n = values->v.size();
    if (n != threads && !(summary_allowed && n == threads + 1)) {
      fail_at(values->line, fmt::format("{} values for {} threads", n, threads), values->text);
    }
  }

  CyclictestReport finish() const {
    const std::size_t columns = rows_.empty() ? 0 : rows_.front().second.size();
    // Min/Avg never carry the -H summary column, so they give the thread count.
    std::size_t threads = columns;
    if (min_)
      threads = min_->v.size();
    else if (avg_)
      threads = avg_->v.size();
    else if (columns == 0 && total_)
      threads = total_->v.size();
    if (columns != 0 && columns != threads && columns != threads + 1) {
      fail_at(min_ ? min_->line : avg_->line,
              fmt::format("{} values but the histogram has {} columns", threads, columns),
              min_ ? min_->text : avg_->text);
    }
    check_width(min_, threads, false);
    check_width(avg_, threads, false);
    check_width(max_, threads, true);
    check_width(total_, threads, true);
    check_width(overflows_, threads, true);

    CyclictestReport report;
    report.buckets = rows_.empty() ? 0 : rows_.back().first + 1;
    // Thread columns times buckets are materialised: bound the product too
    // (fuzz_histogram: 12 columns x 551616 buckets took 15 s under ASan).
    if (threads * report.buckets > kMaxCells)
      fail_at(line_no_,
              fmt::format("{} threads x {} buckets is above {} histogram cells", threads,
                          report.buckets, kMaxCells),
              "");
    report.threads.resize(threads);
    for (std::size_t t = 0; t < threads; ++t) {
      CyclictestThread& th = report.threads[t];
      th.counts.assign(report.buckets, 0);
      for (const auto& [bucket, counts] : rows_) th.counts[bucket] = counts[t];
      th.total = 0;
      for (std::uint64_t c : th.counts) th.total += c;
      if (total_) {
        // cyclictest's "# Total:" is the sum of its bucket counts (overflows apart).
        if (total_->v[t] != th.total)
          fail_at(total_->line,
                  fmt::format("'# Total:' says {} for thread {} but its histogram rows add up "
                              "to {}: inconsistent or cut file",
                              total_->v[t], t, th.total),
                  total_->text);
        th.total = total_->v[t];
      }
      if (overflows_) th.overflows = overflows_->v[t];
      if (min_) th.min_us = min_->v[t];
      if (avg_) th.avg_us = avg_->v[t];
      if (max_) th.max_us = max_->v[t];
    }
    for (const ThreadOverflows& o : thread_overflows_) {
      if (o.thread >= threads) {
        fail_at(o.line, fmt::format("thread {} but there are {} threads", o.thread, threads),
                o.text);
      }
      CyclictestThread& th = report.threads[o.thread];
      th.overflow_cycles = o.cycles;
      th.overflow_others = o.others;
      // cyclictest lists as many overflow cycles as it has buckets; rows of
      // empty buckets may be missing from the text, this count may not.
      if (o.others > 0) report.buckets = std::max(report.buckets, o.cycles.size());
    }
    for (CyclictestThread& th : report.threads) th.counts.resize(report.buckets, 0);
    return report;
  }

  std::size_t line_no_ = 0;
  std::string line_;
  bool in_histogram_ = false;
  bool footer_started_ = false;
  std::vector<std::pair<std::size_t, std::vector<std::uint64_t>>> rows_;
  std::optional<Values<std::uint64_t>> total_, overflows_;
  std::optional<Values<std::int64_t>> min_, avg_, max_;
  std::vector<ThreadOverflows> thread_overflows_;
};

}  // namespace

CyclictestReport parse_cyclictest(const std::string& text) {
  return CyclictestParser().parse(text);
}

LatencyHistogram histogram_from_report(const CyclictestReport& report, std::size_t thread) {
  if (thread >= report.threads.size()) {
    throw std::out_of_range(
        fmt::format("thread {} not in a {}-thread report", thread, report.threads.size()));
  }
  if (report.buckets == 0) throw std::invalid_argument("cyclictest report without a histogram");
  const CyclictestThread& t = report.threads[thread];
  LatencyHistogram h(report.buckets);
  for (std::size_t b = 0; b < report.buckets; ++b) {
    std::uint64_t n = b < t.counts.size() ? t.counts[b] : 0;
    if (b == 0 && n > 0 && t.min_us < 0) {  // a negative minimum hides in bucket 0
      h.add_n(t.min_us, 1);
      --n;
    }
    h.add_n(static_cast<std::int64_t>(b), n);
  }
  std::uint64_t n = t.overflows;
  const std::int64_t floor = std::max(static_cast<std::int64_t>(report.buckets), t.min_us);
  if (n > 0 && t.max_us > floor) {
    h.add_n(t.max_us, 1);
    --n;
  }
  h.add_n(floor, n);
  h.overflow_cycles_ = t.overflow_cycles;
  return h;
}

// --------------------------------------------------------------- comparison

namespace {

std::uint64_t count_at(const std::vector<std::uint64_t>& v, std::size_t k) {
  return k < v.size() ? v[k] : 0;
}

std::uint64_t mass(const std::vector<std::uint64_t>& v, std::size_t lo, std::size_t hi) {
  std::uint64_t m = 0;
  for (std::size_t k = lo; k <= hi; ++k) m += count_at(v, k);
  return m;
}

// Calls f(CDF_a(k), CDF_b(k)) for k in [lo, hi]; false if either has no mass.
template <typename F>
bool walk_cdfs(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
               std::size_t lo, std::size_t hi, F f) {
  if (lo > hi) throw std::invalid_argument("bucket range with lo > hi");
  const std::size_t size = std::max(a.size(), b.size());
  if (lo >= size) return false;
  hi = std::min(hi, size - 1);
  const auto ma = static_cast<double>(mass(a, lo, hi));
  const auto mb = static_cast<double>(mass(b, lo, hi));
  if (ma == 0 || mb == 0) return false;
  std::uint64_t ca = 0;
  std::uint64_t cb = 0;
  for (std::size_t k = lo; k <= hi; ++k) {
    ca += count_at(a, k);
    cb += count_at(b, k);
    f(static_cast<double>(ca) / ma, static_cast<double>(cb) / mb);
  }
  return true;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double mean_over_buckets(const std::vector<std::uint64_t>& counts, std::size_t lo, std::size_t hi) {
  if (lo > hi) throw std::invalid_argument("bucket range with lo > hi");
  if (lo >= counts.size()) return kNaN;
  hi = std::min(hi, counts.size() - 1);
  double weighted = 0;
  for (std::size_t k = lo; k <= hi; ++k) {
    weighted += static_cast<double>(k) * static_cast<double>(counts[k]);
  }
  const std::uint64_t m = mass(counts, lo, hi);
  return m == 0 ? kNaN : weighted / static_cast<double>(m);
}

double wasserstein1_buckets(const std::vector<std::uint64_t>& a,
                            const std::vector<std::uint64_t>& b, std::size_t lo, std::size_t hi) {
  double w = 0;
  const bool ok = walk_cdfs(a, b, lo, hi, [&](double fa, double fb) { w += std::abs(fa - fb); });
  return ok ? w : kNaN;
}

double ks_statistic_buckets(const std::vector<std::uint64_t>& a,
                            const std::vector<std::uint64_t>& b, std::size_t lo, std::size_t hi) {
  double d = 0;
  const bool ok =
      walk_cdfs(a, b, lo, hi, [&](double fa, double fb) { d = std::max(d, std::abs(fa - fb)); });
  return ok ? d : kNaN;
}

std::size_t mode_bucket(const std::vector<std::uint64_t>& counts) {
  if (counts.empty()) return 0;
  return static_cast<std::size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
}

}  // namespace kvmsim
