// The host's fair scheduler, per run queue: Linux CFS as in kernel/sched/fair.c
// of v4.x-v5.x (the scenarios' host kernels). EEVDF (v6.6+, lag and virtual
// deadlines instead of sleeper credit and wakeup_gran) is out of scope.
//
// Plain C++ with no SystemC: time is host TSC cycles, the caller passes `now`.
// Group scheduling (a task group per VM, as a cgroup or an autogroup makes)
// is one level deep, groups under the root (HostScheduler builds it from
// these queues); no CFS bandwidth control, no PELT (a queue's load is the sum
// of its entities' weights, a group's weight the ideal calc_group_shares()).
// The buddies are v4.16's: skip (yield_task_fair), next (yield_to_task_fair
// and a wake-up that preempts), last (the preempted curr of a wake-up
// preemption on a queue with >= sched_nr_latency entities); NEXT_BUDDY off.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace kvmsim {

class CfsRq;
struct TaskGroup;

inline constexpr std::uint32_t kNice0Load = 1024;  // NICE_0_LOAD (without the 64-bit fixed point)

// sched_prio_to_weight[]: nice -20..19 -> weight, each step ~1.25x. Throws
// std::out_of_range outside [-20, 19].
std::uint32_t nice_to_weight(int nice);

// sysctl_sched_tunable_scaling: SCHED_TUNABLESCALING_{NONE, LOG, LINEAR}.
enum class TunableScaling { None, Log, Linear };
TunableScaling parse_tunable_scaling(const std::string& s);  // "none" / "log" / "linear"
// get_update_sysctl_factor(): 1, 1 + ilog2(min(ncpus, 8)), or min(ncpus, 8).
unsigned tunable_scaling_factor(TunableScaling scaling, int ncpus);

// The scheduler's sysctls in cycles, already multiplied by the scaling factor
// (update_sysctl()), which is what /proc/sys/kernel/sched_*_ns shows.
struct CfsTunables {
  Tsc latency = 0;             // sysctl_sched_latency
  Tsc min_granularity = 0;     // sysctl_sched_min_granularity
  Tsc wakeup_granularity = 0;  // sysctl_sched_wakeup_granularity
  Tsc migration_cost = 0;      // sysctl_sched_migration_cost (not scaled by the kernel)
  unsigned nr_latency = 8;     // sched_nr_latency = ceil(latency / min_granularity)
  Tsc ms = 0;                  // one millisecond (load-balance intervals are in ms)
  bool load_balance = false;   // periodic load balancing at the tick (host.sched_load_balance)
  // sched_feat(WAKEUP_PREEMPTION) (host.sched_feat_wakeup_preemption)
  bool wakeup_preemption = true;
  // Task groups on the host (CONFIG_FAIR_GROUP_SCHED with a group per VM):
  // then weights are in the kernel's 64-bit scaled units (scale_load(), x 1024)
  // so that a group's per-CPU share can be a fraction of a nice-0 weight, and
  // NICE_0_LOAD is nice0 = 1024 << 10. Without groups nice0 is 1024.
  bool groups = false;
  std::uint32_t nice0 = kNice0Load;

  // From the normalized (unscaled) ns values, as sched_init_granularity() does at boot.
  static CfsTunables from_ns(const TscClock& clock, std::uint64_t latency_ns,
                             std::uint64_t min_granularity_ns, std::uint64_t wakeup_granularity_ns,
                             std::uint64_t migration_cost_ns, TunableScaling scaling, int ncpus);
  // The same, kept in ns (a guest kernel's run queue counts its own clock in ns).
  static CfsTunables in_ns(std::uint64_t latency_ns, std::uint64_t min_granularity_ns,
                           std::uint64_t wakeup_granularity_ns, TunableScaling scaling, int ncpus);
};

// The CFS rules of kernel/sched/fair.c over one run queue's numbers, in the
// tunables' unit: the host's CfsRq (cycles) and the guest kernel's GuestFair
// (guest ns) both decide with these, so the policy exists once.
namespace fair {
// __sched_period(): the latency, stretched to nr x min_granularity once more
// than sched_nr_latency entities are runnable.
Tsc sched_period(const CfsTunables& t, unsigned nr_running);
// check_preempt_tick(): `ran` = sum_exec_runtime - prev_sum_exec_runtime,
// `ideal` = sched_slice(curr); preempt once the slice is used up, never before
// min_granularity, in between when curr's vruntime leads the leftmost's
// (`left_lead`, absent with nothing queued) by more than the slice.
bool check_preempt_tick(const CfsTunables& t, Tsc ran, Tsc ideal, const std::int64_t* left_lead);
// place_entity(): a new entity starts `vslice` after min_vruntime (START_DEBIT);
// a waking one gets at most half a latency of credit (GENTLE_FAIR_SLEEPERS)
// and never moves back. Returns the placed vruntime.
std::int64_t place_entity(const CfsTunables& t, std::int64_t min_vruntime, std::int64_t vruntime,
                          Tsc vslice, bool initial);
// wakeup_preempt_entity(): with vdiff = curr.vruntime - se.vruntime, -1 when
// se is not ahead, 1 when it leads by more than `gran` (wakeup_gran(se)), 0 in between.
int wakeup_preempt_entity(std::int64_t vdiff, Tsc gran);
// MIN_SHARES: the least weight a task group's entity gets on a CPU (2 in the
// kernel's scaled load units on 64-bit, i.e. 2/1024 of a nice-0 task).
inline constexpr std::uint64_t kMinShares = 2;
// calc_group_shares() (v4.15+; calc_cfs_shares() before) in the ideal form
// its comment derives it from, without PELT's averages: a task group's entity
// on one CPU weighs shares x the group's load on that CPU / the group's load
// on all CPUs, clamped to [kMinShares, shares]; kMinShares when the group has
// no load. `shares` and the result are in the weights' units (the kernel's
// scaled units, so that kMinShares means what it does there).
std::uint64_t calc_group_shares(std::uint64_t shares, std::uint64_t local_load,
                                std::uint64_t total_load);
}  // namespace fair

// The set of pCPUs a task may run on (p->cpus_ptr). Default: every pCPU.
class CpuMask {
 public:
  CpuMask() = default;  // all pCPUs
  static CpuMask all() { return {}; }
  static CpuMask only(int cpu);
  static CpuMask of(const std::vector<int>& cpus);
  [[nodiscard]] bool test(int cpu) const;
  [[nodiscard]] bool is_all() const { return all_; }

 private:
  bool all_ = true;
  std::vector<bool> bits_;
};

// struct sched_entity (plus the sched_info run-delay fields of task_struct).
// Owned by the caller (a host thread or vCPU thread); the scheduler keeps pointers.
struct SchedEntity {
  SchedEntity(int id_, int nice_ = 0, CpuMask allowed_ = CpuMask::all());

  int id;  // unique; breaks vruntime ties so that runs are deterministic (negative: a group's)
  void* owner =
      nullptr;  // the caller's thread object (Host::add_thread); not used by the scheduler
  int nice;
  std::uint32_t weight;  // se->load.weight
  CpuMask allowed;       // change only while the entity is not on a run queue

  // vruntime is signed: while off a queue after migration it is relative to
  // the old queue's min_vruntime and may be negative (the kernel wraps a u64).
  std::int64_t vruntime = 0;
  Tsc sum_exec_runtime = 0;        // CPU time received (update_curr)
  Tsc prev_sum_exec_runtime = 0;   // sum_exec_runtime when last picked (slice start)
  Tsc exec_start = 0;              // last time its runtime was accounted, while current
  bool on_rq = false;              // runnable: queued or current
  int cpu = -1;                    // run queue it is on or last ran on; -1 before the first enqueue
  bool fresh = true;               // never enqueued yet: placed with START_DEBIT
  bool vruntime_relative = false;  // dequeued without kDequeueSleep: relative to that min_vruntime

  // Group scheduling (HostScheduler with CfsTunables::groups): se->parent
  // (the task's group's entity on its CPU; nullptr at the root), se->cfs_rq
  // (the queue it is on or last ran on), se->my_q (a group's entity: its
  // group's queue on that CPU). All nullptr without groups.
  SchedEntity* parent = nullptr;
  CfsRq* cfs_rq = nullptr;
  CfsRq* my_q = nullptr;
  TaskGroup* tg = nullptr;  // a task's group (constant); nullptr: the root
  bool scaled = false;      // weight in scaled units (set once, by the scheduler)

  // sched_info: time runnable but not running (the steal time a vCPU sees).
  Tsc run_delay = 0;
  Tsc last_queued = 0;  // when it last became runnable-and-waiting
  bool waiting = false;
  std::uint64_t pcount = 0;         // times picked to run
  std::uint64_t nr_migrations = 0;  // se->nr_migrations

  // run_delay including the wait in progress.
  [[nodiscard]] Tsc run_delay_at(Tsc now) const {
    return run_delay + (waiting && now > last_queued ? now - last_queued : 0);
  }
};

// enqueue_entity() flags. Wakeup: the entity was sleeping (ENQUEUE_WAKEUP,
// gets sleeper credit); Migrated: its vruntime is relative (ENQUEUE_MIGRATED);
// None: a new task or a task moved between queues.
enum EnqueueFlags : unsigned {
  kEnqueueNone = 0,
  kEnqueueWakeup = 1u << 0,
  kEnqueueMigrated = 1u << 1
};
// dequeue_entity() flags. Sleep: the entity blocks (DEQUEUE_SLEEP; vruntime
// stays absolute); None: it leaves for another queue (vruntime made relative).
enum DequeueFlags : unsigned { kDequeueNone = 0, kDequeueSleep = 1u << 0 };

// struct cfs_rq of one pCPU. The current entity is not in the tree, as in the kernel.
class CfsRq {
 public:
  explicit CfsRq(const CfsTunables* tunables) : t_(tunables) {}

  // update_curr(): charge the current entity the time since exec_start.
  void update_curr(Tsc now);
  void enqueue_entity(SchedEntity& se, Tsc now, unsigned flags);
  void dequeue_entity(SchedEntity& se, Tsc now, unsigned flags);
  // pick_next_entity(): leftmost, or the second if the leftmost is the skip
  // buddy and the second is within wakeup_gran of it. Does not change state.
  [[nodiscard]] SchedEntity* pick_next_entity() const;
  // The same with `curr` (still runnable, not in the tree) ranked as if it
  // were queued: v4.16's pick_next_entity(cfs_rq, curr), which group
  // scheduling's pick uses on the levels whose current entity stays.
  [[nodiscard]] SchedEntity* pick_next_entity(SchedEntity* curr) const;
  void set_next_entity(SchedEntity& se, Tsc now);
  void put_prev_entity(Tsc now);
  // entity_tick() + check_preempt_tick(): true if the current entity should be preempted.
  bool entity_tick(Tsc now);
  [[nodiscard]] bool check_preempt_tick() const;
  // check_preempt_wakeup() for an entity already enqueued here: true if it
  // should preempt the current one (always true when the queue was idle).
  bool check_preempt_wakeup(const SchedEntity& woken, Tsc now);
  // wakeup_preempt_entity(curr, se): -1 se is not ahead, 1 se leads by more
  // than wakeup_gran(se), 0 in between.
  [[nodiscard]] int wakeup_preempt_entity(const SchedEntity& curr, const SchedEntity& se) const;
  // reweight_entity(): `se`, on this queue or off it, gets weight `w`; a
  // queued entity's weight moves in the queue's load, the current one is
  // charged its run time at the old weight first. vruntime is kept (v4.16;
  // rescaling it came with EEVDF). For a task group's entity, whose weight
  // calc_group_shares() recomputes (update_cfs_group()).
  void reweight_entity(SchedEntity& se, std::uint32_t w, Tsc now);
  // yield_task_fair(): with others runnable, the current entity's buddies
  // are cleared and it becomes the skip buddy.
  void yield(Tsc now);
  // set_next_buddy() (yield_to_task_fair(), check_preempt_wakeup()): `se`,
  // queued here, is picked next if it is within wakeup_gran of the leftmost.
  void set_next_buddy(const SchedEntity& se) { next_ = &se; }
  void set_last_buddy(const SchedEntity& se) { last_ = &se; }
  void set_skip_buddy(const SchedEntity& se) { skip_ = &se; }
  // Which of this queue's buddies `se` is (kBuddy* bits), and clearing
  // kinds: the steps of __clear_buddies_{next,last,skip}(), which walk up a
  // group hierarchy kind by kind.
  static constexpr unsigned kBuddyNext = 1, kBuddyLast = 2, kBuddySkip = 4;
  [[nodiscard]] unsigned buddy_kinds(const SchedEntity& se) const;
  void clear_buddy_kinds(unsigned kinds);
  // The sum of the loads of a task group's queues, kept up to date by this
  // queue when it is one of them (tg->load_avg's stand-in).
  void set_group_load_sum(std::uint64_t* sum) { load_sum_ = sum; }
  [[nodiscard]] const SchedEntity* next_buddy() const { return next_; }
  [[nodiscard]] const SchedEntity* last_buddy() const { return last_; }
  [[nodiscard]] const SchedEntity* skip_buddy() const { return skip_; }

  // __sched_period(), sched_slice(), sched_vslice(), wakeup_gran().
  [[nodiscard]] Tsc sched_period(unsigned nr_running) const;
  [[nodiscard]] Tsc sched_slice(const SchedEntity& se) const;
  [[nodiscard]] Tsc sched_vslice(const SchedEntity& se) const;
  [[nodiscard]] Tsc wakeup_gran(const SchedEntity& se) const;
  // Cycles of further execution after which check_preempt_tick() would fire
  // with the queue as it is now (what hrtick_start_fair() arms); kTscNever if
  // it cannot fire (fewer than two runnable). Always >= 1.
  [[nodiscard]] Tsc slice_left(Tsc now) const;

  [[nodiscard]] SchedEntity* curr() const { return curr_; }
  [[nodiscard]] const SchedEntity* first() const {  // __pick_first_entity()
    return tree_.empty() ? nullptr : *tree_.begin();
  }
  // Queued entities, leftmost first (the current one excluded).
  [[nodiscard]] std::vector<SchedEntity*> queued() const { return {tree_.begin(), tree_.end()}; }
  [[nodiscard]] unsigned nr_running() const { return nr_running_; }  // includes curr if on_rq
  [[nodiscard]] std::uint64_t load() const { return load_; }         // sum of weights, incl. curr
  [[nodiscard]] std::int64_t min_vruntime() const { return min_vruntime_; }
  [[nodiscard]] bool idle() const { return curr_ == nullptr && nr_running_ == 0; }
  [[nodiscard]] const CfsTunables& tunables() const { return *t_; }

 private:
  struct ByVruntime {  // entity_before(), ties by id for determinism
    bool operator()(const SchedEntity* a, const SchedEntity* b) const {
      return a->vruntime != b->vruntime ? a->vruntime < b->vruntime : a->id < b->id;
    }
  };
  void update_min_vruntime();
  void place_entity(SchedEntity& se, bool initial);

  const CfsTunables* t_;
  std::set<SchedEntity*, ByVruntime> tree_;  // tasks_timeline (rb-tree), without curr
  SchedEntity* curr_ = nullptr;
  const SchedEntity* skip_ = nullptr;  // cfs_rq->skip
  const SchedEntity* next_ = nullptr;  // cfs_rq->next (set_next_buddy())
  const SchedEntity* last_ = nullptr;  // cfs_rq->last (set_last_buddy(), LAST_BUDDY)
  void clear_buddies(const SchedEntity& se);
  void add_load(std::int64_t d) {
    load_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(load_) + d);
    if (load_sum_ != nullptr)
      *load_sum_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(*load_sum_) + d);
  }
  std::uint64_t* load_sum_ = nullptr;
  unsigned nr_running_ = 0;
  std::uint64_t load_ = 0;
  std::int64_t min_vruntime_ = 0;
};

// calc_delta_fair(): delta scaled to NICE_0 vruntime, delta * 1024 / weight.
Tsc calc_delta_fair(Tsc delta, std::uint32_t weight);
// The same with NICE_0_LOAD given (scaled units under group scheduling).
Tsc calc_delta_fair(Tsc delta, std::uint32_t weight, std::uint32_t nice0);

}  // namespace kvmsim
