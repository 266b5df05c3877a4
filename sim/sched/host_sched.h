// The host scheduler across pCPUs: one CfsRq per pCPU (sim/sched/cfs.h),
// wake-up placement (select_task_rq_fair / select_idle_sibling) and new-idle
// balancing over the Topology's domains, as kernel/sched/fair.c of v4.x-v5.x
// does it (EEVDF, v6.6+, is out of scope). Plain C++, time in host TSC cycles.
//
// The pCPU model owns the threads and the events; this class only decides.
// Typical calls from a pCPU:
//   new task:  cpu = select_task_rq(se, -1, -1); enqueue(cpu, se, now, kEnqueueNone);
//              if (wakeup_preempts(cpu, se, now)) reschedule cpu
//   wake-up:   cpu = select_task_rq(se, se.cpu, waker); enqueue(cpu, se, now, kEnqueueWakeup);
//              if (wakeup_preempts(cpu, se, now)) reschedule cpu (IPI if remote)
//   block:     dequeue(cpu, se, now, kDequeueSleep); next = pick_next(cpu, now)
//   slice end: if (tick(cpu, now)) next = pick_next(cpu, now);
//              for (auto [c, e] : nohz_idle_balance(cpu, now)) reschedule c
//   resched:   next = pick_next(cpu, now)   // pulls work by idle balance if empty
// and after each of them re-arm the slice timer with slice_left(cpu, now)
// (without task groups; with them use the periodic tick, see slice_left()).
//
// Left out: PELT and balance_interval growth in the periodic load
// balancing (rebalance_domains(), optional: host.sched_load_balance),
// nohz_idle_balance() is a simplified stand-in for idle pCPUs, wake_affine_weight (WA_WEIGHT) and
// wake_wide, the SIS_PROP scan limit and avg_idle cut-offs of select_idle_cpu/newidle_balance, NUMA
// balancing, nested task groups, PELT (load is the sum of weights; a group's
// entity weighs the ideal calc_group_shares()).
//
// Group scheduling (CfsTunables::groups, from vm.cgroup / host.hog.cgroup):
// a TaskGroup under the root has a queue and an entity per pCPU, as
// libvirt's cgroup per VM or an autogroup per QEMU session gives. Then, as
// v4.16's fair.c: enqueue and dequeue walk up (a group's entity is queued
// while its queue has a task, reweighted for this pCPU at each change and
// tick, and a task sleeping beside others makes its group's entity the next
// buddy); pick goes down from the root, ranking each level's current entity
// with the queued ones, and puts back / sets only the levels that change
// (a group keeps its root slice while its tasks switch); the tick checks
// every level; a wake-up is compared with the current task on the level
// where their ancestors meet; yield_to's next and yield's skip buddies are
// set on every level; balancing counts tasks and moves a task's
// hierarchical load (task_h_load).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/sched/cfs.h"
#include "sim/sched/topology.h"

namespace kvmsim {

class ParamSet;

// struct task_group, one level under the root.
struct TaskGroup {
  int id = 0;
  std::string name;
  std::uint64_t shares = 0;                      // tg->shares, scaled
  std::vector<std::unique_ptr<CfsRq>> rq;        // tg->cfs_rq[cpu]
  std::vector<std::unique_ptr<SchedEntity>> se;  // tg->se[cpu]
  std::uint64_t load_sum = 0;                    // sum of the rq loads
};

// Which threads the host set-up puts in task groups: a cgroup (vm.cgroup,
// host.hog.cgroup) or, for threads a cgroup leaves in the root, their
// session's autogroup (host.sched_autogroup; kernel/sched/autogroup.c:
// task_wants_autogroup() only for tasks of the root task group).
struct GroupLayout {
  std::string vms = "none";        // none | per_vm | shared
  bool hogs_own = false;           // the hogs in a group of their own
  std::uint64_t vm_shares = 1024;  // a VM group's cpu.shares (an autogroup's: nice 0)
  [[nodiscard]] bool any() const { return vms != "none" || hogs_own; }
  static GroupLayout from(const ParamSet& p);
};

struct SchedCounters {
  std::uint64_t context_switches = 0;    // rq->nr_switches: pick_next() chose another entity
                                         // (idle counts as one)
  std::uint64_t migrations = 0;          // an entity enqueued on another pCPU than its last
  std::uint64_t wakeups = 0;             // enqueue with kEnqueueWakeup
  std::uint64_t wakeup_preemptions = 0;  // wakeup_preempts() set need_resched on a busy pCPU
  std::uint64_t tick_preemptions = 0;    // tick() set need_resched
  std::uint64_t idle_balance_pulls = 0;  // entities pulled by idle_balance()
  // pick_next() with a next buddy queued: it ran ahead of the leftmost, or
  // was left waiting (more than wakeup_gran right of the leftmost).
  std::uint64_t next_buddy_picks = 0;
  std::uint64_t load_balance_pulls = 0;  // entities moved by the periodic load_balance()
  std::uint64_t load_balance_runs = 0;   // load_balance() calls (domain levels balanced)
  std::uint64_t next_buddy_refused = 0;
  // schedule() right after yield_task_fair() made the current entity the
  // skip buddy (sched_yield, yield_to): another entity ran (the second was
  // within wakeup_gran of the yielder), or the yielder was picked again.
  std::uint64_t yield_switches = 0;
  std::uint64_t yield_repicks = 0;
};

class HostScheduler {
 public:
  // `topology` must outlive the scheduler.
  HostScheduler(const Topology& topology, const CfsTunables& tunables);
  HostScheduler(const HostScheduler&) = delete;  // the queues point at tunables_
  HostScheduler& operator=(const HostScheduler&) = delete;
  // host.sched_* parameters (declared in sim/sched/params.cpp), scaled for the topology's cpus.
  static CfsTunables tunables_from(const ParamSet& params, const TscClock& clock, int ncpus);

  // select_task_rq_fair() for a wake-up: the pCPU to enqueue `se` on. An
  // idle waker pCPU sharing the LLC with prev becomes the target unless prev
  // is idle too (wake_affine_idle); then select_idle_sibling(): target if
  // idle, prev if idle and sharing the LLC, a wholly idle core in target's
  // LLC, any idle pCPU there (scanned from target upwards, wrapping), else
  // target. Only allowed pCPUs are chosen; if target is not allowed, the
  // first allowed pCPU on prev's socket, else the first allowed
  // (select_fallback_rq). prev_cpu < 0 (a new task, never ran):
  // find_idlest_cpu(), the least loaded socket, core, then pCPU (waker_cpu
  // ignored). An entity still current on its pCPU (dequeued, pick_next
  // pending there) stays on it. waker_cpu may be -1 (wake-up from a timer
  // or device interrupt with no waker task).
  [[nodiscard]] int select_task_rq(const SchedEntity& se, int prev_cpu, int waker_cpu) const;

  // enqueue_task_fair(): `se` becomes runnable on `cpu`. Flags: kEnqueueWakeup
  // for a sleeper waking up (sleeper credit), kEnqueueNone for a new entity
  // (START_DEBIT) or one moved by the caller. A move to another pCPU than
  // se.cpu is normalised (migrate_task_rq_fair) and counted as a migration.
  // Throws std::logic_error if `cpu` is not allowed or `se` is on a queue.
  void enqueue(int cpu, SchedEntity& se, Tsc now, unsigned flags);
  // dequeue_task_fair(): kDequeueSleep when `se` blocks. If `se` was the
  // current entity the caller must call pick_next(cpu, now) next (schedule()).
  void dequeue(int cpu, SchedEntity& se, Tsc now, unsigned flags);

  // __schedule() for the fair class: put the current entity back (if still
  // runnable), and pick the next one; if the queue is empty, newidle balance
  // first (idle_balance). Returns nullptr for the idle task. Clears
  // need_resched. The caller runs the context switch if the result differs
  // from the previous current (counted in context_switches); its cost falls
  // into the next entity's runtime (exec_start = now, as rq_clock is read at
  // the top of __schedule()).
  SchedEntity* pick_next(int cpu, Tsc now);

  // scheduler_tick() -> task_tick_fair(): account the current entity and
  // check its slice. True = need_resched set: call pick_next(cpu, now).
  // Works for a periodic tick (host.tick_hz) and, without task groups, for a
  // timer armed with slice_left().
  bool tick(int cpu, Tsc now);
  // check_preempt_curr() after enqueueing `woken` on `cpu` (ttwu_do_wakeup).
  // True = need_resched set on `cpu`: the caller reschedules it (a reschedule
  // IPI if remote, or the vCPU's exit). Always true if `cpu` was idle.
  bool wakeup_preempts(int cpu, const SchedEntity& woken, Tsc now);
  // sched_yield() of the current entity on `cpu`; the caller then calls pick_next.
  void yield(int cpu, Tsc now);
  // yield_to(p, preempt = true) -> yield_to_task_fair() from the current
  // entity of `cpu` (v4.16 kernel/sched/core.c). Returns kYieldToEsrch
  // (-ESRCH) if this queue and target's both have exactly one runnable
  // entity; kYieldToFailed (0) if `target` is running or not runnable
  // (task_running() || p->state, or !se->on_rq); else kYieldToDone (1):
  // `target` becomes the next buddy of its queue, this entity yields
  // (yield_task_fair(): skip buddy; need_resched here for the schedule()
  // that follows) and, if `target` is queued on another pCPU, that pCPU
  // gets need_resched (resched_curr(p_rq): the caller sends the IPI),
  // whether or not its pick will honour the buddy.
  static constexpr int kYieldToEsrch = -3;  // -ESRCH
  static constexpr int kYieldToFailed = 0;
  static constexpr int kYieldToDone = 1;
  int yield_to(int cpu, const SchedEntity& target, Tsc now);

  // newidle_balance(): for an idle `cpu`, pull one runnable, not running,
  // allowed, cache-cold (exec_start older than sched_migration_cost) entity
  // from the busiest queue (largest load, then most runnable, then lowest
  // number; needs >= 2 runnable) of the smallest domain that has one: SMT
  // core, LLC, machine. The pulled entity is enqueued on `cpu` (counted as a
  // migration) and returned; the caller then calls pick_next(cpu, now).
  // pick_next() calls this itself when its queue is empty. nullptr if nothing.
  // The source pCPU's slice timer may now fire early: tick() returns false
  // there and slice_left() gives the new time.
  SchedEntity* idle_balance(int cpu, Tsc now);

  // Stand-in for the nohz idle balancer, which a busy pCPU's tick kicks
  // (nohz_balancer_kick(): the ticking queue has >= 2 runnable) to balance on
  // behalf of the idle pCPUs, whose tick is stopped: idle_balance() for every
  // idle pCPU, lowest first. Returns (pCPU, pulled entity) pairs; the caller
  // wakes each such pCPU and calls pick_next there. Without it an idle pCPU
  // pulls only when it schedules (e.g. an idle socket next to a full one,
  // since wake-ups stay in their LLC).
  std::vector<std::pair<int, SchedEntity*>> nohz_idle_balance(int busy_cpu, Tsc now);

  // rebalance_domains() from the tick of `cpu` (tunables().load_balance):
  // for each domain level (SMT, LLC, machine) whose interval has passed
  // (sd_weight ms, x busy_factor 32 when `cpu` is busy, at most
  // max_load_balance_interval = ncpus/10 s), load_balance() as v4.16 does
  // it for equal-capacity pCPUs: find_busiest_group() over the level's
  // groups (the child domains' spans; loads are sums of weights, no PELT),
  // balanced if the local group is at or above the average or the busiest
  // is within imbalance_pct (SMT 110, LLC 117, else 125) of it;
  // calculate_imbalance() (with load_above_capacity and
  // fix_small_imbalance()); find_busiest_queue(); detach_tasks() from it:
  // not running, allowed, not cache hot, load/2 <= the imbalance left.
  // Pulled entities are enqueued on `cpu` (migrations) and returned; the
  // caller checks preemption there (attach_task -> check_preempt_curr).
  std::vector<SchedEntity*> rebalance_domains(int cpu, Tsc now);
  [[nodiscard]] std::uint64_t load_balance_pulls() const { return counters_.load_balance_pulls; }

  // Cycles of execution left before tick() would preempt the current entity
  // with the queue as it is (hrtick_start_fair()); kTscNever if nothing else
  // is runnable on `cpu`. >= 1. Re-query after any enqueue/dequeue/pick on `cpu`.
  // With task groups the earliest level's; a task re-picked after its slice
  // keeps the used-up slice (as the kernel: no put/set when prev is next), so
  // this is then 1 until another entity runs: drive groups with a tick.
  [[nodiscard]] Tsc slice_left(int cpu, Tsc now) const;
  // update_curr(): bring the current entity's sum_exec_runtime up to `now`
  // (for reading run time in metrics).
  void update_curr(int cpu, Tsc now);

  // A task group under the root with cpu.shares `shares` (unscaled, 1024 =
  // a nice-0 task); only with tunables().groups (std::logic_error otherwise).
  TaskGroup* create_group(std::string name, std::uint64_t shares);
  // Puts `se` (not yet enqueued) into `tg` (nullptr: the root).
  void attach(SchedEntity& se, TaskGroup* tg) const;
  [[nodiscard]] const std::vector<std::unique_ptr<TaskGroup>>& groups() const { return groups_; }
  // rq->nr_running: the runnable tasks on `cpu`, in every group.
  [[nodiscard]] unsigned nr_running(int cpu) const;
  // task_h_load(): a task's share of its pCPU's root load (its weight
  // without groups).
  [[nodiscard]] static std::uint64_t task_h_load(const SchedEntity& se);

  [[nodiscard]] int cpus() const { return static_cast<int>(rqs_.size()); }
  // The running task of `cpu` (or the one that just blocked, until pick_next).
  [[nodiscard]] SchedEntity* curr(int cpu) const;
  [[nodiscard]] bool idle(int cpu) const { return rq(cpu).idle(); }  // idle_cpu()
  [[nodiscard]] bool need_resched(int cpu) const {
    return need_resched_.at(static_cast<std::size_t>(cpu));
  }
  // The root queue of `cpu` (with groups its entities are groups and root tasks).
  [[nodiscard]] const CfsRq& rq(int cpu) const { return rqs_.at(static_cast<std::size_t>(cpu)); }
  [[nodiscard]] const SchedCounters& counters() const { return counters_; }
  [[nodiscard]] const CfsTunables& tunables() const { return tunables_; }
  [[nodiscard]] const Topology& topology() const { return topo_; }

  // Observers (e.g. the sched_migrate_task trace event): from, to, time.
  std::function<void(const SchedEntity&, int, int, Tsc)> on_migrate;

 private:
  CfsRq& rq_mut(int cpu) { return rqs_.at(static_cast<std::size_t>(cpu)); }
  [[nodiscard]] int select_idle_sibling(const SchedEntity& se, int prev, int target) const;
  [[nodiscard]] int find_idlest_cpu(const SchedEntity& se) const;
  [[nodiscard]] int select_fallback_rq(const SchedEntity& se, int prev) const;
  [[nodiscard]] SchedEntity* detachable(int src, int dst_cpu, Tsc now) const;
  // The task's queue on `cpu`: its group's there, or the root's.
  CfsRq& queue_of(const SchedEntity& se, int cpu);
  [[nodiscard]] const CfsRq& queue_of(const SchedEntity& se, int cpu) const;
  [[nodiscard]] bool is_curr(const SchedEntity& se) const;  // task_running()
  // Queued (runnable, not running) tasks of `cpu`, every level.
  [[nodiscard]] std::vector<SchedEntity*> queued_tasks(int cpu) const;
  // dequeue_task_fair() without need_resched (a move by the balancer).
  void dequeue_task(int cpu, SchedEntity& se, Tsc now, unsigned flags);
  void enqueue_task(int cpu, SchedEntity& se, Tsc now, unsigned flags);
  void update_cfs_group(SchedEntity& ge, Tsc now);
  static void clear_buddies_up(SchedEntity& se);
  SchedEntity* pick_next_groups(int cpu, Tsc now);
  SchedEntity* pick_path(int cpu, Tsc now);
  void put_path(int cpu, Tsc now);
  static void set_path(SchedEntity& next, Tsc now);
  bool wakeup_preempts_groups(int cpu, const SchedEntity& woken, Tsc now);

  const Topology& topo_;
  CfsTunables tunables_;  // before rqs_: they point at it
  std::vector<CfsRq> rqs_;
  std::vector<bool> need_resched_;
  std::vector<std::vector<std::vector<int>>> domains_;  // per cpu: spans, smallest first
  std::vector<std::vector<int>> smt_, llc_;             // per cpu: smt_span, llc_span
  std::vector<std::vector<Tsc>> next_balance_;  // per cpu, per level: sd->last_balance + interval
  // per cpu, per level: sd->balance_interval in ms (sd_weight .. 2 x sd_weight,
  // up to MAX_PINNED_INTERVAL while every task was pinned elsewhere)
  std::vector<std::vector<Tsc>> balance_interval_;
  // What one load_balance() found: tasks moved; the level was unbalanced
  // (a busiest queue was found); every candidate was pinned elsewhere
  // (LBF_ALL_PINNED).
  struct LoadBalance {
    int moved = 0;
    bool unbalanced = false, all_pinned = false;
  };
  LoadBalance load_balance(int cpu, std::size_t level, Tsc now, std::vector<SchedEntity*>& pulled);
  SchedCounters counters_;
  std::vector<std::unique_ptr<TaskGroup>> groups_;
  std::vector<unsigned> nr_tasks_;  // with groups: rq->nr_running per cpu
};

}  // namespace kvmsim
