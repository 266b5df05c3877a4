// Remote TLB shootdown in a Linux guest (arch/x86/mm/tlb.c of v4.16-v4.17):
// flush_tlb_mm_range() flushes the local TLB and calls flush_tlb_others()
// for the other CPUs in mm_cpumask(mm). Natively that is
// native_flush_tlb_others() -> smp_call_function_many(mask,
// flush_tlb_func_remote, wait=1): one CALL_FUNCTION IPI per target (x2APIC
// physical mode) and the initiator spins in csd_lock_wait() until every
// target ran the handler. With KVM_FEATURE_PV_TLB_FLUSH the guest's
// pv_mmu_ops.flush_tlb_others is kvm_flush_tlb_others() (arch/x86/kernel/
// kvm.c, v4.16): a target whose steal-time `preempted` byte says
// KVM_VCPU_PREEMPTED gets KVM_VCPU_FLUSH_TLB by cmpxchg and leaves the mask;
// the host flushes for it before its next entry (record_steal_time()).
//
// GuestMm is the TLB side of one struct mm_struct: mm_cpumask and the
// generation counters of the v4.14+ scheme (mm->context.tlb_gen, each CPU's
// cpu_tlbstate.ctxs[].tlb_gen), which is also how the "no flush is lost"
// invariant is checked: a CPU runs user code of the mm only with every
// generation requested for it flushed, natively by its handler or by the
// host on its behalf.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/core/dist.h"
#include "sim/core/metrics.h"

namespace kvmsim {

class GuestKernel;
class GuestSmp;

struct TlbFlushCosts {
  Sampler flush_local;  // flush_tlb_mm_range(): the local flush (full or by range)
  Sampler flush_func;   // flush_tlb_func_remote() on a target, in the IPI handler
  Sampler pv_check;     // kvm_flush_tlb_others(): per target, read `preempted`, cmpxchg
};

struct TlbFlushStats {
  std::uint64_t flushes = 0;  // flush_tlb_mm_range() calls with other CPUs in the mask
  // Of those, the ones that sent IPIs and so waited in csd_lock_wait(),
  // counted when they send. The rest: with PV flush, flushes whose targets
  // were all PREEMPTED (they send none and do not wait), and flushes the
  // run's end caught between the PV check and the sends.
  std::uint64_t ipi_flushes = 0;
  std::uint64_t targets = 0;          // other CPUs in the mask, summed over flushes
  std::uint64_t ipi_targets = 0;      // of those, sent a CALL_FUNCTION IPI
  std::uint64_t pv_targets = 0;       // of those, left to the host (KVM_VCPU_FLUSH_TLB)
  std::uint64_t handler_flushes = 0;  // flush_tlb_func_remote() runs
  // IPI'd targets whose vCPU thread was not in guest mode on its pCPU when
  // the flush started (preempted or blocked on the host).
  std::uint64_t ipi_targets_not_running = 0;
  std::uint64_t flushes_waiting_on_not_running = 0;  // flushes with one or more of those
  // Initiator time from the first IPI to the return of the call (csd_lock_wait()).
  Tsc wait_cycles = 0;
  Tsc wait_cycles_not_running = 0;  // ... of the flushes with a target not running
  Tsc wait_off_cpu_cycles = 0;      // ... the initiator's vCPU thread was off its pCPU (run delay)
  Tsc wait_max_cycles = 0;
  // The waits by length (decades: < 10 us, < 100 us, < 1 ms, < 10 ms, the
  // rest): how many, their time, and the part of it the initiator spent on
  // its pCPU (spinning in csd_lock_wait(), the IPI sends, PAUSE exits).
  // With PV flush most waits are short and a few long ones carry the time.
  static constexpr std::size_t kWaitBands = 5;
  static constexpr std::array<std::uint64_t, kWaitBands - 1> kWaitBandEdgesNs = {
      10'000, 100'000, 1'000'000, 10'000'000};
  std::array<std::uint64_t, kWaitBands> band_flushes{};
  std::array<Tsc, kWaitBands> band_cycles{};
  std::array<Tsc, kWaitBands> band_on_cpu_cycles{};
  TlbFlushStats& operator+=(const TlbFlushStats& o);
};

class GuestMm {
 public:
  // `pv`: the guest uses kvm_flush_tlb_others() (guest.pv_tlb_flush).
  // `clk`: the host TSC, for the wait bands' edges.
  GuestMm(GuestSmp& smp, TlbFlushCosts costs, bool pv, const TscClock& clk);

  // switch_mm_irqs_off(): a task of this mm runs on `cpu`
  // (cpumask_set_cpu(cpu, mm_cpumask(mm))). The era's lazy-TLB CPUs stay in
  // the mask and still get the IPI; this model's mm keeps its CPUs.
  void add_cpu(int cpu);
  // flush_tlb_mm_range() from task context on `k` (a CPU of the mm): kernel
  // work queued on k; `done` runs on k when the flush has returned.
  void flush_tlb_mm_range(GuestKernel& k, std::function<void(GuestKernel&, Tsc)> done);
  // Invariant check before `k` runs user code of this mm: every flush that
  // returned with this CPU as a target is done here (a PV request counts
  // once the host flushed this vCPU after it was set). A flush still in
  // flight does not count: its initiator waits, as the kernel's does.
  void check_before_user(GuestKernel& k);

  [[nodiscard]] const TlbFlushStats& stats() const { return stats_; }
  [[nodiscard]] bool pv() const { return pv_; }
  static void report_stats(const TlbFlushStats& s, const TscClock& clk, Metrics& m,
                           const std::string& prefix);

 private:
  class FlushOthers;
  struct CpuTlb {
    bool in_mask = false;
    std::uint64_t flushed_gen = 0;  // cpu_tlbstate.ctxs[].tlb_gen for this mm
    // Newest generation of a flush that returned with this CPU as a target.
    std::uint64_t requested_gen = 0;
    // A KVM_VCPU_FLUSH_TLB request: the generation, and the host's count of
    // flushes on this vCPU when it was set (the host flush must come after).
    std::uint64_t pv_gen = 0, pv_host_flushes = 0;
  };
  GuestSmp& smp_;
  TlbFlushCosts costs_;
  bool pv_;
  std::uint64_t tlb_gen_ = 0;  // mm->context.tlb_gen
  std::vector<CpuTlb> cpus_;
  TlbFlushStats stats_;
  std::array<Tsc, TlbFlushStats::kWaitBands - 1> band_edges_{};  // kWaitBandEdgesNs in cycles
  // A finished wait of `w` cycles, `off_cpu` of them off the initiator's pCPU.
  void count_wait(Tsc w, Tsc off_cpu);
};

}  // namespace kvmsim
