// Unit tests for the host scheduler across pCPUs (sim/sched/host_sched.h).
// The clock runs at 1 GHz: one cycle is one nanosecond.
#include "sim/sched/host_sched.h"
#include "sim/sched/host.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/core/params.h"
#include "sim/model_params.h"

using namespace kvmsim;

namespace {

const TscClock kGhz{1000000};
constexpr Tsc kMs = 1000000;

CfsTunables unscaled() {
  return CfsTunables::from_ns(kGhz, 6000000, 750000, 1000000, 500000, TunableScaling::None, 1);
}

// Makes `cpu` busy with a running entity (enqueued and picked at `now`).
void occupy(HostScheduler& s, std::deque<SchedEntity>& pool, int cpu, Tsc now, int nice = 0) {
  pool.emplace_back(1000 + static_cast<int>(pool.size()), nice);
  s.enqueue(cpu, pool.back(), now, kEnqueueNone);
  if (s.curr(cpu) == nullptr) s.pick_next(cpu, now);
}

}  // namespace

TEST_CASE("sched: the host.sched_* parameters give the v5.x tunables", "[sched]") {
  const ParamSet p(model_params());
  CHECK(p.i("host.sched_latency_ns") == 6000000);
  CHECK(p.s("host.sched_tunable_scaling") == "log");
  const auto t = HostScheduler::tunables_from(p, kGhz, 8);
  CHECK(t.latency == 24 * kMs);  // 6 ms x (1 + ilog2(8))
  CHECK(t.min_granularity == 3 * kMs);
  CHECK(t.wakeup_granularity == 4 * kMs);
  CHECK(t.migration_cost == kMs / 2);
  const auto t2 = HostScheduler::tunables_from(p, TscClock{2000000}, 1);
  CHECK(t2.latency == 12 * kMs);  // 2 GHz: cycles, not ns
}

TEST_CASE("sched: a wake-up goes back to prev when prev is idle", "[sched]") {
  const Topology topo(1, 4, 2);
  HostScheduler s(topo, unscaled());
  SchedEntity e(1);
  CHECK(s.select_task_rq(e, 3, -1) == 3);
  CHECK(s.select_task_rq(e, 6, 0) == 6);
}

TEST_CASE("sched: a new entity goes to the least loaded socket, core, then pCPU", "[sched]") {
  // 2 sockets x 2 cores x 2 threads: cpu = thread*4 + socket*2 + core.
  const Topology topo(2, 2, 2);
  HostScheduler s(topo, unscaled());
  std::deque<SchedEntity> pool;
  SchedEntity e(1);
  SchedEntity pinned(2, 0, CpuMask::of({4, 5}));
  CHECK(s.select_task_rq(e, -1, -1) == 0);
  CHECK(s.select_task_rq(e, -1, 7) == 0);  // the waker does not matter
  occupy(s, pool, 0, 0);
  CHECK(s.select_task_rq(e, -1, -1) == 2);  // socket 1 is idler
  occupy(s, pool, 2, 0);
  CHECK(s.select_task_rq(e, -1, -1) == 1);  // socket 0, the idle core {1, 5}
  occupy(s, pool, 1, 0);
  CHECK(s.select_task_rq(e, -1, -1) == 3);
  occupy(s, pool, 3, 0);
  CHECK(s.select_task_rq(e, -1, -1) == 4);  // every core half busy: 0's sibling
  CHECK(s.select_task_rq(pinned, -1, -1) == 4);
  occupy(s, pool, 4, 0, -5);  // socket 0 now heavier
  CHECK(s.select_task_rq(pinned, -1, -1) == 5);
  CHECK(s.select_task_rq(e, -1, -1) == 6);
  // Eight CPU-bound entities spread two per pCPU over four pCPUs.
  const Topology four(1, 4, 1);
  HostScheduler s4(four, unscaled());
  std::deque<SchedEntity> vcpus;
  for (int i = 0; i < 8; ++i) {
    vcpus.emplace_back(i);
    s4.enqueue(s4.select_task_rq(vcpus.back(), -1, -1), vcpus.back(), 0, kEnqueueNone);
  }
  for (int c = 0; c < 4; ++c) CHECK(s4.rq(c).nr_running() == 2);
}

TEST_CASE("sched: with prev busy, placement picks an idle core, then an idle sibling, in the LLC",
          "[sched]") {
  // 2 sockets x 2 cores x 2 threads: cpu = thread*4 + socket*2 + core.
  // Socket 0 = {0, 1, 4, 5}, cores {0, 4} and {1, 5}; socket 1 = {2, 3, 6, 7}.
  const Topology topo(2, 2, 2);
  HostScheduler s(topo, unscaled());
  std::deque<SchedEntity> pool;
  SchedEntity e(1);
  occupy(s, pool, 0, 0);
  CHECK(s.select_task_rq(e, 0, -1) == 1);  // core {1, 5} wholly idle
  occupy(s, pool, 1, 0);
  CHECK(s.select_task_rq(e, 0, -1) == 4);  // no idle core: 0's idle SMT sibling
  occupy(s, pool, 4, 0);
  CHECK(s.select_task_rq(e, 0, -1) == 5);
  occupy(s, pool, 5, 0);
  // The LLC is full: stay on prev even though socket 1 is idle.
  CHECK(s.select_task_rq(e, 0, -1) == 0);
  // An idle waker on the other socket does not pull it across.
  CHECK(s.select_task_rq(e, 0, 2) == 0);
  // A wholly idle core beats an idle thread met earlier in the scan.
  const Topology three(1, 3, 2);  // cores {0, 3}, {1, 4}, {2, 5}
  HostScheduler s3(three, unscaled());
  std::deque<SchedEntity> pool3;
  occupy(s3, pool3, 0, 0);
  occupy(s3, pool3, 4, 0);
  CHECK(s3.select_task_rq(e, 0, -1) == 2);  // not 1, whose sibling 4 is busy
}

TEST_CASE("sched: wake_affine_idle moves a wakee to its idle waker's pCPU in the LLC", "[sched]") {
  const Topology topo(2, 2, 2);
  HostScheduler s(topo, unscaled());
  std::deque<SchedEntity> pool;
  SchedEntity e(1);
  occupy(s, pool, 0, 0);
  CHECK(s.select_task_rq(e, 0, 5) == 5);  // waker cpu 5 idle, same LLC
  CHECK(s.select_task_rq(e, 1, 5) == 1);  // prev idle too: prev wins
}

TEST_CASE("sched: a pinned entity is never placed or pulled elsewhere", "[sched]") {
  const Topology topo(1, 2, 2);  // cpus 0..3, cores {0, 2} and {1, 3}
  HostScheduler s(topo, unscaled());
  std::deque<SchedEntity> pool;
  occupy(s, pool, 0, 0);
  SchedEntity pinned(1, 0, CpuMask::only(0));
  SchedEntity pinned2(2, 0, CpuMask::of({0, 2}));
  CHECK(s.select_task_rq(pinned, 0, -1) == 0);
  CHECK(s.select_task_rq(pinned, 0, 3) == 0);
  CHECK(s.select_task_rq(pinned, 1, -1) == 0);  // prev not allowed: fallback
  CHECK(s.select_task_rq(pinned2, 0, 1) == 2);
  CHECK_THROWS_AS(s.enqueue(1, pinned, 0, kEnqueueWakeup), std::logic_error);
  s.enqueue(0, pinned, 0, kEnqueueNone);
  // cpu 1 goes idle long after: the pinned queued entity stays on cpu 0.
  CHECK(s.idle_balance(1, 100 * kMs) == nullptr);
  CHECK(pinned.cpu == 0);
  // An unpinned one behind it is pulled instead.
  SchedEntity free(3);
  s.enqueue(0, free, 0, kEnqueueNone);
  CHECK(s.idle_balance(1, 100 * kMs) == &free);
  CHECK(free.cpu == 1);
  CHECK(pinned.cpu == 0);
  CHECK(s.counters().migrations == 1);
}

TEST_CASE("sched: idle balance pulls from the busiest queue of the smallest domain first",
          "[sched]") {
  const Topology topo(1, 2, 2);  // cores {0, 2} and {1, 3}
  HostScheduler s(topo, unscaled());
  std::deque<SchedEntity> pool;
  for (int i = 0; i < 4; ++i) occupy(s, pool, 1, 0);  // the busiest, but another core
  for (int i = 0; i < 2; ++i) occupy(s, pool, 2, 0);  // cpu 0's SMT sibling
  for (int i = 0; i < 3; ++i) occupy(s, pool, 3, 0);
  const Tsc later = 10 * kMs;  // all cache cold
  SchedEntity* e = s.idle_balance(0, later);
  REQUIRE(e != nullptr);
  CHECK(s.rq(2).nr_running() == 1);  // from the sibling
  CHECK(e->cpu == 0);
  CHECK(s.rq(0).nr_running() == 1);
  // cpu 2 has nothing to spare now: the next idle pCPU in the LLC takes from cpu 1.
  HostScheduler s2(topo, unscaled());
  std::deque<SchedEntity> pool2;
  for (int i = 0; i < 4; ++i) occupy(s2, pool2, 1, 0);
  for (int i = 0; i < 3; ++i) occupy(s2, pool2, 3, 0);
  occupy(s2, pool2, 2, 0);
  REQUIRE(s2.idle_balance(0, later) != nullptr);
  CHECK(s2.rq(1).nr_running() == 3);
  CHECK(s2.rq(3).nr_running() == 3);
  // Heavier load counts, not the number of entities: two nice -5 beat three nice 0.
  HostScheduler s3(topo, unscaled());
  std::deque<SchedEntity> pool3;
  for (int i = 0; i < 2; ++i) occupy(s3, pool3, 1, 0, -5);
  for (int i = 0; i < 3; ++i) occupy(s3, pool3, 3, 0);
  REQUIRE(s3.idle_balance(0, later) != nullptr);
  CHECK(s3.rq(1).nr_running() == 1);
}

TEST_CASE("sched: idle balance leaves cache-hot and running entities alone", "[sched]") {
  const Topology topo(1, 2, 1);
  HostScheduler s(topo, unscaled());
  SchedEntity a(1);
  SchedEntity b(2);
  s.enqueue(0, b, 0, kEnqueueNone);
  s.enqueue(0, a, 0, kEnqueueNone);
  REQUIRE(s.pick_next(0, 0) == &a);
  REQUIRE(s.tick(0, 4 * kMs));
  REQUIRE(s.pick_next(0, 4 * kMs) == &b);
  // a ran until 4 ms: hot until 4.5 ms (sched_migration_cost); b is running.
  CHECK(s.idle_balance(1, 4 * kMs + kMs / 2 - 1) == nullptr);
  CHECK(s.idle_balance(1, 4 * kMs + kMs / 2) == &a);
}

TEST_CASE("sched: a busy pCPU's tick lets idle pCPUs pull (nohz idle balance)", "[sched]") {
  const Topology topo(2, 1, 1);  // two sockets: wake-ups never cross
  HostScheduler s(topo, unscaled());
  SchedEntity a(1);
  SchedEntity b(2);
  SchedEntity c(3);
  SchedEntity pinned(4, 0, CpuMask::only(0));
  s.enqueue(0, a, 0, kEnqueueNone);
  REQUIRE(s.pick_next(0, 0) == &a);
  CHECK(s.nohz_idle_balance(0, kMs).empty());  // one runnable: no kick
  s.enqueue(0, pinned, kMs, kEnqueueNone);
  CHECK(s.nohz_idle_balance(0, kMs).empty());  // the only waiting one is pinned
  s.enqueue(0, b, kMs, kEnqueueNone);
  s.enqueue(0, c, kMs, kEnqueueNone);
  const auto pulled = s.nohz_idle_balance(0, 2 * kMs);
  REQUIRE(pulled.size() == 1);
  CHECK(pulled[0].first == 1);
  CHECK(pulled[0].second->cpu == 1);
  CHECK(pulled[0].second != &pinned);
  CHECK(s.rq(0).nr_running() == 3);
  CHECK(s.pick_next(1, 2 * kMs) == pulled[0].second);
  CHECK(s.nohz_idle_balance(0, 3 * kMs).empty());  // no idle pCPU left
}

TEST_CASE("sched: an idle pCPU's pick_next pulls work and counts one switch", "[sched]") {
  const Topology topo(1, 2, 1);
  HostScheduler s(topo, unscaled());
  SchedEntity a(1);
  SchedEntity b(2);
  SchedEntity c(3);
  s.enqueue(0, b, 0, kEnqueueNone);  // START_DEBIT: the later arrival is placed first here
  s.enqueue(0, a, 0, kEnqueueNone);
  s.enqueue(1, c, 0, kEnqueueNone);
  REQUIRE(s.pick_next(0, 0) == &a);
  REQUIRE(s.pick_next(1, 0) == &c);
  CHECK(s.counters().context_switches == 2);  // idle -> a, idle -> c
  s.dequeue(1, c, kMs, kDequeueSleep);
  CHECK(s.need_resched(1));
  CHECK(s.pick_next(1, kMs) == &b);  // newidle balance, no detour through idle
  CHECK(s.counters().context_switches == 3);
  CHECK(s.counters().migrations == 1);
  CHECK(s.counters().idle_balance_pulls == 1);
  CHECK(b.nr_migrations == 1);
  CHECK_FALSE(s.need_resched(1));
  s.dequeue(1, b, 2 * kMs, kDequeueSleep);
  CHECK(s.pick_next(1, 2 * kMs) == nullptr);  // nothing to pull: idle
  CHECK(s.idle(1));
  CHECK(s.counters().context_switches == 4);
}

TEST_CASE("sched: wake-up, preemption and migration counters", "[sched]") {
  const Topology topo(1, 2, 1);
  HostScheduler s(topo, unscaled());
  std::vector<std::tuple<int, int, int>> migrated;
  s.on_migrate = [&](const SchedEntity& e, int from, int to, Tsc) {
    migrated.emplace_back(e.id, from, to);
  };
  SchedEntity hog(1);
  SchedEntity sleeper(2);
  s.enqueue(0, sleeper, 0, kEnqueueNone);
  s.enqueue(0, hog, 0, kEnqueueNone);
  REQUIRE(s.pick_next(0, 0) == &hog);
  s.tick(0, 3 * kMs + 1);
  REQUIRE(s.pick_next(0, 3 * kMs + 1) == &sleeper);
  CHECK(s.counters().tick_preemptions == 1);
  s.dequeue(0, sleeper, 4 * kMs, kDequeueSleep);
  REQUIRE(s.pick_next(0, 4 * kMs) == &hog);
  // Sleeps 100 ms; wakes with credit, leads the hog by > wakeup_gran: preempts.
  const Tsc wake = 104 * kMs;
  CHECK(s.select_task_rq(sleeper, sleeper.cpu, -1) == 1);  // prev busy, cpu 1 idle
  s.enqueue(0, sleeper, wake, kEnqueueWakeup);             // the pCPU may still choose prev
  CHECK(s.wakeup_preempts(0, sleeper, wake));
  CHECK(s.wakeup_preempts(0, sleeper, wake));  // already pending: not counted twice
  CHECK(s.counters().wakeup_preemptions == 1);
  CHECK(s.counters().wakeups == 1);
  REQUIRE(s.pick_next(0, wake) == &sleeper);
  CHECK(sleeper.vruntime == s.rq(0).min_vruntime() - static_cast<std::int64_t>(3 * kMs));
  // Wakes on an idle pCPU: migrated, vruntime renormalised there.
  s.dequeue(0, sleeper, wake + kMs, kDequeueSleep);
  s.pick_next(0, wake + kMs);
  s.enqueue(1, sleeper, wake + 2 * kMs, kEnqueueWakeup);
  CHECK(s.wakeup_preempts(1, sleeper, wake + 2 * kMs));
  CHECK(s.counters().wakeup_preemptions == 1);  // idle is not a preemption
  CHECK(s.counters().migrations == 1);
  CHECK(migrated == std::vector<std::tuple<int, int, int>>{{2, 0, 1}});
  CHECK(s.pick_next(1, wake + 2 * kMs) == &sleeper);
  CHECK(std::abs(sleeper.vruntime - s.rq(1).min_vruntime()) <= static_cast<std::int64_t>(6 * kMs));
}

TEST_CASE("sched: an entity still current on its pCPU is woken there", "[sched]") {
  const Topology topo(1, 2, 1);
  HostScheduler s(topo, unscaled());
  SchedEntity a(1);
  s.enqueue(0, a, 0, kEnqueueNone);
  REQUIRE(s.pick_next(0, 0) == &a);
  s.dequeue(0, a, kMs, kDequeueSleep);  // blocking; schedule() not yet run
  CHECK(s.select_task_rq(a, 0, -1) == 0);
  CHECK_THROWS_AS(s.enqueue(1, a, kMs, kEnqueueWakeup), std::logic_error);
  s.enqueue(0, a, kMs + 10, kEnqueueWakeup);
  CHECK(s.pick_next(0, kMs + 10) == &a);
  CHECK(s.counters().context_switches == 1);  // never left
}

namespace {

// A random host: entities of mixed nice and affinity on 8 pCPUs, some always
// runnable, others sleeping and waking; every step is followed by the
// pCPU's reaction (pick_next where need_resched or idle with work). Returns
// the sequence of (cpu, picked id) for the determinism check.
std::vector<std::pair<int, int>> random_host(std::uint32_t seed, bool check) {
  const Topology topo(1, 4, 2);
  HostScheduler s(topo, unscaled());
  std::mt19937 rng(seed);
  std::deque<SchedEntity> es;
  constexpr int kN = 20;
  for (int i = 0; i < kN; ++i) {
    CpuMask mask;
    if (i % 5 == 1) mask = CpuMask::only(i % 8);
    if (i % 5 == 2) mask = CpuMask::of({i % 8, (i + 3) % 8});
    es.emplace_back(i, static_cast<int>(rng() % 11) - 5, mask);
  }
  auto always = [](int i) { return i % 3 == 0; };  // never sleeps
  std::vector<std::pair<int, int>> picks;
  std::vector<std::int64_t> last_min(8, std::numeric_limits<std::int64_t>::min());
  Tsc now = 0;
  auto settle = [&] {
    for (int c = 0; c < 8; ++c)
      if (s.need_resched(c) || (s.curr(c) == nullptr && s.rq(c).nr_running() > 0)) {
        SchedEntity* n = s.pick_next(c, now);
        picks.emplace_back(c, n == nullptr ? -1 : n->id);
      }
  };
  auto invariants = [&] {
    std::map<const SchedEntity*, int> seen;
    for (int c = 0; c < 8; ++c) {
      const CfsRq& rq = s.rq(c);
      std::uint64_t load = 0;
      unsigned nr = 0;
      auto count = [&](const SchedEntity* e) {
        ++seen[e];
        REQUIRE(e->on_rq);
        REQUIRE(e->cpu == c);
        REQUIRE(e->allowed.test(c));
        load += e->weight;
        ++nr;
        // Normalisation bugs show up as vruntimes seconds away from the
        // queue's (min_vruntime grows by ~1 s per simulated second); a nice 5
        // entity running 30 ms between two sparse ticks is 100 ms ahead legitimately.
        INFO("entity " << e->id << " nice " << e->nice << " vruntime " << e->vruntime << " min "
                       << rq.min_vruntime() << " at " << now);
        REQUIRE(std::abs(e->vruntime - rq.min_vruntime()) < static_cast<std::int64_t>(400 * kMs));
      };
      for (const SchedEntity* e : rq.queued()) count(e);
      if (rq.curr() != nullptr) {
        REQUIRE(rq.curr()->on_rq);  // settled: a blocked curr has been switched out
        count(rq.curr());
      }
      REQUIRE(rq.nr_running() == nr);
      REQUIRE(rq.load() == load);
      REQUIRE(rq.min_vruntime() >= last_min[static_cast<std::size_t>(c)]);
      last_min[static_cast<std::size_t>(c)] = rq.min_vruntime();
      if (rq.nr_running() > 0) REQUIRE(rq.curr() != nullptr);  // work-conserving locally
    }
    for (const auto& e : es) {
      const auto it = seen.find(&e);
      REQUIRE((it == seen.end() ? 0 : it->second) == (e.on_rq ? 1 : 0));  // at most one rq
    }
  };
  // Everything starts runnable at t=0 where select_task_rq puts it.
  for (auto& e : es) {
    s.enqueue(s.select_task_rq(e, -1, static_cast<int>(rng() % 8)), e, 0, kEnqueueNone);
    settle();
  }
  for (int step = 0; step < 20000; ++step) {
    now += rng() % (2 * kMs);
    const int cpu = static_cast<int>(rng() % 8);
    switch (rng() % 4) {
      case 0:
      case 1:  // a tick (or slice timer) on one pCPU, kicking the nohz balancer
        s.tick(cpu, now);
        if (rng() % 4 == 0) s.nohz_idle_balance(cpu, now);
        break;
      case 2: {  // the current entity there blocks, unless it is always runnable
        SchedEntity* c = s.curr(cpu);
        if (c != nullptr && !always(c->id)) s.dequeue(cpu, *c, now, kDequeueSleep);
        break;
      }
      case 3: {  // a sleeping entity wakes, woken from a random pCPU
        SchedEntity& e = es[rng() % kN];
        if (e.on_rq) break;
        const int target = s.select_task_rq(e, e.cpu, cpu);
        REQUIRE(e.allowed.test(target));
        s.enqueue(target, e, now, kEnqueueWakeup);
        s.wakeup_preempts(target, e, now);
        break;
      }
    }
    settle();
    if (check) invariants();
  }
  if (check) {
    // Always-runnable entities: every cycle was either run or waited.
    for (int c = 0; c < 8; ++c) s.update_curr(c, now);
    for (const auto& e : es)
      if (always(e.id)) {
        INFO("entity " << e.id);
        CHECK(e.sum_exec_runtime + e.run_delay_at(now) == now);
      }
    CHECK(s.counters().migrations > 0);
    CHECK(s.counters().wakeup_preemptions > 0);
    CHECK(s.counters().tick_preemptions > 0);
    CHECK(s.counters().idle_balance_pulls > 0);
  }
  return picks;
}

}  // namespace

TEST_CASE("sched: invariants hold under random load on 8 pCPUs", "[sched]") {
  random_host(1, true);
  random_host(7, true);
}

TEST_CASE("sched: the same operations give the same schedule", "[sched]") {
  const auto a = random_host(3, false);
  const auto b = random_host(3, false);
  CHECK(a.size() > 1000);
  CHECK(a == b);
  CHECK(a != random_host(4, false));
  // Equal vruntimes are ordered by id, whatever the enqueue order.
  const Topology topo(1, 1, 1);
  HostScheduler s(topo, unscaled());
  SchedEntity x(5);
  SchedEntity y(2);
  x.fresh = y.fresh = false;
  s.enqueue(0, x, 0, kEnqueueWakeup);
  s.enqueue(0, y, 0, kEnqueueWakeup);
  CHECK(s.pick_next(0, 0) == &y);
}

TEST_CASE("sched: 8 CPU-bound entities on 4 pCPUs get half a pCPU each, a slice at a time",
          "[sched]") {
  // The overcommit case with the default host.sched_* values: 4 pCPUs scale
  // the latency by 1 + ilog2(4) = 3, so 18 ms periods and 9 ms slices for two.
  const ParamSet p(model_params());
  const Topology topo(1, 4, 1);
  HostScheduler s(topo, HostScheduler::tunables_from(p, kGhz, topo.cpus()));
  REQUIRE(s.tunables().latency == 18 * kMs);
  std::deque<SchedEntity> vcpus;
  for (int i = 0; i < 8; ++i) {
    vcpus.emplace_back(i);
    s.enqueue(s.select_task_rq(vcpus.back(), -1, -1), vcpus.back(), 0, kEnqueueNone);
  }
  std::vector<Tsc> next(4);
  for (int c = 0; c < 4; ++c) {
    REQUIRE(s.pick_next(c, 0) != nullptr);
    next[static_cast<std::size_t>(c)] = s.slice_left(c, 0);
  }
  // One timed event per pCPU at the end of the current slice (HRTICK-like).
  const Tsc horizon = 10000 * kMs;
  for (;;) {
    const auto it = std::min_element(next.begin(), next.end());
    const Tsc now = *it;
    if (now >= horizon) break;
    const int cpu = static_cast<int>(it - next.begin());
    REQUIRE(s.tick(cpu, now));
    s.pick_next(cpu, now);
    *it = now + s.slice_left(cpu, now);
  }
  for (int c = 0; c < 4; ++c) s.update_curr(c, horizon);
  for (const auto& v : vcpus) {
    INFO("vcpu " << v.id);
    CHECK(static_cast<double>(v.sum_exec_runtime) ==
          Approx(static_cast<double>(horizon) / 2).epsilon(0.01));
    CHECK(v.sum_exec_runtime + v.run_delay_at(horizon) == horizon);
  }
  // A switch every 9 ms on each pCPU: ~111 per pCPU-second.
  const double per_cpu_s = static_cast<double>(s.counters().context_switches) / 4 / 10;
  CHECK(per_cpu_s == Approx(1000.0 / 9).epsilon(0.01));
  CHECK(s.counters().migrations == 0);
}

// yield_to(p, preempt = 1) of v4.16 (kernel/sched/core.c) with
// yield_to_task_fair(): -ESRCH when both queues hold one task, 0 for a
// running or sleeping target, else the target is its queue's next buddy,
// the yielder the skip buddy, and a remote target's pCPU is rescheduled.
TEST_CASE("sched: yield_to fails with -ESRCH or 0, else sets the buddies and reschedules",
          "[sched]") {
  const Topology topo(1, 2, 1);
  HostScheduler s(topo, unscaled());
  SchedEntity a(1);
  SchedEntity b(2);
  SchedEntity c(3);
  SchedEntity d(4);
  s.enqueue(0, a, 0, kEnqueueNone);
  s.enqueue(1, b, 0, kEnqueueNone);
  REQUIRE(s.pick_next(0, 0) == &a);
  REQUIRE(s.pick_next(1, 0) == &b);
  // One task on each queue: "absolutely no point in yielding".
  CHECK(s.yield_to(0, b, kMs) == HostScheduler::kYieldToEsrch);
  CHECK_FALSE(s.need_resched(0));
  s.enqueue(0, c, kMs, kEnqueueNone);
  // b is running on pCPU 1: task_running() -> 0.
  CHECK(s.yield_to(0, b, kMs) == HostScheduler::kYieldToFailed);
  CHECK_FALSE(s.need_resched(0));
  CHECK_FALSE(s.need_resched(1));
  // d waits on pCPU 1 behind b: yielded; pCPU 1 must reschedule.
  s.enqueue(1, d, kMs, kEnqueueNone);
  CHECK(s.yield_to(0, d, 2 * kMs) == HostScheduler::kYieldToDone);
  CHECK(s.rq(1).next_buddy() == &d);
  CHECK(s.rq(0).skip_buddy() == &a);
  CHECK(s.need_resched(0));
  CHECK(s.need_resched(1));
  // A sleeping target (not on a queue) -> 0.
  s.dequeue(1, d, 2 * kMs, kDequeueSleep);
  CHECK(s.rq(1).next_buddy() == nullptr);  // clear_buddies() on dequeue
  CHECK(s.yield_to(0, d, 2 * kMs) == HostScheduler::kYieldToFailed);
}

// The remote pCPU's schedule() after yield_to's resched_curr(): the boosted
// target runs only if it is within wakeup_gran of the leftmost; otherwise
// the leftmost (maybe the preempted current) runs and the buddy waits.
TEST_CASE("sched: a remote yield_to target runs next only within wakeup_gran of the leftmost",
          "[sched]") {
  const auto t = unscaled();
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  for (bool far : {false, true}) {
    INFO((far ? "target far right" : "target near"));
    const Topology topo(1, 2, 1);
    HostScheduler s(topo, t);
    SchedEntity y(1);
    SchedEntity z(2);
    SchedEntity cur(3);
    SchedEntity target(4);
    s.enqueue(0, y, 0, kEnqueueNone);
    s.enqueue(0, z, 0, kEnqueueNone);
    REQUIRE(s.pick_next(0, 0) != nullptr);  // the yielder has company: no -ESRCH
    // Woken with chosen vruntimes: cur runs on pCPU 1, the target waits
    // just within or just beyond wakeup_gran right of it.
    cur.fresh = target.fresh = false;
    cur.vruntime = 10 * gran;
    target.vruntime = 11 * gran + (far ? 1000 : -1000);
    s.enqueue(1, cur, 0, kEnqueueWakeup);
    REQUIRE(s.pick_next(1, 0) == &cur);
    s.enqueue(1, target, 0, kEnqueueWakeup);
    REQUIRE(s.yield_to(0, target, 0) == HostScheduler::kYieldToDone);
    REQUIRE(s.need_resched(1));
    SchedEntity* next = s.pick_next(1, 0);
    CHECK(next == (far ? &cur : &target));
    CHECK(s.counters().next_buddy_picks == (far ? 0u : 1u));
    CHECK(s.counters().next_buddy_refused == (far ? 1u : 0u));
  }
}

// The yielder's own schedule() after yield_to() (v4.16: schedule() only
// when it yielded): pick_next_entity() passes over the skip buddy only if
// the second entity is within wakeup_gran of it; otherwise the yielder runs
// on (counted as a re-pick), and its PLE window keeps growing (no sched_in).
TEST_CASE("sched: after yield_to the local partner runs only within wakeup_gran of the yielder",
          "[sched]") {
  const auto t = unscaled();
  const auto gran = static_cast<std::int64_t>(t.wakeup_granularity);
  for (bool far : {false, true}) {
    INFO((far ? "partner far right" : "partner near"));
    const Topology topo(1, 2, 1);
    HostScheduler s(topo, t);
    SchedEntity y(1);
    SchedEntity partner(2);
    SchedEntity cur(3);
    SchedEntity target(4);
    y.fresh = partner.fresh = false;
    y.vruntime = 10 * gran;
    partner.vruntime = 11 * gran + (far ? 1000 : -1000);
    s.enqueue(0, y, 0, kEnqueueWakeup);
    REQUIRE(s.pick_next(0, 0) == &y);
    s.enqueue(0, partner, 0, kEnqueueWakeup);
    s.enqueue(1, cur, 0, kEnqueueNone);
    REQUIRE(s.pick_next(1, 0) == &cur);
    s.enqueue(1, target, 0, kEnqueueNone);
    REQUIRE(s.yield_to(0, target, 0) == HostScheduler::kYieldToDone);
    REQUIRE(s.need_resched(0));
    CHECK(s.pick_next(0, 0) == (far ? &y : &partner));
    CHECK(s.counters().yield_switches == (far ? 0u : 1u));
    CHECK(s.counters().yield_repicks == (far ? 1u : 0u));
    // A plain pick without a fresh yield counts neither.
    s.pick_next(1, 0);
    CHECK(s.counters().yield_switches + s.counters().yield_repicks == 1u);
  }
}

namespace {

CfsTunables balancing() {
  CfsTunables t = unscaled();
  t.ms = kMs;
  t.load_balance = true;
  return t;
}

// n CPU-bound entities queued on `cpu`, one of them running, all cache cold.
void crowd(HostScheduler& s, std::deque<SchedEntity>& pool, int cpu, int n) {
  for (int i = 0; i < n; ++i) {
    pool.emplace_back(100 + static_cast<int>(pool.size()));
    pool.back().allowed = CpuMask::all();
    s.enqueue(cpu, pool.back(), 0, kEnqueueNone);
  }
  s.pick_next(cpu, 0);
}

}  // namespace

// rebalance_domains() -> load_balance() (v4.16, simplified): a pCPU with
// one task pulls from a sibling with three (fix_small_imbalance() moves one
// task); 3 against 2 also moves one (fix_small_imbalance() only asks that
// the busiest lead by one task: the kernel swaps the odd task back and
// forth); within imbalance_pct nothing moves; a level is balanced again only
// after its interval (sd_weight ms x 32 when busy).
TEST_CASE("sched: periodic load balancing pulls one task from 3 to 1 and swaps 3 against 2",
          "[sched]") {
  const Topology topo(1, 1, 2);  // one core, two threads: the SMT level only
  {
    HostScheduler s(topo, balancing());
    std::deque<SchedEntity> pool;
    crowd(s, pool, 0, 3);
    crowd(s, pool, 1, 1);
    const Tsc t = 10 * kMs;  // everything cache cold
    const auto pulled = s.rebalance_domains(1, t);
    REQUIRE(pulled.size() == 1);
    CHECK(pulled[0]->cpu == 1);
    CHECK(s.rq(0).nr_running() == 2);
    CHECK(s.rq(1).nr_running() == 2);
    CHECK(s.counters().migrations == 1);
    // Balanced now; and the next try is due only after 2 ms x 32.
    crowd(s, pool, 0, 2);
    CHECK(s.rebalance_domains(1, t + 63 * kMs).empty());
    CHECK(s.rebalance_domains(1, t + 64 * kMs).size() == 1);  // 4 against 2: one evens it
  }
  {
    HostScheduler s(topo, balancing());
    std::deque<SchedEntity> pool;
    crowd(s, pool, 0, 3);
    crowd(s, pool, 1, 2);
    CHECK(s.rebalance_domains(1, 10 * kMs).size() == 1);
    CHECK(s.rq(0).nr_running() == 2);
    CHECK(s.rq(1).nr_running() == 3);
  }
  {
    // 11 against 10 on one pCPU each: 100 x 11 <= 110 x 10, balanced.
    HostScheduler s(topo, balancing());
    std::deque<SchedEntity> pool;
    crowd(s, pool, 0, 11);
    crowd(s, pool, 1, 10);
    CHECK(s.rebalance_domains(1, 10 * kMs).empty());
    CHECK(s.counters().migrations == 0);
  }
  {
    // Cache-hot tasks (ran within sched_migration_cost) stay; off = no balancing.
    HostScheduler s(topo, balancing());
    std::deque<SchedEntity> pool;
    crowd(s, pool, 0, 3);
    crowd(s, pool, 1, 1);
    for (SchedEntity* e : s.rq(0).queued()) {  // just ran
      e->exec_start = 10 * kMs;
      e->pcount = 1;
    }
    CHECK(s.rebalance_domains(1, 10 * kMs + kMs / 4).empty());
    HostScheduler off(topo, unscaled());
    std::deque<SchedEntity> pool2;
    crowd(off, pool2, 0, 3);
    crowd(off, pool2, 1, 1);
    CHECK(off.rebalance_domains(1, 10 * kMs).empty());
  }
}

// sd->balance_interval (v4.16 load_balance()): a balanced level doubles its
// interval up to sd->max_interval (2 x sd_weight ms), an imbalance resets it
// to sd->min_interval (sd_weight ms); busy pCPUs wait 32 times as long.
TEST_CASE("sched: a balanced level is looked at half as often, an unbalanced one at once again",
          "[sched]") {
  const Topology topo(1, 1, 2);  // the SMT level only: sd_weight 2
  HostScheduler s(topo, balancing());
  std::deque<SchedEntity> pool;
  crowd(s, pool, 0, 2);
  crowd(s, pool, 1, 2);
  const Tsc t = 10 * kMs;
  CHECK(s.rebalance_domains(1, t).empty());  // balanced: 2 ms -> 4 ms
  const auto runs = [&] { return s.counters().load_balance_runs; };
  CHECK(runs() == 1);
  s.rebalance_domains(1, t + 127 * kMs);  // 4 ms x 32 = 128 ms
  CHECK(runs() == 1);
  s.rebalance_domains(1, t + 128 * kMs);  // balanced again: stays at 2 x 2 ms
  CHECK(runs() == 2);
  s.rebalance_domains(1, t + 255 * kMs);
  CHECK(runs() == 2);
  crowd(s, pool, 0, 2);  // 4 against 2: pulls one and resets to 2 ms
  CHECK(s.rebalance_domains(1, t + 256 * kMs).size() == 1);
  s.rebalance_domains(1, t + 319 * kMs);
  CHECK(runs() == 3);
  s.rebalance_domains(1, t + 320 * kMs);  // 2 ms x 32
  CHECK(runs() == 4);
}

TEST_CASE(
    "sched: the host tick by context: CONFIG_HZ (host.hz) on a stock pCPU, the 1 Hz nohz_full "
    "residual on a pCPU in host.isolcpus, host.tick_hz on every pCPU when set",
    "[sched]") {
  ParamSet p(model_params());
  CHECK(p.i("host.tick_hz") == -1);  // by context unless a scenario says
  CHECK(Host::tick_hz_of(p, 2) == 250);
  p.set_text("host.isolcpus", "[2, 3]", "test");
  CHECK(Host::tick_hz_of(p, 2) == 1);
  CHECK(Host::tick_hz_of(p, 3) == 1);
  CHECK(Host::tick_hz_of(p, 0) == 250);  // the housekeeping pCPU
  p.set_text("host.hz", "1000", "test");
  CHECK(Host::tick_hz_of(p, 0) == 1000);
  p.set_text("host.tick_hz", "0", "test");
  CHECK(Host::tick_hz_of(p, 0) == 0);
  CHECK(Host::tick_hz_of(p, 2) == 0);
  p.set_text("host.tick_hz", "100", "test");
  CHECK(Host::tick_hz_of(p, 2) == 100);
}

TEST_CASE(
    "sched: host.isolation says what host.isolcpus does: nohz_full pCPUs keep the 1 Hz "
    "residual tick, isolcpus= alone and none keep CONFIG_HZ "
    "on them",
    "[sched]") {
  ParamSet p(model_params());
  p.set_text("host.isolcpus", "[2, 3]", "test");
  CHECK(p.s("host.isolation") == "nohz_full");  // what a host.isolcpus list meant before
  CHECK(Host::nohz_full_cpus(p) == std::vector<std::int64_t>{2, 3});
  CHECK(Host::tick_hz_of(p, 2) == 1);
  p.set_text("host.isolation", "isolcpus", "test");
  CHECK(Host::nohz_full_cpus(p).empty());
  CHECK(Host::tick_hz_of(p, 2) == 250);
  p.set_text("host.isolation", "none", "test");
  CHECK(Host::tick_hz_of(p, 3) == 250);
  CHECK(Host::nohz_full_cpus(p).empty());
}
