// workload.type: ebizzy — ebizzy in every VM (one process per VM, its
// threads on the VM's vCPUs). search_mem() of ebizzy 0.3, per record:
// alloc_mem(chunk_size: 512 KiB = 128 pages), memcpy() a source chunk into
// it, bsearch() a key, free_mem(). Each worker thread has its own glibc
// arena (arena_get2() makes a new one while there are fewer than 8 x cores),
// so its copy lives in its own mmap'ed heap with its own PTE page. How the
// copy is allocated and freed is ebizzy.alloc:
//  - "malloc" (-M, "never use mmap": mallopt(M_MMAP_MAX, 0), which also
//    freezes the dynamic thresholds): free() merges the copy into the top
//    chunk and heap_trim() -> shrink_heap() gives back all but M_TOP_PAD
//    (ebizzy.malloc_top_pad_kib) with madvise(MADV_DONTNEED), under
//    down_read(mmap_sem) (madvise_need_mmap_write() is false for it). The
//    next malloc() regrows the heap without a syscall (within
//    mprotect_size), and the memcpy() re-faults the trimmed pages: 96 of
//    128 by default. So -M takes mmap_sem only shared: it never blocks.
//  - "mmap" (-m): mmap() and munmap() of the copy, each under
//    down_write(mmap_sem); all 128 pages fault, each fault under down_read.
// The kernel path of one record (v4.16, 4 KiB pages), as the thread runs it:
//  1. -m: mmap() under the write lock (cost.ebizzy.mmap).
//  2. memcpy(): user copy of the resident pages, then per group of faults
//     (-M: up to the per-CPU LRU pagevec's 15 free slots, no writer to wait
//     for; -m: one fault): __do_page_fault() under down_read(mmap_sem) -> do_anonymous_page() (page
//     from the per-CPU lists, clear_page(), memcg charge, rmap, PTE; no exit under EPT):
//     cost.guest.page_fault_anon per page, in kernel mode; a full pagevec is drained by
//     __pagevec_lru_add() under pgdat->lru_lock (spin_lock_irqsave); then the user copy of those
//     pages. bsearch().
//  3. free(): madvise(MADV_DONTNEED) -> zap_page_range() (-M) or munmap()
//     -> unmap_region() (-m): lru_add_drain() of this CPU's pagevec (one
//     lru_lock section if it holds pages), the PTE zap (cost.ebizzy.munmap),
//     on v4.14-v4.18 guests zap_page_range()'s extra flush_tlb_range()
//     (guest.zap_page_range_flush_vma; -M only), tlb_finish_mmu()'s
//     flush_tlb_mm_range(), then tlb_flush_mmu_free() -> release_pages()
//     per mmu_gather batch (8 inline pages, then the rest), lru_lock taken
//     once per SWAP_CLUSTER_MAX (32) pages. Both flushes are full (more than
//     tlb_single_page_flush_ceiling, 33 pages) and go to every other CPU of
//     the process (sim/guest/kernel/tlb_flush.h), natively or
//     paravirtually (guest.pv_tlb_flush).
// -M per record: 96 faults, 7 + 4 = 11 lru_lock sections, 2 flushes (v4.16).
// zone->lock is left out: the per-CPU page lists (batch 31, high 186)
// absorb a record's allocations and frees in steady state. The PTE lock is
// the thread's own (uncontended) and is left out too.
//
// ebizzy prints records/s: the records of all threads over the run
// (sim.max_simulated_s, ebizzy -S). The threads are SCHED_NORMAL: with more
// threads than vCPUs (ebizzy's default -t is 2 x online CPUs) the guest's
// CFS time-slices them at the tick. Not modelled: guest load balancing
// (thread i stays on vCPU i mod vm.vcpus, which is where an even balance
// puts them).
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

// ebizzy 0.3 read_options(): chunk_size = record_size (8) * 64 * 1024.
constexpr int kChunkPages = 512 / 4;
// include/linux/pagevec.h PAGEVEC_SIZE (v4.16): the per-CPU lru_add_pvec.
constexpr int kPagevecSize = 15;
// release_pages() drops lru_lock every SWAP_CLUSTER_MAX pages.
constexpr int kSwapClusterMax = 32;
// asm-generic/tlb.h MMU_GATHER_BUNDLE: pages in the mmu_gather's inline batch.
constexpr int kMmuGatherBundle = 8;

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
             "One ebizzy record's work apart from the free (madvise or munmap) and the lru_lock "
             "sections: malloc(), memcpy() of the 512 KiB chunk with its page faults, bsearch(). "
             "The faults' part (the re-faulted pages x cost.guest.page_fault_anon) runs in guest "
             "kernel mode, the rest in user mode. The platform file says which figure sets it."});
  r.declare({"cost.guest.page_fault_anon", ParamType::Dist, "1us", "time", {}, {}, {},
             "One anonymous write page fault of a present VMA in the guest (__do_page_fault() -> "
             "do_anonymous_page(): a page from the per-CPU lists, clear_page() of 4 KiB, memcg "
             "charge, rmap, set_pte_at(); no exit with EPT). Part of cost.ebizzy.record, in "
             "kernel mode. Default: an estimate (clear_page() at ~10 GB/s ~0.4 us, the rest "
             "~0.6 us); the platform file says which figure sets it."});
  r.declare({"ebizzy.alloc", ParamType::String, "malloc", "", {}, {}, {"malloc", "mmap"},
             "How a record allocates and frees its copy: malloc = ebizzy -M (glibc arena; "
             "free() trims with madvise(MADV_DONTNEED) under down_read(mmap_sem)), mmap = "
             "ebizzy -m (mmap()/munmap(), each under down_write(mmap_sem))."});
  r.declare({"ebizzy.malloc_top_pad_kib", ParamType::Int, "128", "KiB", 0, 512, {},
             "ebizzy -M: glibc's M_TOP_PAD (DEFAULT_TOP_PAD 128 KiB; MALLOC_TOP_PAD_ in the "
             "environment): heap_trim() keeps this much of the freed 512 KiB copy resident, so "
             "a record re-faults (512 - this) / 4 pages (96 by default; none and no madvise() at "
             "512). Not used with -m (all 128 pages of each new mapping fault)."});
  r.declare({"cost.ebizzy.mmap", ParamType::Dist, "2us", "time", {}, {}, {},
             "ebizzy -m: mmap() of the 512 KiB anonymous copy under the write lock: "
             "get_unmapped_area(), vma allocation and linking, no population (estimate)."});
  r.declare({"cost.ebizzy.munmap", ParamType::Dist, "10us", "time", {}, {}, {},
             "The free's syscall apart from its TLB flushes and lru_lock sections: "
             "madvise(MADV_DONTNEED) -> zap_page_range() of the trimmed pages (-M) or munmap() "
             "of the copy (-m), and freeing the pages to the per-CPU lists (estimate)."});
  r.declare({"ebizzy.lru_lock", ParamType::Bool, "true", "bool", {}, {}, {},
             "The record's sections under the guest's node-wide pgdat->lru_lock "
             "(spin_lock_irqsave; sim/guest/kernel/spinlock.h, native or PV per "
             "guest.pv_spinlock), where v4.16 takes them: a drain of the per-CPU pagevec of 15 "
             "pages (__pagevec_lru_add() while faulting, lru_add_drain() at the free) and "
             "release_pages() once per 32 pages of each mmu_gather batch; -M: 11 per record "
             "(7 + 4). false = none (an A/B switch)."});
  r.declare({"cost.ebizzy.lock_hold", ParamType::Dist, "1.2us", "time", {}, {}, {},
             "One lru_lock section (ebizzy.lru_lock), lock held: list moves and LRU statistics "
             "for up to 15-32 pages at ~40-80 ns each (estimate for a one-socket host, not "
             "measured). A platform file may set it: skylake-sp-gold-6148.yaml says from which "
             "figure."});
}
// clang-format on

struct EbizzyVmStats {
  std::uint64_t records = 0;
  std::uint64_t page_faults = 0;  // do_anonymous_page() runs of the copies
};

// What a thread needs from its VM and the platform.
struct EbizzyThreadSetup {
  GuestMm* mm = nullptr;
  GuestRwsem* mmap_sem = nullptr;
  GuestSpinlock* lru_lock = nullptr;  // nullptr: no lru_lock sections
  int* pagevec = nullptr;             // this vCPU's lru_add_pvec fill (pages)
  EbizzyVmStats* stats = nullptr;
  bool use_mmap = false;
  bool flush_vma = false;  // zap_page_range()'s extra flush_tlb_range() (-M)
  int faults = 0;          // pages faulted (and freed) per record
  std::uint64_t spread_ns = 0;
  Sampler record, fault, munmap, mmap, hold;
};

// One ebizzy thread: [mmap,] the memcpy with its faults, the free with its
// flushes, ... (the record's kernel path: the header comment).
class EbizzyThread : public GuestTask, public GuestHrtimer {
 public:
  EbizzyThread(int cpu, EbizzyThreadSetup s)
      : GuestTask("ebizzy"), s_(std::move(s)), release_sections_(release_sections(s_.faults)) {
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
        if (s_.spread_ns == 0) return run(k, now);
        const auto ns =
            static_cast<std::uint64_t>(k.rng().uniform() * static_cast<double>(s_.spread_ns));
        phase_ = Phase::Sleeping;
        k.hrtimer_start(this, k.guest_tsc(now) + k.ns_to_guest_tsc_ceil(ns) + 1);
        k.block_current();
        return k.step(now);
      }
      case Phase::Sleeping:
        k.block_current();
        return k.step(now);
      case Phase::MmapLock:  // -m: mmap() -> vm_mmap_pgoff(): down_write_killable(mmap_sem)
        if (auto st = lock(k, true, Phase::Mmap, now)) return *st;
        return run(k, now);
      case Phase::Mmap:
        phase_ = Phase::MmapUnlock;
        return GuestStep::run(Stage::GuestSyscall, s_.mmap(k.rng()));
      case Phase::MmapUnlock:
        s_.mmap_sem->up_write(k, now);
        phase_ = Phase::Copy;
        return run(k, now);
      case Phase::Copy: {
        // malloc() and the memcpy() of the pages that stay resident: user.
        const Tsc r = s_.record(k.rng());
        fault_cost_ = s_.fault(k.rng());
        const Tsc faults = fault_cost_ * static_cast<Tsc>(s_.faults);
        per_page_ = r > faults ? (r - faults) / static_cast<Tsc>(kChunkPages) : 0;
        left_ = s_.faults;
        phase_ = Phase::FaultLock;
        s_.mm->check_before_user(k);
        return GuestStep::run(Stage::GuestUser,
                              per_page_ * static_cast<Tsc>(kChunkPages - s_.faults));
      }
      case Phase::FaultLock:  // __do_page_fault(): down_read_trylock(), else down_read()
        if (left_ == 0) {
          // -M with nothing to trim (M_TOP_PAD covers the copy): heap_trim()
          // makes no syscall.
          if (!s_.use_mmap && s_.faults == 0) return finish_record(k, now);
          phase_ = Phase::FreeLock;
          return run(k, now);
        }
        if (auto st = lock(k, false, Phase::Fault, now)) return *st;
        return run(k, now);
      case Phase::Fault: {
        // The faults up to the pagevec's next drain: do_anonymous_page().
        // With -m one at a time: each fault takes mmap_sem for read itself,
        // and a queued mmap()/munmap() writer waits for one fault only.
        group_ = s_.use_mmap ? 1 : std::min(left_, std::max(1, kPagevecSize - *s_.pagevec));
        left_ -= group_;
        s_.stats->page_faults += static_cast<std::uint64_t>(group_);
        phase_ = Phase::FaultDrain;
        return GuestStep::run(Stage::GuestSyscall, fault_cost_ * static_cast<Tsc>(group_));
      }
      case Phase::FaultDrain:
        // lru_cache_add_active_or_unevictable() -> __lru_cache_add(): a full
        // pagevec goes to the LRU under lru_lock (__pagevec_lru_add()).
        *s_.pagevec += group_;
        sections_ = 0;
        while (*s_.pagevec >= kPagevecSize) {
          *s_.pagevec -= kPagevecSize;
          ++sections_;
        }
        return sections(k, Phase::FaultUnlock, now);
      case Phase::FaultUnlock:
        s_.mmap_sem->up_read(k, now);
        phase_ = Phase::FaultLock;
        // The memcpy() of the pages just faulted in: user.
        s_.mm->check_before_user(k);
        return GuestStep::run(Stage::GuestUser, per_page_ * static_cast<Tsc>(group_));
      case Phase::FreeLock:
        // -m: munmap() -> vm_munmap(): down_write_killable(mmap_sem);
        // -M: free() -> shrink_heap() -> madvise(MADV_DONTNEED): down_read().
        if (auto st = lock(k, s_.use_mmap, Phase::FreeDrain, now)) return *st;
        return run(k, now);
      case Phase::FreeDrain:
        // zap_page_range() / unmap_region(): lru_add_drain() of this CPU's
        // pagevec.
        sections_ = *s_.pagevec > 0 ? 1 : 0;
        *s_.pagevec = 0;
        return sections(k, Phase::Zap, now);
      case Phase::Zap:
        // The PTE zap, then (v4.14-v4.18, madvise) flush_tlb_range() of the
        // VMA and tlb_finish_mmu()'s flush_tlb_mm_range(): kernel work that
        // runs after this step, in that order.
        // The second flush starts once the first has returned (its IPIs
        // answered), as the kernel's do.
        phase_ = Phase::Release;
        if (s_.flush_vma && !s_.use_mmap) {
          GuestMm* mm = s_.mm;
          mm->flush_tlb_mm_range(
              k, [mm](GuestKernel& self, Tsc /*at*/) { mm->flush_tlb_mm_range(self, {}); });
        } else {
          s_.mm->flush_tlb_mm_range(k, {});
        }
        return GuestStep::run(Stage::GuestSyscall, s_.munmap(k.rng()));
      case Phase::Release:
        sections_ = release_sections_;
        return sections(k, Phase::FreeUnlock, now);
      case Phase::FreeUnlock:
        if (s_.use_mmap)
          s_.mmap_sem->up_write(k, now);
        else
          s_.mmap_sem->up_read(k, now);
        return finish_record(k, now);
      case Phase::SectionLock:
        // spin_lock_irqsave() (lru_lock is taken with interrupts off): held,
        // or spin / halt until handed over.
        if (!k.irqs_disabled()) k.local_irq_save();
        if (auto st = s_.lru_lock->lock(k, this, now)) return *st;
        phase_ = Phase::SectionHold;
        return GuestStep::run(Stage::GuestSyscall, s_.hold(k.rng()));
      case Phase::SectionHold: {
        // spin_unlock_irqrestore(): a halted PV queue head is kicked
        // (KVM_HC_KICK_CPU) before interrupts come back on.
        const int kick = s_.lru_lock->unlock(k, now);
        phase_ = Phase::SectionIrqRestore;
        if (kick >= 0) return GuestStep::vmcall(KVM_HC_KICK_CPU, static_cast<std::uint64_t>(kick));
        return run(k, now);
      }
      case Phase::SectionIrqRestore:
        phase_ = --sections_ > 0 ? Phase::SectionLock : after_sections_;
        // A vector that waited runs first (no APICv: after the
        // interrupt-window exit).
        if (auto st = k.local_irq_restore(now)) return *st;
        return k.step(now);
      case Phase::Waiting:  // woken by rwsem_wake(): a reader holds it, a writer retries
        phase_ = s_.mmap_sem->woken(w_, now) ? after_lock_ : retry_;
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
    Copy,
    FaultLock,
    Fault,
    FaultDrain,
    FaultUnlock,
    FreeLock,
    FreeDrain,
    Zap,
    Release,
    FreeUnlock,
    SectionLock,
    SectionHold,
    SectionIrqRestore,
    Waiting
  };
  [[nodiscard]] Phase first() const { return s_.use_mmap ? Phase::MmapLock : Phase::Copy; }
  // search_mem()'s loop: one more record, then the next.
  GuestStep finish_record(GuestKernel& k, Tsc now) {
    ++s_.stats->records;
    ++records_;
    phase_ = first();
    return run(k, now);
  }
  // sections_ lru_lock sections, then `next` (none: `next` now).
  GuestStep sections(GuestKernel& k, Phase next, Tsc now) {
    if (!s_.lru_lock) sections_ = 0;
    after_sections_ = next;
    phase_ = sections_ > 0 ? Phase::SectionLock : next;
    return run(k, now);
  }
  // down_read()/down_write(): nullopt = held now (phase_ = next); else the
  // step to run (a stretch of optimistic spin, or the switch away to sleep).
  std::optional<GuestStep> lock(GuestKernel& k, bool write, Phase next, Tsc now) {
    const Phase self = phase_;
    const auto r = write ? s_.mmap_sem->down_write(k, this, w_, now)
                         : s_.mmap_sem->down_read(k, this, w_, now);
    switch (r) {
      case GuestRwsem::Result::Acquired:
        phase_ = next;
        return std::nullopt;
      case GuestRwsem::Result::Spin:
        return s_.mmap_sem->spin_step();
      case GuestRwsem::Result::Sleep:
        phase_ = Phase::Waiting;
        after_lock_ = next;
        retry_ = self;
        return k.step(now);
    }
    return std::nullopt;
  }

  // tlb_flush_mmu_free() -> release_pages() per mmu_gather batch (the
  // inline bundle, then the rest) of the `freed` pages (the faulted ones:
  // 96 with -M, 128 with -m): lru_lock dropped every 32 pages.
  static int release_sections(int freed) {
    const auto batches = [](int n) { return (n + kSwapClusterMax - 1) / kSwapClusterMax; };
    const int first_batch = std::min(freed, kMmuGatherBundle);
    return batches(first_batch) + batches(freed - first_batch);
  }

  EbizzyThreadSetup s_;
  int release_sections_;  // lru_lock sections of the free's release_pages()
  Phase phase_ = Phase::Start;
  Tsc fault_cost_ = 0;  // this record's cost.guest.page_fault_anon
  Tsc per_page_ = 0;    // this record's user work per page of the copy
  int left_ = 0;        // faults of this record still to take
  int group_ = 0;       // faults of the group in flight
  int sections_ = 0;    // lru_lock sections still to take
  Phase after_sections_ = Phase::Start;
  std::uint64_t records_ = 0;  // this thread's search_mem() count
  Phase after_lock_ = Phase::Copy, retry_ = Phase::Copy;
  RwsemWaiter w_;
};

class EbizzyWorkload : public LinuxWorkload {
 public:
  explicit EbizzyWorkload(const ParamSet& p)
      : threads_(static_cast<int>(p.i("ebizzy.threads"))),
        pv_(p.b("guest.pv_tlb_flush")),
        spread_ns_(static_cast<std::uint64_t>(p.i("ebizzy.start_spread_us")) * 1000),
        use_mmap_(p.s("ebizzy.alloc") == "mmap"),
        lru_lock_(p.b("ebizzy.lru_lock")),
        flush_vma_(p.b("guest.zap_page_range_flush_vma")),
        // -M: heap_trim() keeps M_TOP_PAD, the rest of the copy re-faults.
        faults_(use_mmap_ ? kChunkPages
                          : (512 - static_cast<int>(p.i("ebizzy.malloc_top_pad_kib"))) / 4) {}

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
      // Each vCPU's per-CPU lru_add_pvec, shared by the threads on it.
      pagevecs_.push_back(std::make_unique<std::vector<int>>(static_cast<std::size_t>(vcpus), 0));
      for (int t = 0; t < n; ++t) {
        const int cpu = t % vcpus;
        mms_.back()->add_cpu(cpu);
        EbizzyThreadSetup ts;
        ts.mm = mms_.back().get();
        ts.mmap_sem = sems_.back().get();
        ts.lru_lock = lru_lock_ ? locks_.back().get() : nullptr;
        ts.pagevec = &pagevecs_.back()->at(static_cast<std::size_t>(cpu));
        ts.stats = stats_.back().get();
        ts.use_mmap = use_mmap_;
        ts.flush_vma = flush_vma_;
        ts.faults = faults_;
        ts.spread_ns = spread_ns_;
        ts.record = S("cost.ebizzy.record");
        ts.fault = S("cost.guest.page_fault_anon");
        ts.munmap = S("cost.ebizzy.munmap");
        ts.mmap = S("cost.ebizzy.mmap");
        ts.hold = S("cost.ebizzy.lock_hold");
        threads_list_.push_back(std::make_unique<EbizzyThread>(cpu, std::move(ts)));
        guests_.at(g + static_cast<std::size_t>(cpu))->add_task(threads_list_.back().get());
      }
    }
  }

  void report(Metrics& m, const TscClock& clk) const override {
    const double s = clk.to_s(static_cast<double>(now_tsc()));
    double sum = 0;
    double faults = 0;
    TlbFlushStats all;
    RwsemStats sem_all;
    SpinlockStats lock_all;
    for (std::size_t i = 0; i < stats_.size(); ++i) {
      const double r = s > 0 ? static_cast<double>(stats_[i]->records) / s : 0;
      m[fmt::format("ebizzy.vm{}.records_per_s", i)] = r;
      m[fmt::format("ebizzy.vm{}.records", i)] = static_cast<double>(stats_[i]->records);
      faults += static_cast<double>(stats_[i]->page_faults);
      GuestMm::report_stats(mms_[i]->stats(), clk, m, fmt::format("tlb.vm{}.", i));
      all += mms_[i]->stats();
      sem_all += sems_[i]->stats();
      lock_all += locks_[i]->stats_at(now_tsc());
      sum += r;
    }
    m["ebizzy.records_per_s"] = stats_.empty() ? 0 : sum / static_cast<double>(stats_.size());
    m["ebizzy.page_faults"] = faults;
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
    // ebizzy.lru_lock: the guest-wide spinlock of the VMs, summed
    // (queue_len_avg: nodes queued per lock, averaged over the run and the VMs;
    // last_drain_s: the latest time any of the VMs' queues drained).
    if (lru_lock_)
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
  bool lru_lock_;
  bool flush_vma_;
  int faults_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
  std::vector<std::unique_ptr<std::vector<int>>> pagevecs_;
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
    {"ebizzy.page_faults", "count", "ebizzy", "Page faults of the copies (do_anonymous_page()), all VMs: what perf stat -e page-faults counts in the guest; per record (512 - ebizzy.malloc_top_pad_kib) / 4 with -M, 128 with -m."},
    {"ebizzy.thread_records_min", "count", "ebizzy", "Fewest records one thread made (how evenly the threads shared their vCPUs)."},
    {"ebizzy.thread_records_max", "count", "ebizzy", "Most records one thread made."},
    {"ebizzy.flush_wait_s", "s", "ebizzy", "Initiators' time in csd_lock_wait() for flush acknowledgements (tlb.wait_s)."},
    {"ebizzy.flush_wait_on_cpu_share", "fraction", "ebizzy", "The on-CPU part of ebizzy.flush_wait_s as a share of the vCPU threads' CPU time: what perf top in the guest puts in smp_call_function_many()."},
    {"mmap_sem.read_acquires", "count", "ebizzy", "down_read() acquisitions of the ebizzy processes' mmap_sem, all VMs: with -M one per group of faults up to a pagevec drain (the kernel takes it per fault; with no writer it never waits) and one per madvise(); with -m one per fault."},
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
    {"ebizzy.lock.acquires", "count", "ebizzy", "spin_lock() acquisitions of the guest-wide spinlock (ebizzy.lru_lock: pgdat->lru_lock), all VMs. The ebizzy.lock keys only with ebizzy.lru_lock."},
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
