#include "sim/vmx/vm.h"

#include <fmt/format.h>

#include "sim/core/context.h"

namespace kvmsim {
namespace {
Sampler S(const ParamSet& p, const TscClock& clk, const char* key) { return p.dist(key).bind(clk); }
}  // namespace

VmConfig vm_config(const ParamSet& p, const TscClock& clk) {
  VmConfig c;
  VcpuCosts& vc = c.vcpu_costs;
  vc.vmexit = S(p, clk, "cost.vmexit");
  vc.vmx_vcpu_run = S(p, clk, "cost.vmx_vcpu_run");
  vc.vmentry = S(p, clk, "cost.vmentry");
  vc.exit_fastpath = S(p, clk, "cost.exit_fastpath");
  vc.fastpath_wrmsr = S(p, clk, "cost.fastpath_wrmsr");
  vc.handle_halt = S(p, clk, "cost.handle_halt");
  vc.vcpu_block = S(p, clk, "cost.vcpu_block");
  vc.vcpu_wakeup = S(p, clk, "cost.vcpu_wakeup");
  vc.vcpu_block_abort = S(p, clk, "cost.vcpu_block_abort");
  vc.halt_poll_exit = S(p, clk, "cost.halt_poll_exit");
  vc.pv_tlb_flush = S(p, clk, "cost.pv_tlb_flush");
  vc.handle_pause = S(p, clk, "cost.handle_pause");
  vc.handle_kick_cpu = S(p, clk, "cost.handle_kick_cpu");
  vc.handle_sched_yield = S(p, clk, "cost.handle_sched_yield");
  vc.vcpu_enter_guest_exit_share = p.d("cost.vcpu_enter_guest_exit_share");
  vc.vcpu_enter_guest = S(p, clk, "cost.vcpu_enter_guest");
  vc.handle_exit = S(p, clk, "cost.handle_exit");
  vc.handle_wrmsr = S(p, clk, "cost.handle_wrmsr");
  vc.handle_preemption_timer = S(p, clk, "cost.handle_preemption_timer");
  vc.handle_external_interrupt = S(p, clk, "cost.handle_external_interrupt");

  LapicCosts& lc = c.lapic_costs;
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

  c.vmx.preemption_timer_rate = static_cast<unsigned>(p.i("platform.preemption_timer_rate"));
  c.vmx.exit_fastpath = p.b("kvm.exit_fastpath");
  c.vmx.exit_fastpath_timer = p.b("kvm.exit_fastpath_timer");
  c.vmx.preempted_on_block = p.b("kvm.steal_time_preempted_on_block");
  c.vmx.directed_yield_ready = p.b("kvm.directed_yield_ready");
  c.vmx.kick_cpu_yield = p.b("kvm.kick_cpu_yield");
  // KVM_FEATURE_PV_TLB_FLUSH is a CPUID bit the guest uses (sim/guest); the
  // host side of it is in record_steal_time().
  c.vmx.pv_tlb_flush = p.b("guest.pv_tlb_flush");
  c.vmx.steal_time_atomic_preempted = p.b("kvm.steal_time_atomic_preempted");
  c.vmx.ple_gap = static_cast<std::uint32_t>(p.i("kvm.ple_gap"));
  c.vmx.ple_window = static_cast<std::uint32_t>(p.i("kvm.ple_window"));
  c.vmx.ple_window_grow = static_cast<std::uint32_t>(p.i("kvm.ple_window_grow"));
  c.vmx.ple_window_shrink = static_cast<std::uint32_t>(p.i("kvm.ple_window_shrink"));
  c.vmx.ple_window_max = static_cast<std::uint32_t>(p.i("kvm.ple_window_max"));
  HaltPollConfig& hp = c.vmx.halt_poll;
  hp.max_ns = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns"));
  hp.grow = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_grow"));
  hp.grow_start = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_grow_start"));
  hp.shrink = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_shrink"));
  hp.timer_ns = static_cast<std::uint32_t>(p.i("kvm.halt_poll_ns_timer"));
  {
    const std::string rule = p.s("kvm.halt_poll_rule");
    hp.rule = rule == "v4.0"    ? HaltPollRule::V4_0
              : rule == "v4.3"  ? HaltPollRule::V4_3
              : rule == "v4.7"  ? HaltPollRule::V4_7
              : rule == "v5.2"  ? HaltPollRule::V5_2
              : rule == "v5.15" ? HaltPollRule::V5_15
                                : HaltPollRule::V6_2;
  }
  LapicConfig& l = c.lapic;
  l.hv_timer_available = p.b("kvm.enable_hv_timer") &&
                         vmx_preemption_timer_usable(clk.tsc_khz, c.vmx.preemption_timer_rate);
  l.apicv = p.b("platform.apicv");
  l.timer_advance_ns = p.i("kvm.lapic_timer_advance_ns");
  l.hv_timer_advance = p.b("kvm.hv_timer_advance");
  l.wait_site = p.s("kvm.wait_lapic_expire_site") == "vcpu_enter_guest"
                    ? WaitLapicExpireSite::VcpuEnterGuest
                    : WaitLapicExpireSite::VmxVcpuRun;
  const std::string& tuning = p.s("kvm.lapic_timer_advance_tuning");
  l.tuning = tuning == "until_done"       ? AdvanceTuning::UntilDone
             : tuning == "spin_then_tune" ? AdvanceTuning::SpinThenTune
                                          : AdvanceTuning::Always;
  l.expired_inject = p.b("kvm.apic_timer_expired_inject");
  if (c.vmx.exit_fastpath && l.wait_site == WaitLapicExpireSite::VcpuEnterGuest)
    throw ScenarioError(
        fmt::format("{}: key 'kvm.exit_fastpath': the exit fastpath (v5.8+) needs "
                    "kvm.wait_lapic_expire_site: vmx_vcpu_run (moved there in v5.3); "
                    "no kernel has both",
                    p.origin("kvm.exit_fastpath")));

  c.guest_tsc_khz = p.i("vm.tsc_khz") ? static_cast<std::uint64_t>(p.i("vm.tsc_khz")) : clk.tsc_khz;
  c.tsc.ratio = c.guest_tsc_khz == clk.tsc_khz
                    ? TscScaling::kDefaultRatio
                    : TscScaling::ratio_for(c.guest_tsc_khz, clk.tsc_khz);
  c.tsc.offset = p.i("vm.tsc_offset");
  return c;
}

Vm::Vm(int id, int first_vcpu_id, int vcpus, const VmConfig& cfg,
       const std::function<std::pair<Pcpu*, CpuMask>(int)>& place)
    : id_(id), guest_tsc_khz_(cfg.guest_tsc_khz) {
  for (int v = 0; v < vcpus; ++v) {
    const int vcpu_id = first_vcpu_id + v;
    auto [pcpu, allowed] = place(vcpu_id);
    vcpus_.push_back(std::make_unique<Vcpu>(vcpu_id, id, *pcpu, std::move(allowed), cfg.vcpu_costs,
                                            cfg.vmx, cfg.lapic, cfg.lapic_costs, cfg.tsc));
  }
  for (const auto& v : vcpus_) spin_list_.vcpus.push_back(v.get());
  for (const auto& v : vcpus_) v->set_vm_vcpus(&spin_list_);
  // kvm_apic_map: APIC ID = vCPU index in the VM.
  for (const auto& v : vcpus_) apic_map_.add(v.get());
  for (const auto& v : vcpus_) v->lapic().set_apic_map(&apic_map_);
}

void VcpuMetrics::report(Metrics& m, const TscClock& clk) const {
  VcpuStats vs;
  WaitLapicExpireStats w;
  for (const auto* v : vcpus_) {
    vs += v->stats();
    w += v->lapic().wait_stats();
  }
  m["vmx.hv_timer_fallbacks"] = static_cast<double>(vs.hv_timer_fallbacks);
  m["vmx.fastpath.reenter_guest"] = static_cast<double>(vs.fastpath_reenter);
  m["vmx.fastpath.exit_handled"] = static_cast<double>(vs.fastpath_exit_handled);
  m["vcpu.halts"] = static_cast<double>(vs.halts);
  m["vcpu.blocks"] = static_cast<double>(vs.blocks);
  m["vcpu.blocked_s"] = clk.to_s(static_cast<double>(vs.blocked_cycles));
  m["vcpu.preemptions"] = static_cast<double>(vs.preemptions);
  if (vs.spurious_wakeups)  // only guests that halt with IF clear (PV qspinlock waits)
    m["vcpu.spurious_wakeups"] = static_cast<double>(vs.spurious_wakeups);
  if (vs.pv_kicks) {  // only guests whose PV qspinlocks halted waiters
    m["vcpu.pv_kicks"] = static_cast<double>(vs.pv_kicks);
    m["vcpu.pv_kick_wakeups"] = static_cast<double>(vs.pv_kick_wakeups);
    m["vcpu.kick_yields"] = static_cast<double>(vs.kick_yields);
  }
  if (vs.pause_exits) {  // only runs with Pause-Loop Exiting on and PAUSE loops
    m["vcpu.pause_exits"] = static_cast<double>(vs.pause_exits);
    m["vcpu.directed_yields"] = static_cast<double>(vs.directed_yields);
    m["vcpu.directed_yields_remote"] = static_cast<double>(vs.directed_yields_remote);
    m["vcpu.directed_yield_ipis_saved"] = static_cast<double>(vs.directed_yield_ipis_saved);
    m["vcpu.yield_to_failed"] = static_cast<double>(vs.yield_to_failed);
    m["vcpu.yield_to_esrch"] = static_cast<double>(vs.yield_to_esrch);
    m["vcpu.dy_ineligible"] = static_cast<double>(vs.dy_ineligible);
    m["vcpu.directed_yields_woken"] = static_cast<double>(vs.directed_yields_woken);
    m["vcpu.ple_window_grows"] = static_cast<double>(vs.ple_window_grows);
    m["vcpu.ple_window_peak"] = static_cast<double>(vs.ple_window_peak);
  }
  if (vs.sched_yield_calls) {  // only guests with PV sched yield that found a target preempted
    m["vcpu.sched_yield_calls"] = static_cast<double>(vs.sched_yield_calls);
    m["vcpu.sched_yields"] = static_cast<double>(vs.sched_yields);
  }
  if (vs.pv_tlb_flush_requests || vs.pv_tlb_flushes) {  // only runs that use PV TLB flush
    m["vcpu.pv_tlb_flush_requests"] = static_cast<double>(vs.pv_tlb_flush_requests);
    m["vcpu.pv_tlb_flushes"] = static_cast<double>(vs.pv_tlb_flushes);
  }
  // Halt polling under the kernel's stat names (halt_attempted_poll, ...).
  HaltPollStats hp;
  for (const auto* v : vcpus_) hp += v->halt_poll_stats();
  m["halt_poll.attempted"] = static_cast<double>(hp.attempted);
  m["halt_poll.successful"] = static_cast<double>(hp.successful);
  m["halt_poll.invalid"] = static_cast<double>(hp.invalid);
  m["halt_poll.grow"] = static_cast<double>(hp.grows);
  m["halt_poll.shrink"] = static_cast<double>(hp.shrinks);
  m["halt_poll.success_ns"] = clk.to_ns(static_cast<double>(hp.success_cycles));
  m["halt_poll.fail_ns"] = clk.to_ns(static_cast<double>(hp.fail_cycles));
  m["halt_poll.poll_ns_total"] = clk.to_ns(static_cast<double>(hp.success_cycles + hp.fail_cycles));
  m["halt_poll.wait_ns"] = clk.to_ns(static_cast<double>(hp.wait_cycles));
  IpiStats is;
  for (const auto* v : vcpus_) is += v->lapic().ipi_stats();
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
