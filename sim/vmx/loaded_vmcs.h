// Where a vCPU's VMCS is loaded, and what moving it costs (arch/x86/kvm/vmx.c
// of v4.16: vmx_vcpu_load(), vmx_vcpu_put(), loaded_vmcs_clear()). A pCPU
// holds one current VMCS (per_cpu(current_vmcs), Pcpu::current_vmcs) and
// caches the VMCSs it loaded (per_cpu(loaded_vmcss_on_cpu)). When the host
// scheduler switches from one vCPU thread to another, the preempt notifiers
// do:
//   kvm_sched_out() -> kvm_arch_vcpu_put() -> vmx_vcpu_put(): the host's
//     segment and MSR state back (__vmx_load_host_state()), the steal-time
//     `preempted` byte (steal_time.h), pi_put;
//   kvm_sched_in() -> kvm_arch_vcpu_load() -> vmx_vcpu_load(): if the VMCS
//     was last loaded on another pCPU, loaded_vmcs_clear() first (a
//     synchronous smp_call_function_single() to that pCPU, which runs VMCLEAR
//     and drops it from its cache); then, if the pCPU's current VMCS is
//     another one, VMPTRLD, followed (v4.16+, 15d45071523d "KVM/x86: Add IBPB
//     support", with spectre_v2 mitigations on) by an indirect branch
//     prediction barrier, so the next guest cannot steer this one's branches;
//     and the next entry saves the host state again (vmx_save_host_state()).
// A vCPU that halted and is woken on the pCPU where it slept pays none of
// this beyond cost.vcpu_block / cost.vcpu_wakeup (its VMCS is still current
// there): the VMPTRLD, the barrier and the clear are charged whenever they
// happen, the put and load only on a switch from or to a preempted vCPU.
#pragma once

#include <cstdint>

#include "sim/core/counters.h"
#include "sim/core/dist.h"
#include "sim/core/time.h"

namespace kvmsim {

class ParamSet;
class Pcpu;
class Vcpu;

struct LoadedVmcsConfig {
  bool ibpb = false;          // host.spectre_v2_ibpb: IBPB after a VMPTRLD
  Sampler vcpu_put;           // cost.vcpu_put: kvm_arch_vcpu_put() of a preempted vCPU
  Sampler vcpu_load;          // cost.vcpu_load: kvm_arch_vcpu_load() + the entry's host-state save
  Sampler vmptrld;            // cost.vmptrld
  Sampler ibpb_cost;          // cost.host.ibpb: the PRED_CMD write
  Sampler loaded_vmcs_clear;  // cost.loaded_vmcs_clear: the cross-call's round trip and VMCLEAR
  static LoadedVmcsConfig from(const ParamSet& p, const TscClock& clk);
};

struct LoadedVmcsStats {
  std::uint64_t vmptrlds = 0;            // VMPTRLDs on vcpu_load (the pCPU had another VMCS)
  std::uint64_t ibpbs = 0;               // of those, followed by an IBPB
  std::uint64_t loaded_vmcs_clears = 0;  // the VMCS followed its vCPU to another pCPU
  Tsc cycles = 0;                        // put, load, VMPTRLD, IBPB and clear
  using Fields = CounterFields<LoadedVmcsStats, &LoadedVmcsStats::vmptrlds, &LoadedVmcsStats::ibpbs,
                               &LoadedVmcsStats::loaded_vmcs_clears, &LoadedVmcsStats::cycles>;
};

class LoadedVmcs {
 public:
  LoadedVmcs(Vcpu& vcpu, const LoadedVmcsConfig& cfg) : v_(vcpu), cfg_(cfg) {}

  // kvm_arch_vcpu_put() from kvm_sched_out(): the cycles beyond the switch
  // (`preempted`: still runnable; a blocking vCPU's put is in cost.vcpu_block).
  Tsc vcpu_put(bool preempted);
  // kvm_arch_vcpu_load() from kvm_sched_in() on `cpu`: the cycles beyond the
  // switch (`was_preempted`: it resumes from a preemption, not a wake-up).
  // The first load is the vCPU's creation (before the run): free.
  Tsc vcpu_load(Pcpu& cpu, bool was_preempted);

  [[nodiscard]] int loaded_cpu() const { return cpu_; }
  [[nodiscard]] const LoadedVmcsStats& stats() const { return stats_; }

 private:
  Vcpu& v_;
  const LoadedVmcsConfig& cfg_;
  int cpu_ = -1;  // loaded_vmcs->cpu: the pCPU whose cache holds the VMCS
  LoadedVmcsStats stats_;
};

}  // namespace kvmsim
