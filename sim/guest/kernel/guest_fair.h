// CFS for the guest's Normal tasks on one vCPU's run queue (kernel/sched/fair.c
// of v4.16, nice 0 only): the cfs_rq of the vCPU's struct rq. Its decisions
// are the host scheduler's rules (fair:: in sim/sched/cfs.h) over the guest's
// numbers; the queue itself is the vCPU's run queue, shared with RT tasks. As in the
// kernel it reaches its rq (rq_of()) for the current task, the queued tasks
// and the clock; the RT class (Fifo tasks) stays in GuestKernel::pick_next().
#pragma once

#include <cstdint>

#include "sim/core/time.h"
#include "sim/sched/cfs.h"

namespace kvmsim {

class GuestKernel;
class GuestTask;

// Fair-class statistics of one CPU, for the metrics.
struct GuestFairStats {
  std::uint64_t tick_preemptions = 0;    // check_preempt_tick() -> resched_curr()
  std::uint64_t wakeup_preemptions = 0;  // check_preempt_wakeup() -> resched_curr()
  std::uint64_t switches = 0;            // context switches between two Normal tasks
  GuestFairStats& operator+=(const GuestFairStats& o) {
    tick_preemptions += o.tick_preemptions;
    wakeup_preemptions += o.wakeup_preemptions;
    switches += o.switches;
    return *this;
  }
};

class GuestFair {
 public:
  explicit GuestFair(GuestKernel& rq) : rq_(rq) {}

  // cfs_rq->curr: the running Normal task, or nullptr.
  [[nodiscard]] GuestTask* curr() const;
  // __pick_first_entity(): the queued Normal task with the smallest vruntime
  // (queue order breaks ties).
  [[nodiscard]] GuestTask* leftmost() const;
  [[nodiscard]] std::int64_t min_vruntime() const { return min_vruntime_; }
  [[nodiscard]] const GuestFairStats& stats() const { return stats_; }
  GuestFairStats& stats() { return stats_; }

  // update_curr(): the running Normal task's runtime since exec_start goes
  // into sum_exec_runtime and (nice 0) one-for-one into its vruntime.
  void update_curr(Tsc now);
  // place_entity(): START_DEBIT for a new task, sleeper credit on wake-up.
  void place_entity(GuestTask* t, bool initial);
  // set_next_entity(): the slice is counted from here.
  void set_next_entity(GuestTask* t, Tsc now);
  // scheduler_tick() -> task_tick_fair() -> check_preempt_tick().
  void task_tick(Tsc now);
  // check_preempt_curr() for a task just queued here.
  void check_preempt_curr(GuestTask* woken, Tsc now);

 private:
  [[nodiscard]] std::uint64_t clock_task_ns(Tsc now) const;  // rq->clock_task
  [[nodiscard]] const CfsTunables& tunables() const;         // scaled for the guest's CPUs
  [[nodiscard]] unsigned nr_running() const;                 // cfs_rq->nr_running
  [[nodiscard]] std::uint64_t sched_slice_ns(unsigned nr_running) const;
  void update_min_vruntime();

  GuestKernel& rq_;
  mutable CfsTunables tunables_;  // in guest ns, for tunables_cpus_ CPUs
  mutable int tunables_cpus_ = -1;
  std::int64_t min_vruntime_ = 0;  // cfs_rq->min_vruntime
  GuestFairStats stats_;
};

}  // namespace kvmsim
