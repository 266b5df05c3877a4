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
