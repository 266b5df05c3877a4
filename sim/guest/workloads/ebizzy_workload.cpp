// workload.type: ebizzy — ebizzy in every VM (one process per VM, its
// threads on the VM's vCPUs). search_mem() of ebizzy 0.3, per record: pick
// one of the `chunks` (10) source chunks, alloc_mem(chunk_size: 512 KiB),
// memcpy() into it (its page faults), bsearch() a random key, free_mem().
// How the copy is allocated and freed is ebizzy.alloc:
//  - "malloc" (-M, "never use mmap": mallopt(M_MMAP_MAX, 0)): malloc() and
//    free() in the thread's glibc arena. Freeing the 512 KiB copy merges it
//    into the top chunk and heap_trim() -> shrink_heap() gives it back with
//    madvise(MADV_DONTNEED), which v4.16 runs under down_read(mmap_sem)
//    (madvise_need_mmap_write() is false for it): zap_page_range() ->
//    tlb_finish_mmu() -> flush_tlb_mm_range(). The next malloc() reuses the
//    top (heap already mprotect'ed), and its page faults take mmap_sem for
//    read. So -M takes mmap_sem only shared: it never blocks.
//  - "mmap" (-m): mmap() and munmap() of the copy, each under
//    down_write(mmap_sem); munmap()'s do_munmap() -> unmap_region() ->
//    tlb_finish_mmu() flushes with the write lock held, and the faults of
//    the next copies (down_read) and the other threads' mmap()/munmap()
//    wait for it (sim/guest/kernel/rwsem.h: spin on a running writer, sleep when
//    its vCPU is preempted or readers hold it).
// The remote flush goes to every other CPU that runs a thread of the
// process (sim/guest/kernel/tlb_flush.h), natively or paravirtually
// (guest.pv_tlb_flush). ebizzy prints records/s: the records of all threads
// over the run (sim.max_simulated_s, ebizzy -S).
//
// What a record costs apart from the flush and the lock is one
// cost.ebizzy.record (the page faults, copy and search, in the guest), one
// cost.ebizzy.munmap (zap_page_range() and the page freeing around the
// flush) and, with -m, one cost.ebizzy.mmap. The faults of one record take
// mmap_sem for read once, at the start of the copy (the first fault waits
// for a writer; the read holds of the single faults are short enough to
// leave out). The threads are SCHED_NORMAL: with more threads than vCPUs
// (ebizzy's default -t is 2 x online CPUs) the guest's CFS time-slices them
// at the tick. Not modelled: guest load balancing (thread i stays on vCPU
// i mod vm.vcpus, which is where an even balance puts them).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "sim/core/metric_decl.h"
#include "sim/guest/kernel/guest_smp.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/guest/kernel/rwsem.h"
#include "sim/guest/kernel/spinlock.h"
#include "sim/guest/kernel/tlb_flush.h"
#include "sim/guest/workloads/linux_workload.h"

namespace kvmsim {
namespace {

// clang-format off
void declare_ebizzy_params(ParamRegistry& r) {
  r.declare({"ebizzy.threads", ParamType::Int, "0", "count", 0, 256, {},
             "ebizzy -t: threads per VM, thread i on vCPU i mod vm.vcpus, SCHED_NORMAL (the "
             "guest's CFS time-slices threads that share a vCPU); 0 = ebizzy's default, "
             "2 x online CPUs (2 x vm.vcpus)."});
  r.declare({"ebizzy.start_spread_us", ParamType::Int, "0", "us", 0, 1e8, {},
             "Each thread first sleeps (nanosleep) a uniform random time in [0, this), from its "
             "vCPU's guest random stream, so that the vCPU threads' host time slices do not "
             "start in lock step on every pCPU at t = 0 (a host that has run for a while has no "
             "common phase); 0 = all threads start at once. Counted in the run's time."});
  r.declare({"cost.ebizzy.record", ParamType::Dist, "750us", "time", {}, {}, {},
             "One ebizzy record without its munmap: mmap() of a chunk, the page faults of "
             "touching it, memcpy() and the search (ebizzy defaults: 512 KiB chunks). The "
             "platform file says which figure sets it."});
  r.declare({"ebizzy.alloc", ParamType::String, "malloc", "", {}, {}, {"malloc", "mmap"},
             "How a record allocates and frees its copy: malloc = ebizzy -M (glibc arena; "
             "free() trims with madvise(MADV_DONTNEED) under down_read(mmap_sem)), mmap = "
             "ebizzy -m (mmap()/munmap(), each under down_write(mmap_sem))."});
  r.declare({"cost.ebizzy.mmap", ParamType::Dist, "2us", "time", {}, {}, {},
             "ebizzy -m: mmap() of the 512 KiB anonymous copy under the write lock: "
             "get_unmapped_area(), vma allocation and linking, no population (estimate)."});
  r.declare({"cost.ebizzy.munmap", ParamType::Dist, "10us", "time", {}, {}, {},
             "munmap() of the copy apart from the TLB flush: zap_page_range() of its 128 "
             "pages and freeing them (estimate)."});
  r.declare({"ebizzy.lock_sections", ParamType::Int, "13", "count", 0, 1000, {},
             "Per record, kernel sections under the guest's node-wide pgdat->lru_lock "
             "(spin_lock_irqsave; sim/guest/kernel/spinlock.h, native or PV per guest.pv_spinlock). "
             "v4.16 with 4 KiB pages: the 128 faults of the 512 KiB copy add their pages to the "
             "LRU through the per-CPU pagevec of 15 (__pagevec_lru_add: 128 / 15 = 8.5 takes) "
             "and the free's release_pages() takes it once per SWAP_CLUSTER_MAX (32) pages of "
             "each mmu_gather batch (8 + 120 pages: 5 takes): 13. zone->lock is left out: the "
             "per-CPU page lists (batch 31, high 186) absorb the 128 allocations and frees of a "
             "record in steady state. Carved out of cost.ebizzy.record (user chunk, section, "
             "...), so the work per record is unchanged; 0 = none."});
  r.declare({"cost.ebizzy.lock_hold", ParamType::Dist, "1.2us", "time", {}, {}, {},
             "One ebizzy.lock_sections section, lru_lock held: list moves and LRU statistics "
             "for 15-32 pages at ~40-80 ns each (estimate for a one-socket host, not measured; "
             "T4's native rows move with it, its PV rows do not). A platform file may fit it: "
             "skylake-sp-gold-6148.yaml sets 3.25 us from a lock-bound 1-VM rate (README "
             "\"PV qspinlock\")."});
}
// clang-format on

struct EbizzyVmStats {
  std::uint64_t records = 0;
};

// One ebizzy thread: [mmap,] faults, record, munmap/madvise (with its flush), ...
class EbizzyThread : public GuestTask, public GuestHrtimer {
 public:
  EbizzyThread(int cpu, GuestMm* mm, GuestRwsem* mmap_sem, bool use_mmap, Sampler record,
               Sampler munmap, Sampler mmap, EbizzyVmStats* st, std::uint64_t spread_ns,
               GuestSpinlock* lock, int sections, Sampler hold)
      : GuestTask("ebizzy"),
        mm_(mm),
        sem_(mmap_sem),
        use_mmap_(use_mmap),
        record_(std::move(record)),
        munmap_(std::move(munmap)),
        mmap_(std::move(mmap)),
        st_(st),
        spread_ns_(spread_ns),
        lock_(lock),
        sections_(sections),
        hold_(std::move(hold)) {
    bound_cpu = cpu;
    policy = Policy::Normal;
  }

  // The start sleep's hrtimer (hrtimer_wakeup()).
  Tsc fn(GuestKernel& k, Tsc /*now*/) override {
    phase_ = first();
    k.wake_up(this);
    return k.costs().hrtimer_wakeup(k.rng());
  }

  [[nodiscard]] std::uint64_t records() const { return records_; }

  GuestStep run(GuestKernel& k, Tsc now) override {
    switch (phase_) {
      case Phase::Start: {
        phase_ = first();
        if (spread_ns_ == 0) return run(k, now);
        const auto ns =
            static_cast<std::uint64_t>(k.rng().uniform() * static_cast<double>(spread_ns_));
        phase_ = Phase::Sleeping;
        k.hrtimer_start(this, k.guest_tsc(now) + k.ns_to_guest_tsc_ceil(ns) + 1);
        k.block_current();
        return k.step(now);
      }
      case Phase::Sleeping:
        k.block_current();
        return k.step(now);
      case Phase::MmapLock:  // -m: mmap() -> vm_mmap_pgoff(): down_write_killable(mmap_sem)
        if (auto s = lock(k, true, Phase::Mmap, now)) return *s;
        return run(k, now);
      case Phase::Mmap:
        phase_ = Phase::MmapUnlock;
        return GuestStep::run(Stage::GuestSyscall, mmap_(k.rng()));
      case Phase::MmapUnlock:
        sem_->up_write(k, now);
        phase_ = Phase::FaultLock;
        return run(k, now);
      case Phase::FaultLock:  // the copy's first page fault: __do_page_fault() -> down_read()
        if (auto s = lock(k, false, Phase::Record, now)) return *s;
        return run(k, now);
      case Phase::Record:
        sem_->up_read(k, now);
        // User code of the mm: every flush requested for this CPU is done.
        mm_->check_before_user(k);
        phase_ = Phase::MunmapLock;
        if (sections_ == 0) return GuestStep::run(Stage::GuestUser, record_(k.rng()));
        {
          // ebizzy.lock_sections: the record as user chunks, each followed
          // by a spinlock section (the same work in all).
          const Tsc r = record_(k.rng());
          Tsc holds = 0;
          holds_.clear();
          for (int i = 0; i < sections_; ++i) {
            holds_.push_back(hold_(k.rng()));
            holds += holds_.back();
          }
          chunk_ = r > holds ? (r - holds) / static_cast<Tsc>(sections_) : 0;
          section_ = 0;
          phase_ = Phase::SectionLock;
          return GuestStep::run(Stage::GuestUser, chunk_);
        }
      case Phase::SectionLock:
        // spin_lock_irqsave() (zone->lock and lru_lock are taken with
        // interrupts off): held, or spin / halt until handed over.
        if (irqsave_ && !k.irqs_disabled()) k.local_irq_save();
        if (auto s = lock_->lock(k, this, now)) return *s;
        phase_ = Phase::SectionHold;
        return GuestStep::run(Stage::GuestSyscall, holds_[static_cast<std::size_t>(section_)]);
      case Phase::SectionHold: {
        // spin_unlock_irqrestore(): a halted PV queue head is kicked
        // (KVM_HC_KICK_CPU) before interrupts come back on.
        const int kick = lock_->unlock(k, now);
        phase_ = Phase::SectionIrqRestore;
        if (kick >= 0) return GuestStep::vmcall(KVM_HC_KICK_CPU, static_cast<std::uint64_t>(kick));
        return run(k, now);
      }
      case Phase::SectionIrqRestore:
        phase_ = Phase::SectionDone;
        if (irqsave_) {
          // A vector that waited runs first (no APICv: after the
          // interrupt-window exit).
          if (auto s = k.local_irq_restore(now)) return *s;
          return k.step(now);
        }
        return run(k, now);
      case Phase::SectionDone:
        if (++section_ == sections_) {
          phase_ = Phase::MunmapLock;
          return run(k, now);
        }
        mm_->check_before_user(k);
        phase_ = Phase::SectionLock;
        return GuestStep::run(Stage::GuestUser, chunk_);
      case Phase::MunmapLock:
        // -m: munmap() -> vm_munmap(): down_write_killable(mmap_sem);
        // -M: free() -> shrink_heap() -> madvise(MADV_DONTNEED): down_read().
        if (auto s = lock(k, use_mmap_, Phase::Munmap, now)) return *s;
        return run(k, now);
      case Phase::Munmap:
        // do_munmap() / madvise_dontneed() -> zap_page_range() ->
        // tlb_finish_mmu() -> flush_tlb_mm_range(), with mmap_sem held.
        phase_ = Phase::Returned;
        mm_->flush_tlb_mm_range(k, {});
        return GuestStep::run(Stage::GuestSyscall, munmap_(k.rng()));
      case Phase::Returned:
        if (use_mmap_)
          sem_->up_write(k, now);
        else
          sem_->up_read(k, now);
        ++st_->records;
        ++records_;
        phase_ = first();
        return run(k, now);
      case Phase::Waiting:  // woken by rwsem_wake(): a reader holds it, a writer retries
        phase_ = sem_->woken(w_, now) ? after_lock_ : retry_;
        return run(k, now);
    }
    return GuestStep::idle(Stage::GuestUser);
  }

 private:
  enum class Phase : std::uint8_t {
    Start,
    Sleeping,
    MmapLock,
    Mmap,
    MmapUnlock,
    FaultLock,
    Record,
    SectionLock,
    SectionIrqRestore,
    SectionDone,
    SectionHold,
    MunmapLock,
    Munmap,
    Returned,
    Waiting
  };
  [[nodiscard]] Phase first() const { return use_mmap_ ? Phase::MmapLock : Phase::FaultLock; }
  // down_read()/down_write(): nullopt = held now (phase_ = next); else the
  // step to run (a stretch of optimistic spin, or the switch away to sleep).
  std::optional<GuestStep> lock(GuestKernel& k, bool write, Phase next, Tsc now) {
    const Phase self = phase_;
    const auto r = write ? sem_->down_write(k, this, w_, now) : sem_->down_read(k, this, w_, now);
    switch (r) {
      case GuestRwsem::Result::Acquired:
        phase_ = next;
        return std::nullopt;
      case GuestRwsem::Result::Spin:
        return sem_->spin_step();
      case GuestRwsem::Result::Sleep:
        phase_ = Phase::Waiting;
        after_lock_ = next;
        retry_ = self;
        return k.step(now);
    }
    return std::nullopt;
  }

  GuestMm* mm_;
  GuestRwsem* sem_;
  bool use_mmap_;
  Sampler record_, munmap_, mmap_;
  EbizzyVmStats* st_;
  std::uint64_t spread_ns_;
  GuestSpinlock* lock_;
  // zone->lock (rmqueue_bulk / free_pcppages_bulk under local_irq_save) and
  // pgdat->lru_lock (spin_lock_irqsave in pagevec_lru_move_fn and
  // release_pages) are both taken with interrupts off.
  static constexpr bool irqsave_ = true;
  int sections_;
  Sampler hold_;
  std::vector<Tsc> holds_;
  Tsc chunk_ = 0;
  int section_ = 0;
  Phase phase_ = Phase::Start;
  std::uint64_t records_ = 0;  // this thread's search_mem() count
  Phase after_lock_ = Phase::Record, retry_ = Phase::Record;
  RwsemWaiter w_;
};

class EbizzyWorkload : public LinuxWorkload {
 public:
  explicit EbizzyWorkload(const ParamSet& p)
      : threads_(static_cast<int>(p.i("ebizzy.threads"))),
        pv_(p.b("guest.pv_tlb_flush")),
        spread_ns_(static_cast<std::uint64_t>(p.i("ebizzy.start_spread_us")) * 1000),
        use_mmap_(p.s("ebizzy.alloc") == "mmap"),
        sections_(static_cast<int>(p.i("ebizzy.lock_sections"))) {}

  [[nodiscard]] bool open_ended() const override { return true; }  // sim.max_simulated_s

  void build_on(Machine& machine, std::vector<std::unique_ptr<GuestKernel>> guests) override {
    const auto& clk = machine.clock();
    const ParamSet& p = machine.params();
    const auto S = [&](const char* key) { return p.dist(key).bind(clk); };
    TlbFlushCosts tc;
    tc.flush_local = S("cost.guest.flush_tlb_local");
    tc.flush_func = S("cost.guest.flush_tlb_func");
    tc.pv_check = S("cost.guest.pv_flush_tlb_check");
    guests_ = std::move(guests);
    const int vcpus = machine.vcpus_per_vm();
    // One ebizzy process per VM: guests_ holds the VMs' kernels VM-major.
    for (std::size_t g = 0; g < guests_.size(); g += static_cast<std::size_t>(vcpus)) {
      // read_options(): threads = 2 * sysconf(_SC_NPROCESSORS_ONLN).
      const int n = threads_ ? threads_ : 2 * vcpus;
      GuestSmp& smp = *guests_.at(g)->smp();
      mms_.push_back(std::make_unique<GuestMm>(smp, tc, pv_, clk));
      sems_.push_back(std::make_unique<GuestRwsem>(
          S("cost.guest.rwsem_slowpath"),
          clk.ns_to_cycles(static_cast<std::uint64_t>(p.i("guest.rwsem_spin_recheck_ns"))),
          p.b("guest.vcpu_is_preempted")));
      stats_.push_back(std::make_unique<EbizzyVmStats>());
      SpinlockConfig lc;
      lc.pv = p.b("guest.pv_spinlock");
      lc.virt_tas = p.b("guest.virt_spin_lock");
      // pv_wait_early() asks vcpu_is_preempted(): the native `false` never says so.
      lc.wait_early_preempted =
          p.b("guest.pv_spinlock_wait_early_preempted") && p.b("guest.vcpu_is_preempted");
      lc.loop_cycles = static_cast<Tsc>(p.i("guest.pv_spinlock_loop_cycles"));
      locks_.push_back(std::make_unique<GuestSpinlock>(lc));
      for (int t = 0; t < n; ++t) {
        const int cpu = t % vcpus;
        mms_.back()->add_cpu(cpu);
        threads_list_.push_back(std::make_unique<EbizzyThread>(
            cpu, mms_.back().get(), sems_.back().get(), use_mmap_, S("cost.ebizzy.record"),
            S("cost.ebizzy.munmap"), S("cost.ebizzy.mmap"), stats_.back().get(), spread_ns_,
            locks_.back().get(), sections_, S("cost.ebizzy.lock_hold")));
        guests_.at(g + static_cast<std::size_t>(cpu))->add_task(threads_list_.back().get());
      }
    }
  }

  void report(Metrics& m, const TscClock& clk) const override {
    const double s = clk.to_s(static_cast<double>(now_tsc()));
    double sum = 0;
    TlbFlushStats all;
    RwsemStats sem_all;
    SpinlockStats lock_all;
    for (std::size_t i = 0; i < stats_.size(); ++i) {
      const double r = s > 0 ? static_cast<double>(stats_[i]->records) / s : 0;
      m[fmt::format("ebizzy.vm{}.records_per_s", i)] = r;
      m[fmt::format("ebizzy.vm{}.records", i)] = static_cast<double>(stats_[i]->records);
      GuestMm::report_stats(mms_[i]->stats(), clk, m, fmt::format("tlb.vm{}.", i));
      all += mms_[i]->stats();
      sem_all += sems_[i]->stats();
      lock_all += locks_[i]->stats_at(now_tsc());
      sum += r;
    }
    m["ebizzy.records_per_s"] = stats_.empty() ? 0 : sum / static_cast<double>(stats_.size());
    // How evenly the threads shared their vCPUs: the fewest and most records
    // one thread made, and the thread count.
    if (!threads_list_.empty()) {
      std::uint64_t lo = ~std::uint64_t{0};
      std::uint64_t hi = 0;
      for (const auto& t : threads_list_) {
        lo = std::min(lo, t->records());
        hi = std::max(hi, t->records());
      }
      m["ebizzy.threads"] = static_cast<double>(threads_list_.size());
      m["ebizzy.thread_records_min"] = static_cast<double>(lo);
      m["ebizzy.thread_records_max"] = static_cast<double>(hi);
    }
    GuestMm::report_stats(all, clk, m, "tlb.");
    // mm->mmap_sem of the VMs' ebizzy processes, summed.
    GuestRwsem::report_stats(sem_all, clk, m, "mmap_sem.");
    // ebizzy.lock_sections: the guest-wide spinlock of the VMs, summed
    // (queue_len_avg: nodes queued per lock, averaged over the run and the VMs;
    // last_drain_s: the latest time any of the VMs' queues drained).
    if (sections_ > 0)
      GuestSpinlock::report_stats(lock_all, clk, m, "ebizzy.lock.",
                                  now_tsc() * static_cast<Tsc>(locks_.size()));
    // The initiators' time in csd_lock_wait() for flush acknowledgements.
    m["ebizzy.flush_wait_s"] = clk.to_s(static_cast<double>(all.wait_cycles));
    // Its on-CPU part as a share of the guests' CPU time (the vCPU threads'
    // sum_exec_runtime): what perf top in the guest puts in
    // smp_call_function_many() (the IPI sends and the csd_lock_wait() spin).
    Tsc run = 0;
    for (const auto& g : guests_) run += g->vcpu().se().sum_exec_runtime;
    const Tsc on_cpu = all.wait_cycles - std::min(all.wait_cycles, all.wait_off_cpu_cycles);
    m["ebizzy.flush_wait_on_cpu_share"] =
        run ? static_cast<double>(on_cpu) / static_cast<double>(run) : 0.0;
    report_guest_smp(guests_, m);
  }

 private:
  int threads_;
  bool pv_;
  std::uint64_t spread_ns_;
  bool use_mmap_;
  int sections_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
  std::vector<std::unique_ptr<GuestMm>> mms_;
  std::vector<std::unique_ptr<GuestRwsem>> sems_;
  std::vector<std::unique_ptr<GuestSpinlock>> locks_;
  std::vector<std::unique_ptr<EbizzyVmStats>> stats_;
  std::vector<std::unique_ptr<EbizzyThread>> threads_list_;
};

}  // namespace

std::unique_ptr<LinuxWorkload> make_ebizzy_workload(const ParamSet& p) {
  return std::make_unique<EbizzyWorkload>(p);
}

KVMSIM_REGISTER_WORKLOAD(
    ebizzy,
    "ebizzy -M (or -m, ebizzy.alloc) in every VM: threads that allocate, touch, copy and free "
    "chunks, each free a remote TLB flush to the other vCPUs running the process (native or "
    "guest.pv_tlb_flush) under mmap_sem; "
    "runs for sim.max_simulated_s",
    declare_ebizzy_params, make_ebizzy_workload)

}  // namespace kvmsim

// The keys of the flush statistics (GuestMm::report_stats()), summed over the
// VMs (tlb.*) and per VM (tlb.vm<n>.*).
static std::vector<kvmsim::MetricDecl> ebizzy_tlb_metrics() {
  // clang-format off
  const std::vector<kvmsim::MetricDecl> keys = {
    {"flushes", "count", "ebizzy", "Remote TLB flushes by the ebizzy threads: flush_tlb_mm_range() calls with other CPUs of the process in the mask."},
    {"ipi_flushes", "count", "ebizzy", "Of tlb.flushes, those that sent IPIs and so waited in csd_lock_wait() (with PV flush, the others left every target to the host)."},
    {"targets", "count", "ebizzy", "Other CPUs in the flush masks, summed over tlb.flushes."},
    {"ipi_targets", "count", "ebizzy", "Of tlb.targets, those sent a CALL_FUNCTION IPI."},
    {"pv_targets", "count", "ebizzy", "Of tlb.targets, those left to the host: preempted vCPUs flagged KVM_VCPU_FLUSH_TLB (PV TLB flush)."},
    {"handler_flushes", "count", "ebizzy", "flush_tlb_func_remote() runs on the targets."},
    {"ipi_targets_not_running", "count", "ebizzy", "Of tlb.ipi_targets, those whose vCPU thread was not in guest mode on its pCPU when the flush started (preempted or blocked on the host)."},
    {"flushes_waiting_on_not_running", "count", "ebizzy", "Flushes with one or more targets counted in tlb.ipi_targets_not_running."},
    {"wait_s", "s", "ebizzy", "Initiators' time from the first IPI to the return of the call (csd_lock_wait())."},
    {"wait_not_running_s", "s", "ebizzy", "Of tlb.wait_s, the waits of the flushes with a target not running."},
    {"wait_off_cpu_s", "s", "ebizzy", "Of tlb.wait_s, time the initiator's own vCPU thread was off its pCPU (run delay)."},
    {"wait_avg_us", "us", "ebizzy", "Mean wait over tlb.ipi_flushes (the flushes that sent IPIs)."},
    {"wait_max_us", "us", "ebizzy", "Longest wait."},
    {"wait_band.<band>.flushes", "count", "ebizzy", "Flushes whose wait fell in band `<band>`: lt10us, lt100us, lt1ms, lt10ms (below 10 us, 100 us, 1 ms, 10 ms) or ge10ms."},
    {"wait_band.<band>.s", "s", "ebizzy", "Total wait of the flushes in band `<band>`."},
    {"wait_band.<band>.on_cpu_s", "s", "ebizzy", "Of `tlb.wait_band.<band>.s`, time the initiator spent on its pCPU (spinning in csd_lock_wait(), the IPI sends, PAUSE exits)."},
  };
  // clang-format on
  std::vector<kvmsim::MetricDecl> out;
  for (const auto& k : keys) {
    out.push_back({"tlb." + k.pattern, k.unit, k.emitter, k.doc + " All VMs."});
    out.push_back({"tlb.vm<n>." + k.pattern, k.unit, k.emitter,
                   "As `tlb." + k.pattern + "`, for VM `<n>` alone."});
  }
  return out;
}
KVMSIM_DECLARE_METRICS(ebizzy_tlb, ebizzy_tlb_metrics());

// clang-format off
KVMSIM_DECLARE_METRICS(ebizzy, {
    {"ebizzy.records_per_s", "per_s", "ebizzy", "What ebizzy prints: records per second of simulated time, all threads of a VM, averaged over the VMs."},
    {"ebizzy.vm<n>.records_per_s", "per_s", "ebizzy", "Records per second of VM `<n>`'s threads."},
    {"ebizzy.vm<n>.records", "count", "ebizzy", "Records VM `<n>`'s threads completed."},
    {"ebizzy.threads", "count", "ebizzy", "ebizzy threads, all VMs."},
    {"ebizzy.thread_records_min", "count", "ebizzy", "Fewest records one thread made (how evenly the threads shared their vCPUs)."},
    {"ebizzy.thread_records_max", "count", "ebizzy", "Most records one thread made."},
    {"ebizzy.flush_wait_s", "s", "ebizzy", "Initiators' time in csd_lock_wait() for flush acknowledgements (tlb.wait_s)."},
    {"ebizzy.flush_wait_on_cpu_share", "fraction", "ebizzy", "The on-CPU part of ebizzy.flush_wait_s as a share of the vCPU threads' CPU time: what perf top in the guest puts in smp_call_function_many()."},
    {"mmap_sem.read_acquires", "count", "ebizzy", "down_read() acquisitions of the ebizzy processes' mmap_sem, all VMs."},
    {"mmap_sem.write_acquires", "count", "ebizzy", "down_write() acquisitions."},
    {"mmap_sem.read_contended", "count", "ebizzy", "down_read() calls whose fast path failed."},
    {"mmap_sem.write_contended", "count", "ebizzy", "down_write() calls whose fast path failed."},
    {"mmap_sem.write_spins", "count", "ebizzy", "Contended down_write() calls that spun on the owner (rwsem_optimistic_spin())."},
    {"mmap_sem.spin_acquires", "count", "ebizzy", "Of mmap_sem.write_spins, those that got the lock while spinning."},
    {"mmap_sem.read_sleeps", "count", "ebizzy", "Readers that queued and slept."},
    {"mmap_sem.write_sleeps", "count", "ebizzy", "Writers that queued and slept."},
    {"mmap_sem.sleeps_owner_preempted", "count", "ebizzy", "Writer sleeps because the owner was not spinnable: its vCPU preempted, it off its CPU, or need_resched here."},
    {"mmap_sem.sleeps_reader_owned", "count", "ebizzy", "Writer sleeps because readers held the lock (not spinnable)."},
    {"mmap_sem.wakeups", "count", "ebizzy", "Waiters woken by rwsem_wake()."},
    {"mmap_sem.wait_s", "s", "ebizzy", "Contended acquisitions' time from the first try to holding the lock."},
    {"mmap_sem.spin_s", "s", "ebizzy", "Of mmap_sem.wait_s, time spent spinning."},
    {"mmap_sem.hold_write_s", "s", "ebizzy", "Time the write lock was held."},
    {"ebizzy.lock.acquires", "count", "ebizzy", "spin_lock() acquisitions of the guest-wide spinlock (ebizzy.lock_sections), all VMs. The ebizzy.lock keys only with ebizzy.lock_sections."},
    {"ebizzy.lock.contended", "count", "ebizzy", "Acquisitions that found the lock held or CPUs waiting (queued, or spun in virt_spin_lock())."},
    {"ebizzy.lock.hold_preempted", "count", "ebizzy", "Holds during which the holder's vCPU thread was off its pCPU (lock-holder preemption)."},
    {"ebizzy.lock.steals", "count", "ebizzy", "PV: acquisitions that took the free lock ahead of a queue whose head was not spinning (lock stealing)."},
    {"ebizzy.lock.pv_wait_node", "count", "ebizzy", "PV: halts (pv_wait()) of queued CPUs behind the head."},
    {"ebizzy.lock.pv_wait_early", "count", "ebizzy", "Of ebizzy.lock.pv_wait_node, halts pv_wait_early() brought forward (the predecessor was halted, or preempted)."},
    {"ebizzy.lock.pv_wait_early_preempted", "count", "ebizzy", "Of ebizzy.lock.pv_wait_early, those because the predecessor's vCPU was preempted while its node was not halted: what vcpu_is_preempted() added to pv_wait_early() (v4.11 to v5.3)."},
    {"ebizzy.lock.pv_wait_head", "count", "ebizzy", "PV: halts of the queue head."},
    {"ebizzy.lock.pv_kick", "count", "ebizzy", "PV: unlocks that kicked a halted head (pv_kick(), KVM_HC_KICK_CPU)."},
    {"ebizzy.lock.wait_s", "s", "ebizzy", "Contended acquisitions' time from the first try to holding the lock."},
    {"ebizzy.lock.wait_off_cpu_s", "s", "ebizzy", "Of ebizzy.lock.wait_s, time the waiter's own vCPU thread was off its pCPU."},
    {"ebizzy.lock.hold_s", "s", "ebizzy", "Time the lock was held."},
    {"ebizzy.lock.handoffs", "count", "ebizzy", "Unlocks that handed the lock to a spinning queue head."},
    {"ebizzy.lock.handoff_s", "s", "ebizzy", "Time from the ebizzy.lock.handoffs until the head's CPU saw the lock free."},
    {"ebizzy.lock.handoff_off_cpu_s", "s", "ebizzy", "Of ebizzy.lock.handoff_s, time the head's vCPU thread was off its pCPU."},
    {"ebizzy.lock.free_halted_head_s", "s", "ebizzy", "PV: time the lock was free while the queue head was halted or being kicked (open to steals)."},
    {"ebizzy.lock.queue_drains", "count", "ebizzy", "Times the MCS queue drained (its last node left)."},
    {"ebizzy.lock.queue_len_avg", "count", "ebizzy", "Nodes queued, averaged over the run and the VMs' locks."},
    {"ebizzy.lock.last_drain_s", "s", "ebizzy", "Simulated time at which any VM's queue last drained (0: never)."},
});
// clang-format on
