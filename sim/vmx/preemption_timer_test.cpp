// Unit tests for the VMX preemption timer model (sim/vmx/preemption_timer.h)
// and the guest TSC scaling it relies on (sim/vmx/tsc.h).
#include "sim/vmx/preemption_timer.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>

#include "sim/core/random.h"
#include "sim/core/time.h"
#include "sim/vmx/tsc.h"

using kvmsim::kHvDeadlineNone;
using kvmsim::Rng;
using kvmsim::Tsc;
using kvmsim::TscScaling;
using kvmsim::vmx_preemption_timer_fire_tsc;
using kvmsim::vmx_preemption_timer_usable;
using kvmsim::vmx_preemption_timer_value;
using kvmsim::vmx_set_hv_timer;

namespace {

using kvmsim::u128;

TscScaling scaling(std::uint64_t guest_khz, std::uint64_t host_khz, std::int64_t offset = 0) {
  TscScaling s;
  s.ratio = TscScaling::ratio_for(guest_khz, host_khz);
  s.offset = offset;
  return s;
}

// Uniform-ish in [0, n) (n > 0); the modulo bias is irrelevant here.
std::uint64_t below(Rng& rng, std::uint64_t n) { return rng.next_u64() % n; }

}  // namespace

// ---------------------------------------------------------------------------
// (1) The value written to the VMCS on entry.

TEST_CASE("preemption timer value is (hv_deadline - now) >> rate_shift, truncated",
          "[vmx][preemption_timer]") {
  const Tsc now = 1'000'000;
  // rate 5: one tick = 32 cycles.
  CHECK(vmx_preemption_timer_value(now + 32, now, 5) == 1);
  CHECK(vmx_preemption_timer_value(now + 63, now, 5) == 1);  // truncated, not rounded
  CHECK(vmx_preemption_timer_value(now + 64, now, 5) == 2);
  CHECK(vmx_preemption_timer_value(now + 31, now, 5) == 0);  // less than a tick
  CHECK(vmx_preemption_timer_value(now + 1, now, 5) == 0);
  // rate 7: one tick = 128 cycles.
  CHECK(vmx_preemption_timer_value(now + 128 * 1000ULL + 127, now, 7) == 1000);
  CHECK(vmx_preemption_timer_value(now + 12345, now, 0) == 12345);
  // Only the difference matters, not the alignment of now.
  CHECK(vmx_preemption_timer_value(now + 7 + 32ULL * 9, now + 7, 5) == 9);
}

TEST_CASE("preemption timer value is 0 when the deadline has passed or is now",
          "[vmx][preemption_timer]") {
  const Tsc now = 5'000'000;
  CHECK(vmx_preemption_timer_value(now, now, 5) == 0);
  CHECK(vmx_preemption_timer_value(now - 1, now, 5) == 0);
  CHECK(vmx_preemption_timer_value(1, now, 7) == 0);
  CHECK(vmx_preemption_timer_value(0, now, 7) == 0);
}

TEST_CASE("preemption timer value is 0xffffffff (soft disabled) when there is no deadline",
          "[vmx][preemption_timer]") {
  CHECK(kHvDeadlineNone == kvmsim::kTscNever);
  CHECK(vmx_preemption_timer_value(kHvDeadlineNone, 0, 5) == 0xffffffffU);
  CHECK(vmx_preemption_timer_value(kHvDeadlineNone, 123456789, 7) == 0xffffffffU);
  CHECK(vmx_preemption_timer_value(kHvDeadlineNone, kHvDeadlineNone - 1, 0) == 0xffffffffU);
}

// ---------------------------------------------------------------------------
// (2) When the timer fires.

TEST_CASE("preemption timer loaded with 0 fires at entry", "[vmx][preemption_timer]") {
  CHECK(vmx_preemption_timer_fire_tsc(1000, 0, 5) == 1000);
  CHECK(vmx_preemption_timer_fire_tsc(1001, 0, 7) == 1001);  // not quantised
  // A passed deadline therefore exits right after entry.
  const Tsc entry = 77'777;
  CHECK(vmx_preemption_timer_fire_tsc(entry, vmx_preemption_timer_value(entry - 5, entry, 5), 5) ==
        entry);
}

TEST_CASE("preemption timer decrements at each multiple of 2^rate_shift after entry",
          "[vmx][preemption_timer]") {
  // Entry mid-tick: the first decrement is at the next multiple of 32, so the
  // partial tick counts as a whole one.
  CHECK(vmx_preemption_timer_fire_tsc(31, 1, 5) == 32);
  CHECK(vmx_preemption_timer_fire_tsc(32, 1, 5) == 64);  // aligned entry: a full tick
  CHECK(vmx_preemption_timer_fire_tsc(33, 1, 5) == 64);
  CHECK(vmx_preemption_timer_fire_tsc(100, 3, 5) == 96 + 3 * 32);
  CHECK(vmx_preemption_timer_fire_tsc(1000, 2, 7) == 896 + 2 * 128);
}

TEST_CASE(
    "preemption timer fire time is a multiple of 2^X within from deadline - 2^(X+1) up to the "
    "deadline for rates 5 and 7 (random deadlines)",
    "[vmx][preemption_timer]") {
  // Fire = (floor(E/t) + floor((D-E)/t)) * t for entry E, deadline D, tick t,
  // so D - fire = (E mod t) + ((D-E) mod t) in [0, 2t-2]: never late, early by
  // less than two ticks, and by less than one tick when E is tick-aligned.
  for (unsigned x : {5u, 7u}) {
    const Tsc tick = Tsc{1} << x;
    Rng rng(42, x == 5 ? "timer-rate5" : "timer-rate7");
    Tsc max_early = 0;
    for (int i = 0; i < 3000; ++i) {
      const Tsc entry = below(rng, Tsc{1} << 45);
      // Mostly short deadlines, some up to the 32-bit limit of the counter.
      const Tsc delta = (i % 4 == 0) ? below(rng, tick << 32) : below(rng, tick * 5000);
      const Tsc deadline = entry + delta;
      const std::uint32_t v = vmx_preemption_timer_value(deadline, entry, x);
      const Tsc fire = vmx_preemption_timer_fire_tsc(entry, v, x);
      INFO("rate " << x << " entry " << entry << " deadline " << deadline << " value " << v);
      REQUIRE(fire >= entry);
      REQUIRE(fire <= deadline);            // never late
      REQUIRE(deadline - fire < 2 * tick);  // early by less than 2^(X+1)
      if (v == 0) {
        REQUIRE(delta < tick);
        REQUIRE(fire == entry);
      } else {
        REQUIRE(fire % tick == 0);  // quantised to the TSC bit X
        // Counting from the entry: fire - entry within a tick of v * tick.
        REQUIRE(fire - entry <= v * tick);
        REQUIRE(fire - entry > (v - 1) * tick);
      }
      // Tick-aligned entry: within one tick, i.e. [deadline - 2^X, deadline].
      const Tsc aligned = entry & ~(tick - 1);
      const Tsc fire_aligned = vmx_preemption_timer_fire_tsc(
          aligned, vmx_preemption_timer_value(aligned + delta, aligned, x), x);
      REQUIRE(fire_aligned <= aligned + delta);
      REQUIRE(aligned + delta - fire_aligned < tick);
      if (deadline - fire > max_early) max_early = deadline - fire;
    }
    // The bound is reached: some cases fire more than one tick early.
    CHECK(max_early >= tick);
  }
}

TEST_CASE("preemption timer can fire almost two ticks early when entry is just before a tick",
          "[vmx][preemption_timer]") {
  // rate 5: entry at 31, deadline 94 -> value (94-31)>>5 = 1; the counter
  // decrements at TSC 32 and fires 62 cycles (2*32 - 2) before the deadline.
  const Tsc entry = 31;
  const Tsc deadline = 94;
  const std::uint32_t v = vmx_preemption_timer_value(deadline, entry, 5);
  CHECK(v == 1);
  CHECK(vmx_preemption_timer_fire_tsc(entry, v, 5) == 32);
  CHECK(deadline - vmx_preemption_timer_fire_tsc(entry, v, 5) == 2 * 32 - 2);
}

TEST_CASE(
    "preemption timer counts from entry: a value written at t_prog and entered at t_entry"
    " fires late by about t_entry - t_prog",
    "[vmx][preemption_timer]") {
  for (unsigned x : {5u, 7u}) {
    const Tsc tick = Tsc{1} << x;
    Rng rng(7, "timer-late");
    for (int i = 0; i < 500; ++i) {
      const Tsc t_prog = below(rng, Tsc{1} << 40);
      const Tsc gap = 1 + below(rng, 5'000);  // time between VMCS write and entry
      const Tsc deadline = t_prog + 5'000 + 10 * tick + below(rng, 100'000);  // after entry
      const Tsc t_entry = t_prog + gap;
      const std::uint32_t v = vmx_preemption_timer_value(deadline, t_prog, x);
      const Tsc fire = vmx_preemption_timer_fire_tsc(t_entry, v, x);
      // late = (fire - deadline) in (gap - 2^(X+1), gap]
      const auto late = static_cast<std::int64_t>(fire) - static_cast<std::int64_t>(deadline);
      INFO("rate " << x << " t_prog " << t_prog << " gap " << gap << " late " << late);
      REQUIRE(late <= static_cast<std::int64_t>(gap));
      REQUIRE(late > static_cast<std::int64_t>(gap) - static_cast<std::int64_t>(2 * tick));
      // Rewriting the value at the entry itself (as vmx_update_hv_timer does on
      // every entry) removes the lateness.
      const Tsc fire_fresh = vmx_preemption_timer_fire_tsc(
          t_entry, vmx_preemption_timer_value(deadline, t_entry, x), x);
      REQUIRE(fire_fresh <= deadline);
    }
  }
  // A concrete case: a gap of 10 000 cycles (far more than a tick) makes it
  // late by 10 000 - (early quantisation).
  const Tsc t_prog = 1 << 20;
  const Tsc deadline = t_prog + 32ULL * 1000;
  const Tsc t_entry = t_prog + 10'000;
  const Tsc fire =
      vmx_preemption_timer_fire_tsc(t_entry, vmx_preemption_timer_value(deadline, t_prog, 5), 5);
  CHECK(fire > deadline + 10'000 - 64);
  CHECK(fire <= deadline + 10'000);
}

// ---------------------------------------------------------------------------
// (3) vmx_set_hv_timer().

TEST_CASE("vmx_set_hv_timer: delta within the timer advance is expired with hv_deadline == tscl",
          "[vmx][preemption_timer]") {
  const TscScaling tsc;  // unscaled, offset 0: guest TSC == host TSC
  const Tsc tscl = 10'000'000;
  for (std::uint64_t delta : {std::uint64_t{1}, std::uint64_t{500}, std::uint64_t{1000}}) {
    const auto r = vmx_set_hv_timer(tsc, 5, tscl, tscl + delta, 1000);
    INFO("delta " << delta);
    CHECK(r.ok);
    CHECK(r.expired);
    CHECK(r.hv_deadline_tsc == tscl);
  }
  // One cycle beyond the advance: armed one cycle ahead, not expired.
  const auto r = vmx_set_hv_timer(tsc, 5, tscl, tscl + 1001, 1000);
  CHECK(r.ok);
  CHECK_FALSE(r.expired);
  CHECK(r.hv_deadline_tsc == tscl + 1);
}

TEST_CASE("vmx_set_hv_timer: a deadline in the past or now is expired", "[vmx][preemption_timer]") {
  const TscScaling tsc;
  const Tsc tscl = 10'000'000;
  for (std::uint64_t d : {tscl, tscl - 1, tscl - 100'000, std::uint64_t{0}}) {
    const auto r = vmx_set_hv_timer(tsc, 5, tscl, d, 0);
    INFO("deadline " << d);
    CHECK(r.ok);
    CHECK(r.expired);
    CHECK(r.hv_deadline_tsc == tscl);
  }
}

TEST_CASE("vmx_set_hv_timer: armed at tscl + guest delta - advance, via the guest TSC offset",
          "[vmx][preemption_timer]") {
  TscScaling tsc;
  tsc.offset = -4'000'000;  // guest TSC behind the host
  const Tsc tscl = 10'000'000;
  const std::uint64_t guest_now = tsc.read_l1_tsc(tscl);
  REQUIRE(guest_now == 6'000'000);
  const auto r = vmx_set_hv_timer(tsc, 5, tscl, guest_now + 50'000, 300);
  CHECK(r.ok);
  CHECK_FALSE(r.expired);
  CHECK(r.hv_deadline_tsc == tscl + 50'000 - 300);
  // A deadline that has passed in guest time although host-wise it is "ahead".
  const auto p = vmx_set_hv_timer(tsc, 5, tscl, guest_now - 1, 0);
  CHECK(p.ok);
  CHECK(p.expired);
}

TEST_CASE("vmx_set_hv_timer: 32-bit fit check fails exactly when delta >> (X + 32) != 0",
          "[vmx][preemption_timer]") {
  const TscScaling tsc;
  const Tsc tscl = 1'000;
  for (unsigned x : {5u, 7u}) {
    INFO("rate " << x);
    const std::uint64_t limit = std::uint64_t{1} << (x + 32);  // == 2^32 << X
    // One below the limit: fits, and the counter is loaded with 0xffffffff.
    const auto ok = vmx_set_hv_timer(tsc, x, tscl, tscl + limit - 1, 0);
    CHECK(ok.ok);
    CHECK_FALSE(ok.expired);
    CHECK(ok.hv_deadline_tsc == tscl + limit - 1);
    CHECK(vmx_preemption_timer_value(ok.hv_deadline_tsc, tscl, x) == 0xffffffffU);
    // At the limit: -ERANGE, nothing armed.
    const auto bad = vmx_set_hv_timer(tsc, x, tscl, tscl + limit, 0);
    CHECK_FALSE(bad.ok);
    CHECK_FALSE(bad.expired);
    CHECK(bad.hv_deadline_tsc == kHvDeadlineNone);
    CHECK_FALSE(vmx_set_hv_timer(tsc, x, tscl, tscl + 2 * limit, 0).ok);
    // The advance is subtracted before the check.
    CHECK(vmx_set_hv_timer(tsc, x, tscl, tscl + limit + 99, 100).ok);
    CHECK_FALSE(vmx_set_hv_timer(tsc, x, tscl, tscl + limit + 100, 100).ok);
  }
  // The limit depends on the rate: 2^37 fails at rate 5 but fits at rate 7.
  CHECK_FALSE(vmx_set_hv_timer(tsc, 5, tscl, tscl + (std::uint64_t{1} << 37), 0).ok);
  CHECK(vmx_set_hv_timer(tsc, 7, tscl, tscl + (std::uint64_t{1} << 37), 0).ok);
}

TEST_CASE(
    "vmx_set_hv_timer: with TSC scaling a guest delta is converted to host cycles"
    " as (N << 48) / ratio",
    "[vmx][preemption_timer][tsc]") {
  // Guest at 1.5 GHz on a 3 GHz host: ratio 0.5, a guest cycle is 2 host cycles.
  const TscScaling half = scaling(1'500'000, 3'000'000, 12'345);
  REQUIRE(half.scaled());
  REQUIRE(half.ratio == (std::uint64_t{1} << 47));
  const Tsc tscl = 3'000'000'000ULL;  // 1 s of host time
  const std::uint64_t guest_now = half.read_l1_tsc(tscl);
  REQUIRE(guest_now == 1'500'000'000ULL + 12'345);
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{1'500'000},
                          std::uint64_t{123'456'789}}) {
    const auto r = vmx_set_hv_timer(half, 5, tscl, guest_now + n, 0);
    INFO("N " << n);
    REQUIRE(r.ok);
    CHECK_FALSE(r.expired);
    CHECK(r.hv_deadline_tsc - tscl == static_cast<std::uint64_t>((u128{n} << 48) / half.ratio));
    CHECK(r.hv_deadline_tsc - tscl == 2 * n);
  }
  // The advance is in guest cycles: subtracted before scaling.
  const auto adv = vmx_set_hv_timer(half, 5, tscl, guest_now + 10'000, 1'000);
  CHECK(adv.hv_deadline_tsc - tscl == 2ULL * 9'000);

  // A ratio that is not a power of two: guest 2.1 GHz on a 3 GHz host.
  const TscScaling r07 = scaling(2'100'000, 3'000'000);
  const std::uint64_t g_now = r07.read_l1_tsc(tscl);
  for (std::uint64_t n : {std::uint64_t{7}, std::uint64_t{700}, std::uint64_t{2'100'000},
                          std::uint64_t{987'654'321}}) {
    const auto r = vmx_set_hv_timer(r07, 5, tscl, g_now + n, 0);
    INFO("N " << n);
    REQUIRE(r.ok);
    const std::uint64_t host = r.hv_deadline_tsc - tscl;
    CHECK(host == static_cast<std::uint64_t>((u128{n} << 48) / r07.ratio));
    CHECK(static_cast<double>(host) ==
          Approx(static_cast<double>(n) / 0.7).epsilon(1e-9).margin(1));
  }
}

TEST_CASE("vmx_set_hv_timer: with TSC scaling the 32-bit check applies to the host delta",
          "[vmx][preemption_timer][tsc]") {
  const TscScaling half = scaling(1'500'000, 3'000'000);
  const Tsc tscl = 1'000'000;
  const std::uint64_t guest_now = half.read_l1_tsc(tscl);
  for (unsigned x : {5u, 7u}) {
    INFO("rate " << x);
    // Guest 2^(X+31) cycles = host 2^(X+32): does not fit; one guest cycle less does.
    const std::uint64_t n = std::uint64_t{1} << (x + 31);
    CHECK_FALSE(vmx_set_hv_timer(half, x, tscl, guest_now + n, 0).ok);
    const auto r = vmx_set_hv_timer(half, x, tscl, guest_now + n - 1, 0);
    CHECK(r.ok);
    CHECK(r.hv_deadline_tsc - tscl == 2 * (n - 1));
  }
}

TEST_CASE("vmx_set_hv_timer: a guest delta that overflows 64 bits after scaling is -ERANGE",
          "[vmx][preemption_timer][tsc]") {
  // Guest at 1 MHz on a 3 GHz host: one guest cycle is 3000 host cycles.
  const TscScaling slow = scaling(1'000, 3'000'000);
  const std::uint64_t limit = slow.ratio << 16;  // smallest guest delta whose host delta >= 2^64
  REQUIRE(slow.guest_delta_to_host(limit - 1).has_value());
  CHECK(*slow.guest_delta_to_host(limit - 1) ==
        static_cast<std::uint64_t>((u128{limit - 1} << 48) / slow.ratio));
  CHECK_FALSE(slow.guest_delta_to_host(limit).has_value());
  CHECK_FALSE(slow.guest_delta_to_host(~std::uint64_t{0}).has_value());

  const Tsc tscl = 1'000'000;
  const std::uint64_t guest_now = slow.read_l1_tsc(tscl);
  const auto r = vmx_set_hv_timer(slow, 7, tscl, guest_now + (std::uint64_t{1} << 62), 0);
  CHECK_FALSE(r.ok);
  CHECK_FALSE(r.expired);
  CHECK(r.hv_deadline_tsc == kHvDeadlineNone);
  // Small deltas are fine: 1000 guest cycles ~= 3e6 host cycles.
  const auto s = vmx_set_hv_timer(slow, 7, tscl, guest_now + 1000, 0);
  CHECK(s.ok);
  CHECK(s.hv_deadline_tsc - tscl == static_cast<std::uint64_t>((u128{1000} << 48) / slow.ratio));
  CHECK(static_cast<double>(s.hv_deadline_tsc - tscl) == Approx(3e6).margin(1));
}

// ---------------------------------------------------------------------------
// (4) TscScaling.

TEST_CASE("TscScaling::read_l1_tsc is scale(host) + offset", "[tsc]") {
  TscScaling unscaled;
  CHECK_FALSE(unscaled.scaled());
  CHECK(unscaled.read_l1_tsc(12345) == 12345);
  unscaled.offset = 1000;
  CHECK(unscaled.read_l1_tsc(12345) == 13345);
  unscaled.offset = -345;
  CHECK(unscaled.read_l1_tsc(12345) == 12000);

  TscScaling half = scaling(1'500'000, 3'000'000, 1000);
  CHECK(half.read_l1_tsc(10'000) == 5'000 + 1'000);
  CHECK(half.read_l1_tsc(10'001) == 5'000 + 1'000);  // truncated
  half.offset = -3'000;
  CHECK(half.read_l1_tsc(10'000) == 2'000);

  // Ratio 0.7 (not exact in 16.48 fixed point): truncation of host * ratio.
  const TscScaling r07 = scaling(2'100'000, 3'000'000);
  CHECK(r07.scale(10) == 6);  // 10 * 0.6999.. = 6.999..
  CHECK(r07.scale(3'000'000'000ULL) == 2'099'999'999ULL);
  // Guest faster than the host: ratio > 1.
  const TscScaling fast = scaling(4'600'000, 2'300'000, 7);
  CHECK(fast.ratio == (std::uint64_t{2} << 48));
  CHECK(fast.read_l1_tsc(1'000) == 2'007);
}

TEST_CASE(
    "TscScaling::host_tsc_at is the first host cycle at which the guest TSC reaches the"
    " value",
    "[tsc]") {
  struct Case {
    const char* name;
    TscScaling tsc;
  };
  const Case cases[] = {
      {"unscaled", TscScaling{}},
      {"unscaled, negative offset",
       [] {
         TscScaling s;
         s.offset = -1'000'000'000;
         return s;
       }()},
      {"unscaled, positive offset",
       [] {
         TscScaling s;
         s.offset = 5'000'000;
         return s;
       }()},
      {"1.5 GHz on 3 GHz", scaling(1'500'000, 3'000'000)},
      {"2.1 GHz on 3 GHz, negative offset", scaling(2'100'000, 3'000'000, -123'456'789)},
      {"2.0 GHz on 2.3 GHz, positive offset", scaling(2'000'000, 2'300'000, 9'999)},
      {"3.5 GHz on 2.3 GHz (guest faster)", scaling(3'500'000, 2'300'000, -77)},
  };
  using S = std::int64_t;
  for (const auto& c : cases) {
    Rng rng(99, c.name);
    for (int i = 0; i < 2000; ++i) {
      // Mix of small values (near 0 and the offset) and large ones.
      const std::uint64_t g =
          (i % 3 == 0) ? below(rng, 20'000'000) : below(rng, std::uint64_t{1} << 50);
      const Tsc h = c.tsc.host_tsc_at(g);
      INFO(c.name << ": guest " << g << " -> host " << h);
      // Compare signed: with a negative offset the guest TSC is "negative" early on.
      REQUIRE(static_cast<S>(c.tsc.read_l1_tsc(h)) >= static_cast<S>(g));
      if (h > 0) REQUIRE(static_cast<S>(c.tsc.read_l1_tsc(h - 1)) < static_cast<S>(g));
    }
  }
  // Unscaled: plain subtraction of the offset; at or before the offset -> 0.
  TscScaling u;
  u.offset = 5'000;
  CHECK(u.host_tsc_at(6'000) == 1'000);
  CHECK(u.host_tsc_at(5'000) == 0);
  CHECK(u.host_tsc_at(10) == 0);
  u.offset = -5'000;
  CHECK(u.host_tsc_at(0) == 5'000);
  CHECK(u.host_tsc_at(1) == 5'001);
  // Half speed: guest value v is reached at host 2v (2v-1 gives v-1 after truncation).
  const TscScaling half = scaling(1'500'000, 3'000'000);
  CHECK(half.host_tsc_at(1'000) == 2'000);
  CHECK(half.host_tsc_at(1'001) == 2'002);
}

TEST_CASE("TscScaling::guest_delta_to_host is the identity on an unscaled TSC", "[tsc]") {
  TscScaling u;
  u.offset = -999;  // the offset does not matter for deltas
  for (std::uint64_t d : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{123'456'789},
                          std::uint64_t{1} << 63, ~std::uint64_t{0}}) {
    const auto h = u.guest_delta_to_host(d);
    REQUIRE(h.has_value());
    CHECK(*h == d);
  }
  // On a scaled TSC a zero delta stays zero.
  const auto z = scaling(1'500'000, 3'000'000).guest_delta_to_host(0);
  REQUIRE(z.has_value());
  CHECK(*z == 0);
}

// ---------------------------------------------------------------------------
// (5) hardware_setup()'s rate check.

TEST_CASE("vmx_preemption_timer_usable: usable iff (tsc_khz*1000 >> rate) <= 0xffffffff/10",
          "[vmx][preemption_timer]") {
  CHECK(vmx_preemption_timer_usable(2'300'000, 5));  // 71.9 MHz timer
  CHECK(vmx_preemption_timer_usable(5'000'000, 5));
  CHECK_FALSE(vmx_preemption_timer_usable(5'000'000, 0));  // 5 GHz timer: 0xffffffff lasts < 1 s
  CHECK_FALSE(vmx_preemption_timer_usable(2'300'000, 0));
  // The exact boundary at rate 3: 3435973 kHz -> 429496625 <= 429496729;
  // 3435974 kHz -> 429496750 > 429496729.
  CHECK(0xffffffffULL / 10 == 429'496'729ULL);
  CHECK(vmx_preemption_timer_usable(3'435'973, 3));
  CHECK_FALSE(vmx_preemption_timer_usable(3'435'974, 3));
  // Rate 0: the highest usable TSC is 429496 kHz.
  CHECK(vmx_preemption_timer_usable(429'496, 0));
  CHECK_FALSE(vmx_preemption_timer_usable(429'497, 0));
}
