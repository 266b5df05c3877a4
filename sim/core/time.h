// Simulated time. The simulation clock is the host TSC: one SystemC time unit
// (the kernel's resolution, set to 1 ps) is one host TSC cycle, so every
// timestamp is an exact integer cycle count and nothing drifts through float
// conversions. Nanoseconds appear only at the edges (parameters, reports), as
// the kernel converts with tsc_khz.
#pragma once

#include <cstdint>
#include <limits>

namespace kvmsim {

// 128-bit intermediate for exact cycle/ns products (as the kernel's mul_u64_u32_div).
__extension__ using u128 = unsigned __int128;
__extension__ using s128 = __int128;

using Tsc = std::uint64_t;  // host TSC cycles (absolute or delta)
using STsc = std::int64_t;  // signed cycle delta
inline constexpr Tsc kTscNever = std::numeric_limits<Tsc>::max();

// A TSC frequency and its exact integer conversions (as the kernel's
// nsec_to_cycles()/cycles_to_ns with tsc_khz do).
struct TscClock {
  std::uint64_t tsc_khz = 2300000;

  // ns -> cycles, rounded to nearest.
  [[nodiscard]] Tsc from_ns(double ns) const {
    const double c = ns * static_cast<double>(tsc_khz) / 1e6;
    // Round half up (c > 0): the rounding every recorded output was made with.
    return c <= 0 ? 0 : static_cast<Tsc>(c + 0.5);  // NOLINT(bugprone-incorrect-roundings)
  }
  // Integer ns -> cycles, truncating like nsec_to_cycles(): ns * khz / 1e6.
  [[nodiscard]] Tsc ns_to_cycles(std::uint64_t ns) const {
    return static_cast<Tsc>((static_cast<u128>(ns) * tsc_khz) / 1000000u);
  }
  // cycles -> integer ns, truncating: cycles * 1e6 / khz.
  [[nodiscard]] std::uint64_t cycles_to_ns(Tsc c) const {
    return static_cast<std::uint64_t>((static_cast<u128>(c) * 1000000u) / tsc_khz);
  }
  [[nodiscard]] double to_ns(double cycles) const {
    return cycles * 1e6 / static_cast<double>(tsc_khz);
  }
  [[nodiscard]] double to_us(double cycles) const { return to_ns(cycles) / 1e3; }
  [[nodiscard]] double to_s(double cycles) const { return to_ns(cycles) / 1e9; }
};

}  // namespace kvmsim
