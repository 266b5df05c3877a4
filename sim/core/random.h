// Seeded, per-component random streams. Each model component derives its own
// stream from (run seed, component name), so adding a component or drawing
// more numbers in one place never perturbs another component's sequence, and
// the same scenario + seed is byte-identical on every machine (no std::
// distributions, whose output is implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace kvmsim {

// splitmix64: seeds the generator state from one 64-bit value.
inline std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a over a component name, to give every component a distinct stream.
inline std::uint64_t stream_id(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// xoshiro256** 1.0 (Blackman & Vigna), public-domain algorithm.
class Rng {
 public:
  Rng() : Rng(0, "default") {}
  Rng(std::uint64_t seed, std::string_view component) {
    std::uint64_t x = seed ^ stream_id(component);
    for (auto& w : s_) w = splitmix64(x);
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1].
  double uniform_pos() { return (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53; }
  // Standard normal: 256-layer ziggurat (Marsaglia & Tsang 2000, with the
  // layer index and the abscissa from disjoint bits of one draw as in Doornik
  // 2005). One next_u64() and no libm call in ~99% of draws; the wedges and
  // the tail (|x| > 3.654) are sampled exactly, so this is the normal
  // distribution, not an approximation of it.
  double normal();
  // Exponential with the given mean.
  double exponential(double mean) { return -mean * std::log(uniform_pos()); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // normal() for a draw outside its layer's rectangle (layer `i`, abscissa
  // `x`): the tail or the wedge test; a rejected wedge draws again with normal().
  [[gnu::noinline]] double normal_beyond_rectangle(unsigned i, double x);
  std::uint64_t s_[4]{};
};

namespace detail {
// Ziggurat layers for exp(-x^2/2): x[0] = V / f(R) (the base strip's width),
// x[1] = R, x[i+1] = f^-1(f(x[i]) + V / x[i]), x[256] = 0; f[i] = f(x[i]).
struct NormalZiggurat {
  static constexpr int kLayers = 256;
  static constexpr double kR = 3.6541528853610088;  // start of the tail
  static constexpr double kV = 4.92867323399e-3;    // area of each layer
  double x[kLayers + 1];
  double f[kLayers + 1];
  NormalZiggurat();
};
extern const NormalZiggurat kNormalZiggurat;
}  // namespace detail

// The rectangle test inline (~99% of draws); the rest of the ziggurat out of
// line, so that the inline part stays small where it is inlined (every cost
// drawn). The same draws in the same order either way.
inline double Rng::normal() {
  const detail::NormalZiggurat& z = detail::kNormalZiggurat;
  const std::uint64_t bits = next_u64();
  const auto i = static_cast<unsigned>(bits & 0xff);
  // Signed uniform in [-1, 1) from the top 53 bits (disjoint from i's bits).
  const double x = (static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0) * z.x[i];
  if (std::fabs(x) < z.x[i + 1]) return x;  // inside the layer's rectangle
  return normal_beyond_rectangle(i, x);
}

}  // namespace kvmsim
