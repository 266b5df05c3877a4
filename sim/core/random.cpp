#include "sim/core/random.h"

namespace kvmsim::detail {

NormalZiggurat::NormalZiggurat() {
  auto pdf = [](double t) { return std::exp(-0.5 * t * t); };
  x[0] = kV / pdf(kR);
  x[1] = kR;
  for (int i = 1; i < kLayers; ++i) x[i + 1] = std::sqrt(-2.0 * std::log(pdf(x[i]) + kV / x[i]));
  x[kLayers] = 0.0;  // the top layer's rectangle ends on the axis
  for (int i = 0; i <= kLayers; ++i) f[i] = pdf(x[i]);
}

const NormalZiggurat kNormalZiggurat;

}  // namespace kvmsim::detail

namespace kvmsim {

double Rng::normal_beyond_rectangle(unsigned i, double x) {
  const detail::NormalZiggurat& z = detail::kNormalZiggurat;
  if (i == 0) {
    // Base strip beyond R: the normal tail (Marsaglia 1964), on x's side.
    double t;
    double y;
    do {
      t = -std::log(uniform_pos()) / detail::NormalZiggurat::kR;
      y = -std::log(uniform_pos());
    } while (2.0 * y < t * t);
    return x < 0 ? -(detail::NormalZiggurat::kR + t) : detail::NormalZiggurat::kR + t;
  }
  // Wedge between the layer's rectangle and the curve; a reject is a new draw.
  if (z.f[i + 1] + (z.f[i] - z.f[i + 1]) * uniform() < std::exp(-0.5 * x * x)) return x;
  return normal();
}

}  // namespace kvmsim
