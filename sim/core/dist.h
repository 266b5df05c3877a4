// Cost distributions that a platform file names per stage, e.g.
//   vmexit: "normal(310ns, 25ns, min=240ns)"
//   noise.irq.duration: "lognormal(6us, 0.5, shift=2us, max=80us)"
//   handler: "empirical(400cyc:3, 450cyc:5, 700cyc:1)"
//   wake: "mix(0.995: normal(2us, 0.3us), 0.005: normal(0.4us, 0.1us))"
//   plain: "350ns"  (a constant)
// Quantities carry a unit (ns, us, ms, s, or cyc for TSC cycles; bare numbers
// are ns). A CostDist is unit-free text until it is bound to a TSC clock,
// which turns it into a Sampler that draws whole cycles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/random.h"
#include "sim/core/time.h"

namespace kvmsim {

// A number with a time unit.
struct Quantity {
  double value = 0;
  bool cycles = false;  // true: TSC cycles; false: nanoseconds
  [[nodiscard]] double in_cycles(const TscClock& clk) const {
    return cycles ? value : value * static_cast<double>(clk.tsc_khz) / 1e6;
  }
  [[nodiscard]] std::string str() const;
  // Parses "310ns", "1.2us", "700cyc", "5" (= ns). Returns nullopt on error.
  static std::optional<Quantity> parse(const std::string& text);
};

enum class DistKind { Constant, Normal, LogNormal, Uniform, Exponential, Empirical, Mix };

class Sampler;

class CostDist {
 public:
  DistKind kind = DistKind::Constant;
  // Constant: a. Normal: a=mean, b=sd. LogNormal: a=median, sigma (unitless).
  // Uniform: [a, b). Exponential: a=mean. Shift is added to every draw; draws
  // are clamped to [min, max] when those are given.
  Quantity a, b;
  double sigma = 0;
  Quantity shift;
  std::optional<Quantity> min, max;
  std::vector<std::pair<Quantity, double>> points;  // Empirical: value, weight
  std::vector<std::pair<double, CostDist>> parts;   // Mix: weight, component

  static CostDist constant(Quantity q) {
    CostDist d;
    d.a = q;
    return d;
  }
  // Parses the text form above. On failure returns nullopt and fills *error.
  static std::optional<CostDist> parse(const std::string& text, std::string* error);
  // Canonical text (parse(str()) gives the same distribution).
  [[nodiscard]] std::string str() const;
  // Mean in cycles (ignoring clamping), for reports.
  [[nodiscard]] double mean_cycles(const TscClock& clk) const;
  [[nodiscard]] Sampler bind(const TscClock& clk) const;
};

// A distribution bound to a clock: draws whole TSC cycles, fast. A constant
// is resolved to its cycle count at bind() time and draws no random number; a
// normal costs one next_u64() in ~99% of draws (ziggurat, see Rng::normal());
// empirical values and mix components are picked with a Walker alias table
// (one uniform, no search).
class Sampler {
 public:
  Sampler() = default;
  Tsc operator()(Rng& rng) const {
    if (kind_ == DistKind::Constant) return constant_;
    if (kind_ == DistKind::Normal) return finish(a_ + b_ * rng.normal());
    return draw_other(rng);
  }
  [[nodiscard]] double mean() const { return mean_; }
  [[nodiscard]] bool is_constant() const { return kind_ == DistKind::Constant; }

 private:
  friend class CostDist;
  // Shift, clamp to [min, max], round to whole cycles (negative -> 0).
  Tsc finish(double v) const {
    v += shift_;
    v = v < lo_ ? lo_ : (v > hi_ ? hi_ : v);
    // Round half up (v > 0): the rounding every recorded output was made with.
    return v <= 0 ? 0 : static_cast<Tsc>(v + 0.5);  // NOLINT(bugprone-incorrect-roundings)
  }
  [[gnu::noinline]] Tsc draw_other(Rng& rng) const;  // out of line: keeps operator() small
  // Index i with probability w_i / sum(w) (Walker/Vose alias method).
  std::size_t pick(Rng& rng) const;
  void build_alias(const std::vector<double>& weights);

  DistKind kind_ = DistKind::Constant;
  Tsc constant_ = 0;  // Constant: the finished draw
  double a_ = 0, b_ = 0, sigma_ = 0, shift_ = 0;
  double lo_ = 0, hi_ = 1e300;
  double mean_ = 0;
  std::vector<double> alias_prob_;       // Empirical/Mix: keep-probability of slot i
  std::vector<std::uint32_t> alias_of_;  // Empirical/Mix: the other index of slot i
  std::vector<double> values_;           // Empirical values
  std::vector<Sampler> parts_;           // Mix components
};

}  // namespace kvmsim
