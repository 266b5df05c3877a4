// The vCPU around its run loop: the VM's configuration, the preempt
// notifiers (kvm_sched_out / kvm_sched_in) and vmx_set_hv_timer(). The loop
// is VcpuRunLoop (vcpu_run.cpp); the other mechanisms are listed in vcpu.h.
#include "sim/vmx/vcpu.h"

#include <algorithm>

#include "sim/core/invariants.h"
#include "sim/core/params.h"
#include "sim/sched/host.h"
#include "sim/sched/pids.h"
#include "sim/vmx/exit_handlers.h"

namespace kvmsim {

VmxConfig VmxConfig::from(const ParamSet& p, const TscClock& clk) {
  VmxConfig c;
  c.preemption_timer_rate = static_cast<unsigned>(p.i("platform.preemption_timer_rate"));
  c.exit_fastpath = p.b("kvm.exit_fastpath");
  c.exit_fastpath_timer = p.b("kvm.exit_fastpath_timer");
  c.halt = HaltConfig::from(p, clk);
  c.ple = PleConfig::from(p);
  c.directed_yield = DirectedYieldConfig::from(p, clk);
  c.steal_time = StealTimeConfig::from(p, clk);
  c.loaded_vmcs = LoadedVmcsConfig::from(p, clk);
  c.hypercall = HypercallConfig::from(p, clk);
  return c;
}

Vcpu::Vcpu(int vcpu_id, int vm_id, Pcpu& pcpu, CpuMask allowed, const VcpuCosts& costs,
           const VmxConfig& vmx, LapicConfig lapic_cfg, LapicCosts lapic_costs, TscScaling tsc)
    : VcpuRunLoop("CPU " + std::to_string(vcpu_id) + "/KVM", pids::kVcpuBase + vcpu_id,
                  std::move(allowed), vcpu_id, pcpu, costs, vmx),
      vm_id_(vm_id),
      kvm_signals_(pcpu.ctx().signals.get<KvmSignals>()),
      tsc_(tsc),
      lapic_(*this, std::move(lapic_cfg), std::move(lapic_costs)),
      halt_(*this, vmx_.halt),
      ple_(vmx_.ple),
      dy_(*this, vmx_.directed_yield),
      steal_(*this, vmx_.steal_time),
      vmcs_(*this, vmx_.loaded_vmcs) {}

void Vcpu::start() {
  set_state(VcpuState::EnterGuest);
  pcpu_->host().start_thread(this, pcpu_->id(), now_tsc());
}

// kvm_sched_out(): preempted while still runnable -> vcpu->preempted; then
// kvm_arch_vcpu_put() -> kvm_steal_time_set_preempted(), vmx_vcpu_put().
Tsc Vcpu::sched_out(Pcpu& /*cpu*/, Tsc /*now*/, bool preempted) {
  if (preempted) {
    preempted_ = true;
    ready_ = true;
    ++stats_.preemptions;
  }
  steal_.set_preempted(preempted);
  return vmcs_.vcpu_put(preempted);
}

// kvm_sched_in() -> kvm_arch_vcpu_load(): vmx_vcpu_load() (loaded_vmcs.h);
// on another pCPU the LAPIC hrtimer follows (__kvm_migrate_apic_timer); the
// steal time is updated before the next entry (KVM_REQ_STEAL_UPDATE).
Tsc Vcpu::sched_in(Pcpu& cpu, Tsc now) {
  const bool was_preempted = preempted_;
  preempted_ = false;
  ready_ = false;
  dy_.sched_in();
  if (const auto u = ple_.shrink_ple_window())  // vmx_sched_in()
    kvm_signals().kvm_ple_window(id(), false, u->new_window, u->old_window, now);
  const Tsc c = vmcs_.vcpu_load(cpu, was_preempted);
  if (&cpu != pcpu_) {
    pcpu_ = &cpu;
    lapic_.migrate_timer(cpu);
  }
  steal_.request_update();
  return c;
}

// vmx_set_hv_timer(): the absolute host-TSC deadline that every entry reloads.
bool Vcpu::set_hv_timer(std::uint64_t guest_deadline_tsc, Tsc now, bool* expired) {
  // Kernels before 2019 did not subtract the advance on this path.
  const std::uint64_t advance =
      lapic_.config().hv_timer_advance ? lapic_.timer_advance_cycles() : 0;
  const auto r =
      vmx_set_hv_timer(tsc_, vmx_.preemption_timer_rate, now, guest_deadline_tsc, advance);
  if (!r.ok) {
    ++stats_.hv_timer_fallbacks;
    return false;
  }
  hv_deadline_tsc_ = r.hv_deadline_tsc;
  *expired = r.expired;
  return true;
}

void Vcpu::resched_requested(Pcpu& /*cpu*/, Tsc now) { halt_.resched_requested(now); }

}  // namespace kvmsim
