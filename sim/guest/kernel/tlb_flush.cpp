#include "sim/guest/kernel/tlb_flush.h"

#include <algorithm>
#include <string>

#include "sim/core/invariants.h"
#include "sim/guest/kernel/guest_kernel.h"
#include "sim/guest/kernel/guest_smp.h"

namespace kvmsim {

TlbFlushStats& TlbFlushStats::operator+=(const TlbFlushStats& o) {
  flushes += o.flushes;
  ipi_flushes += o.ipi_flushes;
  targets += o.targets;
  ipi_targets += o.ipi_targets;
  pv_targets += o.pv_targets;
  handler_flushes += o.handler_flushes;
  ipi_targets_not_running += o.ipi_targets_not_running;
  flushes_waiting_on_not_running += o.flushes_waiting_on_not_running;
  wait_cycles += o.wait_cycles;
  wait_cycles_not_running += o.wait_cycles_not_running;
  wait_off_cpu_cycles += o.wait_off_cpu_cycles;
  wait_max_cycles = std::max(wait_max_cycles, o.wait_max_cycles);
  for (std::size_t b = 0; b < kWaitBands; ++b) {
    band_flushes[b] += o.band_flushes[b];
    band_cycles[b] += o.band_cycles[b];
    band_on_cpu_cycles[b] += o.band_on_cpu_cycles[b];
  }
  return *this;
}

GuestMm::GuestMm(GuestSmp& smp, TlbFlushCosts costs, bool pv, const TscClock& clk)
    : smp_(smp), costs_(std::move(costs)), pv_(pv), cpus_(static_cast<std::size_t>(smp.nr_cpus())) {
  for (std::size_t b = 0; b < band_edges_.size(); ++b)
    band_edges_[b] = clk.ns_to_cycles(TlbFlushStats::kWaitBandEdgesNs[b]);
}

void GuestMm::add_cpu(int cpu) { cpus_.at(static_cast<std::size_t>(cpu)).in_mask = true; }

// flush_tlb_mm_range() -> (local flush) -> flush_tlb_others(), as kernel
// work on the initiator with preemption off:
//   0: inc_mm_tlb_gen(), the local flush;
//   1: PV only: kvm_flush_tlb_others()'s loop over the mask;
//   2: native_flush_tlb_others() for what is left: smp_call_function_many()
//      with wait, whose CrossCall runs next (sim/guest/kernel/guest_smp.cpp).
class GuestMm::FlushOthers : public KernelWork {
 public:
  FlushOthers(GuestMm& mm, std::function<void(GuestKernel&, Tsc)> done)
      : mm_(mm), done_(std::move(done)) {}

  std::optional<GuestStep> next(GuestKernel& k, Tsc now) override {
    switch (phase_++) {
      case 0: {
        gen_ = ++mm_.tlb_gen_;
        mm_.cpus_[static_cast<std::size_t>(k.cpu())].flushed_gen = gen_;
        for (std::size_t c = 0; c < mm_.cpus_.size(); ++c)
          if (mm_.cpus_[c].in_mask && static_cast<int>(c) != k.cpu()) {
            targets_.push_back(static_cast<int>(c));
          }
        return GuestStep::run(Stage::Guest, mm_.costs_.flush_local(k.rng()));
      }
      case 1: {
        if (!targets_.empty()) {
          ++mm_.stats_.flushes;
          mm_.stats_.targets += targets_.size();
        }
        ipi_ = targets_;
        if (!mm_.pv_ || targets_.empty()) return next(k, now);
        // kvm_flush_tlb_others(): state = READ_ONCE(src->preempted); if
        // PREEMPTED, try_cmpxchg(state -> state | FLUSH_TLB) and drop the
        // CPU from the copy of the mask on success.
        Tsc cost = 0;
        ipi_.clear();
        for (const int c : targets_) {
          cost += mm_.costs_.pv_check(k.rng());
          Vcpu& v = mm_.smp_.cpu(c).vcpu();
          const std::uint8_t state = v.steal_time_preempted();
          if ((state & KVM_VCPU_PREEMPTED) && v.steal_time_cmpxchg_flush(state)) {
            CpuTlb& t = mm_.cpus_[static_cast<std::size_t>(c)];
            // Flushes overlap: an initiator that took its generation
            // earlier may get here later (it was preempted in between).
            t.pv_gen = std::max(t.pv_gen, gen_);
            t.pv_host_flushes = v.pv_tlb_flushes();
            ++mm_.stats_.pv_targets;
          } else {
            ipi_.push_back(c);
          }
        }
        return GuestStep::run(Stage::Guest, cost);
      }
      case 2: {
        if (ipi_.empty()) {
          finish(mm_, targets_, gen_, k, now);
          if (done_) done_(k, now);
          return std::nullopt;
        }
        unsigned not_running = 0;
        for (const int c : ipi_)
          if (!mm_.smp_.cpu(c).vcpu().running_on_pcpu()) ++not_running;
        ++mm_.stats_.ipi_flushes;
        mm_.stats_.ipi_targets += ipi_.size();
        mm_.stats_.ipi_targets_not_running += not_running;
        SmpCallFunc f;
        GuestMm* mm = &mm_;
        f.cost = [mm](GuestKernel& t, Tsc) { return mm->costs_.flush_func(t.rng()); };
        // flush_tlb_func_common(): a full flush brings this CPU up to the
        // mm's current generation.
        f.ran = [mm](GuestKernel& t, Tsc) {
          CpuTlb& c = mm->cpus_[static_cast<std::size_t>(t.cpu())];
          c.flushed_gen = std::max(c.flushed_gen, mm->tlb_gen_);
          ++mm->stats_.handler_flushes;
        };
        // The initiator's own run delay over the wait: the part of it spent
        // off its pCPU (preempted, or yielded by Pause-Loop Exiting).
        const Tsc rd0 = k.vcpu().se().run_delay_at(now);
        k.smp_call_function_many(ipi_, std::move(f), true,
                                 [mm, targets = targets_, gen = gen_, t0 = now, not_running, rd0,
                                  done = std::move(done_)](GuestKernel& self, Tsc at) {
                                   const Tsc w = at - t0;
                                   mm->stats_.wait_cycles += w;
                                   const Tsc off = self.vcpu().se().run_delay_at(at) - rd0;
                                   mm->stats_.wait_off_cpu_cycles += off;
                                   mm->count_wait(w, off);
                                   mm->stats_.wait_max_cycles =
                                       std::max(mm->stats_.wait_max_cycles, w);
                                   if (not_running) {
                                     ++mm->stats_.flushes_waiting_on_not_running;
                                     mm->stats_.wait_cycles_not_running += w;
                                   }
                                   finish(*mm, targets, gen, self, at);
                                   if (done) done(self, at);
                                 });
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

 private:
  // Invariant: flush_tlb_others() returns only when every target flushed
  // (its handler ran) or carries a KVM_VCPU_FLUSH_TLB request for `gen`.
  // From here on (munmap() has returned) no target may use the old
  // translations: check_before_user() holds each to `gen`.
  static void finish(GuestMm& mm, const std::vector<int>& targets, std::uint64_t gen,
                     GuestKernel& k, Tsc /*now*/) {
    for (const int c : targets) {
      CpuTlb& t = mm.cpus_[static_cast<std::size_t>(c)];
      t.requested_gen = std::max(t.requested_gen, gen);
      if (t.flushed_gen < gen && t.pv_gen < gen)
        invariant_failed("guest CPU " + std::to_string(k.cpu()),
                         "flush_tlb_others() returned before CPU " + std::to_string(c) +
                             " flushed generation " + std::to_string(gen) + " (it has " +
                             std::to_string(t.flushed_gen) + ", PV request " +
                             std::to_string(t.pv_gen) + ")");
    }
  }

  GuestMm& mm_;
  std::function<void(GuestKernel&, Tsc)> done_;
  int phase_ = 0;
  std::uint64_t gen_ = 0;
  std::vector<int> targets_, ipi_;
};

void GuestMm::flush_tlb_mm_range(GuestKernel& k, std::function<void(GuestKernel&, Tsc)> done) {
  k.queue_work(std::make_unique<FlushOthers>(*this, std::move(done)));
}

void GuestMm::count_wait(Tsc w, Tsc off_cpu) {
  std::size_t b = 0;
  while (b < band_edges_.size() && w >= band_edges_[b]) ++b;
  ++stats_.band_flushes[b];
  stats_.band_cycles[b] += w;
  stats_.band_on_cpu_cycles[b] += w - std::min(w, off_cpu);
}

void GuestMm::check_before_user(GuestKernel& k) {
  CpuTlb& c = cpus_[static_cast<std::size_t>(k.cpu())];
  if (c.flushed_gen >= c.requested_gen) return;
  // A PV request is done once the host flushed this vCPU after it was set.
  if (c.pv_gen > c.flushed_gen && k.vcpu().pv_tlb_flushes() > c.pv_host_flushes)
    c.flushed_gen = c.pv_gen;
  if (c.flushed_gen < c.requested_gen)
    invariant_failed("guest CPU " + std::to_string(k.cpu()),
                     "runs user code with TLB generation " + std::to_string(c.flushed_gen) +
                         " of the mm, generation " + std::to_string(c.requested_gen) +
                         " was requested (a flush was lost)");
}

void GuestMm::report_stats(const TlbFlushStats& s, const TscClock& clk, Metrics& m,
                           const std::string& prefix) {
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  m[prefix + "flushes"] = d(s.flushes);
  m[prefix + "targets"] = d(s.targets);
  m[prefix + "ipi_targets"] = d(s.ipi_targets);
  m[prefix + "pv_targets"] = d(s.pv_targets);
  m[prefix + "handler_flushes"] = d(s.handler_flushes);
  m[prefix + "ipi_targets_not_running"] = d(s.ipi_targets_not_running);
  m[prefix + "flushes_waiting_on_not_running"] = d(s.flushes_waiting_on_not_running);
  m[prefix + "wait_s"] = clk.to_s(static_cast<double>(s.wait_cycles));
  m[prefix + "wait_not_running_s"] = clk.to_s(static_cast<double>(s.wait_cycles_not_running));
  m[prefix + "wait_off_cpu_s"] = clk.to_s(static_cast<double>(s.wait_off_cpu_cycles));
  m[prefix + "ipi_flushes"] = d(s.ipi_flushes);
  // The mean over the flushes that waited (sent IPIs): a PV flush that left
  // every target to the host did not wait and is not in it.
  m[prefix + "wait_avg_us"] =
      s.ipi_flushes ? clk.to_ns(static_cast<double>(s.wait_cycles)) / 1000 / d(s.ipi_flushes) : 0;
  m[prefix + "wait_max_us"] = clk.to_ns(static_cast<double>(s.wait_max_cycles)) / 1000;
  static constexpr std::array<const char*, TlbFlushStats::kWaitBands> kBand = {
      "lt10us", "lt100us", "lt1ms", "lt10ms", "ge10ms"};
  for (std::size_t b = 0; b < TlbFlushStats::kWaitBands; ++b) {
    const std::string k = prefix + "wait_band." + kBand[b] + ".";
    m[k + "flushes"] = d(s.band_flushes[b]);
    m[k + "s"] = clk.to_s(static_cast<double>(s.band_cycles[b]));
    m[k + "on_cpu_s"] = clk.to_s(static_cast<double>(s.band_on_cpu_cycles[b]));
  }
}

}  // namespace kvmsim
