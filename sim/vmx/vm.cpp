#include "sim/vmx/vm.h"

#include <fmt/format.h>

#include "sim/core/context.h"
#include "sim/sched/host.h"
#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {
VmConfig vm_config(const ParamSet& p, const TscClock& clk) {
  VmConfig c;
  // The vCPU's run loop and each of its mechanisms read their own keys.
  c.vcpu_costs = VcpuCosts::from(p, clk);
  c.vmx = VmxConfig::from(p, clk);

  c.lapic_costs = LapicCosts::from(p, clk);
  c.lapic =
      LapicConfig::from(p, vmx_preemption_timer_usable(clk.tsc_khz, c.vmx.preemption_timer_rate));
  const LapicConfig& l = c.lapic;
  if (c.vmx.exit_fastpath && l.wait_site == WaitLapicExpireSite::VcpuEnterGuest)
    throw ScenarioError(
        fmt::format("{}: key 'kvm.exit_fastpath': the exit fastpath (v5.8+) needs "
                    "kvm.wait_lapic_expire_site: vmx_vcpu_run (moved there in v5.3); "
                    "no kernel has both",
                    p.origin("kvm.exit_fastpath")));

  const std::int64_t cpus =
      p.i("platform.sockets") * p.i("platform.cores_per_socket") * p.i("platform.threads_per_core");
  if (l.post_timer && l.post_timer_cpu >= cpus)
    throw ScenarioError(fmt::format(
        "{}: key 'kvm.pi_inject_timer': posted timer interrupts need a housekeeping pCPU for "
        "the LAPIC hrtimers, but host.isolcpus (nohz_full) takes all {} pCPUs",
        p.origin("kvm.pi_inject_timer"), cpus));

  c.guest_tsc_khz = p.i("vm.tsc_khz") ? static_cast<std::uint64_t>(p.i("vm.tsc_khz")) : clk.tsc_khz;
  c.tsc.ratio = c.guest_tsc_khz == clk.tsc_khz
                    ? TscScaling::kDefaultRatio
                    : TscScaling::ratio_for(c.guest_tsc_khz, clk.tsc_khz);
  c.tsc.offset = p.i("vm.tsc_offset");
  return c;
}

Vm::Vm(int id, int first_vcpu_id, int vcpus, const VmConfig& cfg,
       const std::function<std::pair<Pcpu*, CpuMask>(int)>& place)
    : cfg_(cfg), id_(id), guest_tsc_khz_(cfg.guest_tsc_khz) {
  for (int v = 0; v < vcpus; ++v) {
    const int vcpu_id = first_vcpu_id + v;
    auto [pcpu, allowed] = place(vcpu_id);
    vcpus_.push_back(std::make_unique<Vcpu>(vcpu_id, id, *pcpu, std::move(allowed), cfg_.vcpu_costs,
                                            cfg_.vmx, cfg_.lapic, cfg_.lapic_costs, cfg_.tsc));
  }
  // The housekeeping pCPU the posted LAPIC timers of nohz_full pCPUs fire on
  // exists from the start (SystemC creates no module once the run began).
  if (cfg_.lapic.post_timer && !cfg_.lapic.nohz_full_cpus.empty() && !vcpus_.empty())
    vcpus_.front()->pcpu().host().pcpu(cfg_.lapic.post_timer_cpu);
  for (const auto& v : vcpus_) spin_list_.vcpus.push_back(v.get());
  for (const auto& v : vcpus_) v->set_vm_vcpus(&spin_list_);
  // kvm_apic_map: APIC ID = vCPU index in the VM.
  for (const auto& v : vcpus_) apic_map_.add(&v->lapic());
  for (const auto& v : vcpus_) v->lapic().set_apic_map(&apic_map_);
}

void VcpuMetrics::report(Metrics& m, const TscClock& clk) const {
  // The run loop's counters; every mechanism then reports its own
  // (vcpu_metrics.h).
  const VcpuStats vs = sum_over(vcpus_, [](const Vcpu& v) { return v.stats(); });
  m["vmx.hv_timer_fallbacks"] = static_cast<double>(vs.hv_timer_fallbacks);
  m["vmx.fastpath.reenter_guest"] = static_cast<double>(vs.fastpath_reenter);
  m["vmx.fastpath.exit_handled"] = static_cast<double>(vs.fastpath_exit_handled);
  m["vcpu.preemptions"] = static_cast<double>(vs.preemptions);
  for (const VcpuMetricsReporter r : vcpu_metrics_reporters()) r(vcpus_, m, clk);
  WaitLapicExpireStats w;
  IpiStats is;
  for (const auto* v : vcpus_) {
    w += v->lapic().wait_stats();
    is += v->lapic().ipi_stats();
  }
  m["ipi.sent"] = static_cast<double>(is.sent);
  m["ipi.accepted"] = static_cast<double>(is.accepted);
  m["ipi.posted"] = static_cast<double>(is.posted);  // delivered without a target exit
  // Timer kicks (apic_timer_fn) and IPI kicks (kvm_irq_delivery_to_apic).
  m["vcpu.kicks"] = static_cast<double>(vs.kicks + is.kicks);
  m["vcpu.kicks_lost"] = static_cast<double>(vs.kicks_lost);
  // Per vCPU thread (VM-major): CPU time received, and time runnable but
  // waiting for its pCPU (sched_info run_delay, which record_steal_time()
  // reports to the guest as steal).
  const Tsc end = now_tsc();
  double steal = 0;
  for (const auto* v : vcpus_) {
    const SchedEntity& se = v->se();
    const double run = clk.to_s(static_cast<double>(se.sum_exec_runtime));
    const double st = clk.to_s(static_cast<double>(se.run_delay_at(end)));
    m["vcpu." + std::to_string(v->id()) + ".run_s"] = run;
    m["vcpu." + std::to_string(v->id()) + ".steal_s"] = st;
    steal += st;
  }
  m["vcpu.steal_s"] = steal;
  m["lapic.wait_lapic_expire.calls"] = static_cast<double>(w.calls);
  m["lapic.wait_lapic_expire.early"] = static_cast<double>(w.early);
  m["lapic.wait_lapic_expire.late"] = static_cast<double>(w.late);
  m["lapic.wait_lapic_expire.avg_delta_cycles"] =
      w.calls ? w.delta_sum / static_cast<double>(w.calls) : 0.0;
  m["lapic.wait_lapic_expire.spin_ns"] = clk.to_ns(static_cast<double>(w.spin_cycles));
  // The advance the measuring vCPU ended with (the adaptive value, or the fixed one).
  m["lapic.timer_advance_ns"] = static_cast<double>(
      vcpus_.at(static_cast<std::size_t>(measuring_))->lapic().timer_advance_ns());
}

}  // namespace kvmsim
