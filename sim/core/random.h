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
  // Standard normal (Marsaglia polar method; deterministic, cached pair).
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * m;
    have_spare_ = true;
    return u * m;
  }
  // Exponential with the given mean.
  double exponential(double mean) { return -mean * std::log(uniform_pos()); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4]{};
  double spare_ = 0;
  bool have_spare_ = false;
};

}  // namespace kvmsim
