// The guest kernel's SMP view of one VM: what its per-CPU data lets code on
// one CPU see of another (cpu_online_mask, each CPU's run queue and
// call_single_queue, x86_cpu_to_apicid). The GuestKernels of a VM share one,
// so a wake-up or a cross call on one vCPU can act on another vCPU's kernel.
//
// IPI vectors of arch/x86/include/asm/irq_vectors.h (guest Linux).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/metrics.h"

namespace kvmsim {

class GuestKernel;
class GuestTask;

inline constexpr std::uint8_t RESCHEDULE_VECTOR = 0xfd;
inline constexpr std::uint8_t CALL_FUNCTION_VECTOR = 0xfc;
inline constexpr std::uint8_t CALL_FUNCTION_SINGLE_VECTOR = 0xfb;

// Guest-side IPI and cross-call counters of one VM.
struct GuestSmpStats {
  std::uint64_t resched_sent = 0, resched_handled = 0;
  std::uint64_t call_single_sent = 0, call_single_handled = 0;  // CALL_FUNCTION_SINGLE_VECTOR
  std::uint64_t call_many_sent = 0, call_many_handled = 0;      // CALL_FUNCTION_VECTOR
  std::uint64_t smp_calls = 0;                                  // smp_call_function*() calls
  std::uint64_t csd_queued = 0;       // csds queued on a target's call_single_queue
  std::uint64_t csd_run = 0;          // csd->func() runs in the targets' handlers
  std::uint64_t csd_lock_waits = 0;   // csd_lock() found the csd still in use
  std::uint64_t remote_wakeups = 0;   // try_to_wake_up() onto another vCPU
  std::uint64_t wakeups_polling = 0;  // ... whose idle loop polled: no IPI
  std::uint64_t pv_sched_yields = 0;  // KVM_HC_SCHED_YIELD after a CALL_FUNCTION IPI-many
  GuestSmpStats& operator+=(const GuestSmpStats& o);
};

class GuestSmp : public MetricSource {
 public:
  // Called at boot in vCPU order: CPU n of the guest is the VM's vCPU n.
  void add_cpu(GuestKernel* k) { cpus_.push_back(k); }
  [[nodiscard]] int nr_cpus() const { return static_cast<int>(cpus_.size()); }
  [[nodiscard]] GuestKernel& cpu(int n) const { return *cpus_.at(static_cast<std::size_t>(n)); }
  // x86_cpu_to_apicid: the x2APIC ID of CPU n (KVM numbers them by vCPU index).
  [[nodiscard]] static std::uint32_t apic_id(int n) { return static_cast<std::uint32_t>(n); }
  // The ICR value of an IPI to CPU n: __x2apic_send_IPI_dest() ->
  // __prepare_ICR(0, vector, APIC_DEST_PHYSICAL): fixed delivery, physical
  // destination, no shorthand; ICR2 = the APIC ID.
  [[nodiscard]] static std::uint64_t icr(int n, std::uint8_t vector) {
    return static_cast<std::uint64_t>(apic_id(n)) << 32 | vector;
  }
  // idle_cpu(): the idle task runs and nothing is queued.
  [[nodiscard]] bool idle_cpu(int n) const;
  // select_task_rq() for a wake-up: the bound CPU; else the task's previous
  // CPU if idle, else the first idle CPU after it (select_idle_sibling()
  // over the VM, one LLC), else the previous CPU. `waker`: where a task
  // that never ran goes.
  [[nodiscard]] GuestKernel* select_task_rq(const GuestTask& t, GuestKernel& waker) const;

  GuestSmpStats& stats() { return stats_; }
  [[nodiscard]] const GuestSmpStats& stats() const { return stats_; }
  // guest.ipi.*, guest.smp_call.*, guest.wakeups.* (reported only by the
  // workloads that use SMP, so timer-only runs keep their key set).
  void report(Metrics& m, const TscClock& clk) const override;
  static void report_stats(const GuestSmpStats& s, Metrics& m);

 private:
  std::vector<GuestKernel*> cpus_;
  GuestSmpStats stats_;
};

}  // namespace kvmsim
