// The adaptive timer advance (lapic.c adjust_lapic_timer_advance(), rules
// since ~v5.4) and its convergence on a steady exit-path length.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "sim/core/params.h"
#include "sim/lapic/lapic.h"
#include "sim/model_params.h"

using namespace kvmsim;

namespace {
constexpr std::uint64_t kKhz = 2000000;  // 2 GHz guest TSC: 2 cycles per ns
}

TEST_CASE("adjust_lapic_timer_advance: errors under 100 or over 10000 cycles are ignored",
          "[lapic][advance]") {
  CHECK(adjust_lapic_timer_advance(1000, 99, kKhz) == 1000);
  CHECK(adjust_lapic_timer_advance(1000, -99, kKhz) == 1000);
  CHECK(adjust_lapic_timer_advance(1000, 10001, kKhz) == 1000);
  CHECK(adjust_lapic_timer_advance(1000, -10001, kKhz) == 1000);
  // The bounds themselves are used.
  CHECK(adjust_lapic_timer_advance(1000, 100, kKhz) == 1000 + 50 / 8);
  CHECK(adjust_lapic_timer_advance(1000, 10000, kKhz) == 1000 + 5000 / 8);
}

TEST_CASE("adjust_lapic_timer_advance: early shrinks, late grows, by 1/8 of the error in ns",
          "[lapic][advance]") {
  // 1600 cycles at 2 GHz = 800 ns -> step 100 ns.
  CHECK(adjust_lapic_timer_advance(1000, -1600, kKhz) == 900);
  CHECK(adjust_lapic_timer_advance(1000, 1600, kKhz) == 1100);
  // Integer ns, then integer division by 8 (as the kernel's do_div + /8).
  CHECK(adjust_lapic_timer_advance(1000, 1000, 3000000) == 1000 + 333 / 8);
}

TEST_CASE("adjust_lapic_timer_advance: above 5000 ns or below zero restarts from 1000 ns",
          "[lapic][advance]") {
  CHECK(adjust_lapic_timer_advance(4990, 1600, kKhz) == LAPIC_TIMER_ADVANCE_NS_INIT);
  CHECK(adjust_lapic_timer_advance(4900, 1600, kKhz) == 5000);  // 5000 itself is kept
  // The kernel's u32 wraps below zero, which is > 5000: back to 1000.
  CHECK(adjust_lapic_timer_advance(50, -1600, kKhz) == LAPIC_TIMER_ADVANCE_NS_INIT);
}

TEST_CASE("adaptive advance converges on a steady exit-path length and keeps tuning",
          "[lapic][advance]") {
  // The timer fires `advance` early; the exit path takes E cycles before the
  // wait, so the wait sees delta = E - advance (in cycles).
  for (const std::int64_t exit_path : {900, 2500, 6000}) {
    std::int64_t adv = LAPIC_TIMER_ADVANCE_NS_INIT;
    for (int i = 0; i < 200; ++i) {
      const std::int64_t adv_cycles = adv * static_cast<std::int64_t>(kKhz) / 1000000;
      adv = adjust_lapic_timer_advance(adv, exit_path - adv_cycles, kKhz);
    }
    const std::int64_t adv_cycles = adv * static_cast<std::int64_t>(kKhz) / 1000000;
    INFO("exit path " << exit_path << " cycles, advance " << adv << " ns");
    CHECK(std::llabs(exit_path - adv_cycles) < LAPIC_TIMER_ADVANCE_ADJUST_MIN + 16);
  }
  // An exit path longer than NS_MAX can hide saws between 1000 and 5000 ns.
  std::int64_t adv = LAPIC_TIMER_ADVANCE_NS_INIT;
  bool reset_seen = false;
  for (int i = 0; i < 400; ++i) {
    const std::int64_t next = adjust_lapic_timer_advance(adv, 9000, kKhz);
    reset_seen |= next < adv;
    adv = next;
  }
  CHECK(reset_seen);
  CHECK(adv >= LAPIC_TIMER_ADVANCE_NS_INIT);
  CHECK(adv <= LAPIC_TIMER_ADVANCE_NS_MAX);
}

TEST_CASE("v4.20 rule: step min(error, advance/8), stop within 100 cycles, above 5000 ns off",
          "[lapic][advance]") {
  bool done = false;
  // 1600 cycles late at 2 GHz = 800 ns; advance/8 = 125 caps the step.
  CHECK(adjust_lapic_timer_advance_until_done(1000, 1600, kKhz, &done) == 1125);
  CHECK_FALSE(done);
  // Small error: step = the error itself (40 ns), and tuning is over.
  CHECK(adjust_lapic_timer_advance_until_done(1000, -80, kKhz, &done) == 960);
  CHECK(done);
  // Past 5000 ns the advance is switched off for good.
  done = false;
  CHECK(adjust_lapic_timer_advance_until_done(4900, 1600, kKhz, &done) == 0);
  CHECK(done);
  // Late by a steady 2850 cycles: off after a few dozen samples (T2 "before").
  std::int64_t adv = LAPIC_TIMER_ADVANCE_NS_INIT;
  done = false;
  int n = 0;
  while (!done && n < 1000) {
    adv = adjust_lapic_timer_advance_until_done(adv, 2850, 3400000, &done);
    ++n;
  }
  CHECK(adv == 0);
  CHECK(n < 40);
}

TEST_CASE(
    "v5.3 rule: past 5000 ns the advance goes back to 1000 ns and tuning resumes, until an "
    "error under 100 cycles ends it",
    "[lapic][advance]") {
  bool done = false;
  CHECK(adjust_lapic_timer_advance_until_done(4900, 1600, kKhz, &done, true) ==
        LAPIC_TIMER_ADVANCE_NS_INIT);
  CHECK_FALSE(done);
  // Below the cap it is the v4.20 rule, step for step.
  bool done_old = false;
  CHECK(adjust_lapic_timer_advance_until_done(1000, 1600, kKhz, &done, true) ==
        adjust_lapic_timer_advance_until_done(1000, 1600, kKhz, &done_old));
  // Late by a steady 2850 cycles: the v4.20 rule switches the advance off; the
  // v5.3 rule keeps cycling between 1000 and 5000 ns, never done, never 0.
  std::int64_t adv = LAPIC_TIMER_ADVANCE_NS_INIT;
  done = false;
  int resets = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t next =
        adjust_lapic_timer_advance_until_done(adv, 2850, 3400000, &done, true);
    resets += next < adv ? 1 : 0;
    adv = next;
  }
  CHECK_FALSE(done);
  CHECK(resets > 10);
  CHECK(adv >= LAPIC_TIMER_ADVANCE_NS_INIT);
  CHECK(adv <= LAPIC_TIMER_ADVANCE_NS_MAX);
  // Then an error under 100 cycles ends tuning, after a last step of that
  // error (50 cycles at 3.4 GHz = 14 ns).
  const std::int64_t settled = adjust_lapic_timer_advance_until_done(adv, 50, 3400000, &done, true);
  CHECK(done);
  CHECK(settled == adv + 14);
}

TEST_CASE(
    "host.kernel picks the adaptive-advance rule: until_done to v5.2, the retry in v5.3, "
    "spin_then_tune from v5.4",
    "[lapic][advance][era]") {
  const auto rule = [](const char* kernel) {
    ParamSet set(model_params());
    set.set_text("host.kernel", kernel, "test");
    apply_kernel_eras(set);
    return set.s("kvm.lapic_timer_advance_tuning");
  };
  CHECK(rule("4.20") == "until_done");
  CHECK(rule("5.2") == "until_done");
  CHECK(rule("5.3") == "until_done_retry");
  CHECK(rule("5.4") == "spin_then_tune");
  CHECK(rule("5.14") == "always");
}
