// Unit tests for one CFS run queue (sim/sched/cfs.h). The clock runs at
// 1 GHz so that one cycle is one nanosecond.
#include "sim/sched/cfs.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <deque>
#include <stdexcept>
#include <vector>

using namespace kvmsim;

namespace {

const TscClock kGhz{1000000};
constexpr Tsc kMs = 1000000;

CfsTunables unscaled() {  // the v5.x defaults without scaling (one CPU)
  return CfsTunables::from_ns(kGhz, 6000000, 750000, 1000000, 500000, TunableScaling::None, 1);
}

// schedule() on one queue: put the current back, run the next.
SchedEntity* schedule(CfsRq& rq, Tsc now) {
  rq.put_prev_entity(now);
  SchedEntity* next = rq.pick_next_entity();
  if (next != nullptr) rq.set_next_entity(*next, now);
  return next;
}

// An entity that "slept" with vruntime v on this queue wakes up here.
void wake_with_vruntime(CfsRq& rq, SchedEntity& se, std::int64_t v, Tsc now) {
  se.fresh = false;
  se.vruntime = v;
  rq.enqueue_entity(se, now, kEnqueueWakeup);
}

struct RunStats {
  std::uint64_t switches = 0;
};

// The tiny test loop: CPU-bound entities on one queue until `horizon`, the
// slice end found either by a periodic tick or by slice_left() (HRTICK).
RunStats run_cpu_bound(CfsRq& rq, std::vector<SchedEntity>& es, Tsc horizon, Tsc tick_period) {
  for (auto& e : es) rq.enqueue_entity(e, 0, kEnqueueNone);
  RunStats st;
  SchedEntity* cur = schedule(rq, 0);
  Tsc now = 0;
  while (now < horizon) {
    const Tsc step = tick_period != 0 ? tick_period - now % tick_period : rq.slice_left(now);
    now = std::min(horizon, now + step);
    if (rq.entity_tick(now)) {
      SchedEntity* next = schedule(rq, now);
      if (next != cur) ++st.switches;
      cur = next;
    }
  }
  rq.update_curr(horizon);
  return st;
}

}  // namespace

TEST_CASE("cfs: nice_to_weight is the kernel's sched_prio_to_weight", "[cfs]") {
  CHECK(nice_to_weight(0) == 1024);
  CHECK(nice_to_weight(5) == 335);
  CHECK(nice_to_weight(-20) == 88761);
  CHECK(nice_to_weight(19) == 15);
  CHECK(nice_to_weight(-1) == 1277);
  CHECK_THROWS_AS(nice_to_weight(20), std::out_of_range);
  CHECK_THROWS_AS(nice_to_weight(-21), std::out_of_range);
}

TEST_CASE("cfs: tunable scaling is 1 + ilog2(min(cpus, 8)) by default", "[cfs]") {
  CHECK(tunable_scaling_factor(TunableScaling::Log, 1) == 1);
  CHECK(tunable_scaling_factor(TunableScaling::Log, 2) == 2);
  CHECK(tunable_scaling_factor(TunableScaling::Log, 4) == 3);
  CHECK(tunable_scaling_factor(TunableScaling::Log, 7) == 3);
  CHECK(tunable_scaling_factor(TunableScaling::Log, 8) == 4);
  CHECK(tunable_scaling_factor(TunableScaling::Log, 72) == 4);
  CHECK(tunable_scaling_factor(TunableScaling::Linear, 4) == 4);
  CHECK(tunable_scaling_factor(TunableScaling::Linear, 72) == 8);
  CHECK(tunable_scaling_factor(TunableScaling::None, 72) == 1);
  const auto t =
      CfsTunables::from_ns(kGhz, 6000000, 750000, 1000000, 500000, TunableScaling::Log, 36);
  CHECK(t.latency == 24 * kMs);
  CHECK(t.min_granularity == 3 * kMs);
  CHECK(t.wakeup_granularity == 4 * kMs);
  CHECK(t.migration_cost == kMs / 2);  // not scaled
  CHECK(t.nr_latency == 8);
  CHECK(parse_tunable_scaling("linear") == TunableScaling::Linear);
  CHECK_THROWS_AS(parse_tunable_scaling("2"), std::invalid_argument);
}

TEST_CASE("cfs: equal CPU-bound entities each get 1/N of the CPU within 1%", "[cfs]") {
  const auto t = unscaled();
  const Tsc horizon = 10000 * kMs;  // 10 s
  for (int n : {2, 3, 10}) {
    for (Tsc tick : {Tsc{0}, kMs}) {  // slice_left()-driven, and a 1000 Hz tick
      INFO("n=" << n << " tick=" << tick);
      CfsRq rq(&t);
      std::vector<SchedEntity> es;
      es.reserve(n);
      for (int i = 0; i < n; ++i) es.emplace_back(i);
      const RunStats st = run_cpu_bound(rq, es, horizon, tick);
      Tsc total = 0;
      for (const auto& e : es) {
        total += e.sum_exec_runtime;
        CHECK(static_cast<double>(e.sum_exec_runtime) ==
              Approx(static_cast<double>(horizon) / n).epsilon(0.01));
      }
      CHECK(total == horizon);
      // One switch per slice: latency/n up to nr_latency, min_granularity above.
      const double slice = n <= 8 ? 6e6 / n : 0.75e6;
      const double slices = static_cast<double>(horizon) / slice;
      if (tick == 0) {
        CHECK(static_cast<double>(st.switches) == Approx(slices).epsilon(0.01));
      } else {  // the tick rounds each slice up to the next 1 ms boundary
        CHECK(static_cast<double>(st.switches) <= slices);
        CHECK(static_cast<double>(st.switches) >= slices / 2);
      }
    }
  }
}

TEST_CASE("cfs: nice 0 and nice 5 share the CPU as 1024 : 335", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  std::vector<SchedEntity> es;
  es.emplace_back(0, 0);
  es.emplace_back(1, 5);
  run_cpu_bound(rq, es, 10000 * kMs, 0);
  const double ratio =
      static_cast<double>(es[0].sum_exec_runtime) / static_cast<double>(es[1].sum_exec_runtime);
  CHECK(ratio == Approx(1024.0 / 335.0).epsilon(0.01));
  // Equal vruntime progress is what makes it fair.
  CHECK(std::abs(es[0].vruntime - es[1].vruntime) < static_cast<std::int64_t>(6 * kMs));
}

TEST_CASE("cfs: slice is latency/N up to nr_latency entities, min_granularity above", "[cfs]") {
  const auto t = unscaled();
  CHECK(t.nr_latency == 8);
  for (unsigned n : {1u, 4u, 8u, 9u, 12u}) {
    INFO("n=" << n);
    CfsRq rq(&t);
    std::deque<SchedEntity> es;
    for (unsigned i = 0; i < n; ++i) {
      es.emplace_back(static_cast<int>(i));
      rq.enqueue_entity(es.back(), 0, kEnqueueNone);
    }
    const Tsc period = n <= 8 ? 6 * kMs : static_cast<Tsc>(n) * 750000;
    CHECK(rq.sched_period(n) == period);
    CHECK(rq.sched_slice(es.front()) == period / n);
    // A not-yet-queued entity is counted as if it were (sched_slice of a waking task).
    SchedEntity extra(100);
    CHECK(rq.sched_slice(extra) == rq.sched_period(n + 1) / (n + 1));
  }
  // Weighted: nice 0 next to nice 5 gets 1024/1359 of the period.
  CfsRq rq(&t);
  SchedEntity a(0, 0);
  SchedEntity b(1, 5);
  rq.enqueue_entity(a, 0, kEnqueueNone);
  rq.enqueue_entity(b, 0, kEnqueueNone);
  CHECK(rq.sched_slice(a) == 6 * kMs * 1024 / 1359);
  CHECK(rq.sched_slice(b) == 6 * kMs * 335 / 1359);
  CHECK(rq.sched_vslice(b) == rq.sched_slice(b) * 1024 / 335);
}

TEST_CASE("cfs: tick preempts once the ideal slice is used up, not a cycle before", "[cfs]") {
  const auto t = unscaled();
  for (Tsc at : {3 * kMs, 3 * kMs + 1}) {
    CfsRq rq(&t);
    SchedEntity a(0);
    SchedEntity b(1);
    wake_with_vruntime(rq, a, 0, 0);
    wake_with_vruntime(rq, b, 0, 0);
    REQUIRE(schedule(rq, 0) == &a);  // equal vruntime: lower id first
    CHECK(rq.slice_left(0) == 3 * kMs + 1);
    CHECK(rq.entity_tick(at) == (at > 3 * kMs));
  }
}

TEST_CASE("cfs: tick preempts a light entity whose vruntime runs a slice ahead", "[cfs]") {
  // curr nice 5 (vruntime grows 1024/335 times faster), leftmost nice 0 1.5 ms
  // ahead in vruntime: curr is preempted after ~0.97 ms, before its 1.48 ms slice.
  const auto t = unscaled();
  Tsc d = 0;
  for (int variant = 0; variant < 3; ++variant) {
    CfsRq rq(&t);
    SchedEntity a(0, 5);
    SchedEntity b(1, 0);
    wake_with_vruntime(rq, a, 0, 0);
    wake_with_vruntime(rq, b, static_cast<std::int64_t>(1500000), 0);
    REQUIRE(schedule(rq, 0) == &a);
    const Tsc ideal = rq.sched_slice(a);
    CHECK(ideal == 1479028);
    if (variant == 0) {
      d = rq.slice_left(0);
      CHECK(d > t.min_granularity);
      CHECK(d < ideal);
    } else if (variant == 1) {
      CHECK_FALSE(rq.entity_tick(d - 1));
    } else {
      CHECK(rq.entity_tick(d));
    }
  }
  // The vruntime rule never fires before min_granularity, however far ahead
  // (here the lead exceeds the 1.48 ms slice after 0.48 ms).
  CfsRq rq(&t);
  SchedEntity a(0, 5);
  SchedEntity b(1, 0);
  wake_with_vruntime(rq, a, 0, 0);
  wake_with_vruntime(rq, b, 1, 0);
  REQUIRE(schedule(rq, 0) == &a);
  CHECK(rq.slice_left(0) == t.min_granularity);
  CHECK_FALSE(rq.entity_tick(t.min_granularity - 1));
  CHECK(rq.entity_tick(t.min_granularity));
}

TEST_CASE("cfs: slice_left() always lands on a tick that preempts", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  std::vector<SchedEntity> es;
  const int nices[] = {0, 5, -5, 10, 0, 19, -20, 3};
  es.reserve(8);
  for (int i = 0; i < 8; ++i) es.emplace_back(i, nices[i]);
  for (auto& e : es) rq.enqueue_entity(e, 0, kEnqueueNone);
  schedule(rq, 0);
  Tsc now = 0;
  for (int i = 0; i < 2000; ++i) {
    const Tsc d = rq.slice_left(now);
    REQUIRE(d >= 1);
    REQUIRE(d != kTscNever);
    now += d;
    REQUIRE(rq.entity_tick(now));
    schedule(rq, now);
  }
}

TEST_CASE("cfs: wake-up preemption happens iff the vruntime lead exceeds wakeup_gran", "[cfs]") {
  const auto t = unscaled();
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  for (std::int64_t lead : {gran - 1, gran, gran + 1, std::int64_t{-5}}) {
    INFO("lead " << lead);
    CfsRq rq(&t);
    SchedEntity a(0);
    SchedEntity b(1);
    wake_with_vruntime(rq, a, 2 * gran, 0);
    REQUIRE(schedule(rq, 0) == &a);
    wake_with_vruntime(rq, b, 2 * gran - lead, 0);
    CHECK(rq.check_preempt_wakeup(b, 0) == (lead > gran));
  }
  // The granularity is in the woken entity's vruntime: heavier wakers preempt sooner.
  CfsRq rq(&t);
  SchedEntity heavy(0, -5);
  SchedEntity light(1, 5);
  CHECK(rq.wakeup_gran(heavy) == t.wakeup_granularity * 1024 / 3121);
  CHECK(rq.wakeup_gran(light) == t.wakeup_granularity * 1024 / 335);
  // An idle queue is always preempted.
  CfsRq idle(&t);
  SchedEntity c(2);
  wake_with_vruntime(idle, c, 0, 0);
  CHECK(idle.check_preempt_wakeup(c, 0));
}

TEST_CASE(
    "cfs: NO_WAKEUP_PREEMPTION: a wake-up never preempts a running entity, an idle "
    "queue still is",
    "[cfs]") {
  auto t = unscaled();
  t.wakeup_preemption = false;
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  CfsRq rq(&t);
  SchedEntity a(0);
  SchedEntity b(1);
  wake_with_vruntime(rq, a, 10 * gran, 0);
  REQUIRE(schedule(rq, 0) == &a);
  wake_with_vruntime(rq, b, 0, 0);  // a lead of 10 wakeup_gran
  CHECK_FALSE(rq.check_preempt_wakeup(b, 0));
  CfsRq idle(&t);
  SchedEntity c(2);
  wake_with_vruntime(idle, c, 0, 0);
  CHECK(idle.check_preempt_wakeup(c, 0));
}

TEST_CASE("cfs: a sleeper's credit is at most half of sched_latency", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  SchedEntity runner(0);
  SchedEntity sleeper(1);
  SchedEntity napper(2);
  wake_with_vruntime(rq, runner, 0, 0);
  wake_with_vruntime(rq, sleeper, 0, 0);
  wake_with_vruntime(rq, napper, 0, 0);
  rq.dequeue_entity(sleeper, 0, kDequeueSleep);
  rq.dequeue_entity(napper, 0, kDequeueSleep);
  REQUIRE(schedule(rq, 0) == &runner);
  CHECK(rq.entity_tick(1000 * kMs) == false);  // alone: no preemption, just accounting
  CHECK(rq.min_vruntime() == static_cast<std::int64_t>(1000 * kMs));
  // Slept for a second: placed half a latency behind min_vruntime, not further.
  rq.enqueue_entity(sleeper, 1000 * kMs, kEnqueueWakeup);
  CHECK(sleeper.vruntime == rq.min_vruntime() - static_cast<std::int64_t>(3 * kMs));
  // A short nap keeps its own (larger) vruntime: sleeping never earns more.
  napper.vruntime = rq.min_vruntime() - 1000;
  rq.enqueue_entity(napper, 1000 * kMs, kEnqueueWakeup);
  CHECK(napper.vruntime == rq.min_vruntime() - 1000);
}

TEST_CASE("cfs: a new entity starts one vslice after min_vruntime (START_DEBIT)", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  SchedEntity a(0);
  SchedEntity b(1);
  SchedEntity c(2, 5);
  rq.enqueue_entity(a, 0, kEnqueueNone);
  CHECK(a.vruntime == static_cast<std::int64_t>(6 * kMs));  // alone: the whole period
  schedule(rq, 0);
  rq.entity_tick(10 * kMs);
  const std::int64_t min = rq.min_vruntime();
  const Tsc vslice_b = rq.sched_vslice(b);
  CHECK(vslice_b == 3 * kMs);
  rq.enqueue_entity(b, 10 * kMs, kEnqueueNone);
  CHECK(b.vruntime == min + static_cast<std::int64_t>(vslice_b));
  const Tsc vslice_c = rq.sched_vslice(c);  // nice 5 among two nice 0
  CHECK(vslice_c == (6 * kMs * 335 / 2383) * 1024 / 335);
  rq.enqueue_entity(c, 10 * kMs, kEnqueueNone);
  CHECK(c.vruntime == min + static_cast<std::int64_t>(vslice_c));
}

TEST_CASE("cfs: yield hands the CPU to the next entity within wakeup_gran", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  SchedEntity a(0);
  SchedEntity b(1);
  SchedEntity far(2);
  wake_with_vruntime(rq, a, 0, 0);
  wake_with_vruntime(rq, b, 1000, 0);
  REQUIRE(schedule(rq, 0) == &a);
  rq.yield(0);
  CHECK(schedule(rq, 0) == &b);
  // The skip buddy is not honoured for an entity too far behind in fairness.
  CfsRq rq2(&t);
  SchedEntity a2(4);
  wake_with_vruntime(rq2, a2, 0, 0);
  wake_with_vruntime(rq2, far, static_cast<std::int64_t>(t.wakeup_granularity) + 1, 0);
  REQUIRE(schedule(rq2, 0) == &a2);
  rq2.yield(0);
  CHECK(schedule(rq2, 0) == &a2);
  // Alone on the queue, yield does nothing.
  CfsRq rq3(&t);
  SchedEntity solo(3);
  wake_with_vruntime(rq3, solo, 0, 0);
  REQUIRE(schedule(rq3, 0) == &solo);
  rq3.yield(0);
  CHECK(schedule(rq3, 0) == &solo);
}

TEST_CASE("cfs: migration normalisation keeps the lag relative to min_vruntime", "[cfs]") {
  const auto t = unscaled();
  CfsRq src(&t);
  CfsRq dst(&t);
  SchedEntity a(0);
  SchedEntity b(1);
  SchedEntity c(2);
  wake_with_vruntime(src, a, 5000000, 0);
  wake_with_vruntime(src, b, 7000000, 0);
  schedule(src, 0);
  wake_with_vruntime(dst, c, 90000000, 0);
  schedule(dst, 0);
  src.entity_tick(kMs);
  dst.entity_tick(kMs);
  CHECK(src.min_vruntime() == 6000000);
  CHECK(dst.min_vruntime() == 91000000);
  const std::int64_t lag = b.vruntime - src.min_vruntime();
  CHECK(lag == 1000000);
  src.dequeue_entity(b, 0, kDequeueNone);
  CHECK(b.vruntime == lag);
  CHECK(b.vruntime_relative);
  dst.enqueue_entity(b, 0, kEnqueueNone);
  CHECK(b.vruntime == dst.min_vruntime() + lag);
  CHECK_FALSE(b.vruntime_relative);
}

TEST_CASE("cfs: run delay is the time runnable but not running", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  SchedEntity a(0);
  SchedEntity b(1);
  wake_with_vruntime(rq, a, 0, 0);
  wake_with_vruntime(rq, b, 1, 0);
  REQUIRE(schedule(rq, 0) == &a);
  CHECK(b.run_delay_at(2 * kMs) == 2 * kMs);
  REQUIRE(rq.entity_tick(3 * kMs + 1));
  REQUIRE(schedule(rq, 3 * kMs + 1) == &b);
  CHECK(b.run_delay == 3 * kMs + 1);
  CHECK(a.sum_exec_runtime == 3 * kMs + 1);
  CHECK(a.run_delay_at(4 * kMs) == kMs - 1);
  rq.update_curr(4 * kMs);
  CHECK(a.run_delay_at(4 * kMs) + a.sum_exec_runtime == 4 * kMs);
  CHECK(b.run_delay_at(4 * kMs) + b.sum_exec_runtime == 4 * kMs);
  CHECK(a.pcount == 1);
  CHECK(b.pcount == 1);
}

TEST_CASE("cfs: the queue is idle with nothing runnable", "[cfs]") {
  const auto t = unscaled();
  CfsRq rq(&t);
  CHECK(rq.idle());
  CHECK(schedule(rq, 0) == nullptr);
  SchedEntity a(0);
  rq.enqueue_entity(a, 0, kEnqueueNone);
  CHECK_FALSE(rq.idle());
  CHECK(schedule(rq, 0) == &a);
  CHECK(rq.slice_left(0) == kTscNever);
  rq.dequeue_entity(a, 5, kDequeueSleep);
  CHECK(schedule(rq, 5) == nullptr);
  CHECK(rq.idle());
  CHECK(a.sum_exec_runtime == 5);
  CHECK_THROWS_AS(rq.dequeue_entity(a, 6, kDequeueSleep), std::logic_error);
}

// v4.16 pick_next_entity(): a next buddy (yield_to, a preempting wake-up)
// runs ahead of the leftmost only if it is not more than wakeup_gran(left)
// right of it.
TEST_CASE("cfs: the next buddy is picked over the leftmost only within wakeup_gran", "[cfs]") {
  const auto t = unscaled();
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  for (std::int64_t lead : {gran - 1, gran, gran + 1}) {
    INFO("buddy right of leftmost by " << lead);
    CfsRq rq(&t);
    SchedEntity left(0);
    SchedEntity buddy(1);
    SchedEntity runner(2);
    wake_with_vruntime(rq, runner, 0, 0);
    REQUIRE(schedule(rq, 0) == &runner);
    wake_with_vruntime(rq, left, 10 * gran, 0);
    wake_with_vruntime(rq, buddy, 10 * gran + lead, 0);
    runner.vruntime = 20 * gran;  // runner is far right: left is the leftmost after put_prev
    rq.set_next_buddy(buddy);
    SchedEntity* picked = schedule(rq, 0);
    CHECK(picked == (lead <= gran ? &buddy : &left));
    // Picked, the buddy is cleared; refused, it stays for the next pick.
    CHECK(rq.next_buddy() == (lead <= gran ? nullptr : &buddy));
  }
}

TEST_CASE(
    "cfs: a preempting wake-up makes the wakee the next buddy, and curr the last buddy "
    "once sched_nr_latency entities are runnable",
    "[cfs]") {
  const auto t = unscaled();  // nr_latency 8
  REQUIRE(t.nr_latency == 8);
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  for (int others : {1, 6}) {
    INFO(others << " other runnable entities");
    CfsRq rq(&t);
    std::deque<SchedEntity> es;
    es.emplace_back(0);
    wake_with_vruntime(rq, es.back(), 0, 0);
    SchedEntity& curr = es.back();
    REQUIRE(schedule(rq, 0) == &curr);
    curr.vruntime = 10 * gran;
    for (int i = 0; i < others; ++i) {
      es.emplace_back(1 + i);
      wake_with_vruntime(rq, es.back(), 9 * gran, 0);  // within gran: no preemption
      REQUIRE_FALSE(rq.check_preempt_wakeup(es.back(), 0));
    }
    CHECK(rq.next_buddy() == nullptr);
    es.emplace_back(100);
    SchedEntity& woken = es.back();
    wake_with_vruntime(rq, woken, 10 * gran - gran - 1, 0);
    REQUIRE(rq.check_preempt_wakeup(woken, 0));
    CHECK(rq.next_buddy() == &woken);
    // scale = nr_running >= sched_nr_latency (curr + others + woken).
    CHECK(rq.last_buddy() == (others + 2 >= 8 ? &curr : nullptr));
  }
}

TEST_CASE("cfs: the last buddy gets the CPU back when within wakeup_gran", "[cfs]") {
  const auto t = unscaled();
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  CfsRq rq(&t);
  std::deque<SchedEntity> es;
  for (int i = 0; i < 8; ++i) {
    es.emplace_back(i);
    wake_with_vruntime(rq, es.back(), 10 * gran + i, 0);
  }
  SchedEntity& curr = es.front();
  REQUIRE(schedule(rq, 0) == &curr);
  curr.vruntime = 10 * gran + gran / 2;  // ran a little: still within gran of the leftmost
  es.emplace_back(100);
  SchedEntity& woken = es.back();
  wake_with_vruntime(rq, woken, 10 * gran + gran / 2 - gran - 1, 0);
  REQUIRE(rq.check_preempt_wakeup(woken, 0));
  REQUIRE(rq.last_buddy() == &curr);
  CHECK(schedule(rq, 0) == &woken);  // the next buddy beats the last buddy
  // woken blocks at once: the last buddy (not the leftmost es[1]) runs again.
  rq.dequeue_entity(woken, 0, kDequeueSleep);
  CHECK(schedule(rq, 0) == &curr);
  CHECK(rq.last_buddy() == nullptr);
}

TEST_CASE("cfs: a used-up slice and yield clear the current entity's buddies", "[cfs]") {
  const auto t = unscaled();
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  CfsRq rq(&t);
  SchedEntity a(0);
  SchedEntity b(1);
  wake_with_vruntime(rq, a, 0, 0);
  wake_with_vruntime(rq, b, gran / 2, 0);
  REQUIRE(schedule(rq, 0) == &a);
  rq.set_next_buddy(a);  // a stale buddy on the running entity
  // Half a slice: no preemption, the buddy stays.
  CHECK_FALSE(rq.entity_tick(rq.sched_slice(a) / 2));
  CHECK(rq.next_buddy() == &a);
  // check_preempt_tick() past the ideal slice: preempt and clear_buddies(curr).
  CHECK(rq.entity_tick(rq.sched_slice(a) + 1));
  CHECK(rq.next_buddy() == nullptr);
  // yield_task_fair(): clear_buddies(curr), then curr is the skip buddy.
  rq.set_next_buddy(a);
  rq.yield(rq.sched_slice(a) + 1);
  CHECK(rq.next_buddy() == nullptr);
  CHECK(rq.skip_buddy() == &a);
}

// The rules both run queues decide with (fair:: in cfs.h): the host's CfsRq
// in cycles and the guest's GuestFair in guest ns.
TEST_CASE("fair rules: the guest's ns tunables scale by 1 + ilog2(min(ncpus, 8)) like the host's",
          "[cfs][fair]") {
  const CfsTunables g = CfsTunables::in_ns(6000000, 750000, 1000000, TunableScaling::Log, 4);
  CHECK(g.latency == 18000000);  // factor 3 at 4 CPUs
  CHECK(g.min_granularity == 2250000);
  CHECK(g.wakeup_granularity == 3000000);
  CHECK(g.nr_latency == 8);  // from the unscaled values
  const CfsTunables h =
      CfsTunables::from_ns(kGhz, 6000000, 750000, 1000000, 500000, TunableScaling::Log, 4);
  CHECK(h.latency == g.latency);  // 1 GHz: a cycle is a ns
  CHECK(h.min_granularity == g.min_granularity);
  CHECK(h.wakeup_granularity == g.wakeup_granularity);
  CHECK(CfsTunables::in_ns(6000000, 750000, 1000000, TunableScaling::Log, 64).latency ==
        24000000);  // capped at 8 CPUs: factor 4
  CHECK_THROWS_AS(CfsTunables::in_ns(6000000, 0, 1000000, TunableScaling::Log, 1),
                  std::invalid_argument);
}

TEST_CASE("fair rules: the period stretches to nr x min_granularity beyond sched_nr_latency",
          "[cfs][fair]") {
  const CfsTunables t = unscaled();
  CHECK(fair::sched_period(t, 1) == 6 * kMs);
  CHECK(fair::sched_period(t, 8) == 6 * kMs);
  CHECK(fair::sched_period(t, 9) == Tsc{9} * 750000);
}

TEST_CASE(
    "fair rules: check_preempt_tick needs the slice used up, or min_granularity and a lead "
    "over the leftmost of more than the slice",
    "[cfs][fair]") {
  const CfsTunables t = unscaled();
  const Tsc ideal = 3 * kMs;
  const std::int64_t big_lead = 10 * static_cast<std::int64_t>(kMs);
  const std::int64_t small_lead = 2 * static_cast<std::int64_t>(kMs);
  CHECK(fair::check_preempt_tick(t, ideal + 1, ideal, nullptr));
  CHECK_FALSE(fair::check_preempt_tick(t, ideal, ideal, nullptr));
  CHECK_FALSE(fair::check_preempt_tick(t, 700000, ideal, &big_lead));  // < min_granularity
  CHECK(fair::check_preempt_tick(t, 750000, ideal, &big_lead));
  CHECK_FALSE(fair::check_preempt_tick(t, kMs, ideal, &small_lead));
  const std::int64_t behind = -big_lead;
  CHECK_FALSE(fair::check_preempt_tick(t, kMs, ideal, &behind));
}

TEST_CASE(
    "fair rules: place_entity gives a new entity START_DEBIT and a sleeper at most half a "
    "latency of credit, never moving it back",
    "[cfs][fair]") {
  const CfsTunables t = unscaled();
  const std::int64_t minv = 100 * static_cast<std::int64_t>(kMs);
  CHECK(fair::place_entity(t, minv, 0, 2 * kMs, true) == minv + 2 * static_cast<std::int64_t>(kMs));
  CHECK(fair::place_entity(t, minv, 0, 0, false) == minv - 3 * static_cast<std::int64_t>(kMs));
  CHECK(fair::place_entity(t, minv, minv - 1, 0, false) == minv - 1);  // less credit kept
  CHECK(fair::place_entity(t, minv, minv + 5, 0, false) == minv + 5);  // never back
}

TEST_CASE(
    "fair rules: wakeup_preempt_entity is -1 when the wakee is not ahead, 1 beyond the "
    "granularity, 0 in between",
    "[cfs][fair]") {
  CHECK(fair::wakeup_preempt_entity(0, 1000) == -1);
  CHECK(fair::wakeup_preempt_entity(-5, 1000) == -1);
  CHECK(fair::wakeup_preempt_entity(1000, 1000) == 0);
  CHECK(fair::wakeup_preempt_entity(1001, 1000) == 1);
}

TEST_CASE(
    "cfs: a task group's entity weighs shares x its local load / its total load, clamped "
    "between MIN_SHARES and shares",
    "[cfs][groups]") {
  constexpr std::uint64_t kW = 1024;      // a nice-0 task's weight
  constexpr std::uint64_t kS = kW << 10;  // cpu.shares 1024, scaled
  // 16 nice-0 tasks of one group, 2 on each of 8 CPUs: 1/8 of the shares on each.
  CHECK(fair::calc_group_shares(kS, 2 * kW, 16 * kW) == (std::uint64_t{128} << 10));
  // 2 tasks on 2 CPUs: half each.
  CHECK(fair::calc_group_shares(kS, kW, 2 * kW) == (std::uint64_t{512} << 10));
  // All the group's load on this CPU: the whole shares, never more.
  CHECK(fair::calc_group_shares(kS, 3 * kW, 3 * kW) == kS);
  // A sliver of the load: the MIN_SHARES floor (2 scaled units), not 0.
  CHECK(fair::calc_group_shares(kS, 1, 1000000) == fair::kMinShares);
  // No load anywhere (the kernel's shares = tg_shares * 0): MIN_SHARES.
  CHECK(fair::calc_group_shares(kS, 0, 0) == fair::kMinShares);
  // Large scaled loads do not overflow: 88761 (nice -20) << 10 x 80 CPUs.
  const std::uint64_t heavy = std::uint64_t{88761} << 10;
  CHECK(fair::calc_group_shares(kS, heavy, std::uint64_t{80} * heavy) == kS / 80);
}

TEST_CASE(
    "cfs: reweight_entity moves a queued entity's weight in the queue's load and charges the "
    "current one at its old weight first",
    "[cfs][groups]") {
  const CfsTunables t = unscaled();
  CfsRq rq(&t);
  SchedEntity a(1);
  SchedEntity b(2);
  rq.enqueue_entity(a, 0, kEnqueueNone);
  rq.enqueue_entity(b, 0, kEnqueueNone);
  SchedEntity* cur = schedule(rq, 0);
  REQUIRE(cur != nullptr);
  SchedEntity& c = *cur;
  SchedEntity& q = cur == &a ? b : a;
  const std::int64_t v0 = c.vruntime;
  CHECK(rq.load() == 2048);
  // 1 ms at weight 1024 is 1 ms of vruntime; then 1 ms at 512 is 2 ms.
  rq.reweight_entity(c, 512, kMs);
  CHECK(c.vruntime == v0 + static_cast<std::int64_t>(kMs));
  CHECK(c.weight == 512);
  CHECK(rq.load() == 1536);
  CHECK(rq.nr_running() == 2);
  rq.update_curr(2 * kMs);
  CHECK(c.vruntime == v0 + static_cast<std::int64_t>(3 * kMs));
  // A queued, not current entity: its weight moves in the load, its vruntime stays.
  const std::int64_t vq = q.vruntime;
  rq.reweight_entity(q, 2048, 2 * kMs);
  CHECK(rq.load() == 512 + 2048);
  CHECK(q.vruntime == vq);
  // Off the queue: only the entity changes.
  rq.dequeue_entity(q, 2 * kMs, kDequeueSleep);
  rq.reweight_entity(q, 1024, 2 * kMs);
  CHECK(rq.load() == 512);
  CHECK(q.weight == 1024);
}
