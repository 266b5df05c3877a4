// The LAPIC's typed configuration, read from the kvm.*, platform.* and
// cost.lapic.* keys (declared in sim/lapic/params.cpp).
#include <algorithm>

#include "sim/core/params.h"
#include "sim/lapic/lapic.h"
#include "sim/sched/host.h"

namespace kvmsim {
namespace {
Sampler S(const ParamSet& p, const TscClock& clk, const char* key) { return p.dist(key).bind(clk); }
}  // namespace

LapicCosts LapicCosts::from(const ParamSet& p, const TscClock& clk) {
  LapicCosts lc;
  lc.start_hv_timer = S(p, clk, "cost.lapic.start_hv_timer");
  lc.start_sw_tscdeadline = S(p, clk, "cost.lapic.start_sw_tscdeadline");
  lc.cancel_hrtimer = S(p, clk, "cost.lapic.cancel_hrtimer");
  lc.apic_timer_fn = S(p, clk, "cost.lapic.apic_timer_fn");
  lc.inject_timer_irq = S(p, clk, "cost.lapic.inject_timer_irq");
  lc.expired_hv_timer = S(p, clk, "cost.lapic.expired_hv_timer");
  lc.wait_lapic_expire = S(p, clk, "cost.lapic.wait_lapic_expire");
  lc.eoi = S(p, clk, "cost.lapic.eoi");
  lc.x2apic_icr_write = S(p, clk, "cost.lapic.x2apic_icr_write");
  lc.accept_irq = S(p, clk, "cost.lapic.accept_irq");
  lc.x2apic_msr_write = S(p, clk, "cost.lapic.x2apic_msr_write");
  lc.posted_intr_notify = S(p, clk, "cost.lapic.posted_intr_notify");
  lc.kick_wakeup = S(p, clk, "cost.lapic.kick_wakeup");
  lc.kick_ipi = S(p, clk, "cost.lapic.kick_ipi");
  lc.inject_irq = S(p, clk, "cost.lapic.inject_irq");
  return lc;
}

LapicConfig LapicConfig::from(const ParamSet& p, bool preemption_timer_usable) {
  LapicConfig l;
  l.apicv = p.b("platform.apicv");
  // kvm_arch_init(): pi_inject_timer -1 = housekeeping_enabled(HK_FLAG_TIMER),
  // i.e. on when the host isolates CPUs with nohz_full (Host::nohz_full_cpus);
  // kvm_can_post_timer_interrupt() also needs APICv.
  const auto iso = Host::nohz_full_cpus(p);
  const std::int64_t pi = p.i("kvm.pi_inject_timer");
  l.post_timer = l.apicv && (pi == 1 || (pi == -1 && !iso.empty())) &&
                 !p.b("kvm.pi_inject_timer_needs_hlt_in_guest");
  // housekeeping_any_cpu(): the lowest pCPU outside the isolated set.
  while (std::find(iso.begin(), iso.end(), l.post_timer_cpu) != iso.end()) ++l.post_timer_cpu;
  l.nohz_full_cpus = iso;
  // kvm_can_use_hv_timer(): not with posted timer interrupts.
  l.hv_timer_available = p.b("kvm.enable_hv_timer") && preemption_timer_usable && !l.post_timer;
  l.timer_advance_ns = p.i("kvm.lapic_timer_advance_ns");
  l.hv_timer_advance = p.b("kvm.hv_timer_advance");
  l.wait_site = p.s("kvm.wait_lapic_expire_site") == "vcpu_enter_guest"
                    ? WaitLapicExpireSite::VcpuEnterGuest
                    : WaitLapicExpireSite::VmxVcpuRun;
  const std::string& tuning = p.s("kvm.lapic_timer_advance_tuning");
  l.tuning = tuning == "until_done"         ? AdvanceTuning::UntilDone
             : tuning == "until_done_retry" ? AdvanceTuning::UntilDoneRetry
             : tuning == "spin_then_tune"   ? AdvanceTuning::SpinThenTune
                                            : AdvanceTuning::Always;
  l.expired_inject = p.b("kvm.apic_timer_expired_inject");
  l.x2apic_icr_64bit = p.b("kvm.x2apic_icr_64bit");
  return l;
}

}  // namespace kvmsim
