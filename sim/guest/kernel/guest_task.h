// What runs on a guest kernel: tasks (state machines it steps while they are
// current), hrtimers, kernel work of several steps, and the cross-call
// requests of smp_call_function*(). The kernel that runs them is
// sim/guest/kernel/guest_kernel.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/vmx/guest_step.h"

namespace kvmsim {

class GuestKernel;
class GuestFair;
class GuestSmp;

// A guest hrtimer (expiry in guest TSC cycles; the guest's clocksource).
class GuestHrtimer {
 public:
  virtual ~GuestHrtimer() = default;
  // Runs in the guest timer interrupt; returns extra guest cycles it cost.
  virtual Tsc fn(GuestKernel& k, Tsc now) = 0;
  std::uint64_t expires = 0;
  bool queued = false;
  // A timer-wheel timer (add_timer(), run from TIMER_SOFTIRQ), not an
  // hrtimer: in high-res mode only these keep the idle tick running.
  bool wheel = false;
};

// A guest task: a state machine the kernel steps while it is current.
class GuestTask {
 public:
  explicit GuestTask(std::string comm) : comm_(std::move(comm)) {}
  virtual ~GuestTask() = default;
  // Next step of this task (it is current and the kernel has nothing queued).
  virtual GuestStep run(GuestKernel& k, Tsc now) = 0;
  [[nodiscard]] const std::string& comm() const { return comm_; }

  // sched_setaffinity() to one CPU (vCPU index in the VM); -1 = any CPU.
  int bound_cpu = -1;

  // Scheduling class. Fifo (SCHED_FIFO, the default: cyclictest's RT
  // threads and the single-task workloads) runs until it blocks and a
  // wake-up preempts at once. Normal (SCHED_NORMAL, CFS of v4.x) is
  // time-sliced at the tick, and a wake-up preempts only by more than the
  // wakeup granularity; the guest kernel is non-preemptible
  // (PREEMPT_NONE / VOLUNTARY), so a Normal task is switched out only on its
  // way back to user mode or when it sleeps.
  enum class Policy : std::uint8_t { Fifo, Normal };
  Policy policy = Policy::Fifo;
  [[nodiscard]] bool fair() const { return policy == Policy::Normal; }
  // se.sum_exec_runtime (/proc/PID/sched), ns of rq->clock_task: the CPU time
  // a Normal task got (kept for Normal tasks only).
  [[nodiscard]] std::uint64_t sum_exec_runtime_ns() const { return sum_exec_; }

 private:
  friend class GuestKernel;
  friend class GuestFair;
  friend class GuestSmp;
  std::string comm_;
  GuestKernel* cpu_ = nullptr;  // task_cpu(): the run queue it is on or last ran on
  bool on_rq_ = false;          // runnable: queued, or current and not blocked
  // struct sched_entity of a Normal task (nice 0), in ns of the guest's
  // rq->clock_task: vruntime, exec_start, sum_exec_runtime and
  // prev_sum_exec_runtime (the sum when it was last picked).
  std::int64_t vruntime_ = 0;
  std::uint64_t exec_start_ = 0, sum_exec_ = 0, prev_sum_exec_ = 0;
  // The user-mode step a preemption switched away from (it runs first when
  // the task is picked again).
  std::optional<GuestStep> pending_;
};

// The function an smp_call_function*() runs on every target, from the
// target's IPI handler (flush_smp_call_function_queue(): csd->func(info)).
struct SmpCallFunc {
  // Its work on `target` (host cycles), drawn when it starts; empty = none.
  std::function<Tsc(GuestKernel& target, Tsc now)> cost;
  // After the work, still in the handler: its effect (e.g. the TLB is flushed).
  std::function<void(GuestKernel& target, Tsc now)> ran;
};

// smp_call_function_many_cond() (kernel/smp.c), the primitive under
// smp_call_function_many / on_each_cpu_mask / on_each_cpu_cond_mask.
struct SmpCall {
  std::vector<int> cpus;  // target CPUs (vCPU index in the VM); the caller is skipped
  SmpCallFunc func;
  bool wait = true;        // csd_lock_wait() until every target ran func
  bool run_local = false;  // SCF_RUN_LOCAL (on_each_cpu_mask): also run func here, IRQs off
  bool single = false;     // smp_call_function_single(): its own csd, one target
  // On this CPU when the call returns (after the last target's csd_unlock()
  // with wait, after the IPIs without); empty = none.
  std::function<void(GuestKernel& self, Tsc now)> done;
};

// Kernel work of several steps (a remote wake-up, a cross call, a handler's
// csd list): run before the task continues, in the context that queued it.
class KernelWork {
 public:
  virtual ~KernelWork() = default;
  // The next step, or nullopt when done.
  virtual std::optional<GuestStep> next(GuestKernel& k, Tsc now) = 0;
};

}  // namespace kvmsim
