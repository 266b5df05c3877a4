// workload.type: ebizzy — ebizzy -M in every VM (one process per VM, its
// threads on the VM's vCPUs): each record allocates a chunk with mmap(),
// touches and copies it, searches the copy and frees it with munmap(); the
// munmap's flush_tlb_mm_range() is a remote TLB flush to every other CPU
// that runs a thread of the process (sim/guest/tlb_flush.h), natively or
// paravirtually (guest.pv_tlb_flush). ebizzy prints records/s: the records
// of all threads over the run (sim.max_simulated_s, ebizzy -S).
//
// What a record costs apart from the flush is one cost.ebizzy.record (the
// mmap, page faults, copy and search, in the guest) and one
// cost.ebizzy.munmap (zap_page_range() and the page freeing around the
// flush): their split does not matter to the flush. Not modelled: mmap_sem
// (the threads' page faults take it shared, mmap/munmap exclusive, so a
// preempted holder stalls the others) and guest load balancing (each thread
// stays on the vCPU it starts on, one per vCPU, as the balanced state of
// threads = vCPUs is).
#include <fmt/format.h>

#include "sim/guest/guest_smp.h"
#include "sim/guest/linux_guest.h"
#include "sim/guest/tlb_flush.h"
#include "sim/guest/workload.h"
#include "sim/system.h"
#include "sim/vmx/vm.h"

namespace kvmsim {
namespace {

// clang-format off
void declare_ebizzy_params(ParamRegistry& r) {
  r.declare({"ebizzy.threads", ParamType::Int, "0", "count", 0, 256, {},
             "ebizzy -t: threads per VM, thread i on vCPU i mod vm.vcpus; 0 = one per vCPU "
             "(ebizzy's default: the number of online CPUs)."});
  r.declare({"ebizzy.start_spread_us", ParamType::Int, "0", "us", 0, 1e8, {},
             "Each thread first sleeps (nanosleep) a uniform random time in [0, this), from its "
             "vCPU's guest random stream, so that the vCPU threads' host time slices do not "
             "start in lock step on every pCPU at t = 0 (a host that has run for a while has no "
             "common phase); 0 = all threads start at once. Counted in the run's time."});
  r.declare({"cost.ebizzy.record", ParamType::Dist, "750us", "time", {}, {}, {},
             "One ebizzy record without its munmap: mmap() of a chunk, the page faults of "
             "touching it, memcpy() and the search (ebizzy defaults: 512 KiB chunks). The "
             "platform file says which figure sets it."});
  r.declare({"cost.ebizzy.munmap", ParamType::Dist, "10us", "time", {}, {}, {},
             "munmap() of the copy apart from the TLB flush: zap_page_range() of its 128 "
             "pages and freeing them (estimate)."});
}
// clang-format on

struct EbizzyVmStats {
  std::uint64_t records = 0;
};

// One ebizzy thread: record, munmap (with its flush), record, ...
class EbizzyThread : public GuestTask, public GuestHrtimer {
 public:
  EbizzyThread(int cpu, GuestMm* mm, Sampler record, Sampler munmap, EbizzyVmStats* st,
               std::uint64_t spread_ns)
      : GuestTask("ebizzy"),
        mm_(mm),
        record_(std::move(record)),
        munmap_(std::move(munmap)),
        st_(st),
        spread_ns_(spread_ns) {
    bound_cpu = cpu;
  }

  // The start sleep's hrtimer (hrtimer_wakeup()).
  Tsc fn(GuestKernel& k, Tsc /*now*/) override {
    phase_ = Phase::Record;
    k.wake_up(this);
    return k.costs().hrtimer_wakeup(k.rng());
  }

  GuestStep run(GuestKernel& k, Tsc now) override {
    switch (phase_) {
      case Phase::Start: {
        phase_ = Phase::Record;
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
      case Phase::Record:
        // User code of the mm: every flush requested for this CPU is done.
        mm_->check_before_user(k);
        phase_ = Phase::Munmap;
        return GuestStep::run(Stage::GuestUser, record_(k.rng()));
      case Phase::Munmap:
        // munmap() -> unmap_region() -> tlb_finish_mmu() -> flush_tlb_mm_range().
        phase_ = Phase::Returned;
        mm_->flush_tlb_mm_range(k, {});
        return GuestStep::run(Stage::GuestSyscall, munmap_(k.rng()));
      case Phase::Returned:
        ++st_->records;
        phase_ = Phase::Record;
        return run(k, now);
    }
    return GuestStep::idle(Stage::GuestUser);
  }

 private:
  enum class Phase : std::uint8_t { Start, Sleeping, Record, Munmap, Returned };
  GuestMm* mm_;
  Sampler record_, munmap_;
  EbizzyVmStats* st_;
  std::uint64_t spread_ns_;
  Phase phase_ = Phase::Start;
};

class EbizzyWorkload : public Workload {
 public:
  explicit EbizzyWorkload(const ParamSet& p)
      : threads_(static_cast<int>(p.i("ebizzy.threads"))),
        pv_(p.b("guest.pv_tlb_flush")),
        spread_ns_(static_cast<std::uint64_t>(p.i("ebizzy.start_spread_us")) * 1000) {}

  [[nodiscard]] bool open_ended() const override { return true; }  // sim.max_simulated_s

  void build(System& sys) override {
    const auto& clk = sys.ctx().clock;
    const ParamSet& p = sys.params();
    const auto S = [&](const char* key) { return p.dist(key).bind(clk); };
    TlbFlushCosts tc;
    tc.flush_local = S("cost.guest.flush_tlb_local");
    tc.flush_func = S("cost.guest.flush_tlb_func");
    tc.pv_check = S("cost.guest.pv_flush_tlb_check");
    guests_ = boot_linux_guests(sys);
    std::size_t g = 0;
    for (const auto& vm : sys.vms()) {
      const int vcpus = static_cast<int>(vm->vcpus().size());
      const int n = threads_ ? threads_ : vcpus;
      GuestSmp& smp = *guests_.at(g)->smp();
      mms_.push_back(std::make_unique<GuestMm>(smp, tc, pv_));
      stats_.push_back(std::make_unique<EbizzyVmStats>());
      for (int t = 0; t < n; ++t) {
        const int cpu = t % vcpus;
        mms_.back()->add_cpu(cpu);
        threads_list_.push_back(std::make_unique<EbizzyThread>(
            cpu, mms_.back().get(), S("cost.ebizzy.record"), S("cost.ebizzy.munmap"),
            stats_.back().get(), spread_ns_));
        guests_.at(g + static_cast<std::size_t>(cpu))->add_task(threads_list_.back().get());
      }
      g += static_cast<std::size_t>(vcpus);
    }
  }

  void report(Metrics& m, const TscClock& clk) const override {
    const double s = clk.to_s(static_cast<double>(now_tsc()));
    double sum = 0;
    TlbFlushStats all;
    for (std::size_t i = 0; i < stats_.size(); ++i) {
      const double r = s > 0 ? static_cast<double>(stats_[i]->records) / s : 0;
      m[fmt::format("ebizzy.vm{}.records_per_s", i)] = r;
      m[fmt::format("ebizzy.vm{}.records", i)] = static_cast<double>(stats_[i]->records);
      GuestMm::report_stats(mms_[i]->stats(), clk, m, fmt::format("tlb.vm{}.", i));
      all += mms_[i]->stats();
      sum += r;
    }
    m["ebizzy.records_per_s"] = stats_.empty() ? 0 : sum / static_cast<double>(stats_.size());
    GuestMm::report_stats(all, clk, m, "tlb.");
    // The initiators' time in csd_lock_wait() for flush acknowledgements.
    m["ebizzy.flush_wait_s"] = clk.to_s(static_cast<double>(all.wait_cycles));
    report_guest_smp(guests_, m);
  }

 private:
  int threads_;
  bool pv_;
  std::uint64_t spread_ns_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
  std::vector<std::unique_ptr<GuestMm>> mms_;
  std::vector<std::unique_ptr<EbizzyVmStats>> stats_;
  std::vector<std::unique_ptr<EbizzyThread>> threads_list_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    ebizzy,
    "ebizzy -M in every VM: threads that allocate, touch, copy and munmap chunks, each munmap "
    "a remote TLB flush to the other vCPUs running the process (native or guest.pv_tlb_flush); "
    "runs for sim.max_simulated_s",
    declare_ebizzy_params, [](const ParamSet& p) { return std::make_unique<EbizzyWorkload>(p); })

}  // namespace kvmsim
