// Unit tests for host cpuidle (sim/sched/cpuidle.h): the intel_idle table
// parser and the ~v4.3 menu governor's choice and learning.
#include "sim/sched/cpuidle.h"

#include <catch2/catch.hpp>
#include <stdexcept>

using namespace kvmsim;

namespace {
// hsw_cstates of drivers/idle/intel_idle.c as enumerated on Haswell-EP.
const char* kHsw = "C1-HSW:2:2,C1E-HSW:10:20,C3-HSW:33:100,C6-HSW:133:400";
}  // namespace

TEST_CASE("cpuidle: intel_idle table parsing, POLL first, max_cstate", "[cpuidle]") {
  const auto s = parse_cpuidle_states(kHsw, 9);
  REQUIRE(s.size() == 5);
  CHECK(s[0].name == "POLL");
  CHECK(s[0].exit_latency_us == 0);
  CHECK(s[4].name == "C6-HSW");
  CHECK(s[4].exit_latency_us == 133);
  CHECK(s[4].target_residency_us == 400);
  // intel_idle.max_cstate=2 keeps the first two table entries (C1, C1E).
  const auto two = parse_cpuidle_states(kHsw, 2);
  REQUIRE(two.size() == 3);
  CHECK(two[2].name == "C1E-HSW");
  CHECK_THROWS_AS(parse_cpuidle_states("C1:2", 9), std::invalid_argument);
  CHECK_THROWS_AS(parse_cpuidle_states("C1:x:2", 9), std::invalid_argument);
  CHECK_THROWS_AS(parse_cpuidle_states("C1:2:2us", 9), std::invalid_argument);
  CHECK_THROWS_AS(parse_cpuidle_states(":2:2", 9), std::invalid_argument);
}

TEST_CASE("cpuidle: the tlb_flushed flag (CPUIDLE_FLAG_TLB_FLUSHED) is read per state",
          "[cpuidle]") {
  const auto s = parse_cpuidle_states(
      "C1-HSW:2:2,C1E-HSW:10:20,C3-HSW:33:100:tlb_flushed,C6-HSW:133:400:tlb_flushed", 9);
  REQUIRE(s.size() == 5);
  CHECK_FALSE(s[0].tlb_flushed);
  CHECK_FALSE(s[1].tlb_flushed);
  CHECK_FALSE(s[2].tlb_flushed);
  CHECK(s[3].tlb_flushed);
  CHECK(s[4].tlb_flushed);
  CHECK(s[4].name == "C6-HSW");
  CHECK(s[4].target_residency_us == 400);
  CHECK_FALSE(parse_cpuidle_states(kHsw, 9)[4].tlb_flushed);
  CHECK_THROWS_AS(parse_cpuidle_states("C6:133:400:flushed", 9), std::invalid_argument);
}

TEST_CASE("menu: the deepest state whose target residency fits the next timer", "[cpuidle]") {
  const auto s = parse_cpuidle_states(kHsw, 9);
  // Feed regular periods so get_typical_interval() agrees with the timer.
  MenuGovernor m;
  const auto settle = [&](std::uint64_t us) {
    for (int i = 0; i < 20; ++i) m.update(s, m.select(s, us, 2000000000ULL), us);
  };
  settle(4000);  // a HZ=250 guest tick: C6 (target 400 us)
  CHECK(m.select(s, 4000, 2000000000ULL) == 4);
  // The PM QoS latency limit excludes C6 (133 us) and C3 (33 us).
  CHECK(m.select(s, 4000, 20) == 2);
  CHECK(m.select(s, 4000, 0) == 0);  // cpu_dma_latency 0: POLL
  MenuGovernor m2;
  for (int i = 0; i < 20; ++i) m2.update(s, m2.select(s, 50, 2000000000ULL), 50);
  CHECK(m2.select(s, 50, 2000000000ULL) == 2);  // 50 us: C1E (20), not C3 (100)
  MenuGovernor m3;
  CHECK(m3.select(s, 4, 2000000000ULL) == 0);  // next timer <= 5 us: POLL
}

TEST_CASE("menu: early wake-ups lower the prediction and the chosen state", "[cpuidle]") {
  const auto s = parse_cpuidle_states(kHsw, 9);
  MenuGovernor m;
  // The next timer is 4 ms away but something else wakes the CPU after
  // ~60-90 us each time (irregular, so the typical interval does not apply
  // at once): the correction factor of the 1-10 ms bucket falls.
  const std::uint64_t wake[] = {60, 90, 70, 85, 65, 95, 75, 80};
  for (int i = 0; i < 64; ++i) m.update(s, m.select(s, 4000, 2000000000ULL), wake[i % 8]);
  CHECK(m.correction_factor(3) < MenuGovernor::kResolution * MenuGovernor::kDecay / 10);
  CHECK(m.predicted_us() < 100);
  CHECK(m.select(s, 4000, 2000000000ULL) == 2);  // C1E, not C6
  // A fresh governor, same timer, predicts the full 4 ms once trained on it.
  MenuGovernor fresh;
  for (int i = 0; i < 20; ++i) fresh.update(s, fresh.select(s, 4000, 2000000000ULL), 4000);
  CHECK(fresh.predicted_us() > 3500);
}
