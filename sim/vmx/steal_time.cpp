#include "sim/vmx/steal_time.h"

#include "sim/core/invariants.h"
#include "sim/core/params.h"
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {

StealTimeConfig StealTimeConfig::from(const ParamSet& p, const TscClock& clk) {
  StealTimeConfig c;
  c.preempted_on_block = p.b("kvm.steal_time_preempted_on_block");
  // The host side of KVM_FEATURE_PV_TLB_FLUSH is in record_steal_time() of
  // every v4.16+ host, whether or not the guest uses the feature
  // (guest.pv_tlb_flush), once the guest registered its steal-time area.
  c.pv_tlb_flush = kernel_at_least(p, "host.kernel", "4.16") && p.b("guest.cpuid.steal_time");
  c.atomic_preempted = p.b("kvm.steal_time_atomic_preempted");
  c.pv_tlb_flush_cost = p.dist("cost.pv_tlb_flush").bind(clk);
  return c;
}

void StealTime::set_preempted(bool preempted) {
  if (preempted || cfg_.preempted_on_block) preempted_ |= KVM_VCPU_PREEMPTED;
}

// record_steal_time(): the run delay since the last report goes into the
// guest's steal-time area, and `preempted` is cleared (xchg) for the guest.
// A KVM_VCPU_FLUSH_TLB the guest set while this vCPU was preempted makes the
// host flush the guest's TLB here, before the entry (kvm_vcpu_flush_tlb(),
// kvm_vcpu_flush_tlb_guest() in later kernels), and the xchg is traced as
// kvm_pv_tlb_flush.
Tsc StealTime::record_steal_time(Tsc now) {
  update_ = false;
  const Tsc delay = v_.se().run_delay_at(now);
  stats_.steal_cycles += delay - recorded_;
  recorded_ = delay;
  const std::uint8_t old = preempted_;
  if (cfg_.atomic_preempted)
    preempted_ = 0;
  else
    writeback_ = true;  // the guest's byte is overwritten with 0 at the end of this stage
  if (!cfg_.pv_tlb_flush) return 0;
  const bool flush = (old & KVM_VCPU_FLUSH_TLB) != 0;
  v_.kvm_signals().kvm_pv_tlb_flush(v_.id(), flush, now);
  if (!flush) return 0;
  ++stats_.pv_tlb_flushes;
  return cfg_.pv_tlb_flush_cost(v_.rng());
}

bool StealTime::cmpxchg_flush(std::uint8_t state) {
  if (preempted_ != state) return false;
  preempted_ = static_cast<std::uint8_t>(state | KVM_VCPU_FLUSH_TLB);
  ++stats_.pv_tlb_flush_requests;
  return true;
}

void StealTime::check_entry() const {
  if (preempted_ & KVM_VCPU_FLUSH_TLB)
    invariant_failed(v_.comm(), "entered the guest with KVM_VCPU_FLUSH_TLB still set");
}

static const RegisterVcpuMetrics steal_time_metrics([](const std::vector<Vcpu*>& vcpus, Metrics& m,
                                                       const TscClock& /*clk*/) {
  const StealTimeStats st = sum_over(vcpus, [](const Vcpu& v) { return v.steal_time().stats(); });
  if (st.pv_tlb_flush_requests || st.pv_tlb_flushes) {  // only runs that use PV TLB flush
    m["vcpu.pv_tlb_flush_requests"] = static_cast<double>(st.pv_tlb_flush_requests);
    m["vcpu.pv_tlb_flushes"] = static_cast<double>(st.pv_tlb_flushes);
  }
});

}  // namespace kvmsim
