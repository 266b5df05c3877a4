// Unit tests for TscClock's exact integer conversions (sim/core/time.h).
#include "sim/core/time.h"

#include <catch2/catch.hpp>
#include <cstdint>

using kvmsim::Tsc;
using kvmsim::TscClock;

TEST_CASE("time: ns_to_cycles truncates ns * khz / 1e6", "[time]") {
  const TscClock clk{2'300'000};  // 2.3 GHz
  CHECK(clk.ns_to_cycles(0) == 0);
  CHECK(clk.ns_to_cycles(1000) == 2300);
  CHECK(clk.ns_to_cycles(1) == 2);       // 2.3
  CHECK(clk.ns_to_cycles(3) == 6);       // 6.9: truncated, not rounded
  CHECK(clk.ns_to_cycles(999) == 2297);  // 2297.7
  CHECK(clk.ns_to_cycles(1'000'000) == 2'300'000);
  // A non-round frequency.
  const TscClock odd{2'095'078};
  CHECK(odd.ns_to_cycles(1000) == 2095);  // 2095.078
  CHECK(odd.ns_to_cycles(1'000'000) == 2'095'078);
  CHECK(odd.ns_to_cycles(333) == 697);  // 697.66
}

TEST_CASE("time: cycles_to_ns truncates cycles * 1e6 / khz", "[time]") {
  const TscClock clk{2'300'000};
  CHECK(clk.cycles_to_ns(2300) == 1000);
  CHECK(clk.cycles_to_ns(2299) == 999);  // 999.57
  CHECK(clk.cycles_to_ns(2) == 0);       // 0.87
  CHECK(clk.cycles_to_ns(3) == 1);       // 1.30
  CHECK(clk.cycles_to_ns(2'300'000'000ULL) == 1'000'000'000ULL);
  // Round trips never gain time.
  for (std::uint64_t ns = 0; ns < 5000; ++ns) {
    REQUIRE(clk.cycles_to_ns(clk.ns_to_cycles(ns)) <= ns);
    REQUIRE(clk.cycles_to_ns(clk.ns_to_cycles(ns)) + 1 >= ns);
  }
}

TEST_CASE("time: conversions of long spans do not overflow 64 bits", "[time]") {
  // 600 s at 5 GHz: ns * khz = 3e21 needs more than 64 bits in the middle.
  const TscClock fast{5'000'000};
  CHECK(fast.ns_to_cycles(600'000'000'000ULL) == 3'000'000'000'000ULL);
  CHECK(fast.cycles_to_ns(3'000'000'000'000ULL) == 600'000'000'000ULL);
  // A day of TSC cycles at 2.3 GHz.
  const TscClock clk{2'300'000};
  CHECK(clk.cycles_to_ns(2'300'000ULL * 1000 * 86'400) == 86'400ULL * 1'000'000'000);
}

TEST_CASE("time: 600 s of 1 ms steps accumulates exactly, without drift", "[time]") {
  for (std::uint64_t khz : {2'300'000ULL, 2'095'078ULL, 3'000'001ULL}) {
    const TscClock clk{khz};
    INFO("tsc_khz " << khz);
    // 1 ms is exactly tsc_khz cycles, so summing steps equals converting the total.
    REQUIRE(clk.ns_to_cycles(1'000'000) == khz);
    Tsc sum = 0;
    std::uint64_t t_ns = 0;
    for (int step = 0; step < 600'000; ++step) {
      sum += clk.ns_to_cycles(1'000'000);
      t_ns += 1'000'000;
    }
    CHECK(t_ns == 600'000'000'000ULL);
    CHECK(sum == clk.ns_to_cycles(t_ns));
    CHECK(sum == 600'000 * khz);
    CHECK(clk.cycles_to_ns(sum) == t_ns);
  }
  // Whereas summing truncated sub-cycle steps does drift: 1 ns steps at 2.3 GHz
  // lose 0.3 cycle each, so timestamps must be converted as absolute values.
  const TscClock clk{2'300'000};
  Tsc sum = 0;
  for (int i = 0; i < 1000; ++i) sum += clk.ns_to_cycles(1);
  CHECK(sum == 2000);
  CHECK(clk.ns_to_cycles(1000) == 2300);
}

TEST_CASE("time: from_ns rounds to the nearest cycle and clamps negatives to 0", "[time]") {
  const TscClock clk{2'300'000};
  CHECK(clk.from_ns(1000.0) == 2300);
  CHECK(clk.from_ns(3.0) == 7);  // 6.9
  CHECK(clk.from_ns(1.0) == 2);  // 2.3
  CHECK(clk.from_ns(0.0) == 0);
  CHECK(clk.from_ns(-5.0) == 0);
  CHECK(clk.to_ns(2300.0) == Approx(1000.0));
  CHECK(clk.to_us(2300.0) == Approx(1.0));
  CHECK(clk.to_s(2'300'000'000.0) == Approx(1.0));
}
