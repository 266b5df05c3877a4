// Unit tests for cost distributions (sim/core/dist.h) and the seeded random
// streams they draw from (sim/core/random.h).
#include "sim/core/dist.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/core/random.h"
#include "sim/core/time.h"

using kvmsim::CostDist;
using kvmsim::DistKind;
using kvmsim::Quantity;
using kvmsim::Rng;
using kvmsim::Sampler;
using kvmsim::Tsc;
using kvmsim::TscClock;

namespace {

const TscClock kClk{2'300'000};  // 2.3 GHz

CostDist must_parse(const std::string& text) {
  std::string err;
  auto d = CostDist::parse(text, &err);
  INFO("parsing '" << text << "': " << err);
  REQUIRE(d.has_value());
  return *d;
}

Sampler bind(const std::string& text, const TscClock& clk = kClk) {
  return must_parse(text).bind(clk);
}

std::vector<Tsc> draws(const Sampler& s, std::size_t n, std::uint64_t seed = 1,
                       const char* component = "test") {
  Rng rng(seed, component);
  std::vector<Tsc> out(n);
  for (auto& v : out) v = s(rng);
  return out;
}

double mean_of(const std::vector<Tsc>& v) {
  double sum = 0;
  for (Tsc x : v) sum += static_cast<double>(x);
  return sum / static_cast<double>(v.size());
}

double sd_of(const std::vector<Tsc>& v) {
  const double m = mean_of(v);
  double ss = 0;
  for (Tsc x : v) ss += (static_cast<double>(x) - m) * (static_cast<double>(x) - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double median_of(std::vector<Tsc> v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return static_cast<double>(*mid);
}

std::map<Tsc, double> frequencies(const std::vector<Tsc>& v) {
  std::map<Tsc, double> f;
  for (Tsc x : v) f[x] += 1.0 / static_cast<double>(v.size());
  return f;
}

std::string parse_error(const std::string& text) {
  std::string err;
  auto d = CostDist::parse(text, &err);
  INFO("parsing '" << text << "'");
  CHECK_FALSE(d.has_value());
  CHECK_FALSE(err.empty());
  return err;
}

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------------------
// Quantities and units.

TEST_CASE("dist: Quantity::parse reads ns/us/ms/s/cyc, bare numbers are ns", "[dist]") {
  struct Case {
    const char* text;
    double value;
    bool cycles;
  };
  const Case cases[] = {
      {"310ns", 310, false},    {"310", 310, false},    {"1.5us", 1500, false},
      {"2ms", 2e6, false},      {"1s", 1e9, false},     {"700cyc", 700, true},
      {"700cycles", 700, true}, {" 42 ns ", 42, false}, {"1e3ns", 1000, false},
      {"2.5e-1us", 250, false}, {"0", 0, false},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const auto q = Quantity::parse(c.text);
    REQUIRE(q.has_value());
    CHECK(q->value == c.value);
    CHECK(q->cycles == c.cycles);
  }
  for (const char* bad : {"", "ns", "5xs", "5 nsec", "1.2.3us", "us5", "5e", "abc"}) {
    INFO(bad);
    CHECK_FALSE(Quantity::parse(bad).has_value());
  }
}

TEST_CASE("dist: units convert to whole cycles at the bound TscClock exactly", "[dist]") {
  // 2.3 GHz: 1 ns = 2.3 cycles.
  CHECK(Quantity::parse("310ns")->in_cycles(kClk) == 713.0);
  CHECK(Quantity::parse("1.5us")->in_cycles(kClk) == 3450.0);
  CHECK(Quantity::parse("2ms")->in_cycles(kClk) == 4'600'000.0);
  CHECK(Quantity::parse("1s")->in_cycles(kClk) == 2'300'000'000.0);
  CHECK(Quantity::parse("700cyc")->in_cycles(kClk) == 700.0);

  Rng rng(1, "units");
  CHECK(bind("310ns")(rng) == 713);
  CHECK(bind("310")(rng) == 713);
  CHECK(bind("1.5us")(rng) == 3450);
  CHECK(bind("2ms")(rng) == 4'600'000);
  CHECK(bind("1s")(rng) == 2'300'000'000ULL);
  CHECK(bind("700cyc")(rng) == 700);
  // Another clock: time units scale, cycles do not.
  const TscClock three{3'000'000};
  CHECK(bind("310ns", three)(rng) == 930);
  CHECK(bind("1us", three)(rng) == 3000);
  CHECK(bind("700cyc", three)(rng) == 700);
  // Agrees with TscClock::ns_to_cycles whenever the product is whole...
  for (std::uint64_t ns : {10u, 100u, 250u, 1000u, 12'340u, 999'990u}) {
    INFO(ns << " ns");
    CHECK(CostDist::constant(Quantity{static_cast<double>(ns), false}).bind(kClk)(rng) ==
          kClk.ns_to_cycles(ns));
  }
  // ...and otherwise rounds to the nearest cycle (3 ns = 6.9 cycles).
  CHECK(bind("3ns")(rng) == 7);
  CHECK(bind("1ns")(rng) == 2);
  CHECK(bind("0ns")(rng) == 0);
  CHECK(bind("0ns").is_constant());
}

// ---------------------------------------------------------------------------
// Sampling.

TEST_CASE("dist: normal sample mean and sd over 200k draws within 1% and 3%", "[dist]") {
  const Sampler s = bind("normal(310ns, 25ns)");
  CHECK(s.mean() == 713.0);
  CHECK_FALSE(s.is_constant());
  const auto v = draws(s, 200'000);
  CHECK(mean_of(v) == Approx(713.0).epsilon(0.01));
  CHECK(sd_of(v) == Approx(57.5).epsilon(0.03));
}

TEST_CASE("dist: min/max clamping holds for every draw", "[dist]") {
  // Wide sd so that both bounds are hit often.
  const Sampler s = bind("normal(310ns, 100ns, min=240ns, max=400ns)");
  const auto v = draws(s, 50'000);
  std::size_t at_lo = 0;
  std::size_t at_hi = 0;
  for (Tsc x : v) {
    REQUIRE(x >= 552);  // 240ns
    REQUIRE(x <= 920);  // 400ns
    at_lo += static_cast<unsigned long>(x == 552);
    at_hi += static_cast<unsigned long>(x == 920);
  }
  CHECK(at_lo > 1000);
  CHECK(at_hi > 1000);
  // Clamping applies after the shift, and to every kind.
  const Sampler e = bind("exponential(1us, shift=500ns, max=3us)");
  for (Tsc x : draws(e, 50'000)) {
    REQUIRE(x >= 1150);  // shift: 500ns
    REQUIRE(x <= 6900);  // 3us
  }
  const Sampler l = bind("lognormal(6us, 1.5, min=5us, max=8us)");
  for (Tsc x : draws(l, 50'000)) {
    REQUIRE(x >= 11'500);
    REQUIRE(x <= 18'400);
  }
  // A negative draw is clamped to zero cycles.
  std::size_t zeros = 0;
  for (Tsc x : draws(bind("normal(10ns, 1us)"), 10'000)) {
    REQUIRE(x < 100'000);  // not wrapped around to a huge unsigned value
    zeros += static_cast<unsigned long>(x == 0);
  }
  CHECK(zeros > 4000);
}

TEST_CASE("dist: lognormal median is the given median (plus shift)", "[dist]") {
  const Sampler s = bind("lognormal(6us, 0.5)");
  const auto v = draws(s, 100'000);
  CHECK(median_of(v) == Approx(13'800.0).epsilon(0.01));
  CHECK(s.mean() == Approx(13'800.0 * std::exp(0.125)).epsilon(1e-12));
  CHECK(mean_of(v) == Approx(s.mean()).epsilon(0.01));

  const Sampler sh = bind("lognormal(6us, 0.5, shift=2us, max=80us)");
  CHECK(median_of(draws(sh, 100'000)) == Approx(18'400.0).epsilon(0.01));
  CHECK(sh.mean() == Approx(13'800.0 * std::exp(0.125) + 4'600.0).epsilon(1e-12));
}

TEST_CASE("dist: uniform and exponential draw with the right range and mean", "[dist]") {
  const Sampler u = bind("uniform(1us, 2us)");
  const auto uv = draws(u, 100'000);
  for (Tsc x : uv) {
    REQUIRE(x >= 2300);
    REQUIRE(x <= 4600);
  }
  CHECK(u.mean() == 3450.0);
  CHECK(mean_of(uv) == Approx(3450.0).epsilon(0.01));

  const Sampler e = bind("exponential(5us)");
  CHECK(e.mean() == 11'500.0);
  const auto ev = draws(e, 200'000);
  CHECK(mean_of(ev) == Approx(11'500.0).epsilon(0.02));
  CHECK(median_of(ev) == Approx(11'500.0 * std::log(2.0)).epsilon(0.02));
}

TEST_CASE("dist: empirical draws only the listed values, with the listed weights", "[dist]") {
  const Sampler s = bind("empirical(400cyc:3, 450cyc:5, 700cyc:1)");
  CHECK(s.mean() == Approx((400.0 * 3 + 450.0 * 5 + 700.0) / 9));
  const auto f = frequencies(draws(s, 90'000));
  REQUIRE(f.size() == 3);
  CHECK(f.at(400) == Approx(3.0 / 9).margin(0.01));
  CHECK(f.at(450) == Approx(5.0 / 9).margin(0.01));
  CHECK(f.at(700) == Approx(1.0 / 9).margin(0.01));

  // Unweighted values are equally likely; time units are converted.
  const auto g = frequencies(draws(bind("empirical(1us, 2us)"), 40'000));
  REQUIRE(g.size() == 2);
  CHECK(g.at(2300) == Approx(0.5).margin(0.01));
  CHECK(g.at(4600) == Approx(0.5).margin(0.01));

  // A zero weight is never drawn.
  const auto z = frequencies(draws(bind("empirical(10cyc:1, 20cyc:0, 30cyc:1)"), 20'000));
  CHECK(z.count(20) == 0);
  CHECK(z.size() == 2);
}

TEST_CASE("dist: mix draws from its components with the right weights, mean() is the weighted mean",
          "[dist]") {
  const CostDist d = must_parse("mix(3: 100cyc, 1: 500cyc)");
  CHECK(d.kind == DistKind::Mix);
  REQUIRE(d.parts.size() == 2);
  const Sampler s = d.bind(kClk);
  CHECK(s.mean() == Approx(200.0));
  CHECK(d.mean_cycles(kClk) == Approx(200.0));
  const auto f = frequencies(draws(s, 80'000));
  REQUIRE(f.size() == 2);
  CHECK(f.at(100) == Approx(0.75).margin(0.01));
  CHECK(f.at(500) == Approx(0.25).margin(0.01));

  // Nested: a mix of an empirical and a constant.
  const auto g = frequencies(draws(bind("mix(1: empirical(10cyc:1, 20cyc:1), 1: 30cyc)"), 80'000));
  REQUIRE(g.size() == 3);
  CHECK(g.at(10) == Approx(0.25).margin(0.01));
  CHECK(g.at(20) == Approx(0.25).margin(0.01));
  CHECK(g.at(30) == Approx(0.5).margin(0.01));

  // The platform-file example: mostly ~2us, rarely ~0.4us.
  const Sampler w = bind("mix(0.995: normal(2us, 0.3us), 0.005: normal(0.4us, 0.1us))");
  CHECK(w.mean() == Approx(0.995 * 4600 + 0.005 * 920));
  const auto wv = draws(w, 200'000);
  CHECK(mean_of(wv) == Approx(w.mean()).epsilon(0.01));
  const auto fast = std::count_if(wv.begin(), wv.end(), [](Tsc x) { return x < 1840; });  // < 0.8us
  CHECK(static_cast<double>(fast) / static_cast<double>(wv.size()) == Approx(0.005).margin(0.0015));
}

// ---------------------------------------------------------------------------
// Text form.

TEST_CASE("dist: str() round-trips through parse() for every kind", "[dist]") {
  const char* texts[] = {
      "350ns",
      "700cyc",
      "2ms",
      "0.5ns",
      "const(300ns, shift=10ns)",
      "normal(310ns, 25ns, min=240ns)",
      "normal(0.31us, 25ns, min=240ns, max=1us)",
      "lognormal(6us, 0.5, shift=2us, max=80us)",
      "uniform(1us, 2.5us)",
      "exponential(5us, shift=1us, max=40us)",
      "empirical(400cyc:3, 450cyc:5, 700cyc:1)",
      "empirical(1.2us, 4350ns:2.5, shift=100cyc)",
      "mix(0.995: normal(2us, 0.3us), 0.005: normal(0.4us, 0.1us))",
      "mix(1: empirical(10cyc:1, 20cyc:1), 2: mix(1: 5ns, 1: lognormal(3us, 0.25)))",
  };
  for (const char* text : texts) {
    const CostDist d = must_parse(text);
    const std::string s = d.str();
    INFO(text << " -> " << s);
    const CostDist d2 = must_parse(s);
    CHECK(d2.kind == d.kind);
    CHECK(d2.str() == s);
    // Same distribution: same mean and the same draws from the same stream.
    const Sampler a = d.bind(kClk);
    const Sampler b = d2.bind(kClk);
    CHECK(a.mean() == b.mean());
    CHECK(draws(a, 200, 5) == draws(b, 200, 5));
  }
  // Canonical spellings.
  CHECK(must_parse("350").str() == "350ns");
  CHECK(must_parse("1us").str() == "1us");
  CHECK(must_parse("0.31us").str() == "310ns");
  CHECK(must_parse("normal(2us, 0.3us)").str() == "normal(2us, 300ns)");
  CHECK(must_parse("const(300ns)").str() == "300ns");
  CHECK(must_parse("empirical(400cyc:3, 1us)").str() == "empirical(400cyc:3, 1us:1)");
}

TEST_CASE("dist: parse errors explain what is wrong", "[dist]") {
  CHECK(contains(parse_error("gauss(1us, 2us)"), "unknown distribution 'gauss'"));
  CHECK(contains(parse_error("normal(1us, 2us"), "missing ')'"));
  CHECK(contains(parse_error("350xs"), "neither a time"));
  CHECK(contains(parse_error("normal(1xs, 2us)"), "normal(mean, sd"));
  CHECK(contains(parse_error("normal(1us, 2us, min=3xs)"), "bad time '3xs' for 'min'"));
  CHECK(contains(parse_error("normal(1us, 2us, step=3ns)"), "unknown option 'step'"));
  CHECK(contains(parse_error("-5ns"), "cannot be negative"));
  CHECK(contains(parse_error("normal(1us, -2us)"), "sd must be >= 0"));
  CHECK(contains(parse_error("normal(1us)"), "normal(mean, sd"));
  CHECK(contains(parse_error("lognormal(0us, 0.5)"), "median must be > 0"));
  CHECK(contains(parse_error("lognormal(1us, 2us)"), "lognormal(median, sigma"));
  CHECK(contains(parse_error("exponential(0ns)"), "mean must be > 0"));
  CHECK(contains(parse_error("uniform(1us)"), "uniform(lo, hi)"));
  CHECK(contains(parse_error("empirical()"), "at least one value"));
  CHECK(contains(parse_error("empirical(400cyc:x)"), "bad weight"));
  CHECK(contains(parse_error("empirical(4xx:1)"), "bad value '4xx:1'"));
  CHECK(contains(parse_error("mix()"), "at least one component"));
  CHECK(contains(parse_error("mix(0.5 normal(1us, 2us))"), "bad component"));
  CHECK(contains(parse_error("mix(-1: 5ns)"), "bad component"));
  CHECK(contains(parse_error("mix(1: gauss(1us))"), "mix component 'gauss(1us)'"));
  CHECK(contains(parse_error("mix(1: gauss(1us))"), "unknown distribution 'gauss'"));
  // A null error pointer is allowed.
  CHECK_FALSE(CostDist::parse("gauss(1us)", nullptr).has_value());
}

TEST_CASE("dist: a negative constant is rejected also in const() form", "[dist]") {
  // "-5ns" is rejected ("a cost cannot be negative") but "const(-5ns)" is
  // accepted and silently samples 0 cycles.
  CHECK(contains(parse_error("const(-5ns)"), "negative"));
}

// ---------------------------------------------------------------------------
// Random streams.

TEST_CASE("dist: the same Rng seed and component give an identical sequence", "[dist][random]") {
  for (const char* text : {"normal(310ns, 25ns)", "lognormal(6us, 0.5, shift=2us)",
                           "mix(0.9: uniform(1us, 2us), 0.1: exponential(5us))",
                           "empirical(400cyc:3, 450cyc:5, 700cyc:1)"}) {
    INFO(text);
    const Sampler s = bind(text);
    CHECK(draws(s, 2000, 1234, "vmexit") == draws(s, 2000, 1234, "vmexit"));
    CHECK(draws(s, 2000, 1234, "vmexit") != draws(s, 2000, 1235, "vmexit"));
  }
  Rng a(42, "x");
  Rng b(42, "x");
  for (int i = 0; i < 1000; ++i) REQUIRE(a.next_u64() == b.next_u64());
  for (int i = 0; i < 1000; ++i) REQUIRE(a.normal() == b.normal());
}

TEST_CASE("dist: different component names give different random streams", "[dist][random]") {
  Rng a(7, "a");
  Rng b(7, "b");
  int equal = 0;
  for (int i = 0; i < 1000; ++i) equal += static_cast<int>(a.next_u64() == b.next_u64());
  CHECK(equal == 0);
  const Sampler s = bind("normal(310ns, 25ns)");
  CHECK(draws(s, 1000, 7, "a") != draws(s, 1000, 7, "b"));
  // Independent of how much another stream has drawn.
  Rng c1(7, "c");
  Rng c2(7, "c");
  Rng other(7, "d");
  for (int i = 0; i < 500; ++i) other.next_u64();
  CHECK(c1.next_u64() == c2.next_u64());
}

TEST_CASE("dist: Rng is splitmix64-seeded xoshiro256** over seed ^ FNV-1a(component)",
          "[dist][random]") {
  // Reference values from an independent implementation of the published
  // algorithms: the sequence must be the same on every machine.
  Rng r(42, "vmexit");
  CHECK(r.next_u64() == 0xf080031287469daaULL);
  CHECK(r.next_u64() == 0x94c90d28d58cb372ULL);
  CHECK(r.next_u64() == 0xa7e8f293095b0abbULL);
  CHECK(r.next_u64() == 0xc378c8df1aa40036ULL);
  Rng d;  // Rng(0, "default")
  CHECK(d.next_u64() == 0xc3c553d870669eb3ULL);
  CHECK(d.next_u64() == 0x31bc92ff80b39412ULL);
  // uniform() is in [0, 1), uniform_pos() in (0, 1].
  Rng u(3, "u");
  for (int i = 0; i < 10'000; ++i) {
    const double x = u.uniform();
    REQUIRE(x >= 0.0);
    REQUIRE(x < 1.0);
    const double y = u.uniform_pos();
    REQUIRE(y > 0.0);
    REQUIRE(y <= 1.0);
  }
}

// ---------------------------------------------------------------------------
// The fast samplers draw the analytic distributions (ziggurat normal, alias
// tables). Fixed seeds, so each check is deterministic; the bounds are about
// 4 standard errors of the statistic, and the last block shows they are tight
// enough to reject a distribution only 1% off.

namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

struct MomentFit {
  double mean = 0, var = 0, skew = 0, exkurt = 0, ks = 0;
};

// Moments of the sample and its KS distance from the cdf. `lattice`: the
// values are whole numbers and cdf(k) is P(X <= k), compared at each value's
// last occurrence only.
template <typename Cdf>
MomentFit fit(std::vector<double> v, Cdf cdf, bool lattice = false) {
  const auto n = static_cast<double>(v.size());
  MomentFit r;
  for (double x : v) r.mean += x / n;
  double m2 = 0;
  double m3 = 0;
  double m4 = 0;
  for (double x : v) {
    const double d = x - r.mean;
    m2 += d * d / n;
    m3 += d * d * d / n;
    m4 += d * d * d * d / n;
  }
  r.var = m2;
  r.skew = m3 / std::pow(m2, 1.5);
  r.exkurt = m4 / (m2 * m2) - 3.0;
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double c = cdf(v[i]);
    const double above = static_cast<double>(i + 1) / n - c;
    if (lattice) {
      if (i + 1 == v.size() || v[i + 1] != v[i]) r.ks = std::max(r.ks, std::fabs(above));
    } else {
      r.ks = std::max({r.ks, c - static_cast<double>(i) / n, above});
    }
  }
  return r;
}

double quantile(std::vector<double> v, double p) {
  const auto k = static_cast<std::ptrdiff_t>(p * static_cast<double>(v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[static_cast<std::size_t>(k)];
}

std::vector<double> std_normals(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, "ziggurat");
  std::vector<double> v(n);
  for (auto& x : v) x = rng.normal();
  return v;
}

// True when a sample of n standard normals passes every check below.
bool looks_standard_normal(const std::vector<double>& v) {
  const auto n = static_cast<double>(v.size());
  const MomentFit f = fit(v, normal_cdf);
  bool ok = std::fabs(f.mean) < 4 / std::sqrt(n) && std::fabs(f.var - 1) < 4 * std::sqrt(2 / n) &&
            std::fabs(f.skew) < 4 * std::sqrt(6 / n) &&
            std::fabs(f.exkurt) < 4 * std::sqrt(24 / n) && f.ks < 1.95 / std::sqrt(n);  // KS 0.1%
  // Quantiles, z_p from tables (0.1%, 1%, 10%, 25%, 50% and symmetric).
  const std::pair<double, double> z[] = {{0.001, -3.090232}, {0.01, -2.326348}, {0.1, -1.281552},
                                         {0.25, -0.674490},  {0.5, 0.0},        {0.75, 0.674490},
                                         {0.9, 1.281552},    {0.99, 2.326348},  {0.999, 3.090232}};
  for (const auto& [p, zp] : z) {
    // Standard error of the p-quantile: sqrt(p(1-p)/n) / phi(z_p).
    const double phi = std::exp(-0.5 * zp * zp) / std::sqrt(2 * M_PI);
    ok = ok && std::fabs(quantile(v, p) - zp) < 4 * std::sqrt(p * (1 - p) / n) / phi;
  }
  // The ziggurat's tail path (|x| > 3.6541528853610088): 2 * (1 - Phi(R)) of the draws.
  const double r = 3.6541528853610088;
  const auto tail = static_cast<double>(
      std::count_if(v.begin(), v.end(), [&](double x) { return std::fabs(x) > r; }));
  const double expect = n * 2 * (1 - normal_cdf(r));
  ok = ok && std::fabs(tail - expect) < 4 * std::sqrt(expect);
  return ok;
}

}  // namespace

TEST_CASE("dist: Rng::normal matches N(0,1): moments, quantiles, KS, tail mass", "[dist]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    INFO("seed " << seed);
    CHECK(looks_standard_normal(std_normals(1'000'000, seed)));
  }
  // The checks have the power to see a 1% error in sd, a 0.01 sd shift in
  // mean, or a cut-off tail.
  auto v = std_normals(1'000'000, 1);
  auto wide = v;
  auto shifted = v;
  auto cut = v;
  for (auto& x : wide) x *= 1.01;
  for (auto& x : shifted) x += 0.01;
  for (auto& x : cut) x = std::clamp(x, -3.5, 3.5);
  CHECK_FALSE(looks_standard_normal(wide));
  CHECK_FALSE(looks_standard_normal(shifted));
  CHECK_FALSE(looks_standard_normal(cut));
}

TEST_CASE("dist: lognormal and exponential quantiles match the analytic ones", "[dist]") {
  // lognormal(median 10000 cyc, sigma 0.6): q_p = median * exp(sigma * z_p).
  const Sampler l = bind("lognormal(10000cyc, 0.6)");
  const auto lv = draws(l, 400'000, 9);
  std::vector<double> ld(lv.begin(), lv.end());
  for (const auto& [p, zp] : {std::pair{0.01, -2.326348}, {0.5, 0.0}, {0.99, 2.326348}}) {
    INFO("p " << p);
    CHECK(quantile(ld, p) == Approx(10000 * std::exp(0.6 * zp)).epsilon(0.01));
  }
  const MomentFit lf = fit(
      ld, [](double x) { return normal_cdf(std::log((x + 0.5) / 10000) / 0.6); }, true);
  CHECK(lf.ks < 1.95 / std::sqrt(400'000.0));
  CHECK(lf.mean == Approx(l.mean()).epsilon(0.005));

  const Sampler e = bind("exponential(20000cyc)");
  const auto ev = draws(e, 400'000, 9);
  std::vector<double> ed(ev.begin(), ev.end());
  const MomentFit ef = fit(
      ed, [](double x) { return 1 - std::exp(-(x + 0.5) / 20000); }, true);
  CHECK(ef.ks < 1.95 / std::sqrt(400'000.0));
  CHECK(quantile(ed, 0.999) == Approx(20000 * std::log(1000.0)).epsilon(0.03));
}

TEST_CASE("dist: normal() in cycles has the given mean and sd, and its clamp", "[dist]") {
  // The platform files' shape: normal(560ns, 35ns, min=350ns) at 2.3 GHz.
  const Sampler s = bind("normal(560ns, 35ns, min=350ns)");
  const auto v = draws(s, 1'000'000, 4);
  std::vector<double> d(v.begin(), v.end());
  const MomentFit f = fit(
      d, [](double x) { return normal_cdf((x + 0.5 - 1288) / 80.5); }, /*lattice=*/true);
  CHECK(f.mean == Approx(1288.0).margin(4 * 80.5 / 1000));
  CHECK(std::sqrt(f.var) == Approx(std::sqrt(80.5 * 80.5 + 1.0 / 12)).epsilon(0.003));
  CHECK(std::fabs(f.skew) < 0.01);
  CHECK(std::fabs(f.exkurt) < 0.02);
  CHECK(f.ks < 1.95 / std::sqrt(1e6));
}

TEST_CASE("dist: alias tables give every value and component its weight", "[dist]") {
  // Uneven weights, a tiny one and a zero one: frequencies within 4 standard errors.
  const Sampler s = bind(
      "empirical(100cyc:50, 200cyc:0.1, 300cyc:0, 400cyc:7, 500cyc:1, 600cyc:13, 700cyc:28.9)");
  const double total = 100.0;
  const std::pair<Tsc, double> want[] = {{100, 50}, {200, 0.1}, {400, 7},
                                         {500, 1},  {600, 13},  {700, 28.9}};
  const std::size_t n = 1'000'000;
  const auto f = frequencies(draws(s, n, 11));
  CHECK(f.count(300) == 0);
  CHECK(f.size() == 6);
  for (const auto& [value, w] : want) {
    INFO(value);
    const double p = w / total;
    REQUIRE(f.count(value) == 1);
    CHECK(std::fabs(f.at(value) - p) < 4 * std::sqrt(p * (1 - p) / static_cast<double>(n)));
  }
  // A mix picks components the same way.
  const Sampler m = bind("mix(0.984: 10cyc, 0.010: 20cyc, 0.006: 30cyc)");
  const auto g = frequencies(draws(m, n, 12));
  for (const auto& [value, p] : {std::pair<Tsc, double>{10, 0.984}, {20, 0.010}, {30, 0.006}}) {
    INFO(value);
    CHECK(std::fabs(g.at(value) - p) < 4 * std::sqrt(p * (1 - p) / static_cast<double>(n)));
  }
}

TEST_CASE("dist: a constant stage draws no random number", "[dist][random]") {
  const Sampler c = bind("const(300ns, shift=10ns, max=305ns)");
  CHECK(c.is_constant());
  Rng a(5, "c");
  Rng b(5, "c");
  for (int i = 0; i < 100; ++i) REQUIRE(c(a) == 702);  // 305 ns at 2.3 GHz, clamped
  CHECK(a.next_u64() == b.next_u64());
}

TEST_CASE("a cost above one simulated second, or one that could overflow, does not parse",
          "[dist][reliability]") {
  auto why = [](const std::string& text) {
    std::string err;
    const auto d = CostDist::parse(text, &err);
    return d ? std::string("parsed") : err;
  };
  CHECK(why("1e10s").find("above one simulated second") != std::string::npos);
  CHECK(why("1.5s").find("above one simulated second") != std::string::npos);
  CHECK(why("normal(300ns, 2s)").find("above one simulated second") != std::string::npos);
  CHECK(why("uniform(1us, 1e12us)").find("above one simulated second") != std::string::npos);
  CHECK(why("2e10cyc").find("above one simulated second") != std::string::npos);
  CHECK(why("empirical(400cyc:1, 1e11cyc:1)").find("above one simulated second") !=
        std::string::npos);
  CHECK(why("mix(1: 1us, 1: 9s)").find("above one simulated second") != std::string::npos);
  CHECK(why("lognormal(9us, 3)").find("sigma 3 is above 2") != std::string::npos);
  CHECK(why("normal(1us, 1ns, min=2us, max=1us)").find("min=2us is above max=1us") !=
        std::string::npos);
  CHECK(why("uniform(2us, 1us)").find("lo 2us is above hi 1us") != std::string::npos);
  CHECK(why("empirical(1us:0, 2us:0)") == "the weights add up to 0");
  CHECK(why("mix(0: 1us)") == "the weights add up to 0");
  // At the limits, and everything the platforms use, still parses.
  CHECK(why("1s") == "parsed");
  CHECK(why("1e10cyc") == "parsed");
  CHECK(why("lognormal(9us, 0.6, max=80us)") == "parsed");
  // The largest accepted cost draws a finite cycle count.
  Rng rng(1, "limit");
  const Sampler s = must_parse("normal(1s, 100ms)").bind(TscClock{10'000'000});
  for (int i = 0; i < 1000; ++i) CHECK(s(rng) < Tsc{20'000'000'000});
}
