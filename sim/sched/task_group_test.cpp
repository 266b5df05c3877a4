// Unit tests for the host scheduler's group scheduling (sim/sched/host_sched.h,
// CfsTunables::groups): task groups under the root as v4.16's fair.c runs
// them, with the ideal calc_group_shares() for a group's per-pCPU weight.
// The clock runs at 1 GHz: one cycle is one nanosecond.
#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "sim/sched/host_sched.h"

using namespace kvmsim;

namespace {

const TscClock kGhz{1000000};
constexpr Tsc kMs = 1000000;

CfsTunables grouped(int ncpus) {  // the v5.x defaults (log scaling), groups on
  CfsTunables t =
      CfsTunables::from_ns(kGhz, 6000000, 750000, 1000000, 500000, TunableScaling::Log, ncpus);
  t.groups = true;
  t.nice0 = kNice0Load << 10;
  return t;
}

// Runs every pCPU's CPU-bound entities for `horizon` under a 1 ms tick
// (CONFIG_HZ=1000, the pCPUs' ticks aligned): tick, then pick_next if
// preempted. Returns the ticks that preempted.
std::uint64_t run_cpu_bound(HostScheduler& s, Tsc horizon) {
  const int n = s.cpus();
  std::uint64_t preempted = 0;
  for (int c = 0; c < n; ++c) s.pick_next(c, 0);
  for (Tsc now = kMs; now < horizon; now += kMs)
    for (int c = 0; c < n; ++c)
      if (s.tick(c, now)) {
        ++preempted;
        s.pick_next(c, now);
      }
  for (int c = 0; c < n; ++c) s.update_curr(c, horizon);
  return preempted;
}

double share(const SchedEntity& e, Tsc horizon) {
  return static_cast<double>(e.sum_exec_runtime) / static_cast<double>(horizon);
}

}  // namespace

TEST_CASE(
    "groups: a VM of 2 threads beside a VM of 16 on 8 pCPUs gets 80% of its two pCPUs, where "
    "flat scheduling gives a third",
    "[sched][groups]") {
  // Group A: 16 CPU-bound threads pinned 2 per pCPU, so A weighs 1024 x 2/16
  // = 128 on each pCPU; group B: 2 threads pinned to pCPUs 0 and 1, 512 on
  // each. On pCPUs 0 and 1 B's thread gets 512 / (512 + 128) = 0.8 and A's
  // two get 0.1 each; elsewhere A's threads get half each.
  const Topology topo(1, 8, 1);
  HostScheduler s(topo, grouped(8));
  TaskGroup* a = s.create_group("A", 1024);
  TaskGroup* b = s.create_group("B", 1024);
  std::deque<SchedEntity> as;
  std::deque<SchedEntity> bs;
  for (int i = 0; i < 16; ++i) {
    as.emplace_back(i, 0, CpuMask::only(i / 2));
    s.attach(as.back(), a);
    s.enqueue(i / 2, as.back(), 0, kEnqueueNone);
  }
  for (int i = 0; i < 2; ++i) {
    bs.emplace_back(100 + i, 0, CpuMask::only(i));
    s.attach(bs.back(), b);
    s.enqueue(i, bs.back(), 0, kEnqueueNone);
  }
  CHECK(s.nr_running(0) == 3);
  CHECK(a->load_sum == (std::uint64_t{16} << 20));
  const Tsc horizon = 10000 * kMs;
  run_cpu_bound(s, horizon);
  // Each pCPU's group entity is reweighted by that pCPU's own enqueues and
  // ticks (update_cfs_group() is local), so after a tick they are exact.
  CHECK(a->se[0]->weight == (std::uint32_t{128} << 10));
  CHECK(a->se[5]->weight == (std::uint32_t{128} << 10));
  CHECK(b->se[0]->weight == (std::uint32_t{512} << 10));
  for (const auto& e : bs) CHECK(share(e, horizon) == Approx(0.8).margin(0.01));
  for (const auto& e : as) {
    INFO("A thread " << e.id);
    CHECK(share(e, horizon) == Approx(e.id < 4 ? 0.1 : 0.5).margin(0.01));
  }
  // Within a pCPU every thread ran or waited all the time.
  for (const auto& e : as) CHECK(e.sum_exec_runtime + e.run_delay_at(horizon) == horizon);
}

TEST_CASE("groups: one group for all threads shares pCPUs as flat scheduling does",
          "[sched][groups]") {
  // 8 CPU-bound threads of one group on 4 pCPUs: half a pCPU each.
  const Topology topo(1, 4, 1);
  HostScheduler s(topo, grouped(4));
  TaskGroup* g = s.create_group("machine", 1024);
  std::deque<SchedEntity> es;
  for (int i = 0; i < 8; ++i) {
    es.emplace_back(i, 0, CpuMask::only(i % 4));
    s.attach(es.back(), g);
    s.enqueue(i % 4, es.back(), 0, kEnqueueNone);
  }
  const Tsc horizon = 4000 * kMs;
  run_cpu_bound(s, horizon);
  for (const auto& e : es) CHECK(share(e, horizon) == Approx(0.5).margin(0.01));
  // The group's entity stays current on each pCPU: only the task level
  // switches, and the root never sees a slice end.
  for (int c = 0; c < 4; ++c) CHECK(s.rq(c).curr() == g->se[static_cast<std::size_t>(c)].get());
}

TEST_CASE(
    "groups: a host task in the root against a VM's group of 4 threads on one pCPU gets half "
    "of it, not a fifth",
    "[sched][groups]") {
  const Topology topo(1, 1, 1);
  HostScheduler s(topo, grouped(1));
  TaskGroup* vm = s.create_group("vm0", 1024);
  std::deque<SchedEntity> vcpus;
  for (int i = 0; i < 4; ++i) {
    vcpus.emplace_back(i);
    s.attach(vcpus.back(), vm);
    s.enqueue(0, vcpus.back(), 0, kEnqueueNone);
  }
  SchedEntity hog(10);
  s.enqueue(0, hog, 0, kEnqueueNone);
  CHECK(hog.weight == kNice0Load << 10);  // scaled on its first enqueue
  const Tsc horizon = 2000 * kMs;
  run_cpu_bound(s, horizon);
  CHECK(share(hog, horizon) == Approx(0.5).margin(0.01));
  for (const auto& v : vcpus) CHECK(share(v, horizon) == Approx(0.125).margin(0.01));
}

TEST_CASE(
    "groups: yield_to makes the target the next buddy on every level and the yielder the skip "
    "buddy",
    "[sched][groups]") {
  const Topology topo(1, 1, 1);
  HostScheduler s(topo, grouped(1));
  TaskGroup* vm0 = s.create_group("vm0", 1024);
  TaskGroup* vm1 = s.create_group("vm1", 1024);
  SchedEntity a(1);
  SchedEntity b(2);
  SchedEntity c(3);
  s.attach(a, vm0);
  s.attach(b, vm0);
  s.attach(c, vm1);
  for (SchedEntity* e : {&a, &b, &c}) {  // woken sleepers: all placed at vruntime 0
    e->fresh = false;
    s.enqueue(0, *e, 0, kEnqueueWakeup);
  }
  SchedEntity* run = s.pick_next(0, 0);
  REQUIRE(run != nullptr);
  // vm0's thread that is not the leftmost of its queue (a wins the tie by id).
  SchedEntity* target = run == &b ? &a : &b;
  CHECK(s.yield_to(0, *target, kMs) == HostScheduler::kYieldToDone);
  CHECK(s.need_resched(0));
  CHECK(target->cfs_rq->next_buddy() == target);
  CHECK(s.rq(0).next_buddy() == target->parent);
  CHECK(run->cfs_rq->skip_buddy() == run);
  // The buddy is within wakeup_gran (all started together): it runs next.
  CHECK(s.pick_next(0, kMs) == target);
  // A running target or a lone pair gives 0 / -ESRCH as without groups.
  CHECK(s.yield_to(0, *target, kMs) == HostScheduler::kYieldToFailed);
}

TEST_CASE(
    "groups: loads, group weights, task counts and the running path stay consistent under "
    "random sleeps, wake-ups and balancing",
    "[sched][groups]") {
  const Topology topo(1, 4, 2);
  CfsTunables t = grouped(8);
  t.load_balance = true;
  t.ms = kMs;
  HostScheduler s(topo, t);
  std::vector<TaskGroup*> gs{s.create_group("vm0", 1024), s.create_group("vm1", 2048),
                             s.create_group("hogs", 1024)};
  std::mt19937 rng(5);
  std::deque<SchedEntity> es;
  for (int i = 0; i < 24; ++i) {
    es.emplace_back(i, static_cast<int>(rng() % 5) - 2);
    if (i % 4 != 3) s.attach(es.back(), gs[static_cast<std::size_t>(i % 4)]);
    s.enqueue(s.select_task_rq(es.back(), -1, -1), es.back(), 0, kEnqueueNone);
  }
  Tsc now = 0;
  auto settle = [&] {
    for (int c = 0; c < 8; ++c)
      if (s.need_resched(c) || (s.curr(c) == nullptr && s.nr_running(c) > 0)) s.pick_next(c, now);
  };
  auto check = [&] {
    std::map<int, unsigned> tasks;
    for (const auto& e : es)
      if (e.on_rq) ++tasks[e.cpu];
    for (int c = 0; c < 8; ++c) {
      INFO("cpu " << c << " at " << now);
      CHECK(s.nr_running(c) == tasks[c]);
      std::uint64_t root = 0;
      for (const auto& e : es)
        if (e.on_rq && e.cpu == c && e.tg == nullptr) root += e.weight;
      for (const TaskGroup* g : gs) {
        const SchedEntity& ge = *g->se[static_cast<std::size_t>(c)];
        const CfsRq& q = *g->rq[static_cast<std::size_t>(c)];
        std::uint64_t load = 0;
        for (const auto& e : es)
          if (e.on_rq && e.cpu == c && e.tg == g) load += e.weight;
        CHECK(q.load() == load);
        CHECK(ge.on_rq == (q.nr_running() > 0));
        if (ge.on_rq) root += ge.weight;
        CHECK(ge.weight >= fair::kMinShares);
        CHECK(ge.weight <= g->shares);
      }
      CHECK(s.rq(c).load() == root);
      // The running path ends in a task of this pCPU.
      if (const SchedEntity* cur = s.curr(c); cur != nullptr) {
        CHECK(cur->my_q == nullptr);
        CHECK(cur->cpu == c);
      }
    }
    for (const TaskGroup* g : gs) {
      std::uint64_t sum = 0;
      for (const auto& q : g->rq) sum += q->load();
      CHECK(g->load_sum == sum);
    }
  };
  settle();
  for (int step = 0; step < 4000; ++step) {
    now += (rng() % 200) * 1000;
    auto& e = es[rng() % es.size()];
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 && e.on_rq) {
      s.dequeue(e.cpu, e, now, kDequeueSleep);
    } else if (op == 1 && !e.on_rq) {
      const int cpu = s.select_task_rq(e, e.cpu, static_cast<int>(rng() % 8));
      s.enqueue(cpu, e, now, kEnqueueWakeup);
      s.wakeup_preempts(cpu, e, now);
    } else {
      const int cpu = static_cast<int>(rng() % 8);
      if (s.tick(cpu, now)) s.pick_next(cpu, now);
      s.rebalance_domains(cpu, now);
    }
    settle();
    check();
  }
}

TEST_CASE(
    "groups: yield_to gives -ESRCH by tasks, not entities: a pCPU whose one group entity holds "
    "two tasks does not count as alone",
    "[sched][groups]") {
  const Topology topo(1, 2, 1);
  HostScheduler s(topo, grouped(2));
  TaskGroup* vm = s.create_group("vm0", 1024);
  SchedEntity a(1, 0, CpuMask::only(0));
  SchedEntity b(2, 0, CpuMask::only(0));
  SchedEntity c(3, 0, CpuMask::only(1));
  for (SchedEntity* e : {&a, &b, &c}) {
    s.attach(*e, vm);
    s.enqueue(e == &c ? 1 : 0, *e, 0, kEnqueueNone);
  }
  s.pick_next(0, 0);
  s.pick_next(1, 0);
  REQUIRE(s.rq(0).nr_running() == 1);  // the group's entity
  CHECK(s.nr_running(0) == 2);
  // c runs on pCPU 1: not -ESRCH (pCPU 0 has two tasks), but 0 (running).
  CHECK(s.yield_to(0, c, kMs) == HostScheduler::kYieldToFailed);
  // Alone on both sides: -ESRCH.
  SchedEntity* cur = s.curr(0);
  s.dequeue(0, *(cur == &a ? &b : &a), kMs, kDequeueSleep);
  CHECK(s.yield_to(0, c, kMs) == HostScheduler::kYieldToEsrch);
}

TEST_CASE(
    "groups: a wake-up is judged against the running task's group on the root: the woken "
    "task's group entity preempts and becomes the root's next buddy, no last buddy is set",
    "[sched][groups]") {
  const Topology topo(1, 1, 1);
  HostScheduler s(topo, grouped(1));
  TaskGroup* ga = s.create_group("A", 1024);
  TaskGroup* gb = s.create_group("B", 1024);
  SchedEntity a1(1);
  SchedEntity a2(2);
  SchedEntity b(3);
  s.attach(a1, ga);
  s.attach(a2, ga);
  s.attach(b, gb);
  s.enqueue(0, a1, 0, kEnqueueNone);
  s.enqueue(0, a2, 0, kEnqueueNone);
  s.pick_next(0, 0);
  // A runs alone for 100 ms; b, asleep since 0, wakes: B's entity gets the
  // root's sleeper credit and leads A's by far more than wakeup_gran.
  run_cpu_bound(s, 100 * kMs);
  b.fresh = false;
  s.enqueue(0, b, 100 * kMs, kEnqueueWakeup);
  CHECK(s.wakeup_preempts(0, b, 100 * kMs));
  CHECK(s.rq(0).next_buddy() == b.parent);
  CHECK(s.rq(0).last_buddy() == nullptr);
  CHECK(b.cfs_rq->next_buddy() == nullptr);  // set from the matched level up only
  CHECK(s.pick_next(0, 100 * kMs) == &b);
  // The pick cleared the buddy it followed.
  CHECK(s.rq(0).next_buddy() == nullptr);
}

TEST_CASE("groups: sched_yield makes the yielder the skip buddy on its queue and on the root",
          "[sched][groups]") {
  const Topology topo(1, 1, 1);
  HostScheduler s(topo, grouped(1));
  TaskGroup* ga = s.create_group("A", 1024);
  TaskGroup* gb = s.create_group("B", 1024);
  SchedEntity a1(1);
  SchedEntity a2(2);
  SchedEntity b(3);
  s.attach(a1, ga);
  s.attach(a2, ga);
  s.attach(b, gb);
  for (SchedEntity* e : {&a1, &a2, &b}) s.enqueue(0, *e, 0, kEnqueueNone);
  SchedEntity* run = s.pick_next(0, 0);
  REQUIRE(run != nullptr);
  s.yield(0, kMs);
  CHECK(s.need_resched(0));
  CHECK(run->cfs_rq->skip_buddy() == run);
  if (run->parent != nullptr) CHECK(s.rq(0).skip_buddy() == run->parent);
}
