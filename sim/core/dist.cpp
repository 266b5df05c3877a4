#include "sim/core/dist.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace kvmsim {
namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Splits "a, b, key=c" at top-level commas (not inside nested parentheses).
std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
}

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Cumulative probabilities of the given weights (last one exactly 1).
std::vector<double> cdf_from_weights(const std::vector<double>& w) {
  double total = 0;
  for (double x : w) total += x;
  std::vector<double> cdf;
  double acc = 0;
  cdf.reserve(w.size());
  for (double x : w) cdf.push_back(acc += x / total);
  if (!cdf.empty()) cdf.back() = 1.0;
  return cdf;
}

// Mean of values under the probabilities that a cumulative distribution gives.
double weighted_mean(const std::vector<double>& cdf, const std::vector<double>& values) {
  double m = 0;
  double prev = 0;
  for (std::size_t i = 0; i < cdf.size(); ++i) {
    m += values[i] * (cdf[i] - prev);
    prev = cdf[i];
  }
  return m;
}

}  // namespace

std::optional<Quantity> Quantity::parse(const std::string& text) {
  const std::string t = trim(text);
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' ||
                          t[i] == '-' || t[i] == '+' || t[i] == 'e' || t[i] == 'E')) {
    // Stop at an 'e' that is not an exponent (no digit/sign after it).
    if ((t[i] == 'e' || t[i] == 'E') &&
        (i + 1 >= t.size() || !(std::isdigit(static_cast<unsigned char>(t[i + 1])) ||
                                t[i + 1] == '-' || t[i + 1] == '+')))
      break;
    ++i;
  }
  auto num = parse_number(t.substr(0, i));
  if (!num) return std::nullopt;
  const std::string unit = trim(t.substr(i));
  Quantity q;
  if (unit.empty() || unit == "ns") {
    q.value = *num;
  } else if (unit == "us") {
    q.value = *num * 1e3;
  } else if (unit == "ms") {
    q.value = *num * 1e6;
  } else if (unit == "s") {
    q.value = *num * 1e9;
  } else if (unit == "cyc" || unit == "cycles") {
    q.value = *num;
    q.cycles = true;
  } else {
    return std::nullopt;
  }
  return q;
}

std::string Quantity::str() const {
  if (cycles) return fmt::format("{}cyc", value);
  if (value != 0 && std::fmod(value, 1e3) == 0) return fmt::format("{}us", value / 1e3);
  return fmt::format("{}ns", value);
}

namespace {

// The physically meaningful range of a stage cost: nothing a CPU does in one
// stage takes a simulated second, and a draw must fit a 64-bit cycle count
// with room to spare (1e10 cycles is one second at 10 GHz, above any TSC).
constexpr double kMaxCostNs = 1e9;
constexpr double kMaxCostCycles = 1e10;
constexpr double kMaxLogNormalSigma = 2;  // e^(8.3 sigma) stays far below 2^64 cycles

std::string too_large(const Quantity& q) {
  if (q.cycles ? std::fabs(q.value) <= kMaxCostCycles : std::fabs(q.value) <= kMaxCostNs) return {};
  return fmt::format("{} is above one simulated second (limit 1s, or 1e10cyc)", q.str());
}

// Range checks of a parsed distribution ("" when it is fine).
std::string range_problem(const CostDist& d) {
  std::vector<const Quantity*> qs{&d.a, &d.b, &d.shift};
  if (d.min) qs.push_back(&*d.min);
  if (d.max) qs.push_back(&*d.max);
  for (const auto& p : d.points) qs.push_back(&p.first);
  for (const auto* q : qs)
    if (auto why = too_large(*q); !why.empty()) return why;
  if (d.kind == DistKind::LogNormal && d.sigma > kMaxLogNormalSigma)
    return fmt::format("lognormal: sigma {} is above {} (its tail would overflow)", d.sigma,
                       kMaxLogNormalSigma);
  if (d.min && d.max && d.min->cycles == d.max->cycles && d.min->value > d.max->value)
    return fmt::format("min={} is above max={}", d.min->str(), d.max->str());
  if (d.kind == DistKind::Uniform && d.a.cycles == d.b.cycles && d.a.value > d.b.value)
    return fmt::format("uniform: lo {} is above hi {}", d.a.str(), d.b.str());
  double total = 0;
  for (const auto& p : d.points) total += p.second;
  for (const auto& p : d.parts) total += p.first;
  if ((d.kind == DistKind::Empirical || d.kind == DistKind::Mix) && !(total > 0))
    return "the weights add up to 0";
  return {};
}

std::optional<CostDist> parse_unchecked(const std::string& text, std::string* error);

}  // namespace

std::optional<CostDist> CostDist::parse(const std::string& text, std::string* error) {
  auto d = parse_unchecked(text, error);
  if (!d) return d;
  if (auto why = range_problem(*d); !why.empty()) {
    if (error) *error = why;
    return std::nullopt;
  }
  return d;
}

namespace {

std::optional<CostDist> parse_unchecked(const std::string& text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<CostDist> {
    if (error) *error = why;
    return std::nullopt;
  };
  const std::string t = trim(text);
  const auto open = t.find('(');
  if (open == std::string::npos) {
    auto q = Quantity::parse(t);
    if (!q)
      return fail(
          fmt::format("'{}' is neither a time (e.g. 350ns, 1.2us, 800cyc) nor a "
                      "distribution (const/normal/lognormal/uniform/exponential/empirical)",
                      t));
    if (q->value < 0) return fail("a cost cannot be negative");
    return CostDist::constant(*q);
  }
  if (t.back() != ')') return fail(fmt::format("missing ')' in '{}'", t));
  const std::string name = trim(t.substr(0, open));
  const auto args = split_args(t.substr(open + 1, t.size() - open - 2));
  std::vector<std::string> pos;
  CostDist d;
  if (name == "mix") {
    // mix(w1: DIST, w2: DIST, ...): component i with probability w_i / sum(w).
    d.kind = DistKind::Mix;
    for (const auto& a : args) {
      const auto colon = a.find(':');
      auto w = colon == std::string::npos ? std::nullopt : parse_number(trim(a.substr(0, colon)));
      if (!w || *w < 0)
        return fail(fmt::format("mix(w1: dist, w2: dist, ...): bad component '{}'", a));
      std::string sub_err;
      auto sub = CostDist::parse(a.substr(colon + 1), &sub_err);
      if (!sub)
        return fail(fmt::format("mix component '{}': {}", trim(a.substr(colon + 1)), sub_err));
      d.parts.emplace_back(*w, std::move(*sub));
    }
    if (d.parts.empty()) return fail("mix() needs at least one component");
    return d;
  }
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos) {
      pos.push_back(a);
      continue;
    }
    const std::string k = trim(a.substr(0, eq));
    const std::string v = trim(a.substr(eq + 1));
    auto q = Quantity::parse(v);
    if (!q) return fail(fmt::format("bad time '{}' for '{}'", v, k));
    if (k == "min") {
      d.min = q;
    } else if (k == "max") {
      d.max = q;
    } else if (k == "shift") {
      d.shift = *q;
    } else {
      return fail(fmt::format("unknown option '{}' (expected min=, max= or shift=)", k));
    }
  }
  auto need = [&](std::size_t n) { return pos.size() == n; };
  auto qty = [&](std::size_t i, Quantity* out) {
    auto q = Quantity::parse(pos[i]);
    if (!q) return false;
    *out = *q;
    return true;
  };
  if (name == "const") {
    d.kind = DistKind::Constant;
    if (!need(1) || !qty(0, &d.a)) return fail("const(value) takes one time, e.g. const(300ns)");
    if (d.a.value < 0) return fail("a cost cannot be negative");
  } else if (name == "normal") {
    d.kind = DistKind::Normal;
    if (!need(2) || !qty(0, &d.a) || !qty(1, &d.b))
      return fail("normal(mean, sd[, min=][, max=]) takes two times, e.g. normal(300ns, 20ns)");
    if (d.b.value < 0) return fail("normal: sd must be >= 0");
  } else if (name == "lognormal") {
    d.kind = DistKind::LogNormal;
    auto s = need(2) ? parse_number(pos[1]) : std::nullopt;
    if (!need(2) || !qty(0, &d.a) || !s)
      return fail("lognormal(median, sigma[, shift=][, min=][, max=]), e.g. lognormal(5us, 0.4)");
    d.sigma = *s;
    if (d.a.value <= 0 || d.sigma < 0) return fail("lognormal: median must be > 0 and sigma >= 0");
  } else if (name == "uniform") {
    d.kind = DistKind::Uniform;
    if (!need(2) || !qty(0, &d.a) || !qty(1, &d.b))
      return fail("uniform(lo, hi) takes two times, e.g. uniform(1us, 2us)");
  } else if (name == "exponential") {
    d.kind = DistKind::Exponential;
    if (!need(1) || !qty(0, &d.a)) return fail("exponential(mean[, shift=][, max=])");
    if (d.a.value <= 0) return fail("exponential: mean must be > 0");
  } else if (name == "empirical") {
    d.kind = DistKind::Empirical;
    if (pos.empty()) return fail("empirical(v1[:w1], v2[:w2], ...) needs at least one value");
    for (const auto& p : pos) {
      const auto colon = p.find(':');
      auto q = Quantity::parse(p.substr(0, colon));
      double w = 1;
      if (colon != std::string::npos) {
        auto wn = parse_number(trim(p.substr(colon + 1)));
        if (!wn || *wn < 0) return fail(fmt::format("bad weight in '{}'", p));
        w = *wn;
      }
      if (!q) return fail(fmt::format("bad value '{}' in empirical()", p));
      d.points.emplace_back(*q, w);
    }
  } else {
    return fail(
        fmt::format("unknown distribution '{}' (const, normal, lognormal, uniform, "
                    "exponential, empirical)",
                    name));
  }
  return d;
}

}  // namespace

std::string CostDist::str() const {
  std::string opts;
  if (shift.value != 0) opts += ", shift=" + shift.str();
  if (min) opts += ", min=" + min->str();
  if (max) opts += ", max=" + max->str();
  switch (kind) {
    case DistKind::Constant:
      return opts.empty() ? a.str() : "const(" + a.str() + opts + ")";
    case DistKind::Normal:
      return "normal(" + a.str() + ", " + b.str() + opts + ")";
    case DistKind::LogNormal:
      return fmt::format("lognormal({}, {}{})", a.str(), sigma, opts);
    case DistKind::Uniform:
      return "uniform(" + a.str() + ", " + b.str() + opts + ")";
    case DistKind::Exponential:
      return "exponential(" + a.str() + opts + ")";
    case DistKind::Mix: {
      std::string s = "mix(";
      for (std::size_t i = 0; i < parts.size(); ++i)
        s += fmt::format("{}{}: {}", i ? ", " : "", parts[i].first, parts[i].second.str());
      return s + ")";
    }
    case DistKind::Empirical: {
      std::string s = "empirical(";
      for (std::size_t i = 0; i < points.size(); ++i)
        s += fmt::format("{}{}:{}", i ? ", " : "", points[i].first.str(), points[i].second);
      return s + opts + ")";
    }
  }
  return "?";
}

double CostDist::mean_cycles(const TscClock& clk) const { return bind(clk).mean(); }

Sampler CostDist::bind(const TscClock& clk) const {
  Sampler s;
  s.kind_ = kind;
  s.a_ = a.in_cycles(clk);
  s.b_ = b.in_cycles(clk);
  s.sigma_ = sigma;
  s.shift_ = shift.in_cycles(clk);
  s.lo_ = min ? min->in_cycles(clk) : 0.0;
  s.hi_ = max ? max->in_cycles(clk) : 1e300;
  switch (kind) {
    case DistKind::Constant:
      s.mean_ = s.a_;
      s.constant_ = s.finish(s.a_);
      break;
    case DistKind::Normal:
      s.mean_ = s.a_;
      break;
    case DistKind::LogNormal:
      s.mean_ = s.a_ * std::exp(sigma * sigma / 2);
      break;
    case DistKind::Uniform:
      s.mean_ = (s.a_ + s.b_) / 2;
      break;
    case DistKind::Exponential:
      s.mean_ = s.a_;
      break;
    case DistKind::Empirical: {
      std::vector<double> w;
      for (const auto& [q, weight] : points) {
        w.push_back(weight);
        s.values_.push_back(q.in_cycles(clk));
      }
      s.mean_ = weighted_mean(cdf_from_weights(w), s.values_);
      s.build_alias(w);
      break;
    }
    case DistKind::Mix: {
      std::vector<double> w;
      std::vector<double> means;
      for (const auto& [weight, part] : parts) {
        w.push_back(weight);
        s.parts_.push_back(part.bind(clk));
        means.push_back(s.parts_.back().mean());
      }
      s.mean_ = weighted_mean(cdf_from_weights(w), means);
      s.build_alias(w);
      break;
    }
  }
  s.mean_ += s.shift_;
  return s;
}

// Vose's construction: slot i keeps index i with probability alias_prob_[i]
// and otherwise gives alias_of_[i]; every slot is chosen with probability
// 1/n, so index j comes out with probability w_j / sum(w).
void Sampler::build_alias(const std::vector<double>& weights) {
  const std::size_t n = weights.size();
  double total = 0;
  for (double x : weights) total += x;
  std::vector<double> scaled(n);
  std::vector<std::uint32_t> small;
  std::vector<std::uint32_t> large;
  for (std::size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
  }
  alias_prob_.assign(n, 1.0);
  alias_of_.resize(n);
  for (std::size_t i = 0; i < n; ++i) alias_of_[i] = static_cast<std::uint32_t>(i);
  while (!small.empty() && !large.empty()) {
    const std::uint32_t s = small.back();
    const std::uint32_t l = large.back();
    small.pop_back();
    alias_prob_[s] = scaled[s];
    alias_of_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // Whatever is left is 1 up to rounding: keeps itself (alias_prob_ = 1).
  // A zero weight keeps probability 0 in its own slot and is never drawn.
}

std::size_t Sampler::pick(Rng& rng) const {
  const std::size_t n = alias_prob_.size();
  if (n == 1) return 0;
  // One 53-bit uniform: the integer part picks the slot, the fraction decides
  // between the slot and its alias.
  const double u = rng.uniform() * static_cast<double>(n);
  const auto slot = std::min(static_cast<std::size_t>(u), n - 1);
  return u - static_cast<double>(slot) < alias_prob_[slot] ? slot : alias_of_[slot];
}

Tsc Sampler::draw_other(Rng& rng) const {
  switch (kind_) {
    case DistKind::Constant:
      return constant_;
    case DistKind::Normal:
      return finish(a_ + b_ * rng.normal());
    case DistKind::LogNormal:
      return finish(a_ * std::exp(sigma_ * rng.normal()));
    case DistKind::Uniform:
      return finish(a_ + (b_ - a_) * rng.uniform());
    case DistKind::Exponential:
      return finish(rng.exponential(a_));
    case DistKind::Mix:
      return finish(static_cast<double>(parts_[pick(rng)](rng)));
    case DistKind::Empirical:
      return finish(values_[pick(rng)]);
  }
  return 0;
}

}  // namespace kvmsim
