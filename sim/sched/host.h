// The host: its CPU topology, the pCPUs, the fair scheduler that decides
// which thread each pCPU runs (sim/sched/host_sched.h), the threads (vCPU
// threads, host tasks) and the per-pCPU tick. Cross-pCPU operations live
// here: try_to_wake_up() and wake_up_new_task().
//
// pCPUs are created when something is placed on them, in that order (the
// order fixes SystemC's process order, hence the trajectory); finalize()
// creates the rest of the pCPUs any thread is allowed on.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/core/context.h"
#include "sim/core/metrics.h"
#include "sim/core/params.h"
#include "sim/sched/host_sched.h"
#include "sim/sched/host_tick.h"
#include "sim/sched/pcpu.h"
#include "sim/sched/topology.h"

namespace kvmsim {

// cost.host.* and noise.* of the platform file.
PcpuCosts pcpu_costs(const ParamSet& p, const TscClock& clk);

class Host : public MetricSource {
 public:
  Host(const ParamSet& p, SimContext& ctx);
  // The tick pCPU `cpu` runs under `p` (host.tick_hz, or by context: the
  // residual 1 Hz on host.isolcpus, host.hz elsewhere); 0 = none.
  static std::int64_t tick_hz_of(const ParamSet& p, int cpu);
  // The nohz_full pCPUs (tick_nohz_full_cpu()): host.isolcpus when
  // host.isolation is nohz_full, else none.
  static std::vector<std::int64_t> nohz_full_cpus(const ParamSet& p);
  // Whether pCPU `cpu` is one of nohz_full_cpus(p) (tick_nohz_full_cpu()).
  static bool is_nohz_full(const ParamSet& p, int cpu);
  ~Host() override;

  [[nodiscard]] const Topology& topology() const { return topo_; }
  HostScheduler& scheduler() { return *sched_; }
  // The pCPU `cpu`, created (with its tick) on first use.
  Pcpu& pcpu(int cpu);
  [[nodiscard]] bool has_pcpu(int cpu) const {
    return by_id_.at(static_cast<std::size_t>(cpu)) != nullptr;
  }
  [[nodiscard]] const std::vector<Pcpu*>& pcpus() const { return order_; }  // creation order
  // A host hrtimer of pCPU `cpu` that the host owns (a per-CPU kernel
  // timer), started to expire at `first`.
  void add_timer(int cpu, std::unique_ptr<HostHrtimer> t, Tsc first);

  // A thread the host runs (owned by the caller). Threads are started with
  // start_thread() when the run begins.
  // Its pid (SchedEntity::id) must be unique: it names the thread in the
  // traces and breaks vruntime ties (sim/sched/pids.h).
  void add_thread(HostThread* t);
  [[nodiscard]] static HostThread* thread_of(const SchedEntity& se);
  // Creates the pCPUs that some thread may run on and that do not exist yet.
  void finalize();
  // wake_up_new_task(): a new thread becomes runnable on the allowed pCPU
  // with the least load (find_idlest_cpu), or `hint` if allowed and idle.
  void start_thread(HostThread* t, int hint, Tsc now);
  // try_to_wake_up() from `waker_cpu` (-1: none): select_task_rq, enqueue,
  // check_preempt_curr; a remote pCPU is reached with a reschedule IPI that
  // leaves the waker at `ipi_at` (>= now; the end of the waker's own work).
  // False if the thread was already runnable.
  bool wake_up(HostThread* t, int waker_cpu, Tsc now, Tsc ipi_at = 0);

  // update_curr() on every pCPU: CPU time and busy time up to `now`.
  void account_to(Tsc now);

  void report(Metrics& m, const TscClock& clk) const override;

 private:
  // A woken or new entity on `cpu`: reschedule it if the entity preempts.
  void check_preempt(int cpu, const SchedEntity& se, Tsc now, Pcpu* waker, Tsc ipi_at);
  SimContext& ctx_;
  SchedSignals& sched_signals_;
  Topology topo_;
  std::unique_ptr<HostScheduler> sched_;
  PcpuCosts costs_;
  std::vector<std::int64_t> tick_hz_;  // by pCPU (tick_hz_of)
  Sampler tick_cost_;
  std::vector<std::unique_ptr<Pcpu>> by_id_;
  std::vector<Pcpu*> order_;
  std::vector<std::unique_ptr<HostHrtimer>> timers_;  // ticks and add_timer()'s
  std::unordered_map<int, HostThread*> threads_;      // by SchedEntity id (pid)
};

}  // namespace kvmsim
