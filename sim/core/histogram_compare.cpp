#include "sim/core/histogram_compare.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvmsim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Slack of 1e-6 relative: a limit typed from a printed value ({:.7g}) passes.
bool within(double measured, double limit) {
  const double slack = std::max(1e-12, 1e-6 * std::abs(limit));
  return measured <= limit + slack;  // false for NaN
}

ToleranceCheck check(std::string metric, std::string unit, double measured, double limit) {
  return {std::move(metric), std::move(unit), measured, limit, within(measured, limit)};
}

// The (name, value) pairs of the table rows, in order.
std::vector<std::pair<const char*, const HistogramStats::Value*>> value_rows(
    const HistogramStats& s) {
  return {{"min", &s.min}, {"avg", &s.avg}, {"max", &s.max},   {"p50", &s.p50},
          {"p90", &s.p90}, {"p99", &s.p99}, {"p99.9", &s.p999}};
}

}  // namespace

CompareTolerances CompareTolerances::defaults() {
  CompareTolerances t;
  t.w1_us = kDefaultToleranceW1Us;
  t.ks = kDefaultToleranceKs;
  return t;
}

HistogramStats histogram_stats(const LatencyHistogram& h) {
  HistogramStats s;
  s.samples = h.samples();
  s.overflows = h.overflows();
  s.buckets = h.buckets();
  if (h.samples() == 0) {
    for (HistogramStats::Value* v : {&s.min, &s.avg, &s.max, &s.p50, &s.p90, &s.p99, &s.p999})
      v->us = kNaN;
    return s;
  }
  const auto max = static_cast<double>(h.max_us());
  const double floor = std::max(static_cast<double>(h.buckets()), static_cast<double>(h.min_us()));
  // A percentile in the overflow region is exact only when it is the maximum.
  auto pct = [&](double p) {
    const double v = h.percentile_us(p);
    return HistogramStats::Value{v, v >= static_cast<double>(h.buckets()) && v < max};
  };
  s.min = {static_cast<double>(h.min_us()), false};
  s.max = {max, false};
  s.avg = {h.avg_us(), h.overflows() >= 2 && max > floor};
  s.p50 = pct(50);
  s.p90 = pct(90);
  s.p99 = pct(99);
  s.p999 = pct(99.9);
  return s;
}

bool ThreadComparison::pass() const {
  return std::all_of(checks.begin(), checks.end(), [](const ToleranceCheck& c) { return c.pass; });
}

bool HistogramComparison::pass() const { return failed_checks() == 0; }

std::size_t HistogramComparison::failed_checks() const {
  std::size_t n = 0;
  for (const auto& t : threads)
    for (const auto& c : t.checks) n += c.pass ? 0 : 1;
  return n;
}

std::size_t HistogramComparison::checks() const {
  std::size_t n = 0;
  for (const auto& t : threads) n += t.checks.size();
  return n;
}

std::vector<std::uint64_t> censored_counts(const LatencyHistogram& h, std::size_t censor) {
  std::vector<std::uint64_t> out(censor + 1, 0);
  const auto& counts = h.counts();
  for (std::size_t b = 0; b < counts.size(); ++b) out[std::min(b, censor)] += counts[b];
  out[censor] += h.overflows();
  return out;
}

ThreadComparison compare_histograms(const LatencyHistogram& a, const LatencyHistogram& b,
                                    const CompareTolerances& tol, std::string label) {
  const CompareTolerances t = tol.any() ? tol : CompareTolerances::defaults();
  ThreadComparison c;
  c.label = std::move(label);
  c.a = histogram_stats(a);
  c.b = histogram_stats(b);
  c.censor_bucket = std::min(a.buckets(), b.buckets());
  const auto ca = censored_counts(a, c.censor_bucket);
  const auto cb = censored_counts(b, c.censor_bucket);
  c.w1_us = wasserstein1_buckets(ca, cb, 0, c.censor_bucket);
  c.ks = ks_statistic_buckets(ca, cb, 0, c.censor_bucket);
  if (t.w1_us) c.checks.push_back(check("W1", "us", c.w1_us, *t.w1_us));
  if (t.ks) c.checks.push_back(check("KS", "", c.ks, *t.ks));
  if (t.avg_us)
    c.checks.push_back(check("avg", "us", std::abs(c.b.avg.us - c.a.avg.us), *t.avg_us));
  if (t.p99_us)
    c.checks.push_back(check("p99", "us", std::abs(c.b.p99.us - c.a.p99.us), *t.p99_us));
  return c;
}

namespace {

// The average the buckets give is a lower bound once overflows hide exact values; a
// better figure then replaces it: the exact one when known (summary.json of a kvmsim run),
// else the file's "# Avg Latencies" when larger (cyclictest truncates it to the unit, so
// it too is a lower bound). True when the value changed.
bool refine_avg(HistogramStats::Value& avg, const CyclictestThread& t) {
  const HistogramStats::Value before = avg;
  if (!avg.lower_bound) return false;
  if (std::isfinite(t.exact_avg)) {
    avg = {t.exact_avg, false};
  } else if (t.avg_us >= 0) {
    avg.us = std::max(avg.us, static_cast<double>(t.avg_us));
  }
  return avg.us != before.us || avg.lower_bound != before.lower_bound;
}

std::vector<LatencyHistogram> side_histograms(const CyclictestReport& r, bool merge,
                                              const std::string& name) {
  if (r.threads.empty()) throw HistogramCompareError(name + ": no thread columns");
  if (r.buckets == 0) throw HistogramCompareError(name + ": no histogram rows");
  std::vector<LatencyHistogram> hs;
  for (std::size_t t = 0; t < r.threads.size(); ++t) {
    hs.push_back(histogram_from_report(r, t));
    if (hs.back().samples() == 0 && !merge)
      throw HistogramCompareError(fmt::format("{}: thread {} has no samples", name, t));
  }
  if (merge) {
    for (std::size_t t = 1; t < hs.size(); ++t) hs.front().merge(hs[t]);
    hs.resize(1);
    if (hs.front().samples() == 0) throw HistogramCompareError(name + ": no samples");
  }
  return hs;
}

}  // namespace

HistogramComparison compare_histograms(const CyclictestReport& a, const CyclictestReport& b,
                                       const CompareTolerances& tol, const CompareOptions& opts) {
  HistogramComparison c;
  // A NaN tolerance would make every check pass (every comparison with NaN is false).
  const std::pair<const char*, const std::optional<double>*> given[] = {
      {"w1", &tol.w1_us}, {"ks", &tol.ks}, {"avg", &tol.avg_us}, {"p99", &tol.p99_us}};
  for (const auto& [name, v] : given)
    if (*v && !(std::isfinite(**v) && **v >= 0))
      throw HistogramCompareError(
          fmt::format("tolerance {} = {}: must be a finite number >= 0", name, **v));
  c.tolerances = tol.any() ? tol : CompareTolerances::defaults();
  c.merged = opts.merge_threads;
  c.threads_a = a.threads.size();
  c.threads_b = b.threads.size();
  if (!opts.merge_threads && c.threads_a != c.threads_b) {
    throw HistogramCompareError(fmt::format(
        "{} has {} thread column{} but {} has {}; compare files with the same thread count, "
        "or use --merge",
        opts.name_a, c.threads_a, c.threads_a == 1 ? "" : "s", opts.name_b, c.threads_b));
  }
  const auto ha = side_histograms(a, opts.merge_threads, opts.name_a);
  const auto hb = side_histograms(b, opts.merge_threads, opts.name_b);
  for (std::size_t t = 0; t < ha.size(); ++t) {
    c.threads.push_back(compare_histograms(
        ha[t], hb[t], c.tolerances, opts.merge_threads ? "merged" : fmt::format("thread {}", t)));
    if (opts.merge_threads) continue;  // a file's per-thread averages do not merge
    ThreadComparison& tc = c.threads.back();
    const bool changed_a = refine_avg(tc.a.avg, a.threads[t]);
    const bool changed_b = refine_avg(tc.b.avg, b.threads[t]);
    if (!changed_a && !changed_b) continue;
    for (ToleranceCheck& k : tc.checks)
      if (k.metric == "avg") k = check("avg", "us", std::abs(tc.b.avg.us - tc.a.avg.us), k.limit);
  }
  return c;
}

// ---------------------------------------------------------------- rendering

namespace {

std::string format_value(const HistogramStats::Value& v, bool integral) {
  if (std::isnan(v.us)) return "-";
  const std::string num = integral ? fmt::format("{:.0f}", v.us) : fmt::format("{:.3f}", v.us);
  return v.lower_bound ? ">=" + num : num;
}

std::string format_delta(const HistogramStats::Value& a, const HistogramStats::Value& b,
                         bool integral) {
  const double d = b.us - a.us;
  if (std::isnan(d)) return "-";
  std::string s = integral ? fmt::format("{:+.0f}", d) : fmt::format("{:+.3f}", d);
  if (a.lower_bound || b.lower_bound) s += "?";
  return s;
}

std::string format_count_delta(std::uint64_t a, std::uint64_t b) {
  return b >= a ? fmt::format("+{}", b - a) : fmt::format("-{}", a - b);
}

std::string side_line(const char* tag, const std::string& name, std::size_t threads,
                      std::size_t buckets) {
  return fmt::format("{}: {} ({} thread{}, {} buckets)\n", tag, name, threads,
                     threads == 1 ? "" : "s", buckets);
}

}  // namespace

std::string comparison_text(const HistogramComparison& c, const std::string& name_a,
                            const std::string& name_b) {
  std::string out;
  if (c.threads.empty()) return out;
  out += side_line("A", name_a, c.threads_a, c.threads.front().a.buckets);
  out += side_line("B", name_b, c.threads_b, c.threads.front().b.buckets);
  if (c.merged) out += "threads merged into one histogram per file\n";
  const ThreadComparison& first = c.threads.front();
  if (first.a.buckets != first.b.buckets) {
    out += fmt::format(
        "note: bucket counts differ; W1 and KS see buckets 0..{} and everything >= {} as one "
        "bucket\n",
        first.censor_bucket - 1, first.censor_bucket);
  }
  bool any_lower_bound = false;
  for (const ThreadComparison& t : c.threads) {
    out += fmt::format("\n{:<12} {:>12} {:>12} {:>12}\n", t.label, "A", "B", "B - A");
    const auto ra = value_rows(t.a);
    const auto rb = value_rows(t.b);
    for (std::size_t i = 0; i < ra.size(); ++i) {
      const bool integral = std::string(ra[i].first) != "avg";
      const auto& va = *ra[i].second;
      const auto& vb = *rb[i].second;
      any_lower_bound = any_lower_bound || va.lower_bound || vb.lower_bound;
      out += fmt::format("{:<12} {:>12} {:>12} {:>12}\n", std::string(ra[i].first) + " (us)",
                         format_value(va, integral), format_value(vb, integral),
                         format_delta(va, vb, integral));
    }
    out += fmt::format("{:<12} {:>12} {:>12} {:>12}\n", "samples", t.a.samples, t.b.samples,
                       format_count_delta(t.a.samples, t.b.samples));
    out += fmt::format("{:<12} {:>12} {:>12} {:>12}\n", "overflows", t.a.overflows, t.b.overflows,
                       format_count_delta(t.a.overflows, t.b.overflows));
    const std::string range = fmt::format("(buckets 0..{}, samples >= {} counted at {})",
                                          t.censor_bucket, t.censor_bucket, t.censor_bucket);
    out += fmt::format("{:<12} {:>12.6f}   {}\n", "W1 (us)", t.w1_us, range);
    out += fmt::format("{:<12} {:>12.6f}\n", "KS", t.ks);
  }
  if (any_lower_bound) {
    out +=
        "\n>= : lower bound, the value lies among overflow samples (exact values unknown);"
        " ? : delta from a lower bound\n";
  }
  out += "\n";
  for (const ThreadComparison& t : c.threads) {
    for (const ToleranceCheck& k : t.checks) {
      const std::string unit = k.unit.empty() ? "" : " " + k.unit;
      const std::string what = k.metric == "avg" || k.metric == "p99" ? "|B - A| " : "";
      out += fmt::format("{} {} ({}): {}{:.7g}{} {} {}{}\n", k.pass ? "PASS" : "FAIL", k.metric,
                         t.label, what, k.measured, unit, k.pass ? "<=" : ">", k.limit, unit);
    }
  }
  const char* checks = c.checks() == 1 ? "check" : "checks";
  out += c.pass() ? fmt::format("result: PASS ({} {})\n", c.checks(), checks)
                  : fmt::format("result: FAIL ({} of {} {} exceeded)\n", c.failed_checks(),
                                c.checks(), checks);
  return out;
}

std::string comparison_json(const HistogramComparison& c, const std::string& name_a,
                            const std::string& name_b) {
  using Json = nlohmann::ordered_json;
  auto num = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
  auto side = [&](const HistogramStats& s) {
    Json j;
    Json lower = Json::array();
    for (const auto& [name, v] : value_rows(s)) {
      const std::string key = std::string(name == std::string("p99.9") ? "p99_9" : name) + "_us";
      j[key] = num(v->us);
      if (v->lower_bound) lower.push_back(key);
    }
    j["samples"] = s.samples;
    j["overflows"] = s.overflows;
    j["buckets"] = s.buckets;
    j["lower_bounds"] = lower;
    return j;
  };
  Json j;
  j["a"] = {{"file", name_a}, {"threads", c.threads_a}};
  j["b"] = {{"file", name_b}, {"threads", c.threads_b}};
  j["merged"] = c.merged;
  Json tol = Json::object();
  if (c.tolerances.w1_us) tol["w1_us"] = *c.tolerances.w1_us;
  if (c.tolerances.ks) tol["ks"] = *c.tolerances.ks;
  if (c.tolerances.avg_us) tol["avg_us"] = *c.tolerances.avg_us;
  if (c.tolerances.p99_us) tol["p99_us"] = *c.tolerances.p99_us;
  j["tolerances"] = tol;
  j["comparisons"] = Json::array();
  for (const ThreadComparison& t : c.threads) {
    Json tj;
    tj["label"] = t.label;
    tj["a"] = side(t.a);
    tj["b"] = side(t.b);
    Json delta;
    const auto ra = value_rows(t.a);
    const auto rb = value_rows(t.b);
    for (std::size_t i = 0; i < ra.size(); ++i) {
      const std::string name = ra[i].first;
      delta[(name == "p99.9" ? std::string("p99_9") : name) + "_us"] =
          num(rb[i].second->us - ra[i].second->us);
    }
    delta["samples"] =
        static_cast<std::int64_t>(t.b.samples) - static_cast<std::int64_t>(t.a.samples);
    delta["overflows"] =
        static_cast<std::int64_t>(t.b.overflows) - static_cast<std::int64_t>(t.a.overflows);
    tj["delta"] = delta;
    tj["censor_bucket"] = t.censor_bucket;
    tj["w1_us"] = num(t.w1_us);
    tj["ks"] = num(t.ks);
    tj["checks"] = Json::array();
    for (const ToleranceCheck& k : t.checks) {
      tj["checks"].push_back({{"metric", k.metric},
                              {"unit", k.unit},
                              {"measured", num(k.measured)},
                              {"limit", k.limit},
                              {"pass", k.pass}});
    }
    tj["pass"] = t.pass();
    j["comparisons"].push_back(tj);
  }
  j["pass"] = c.pass();
  return j.dump(2) + "\n";
}

}  // namespace kvmsim
