// A VM (struct kvm): its vCPUs with their LAPICs, TSC offset/scaling, and the
// KVM configuration they share. Building one reads the kvm.*, vm.*,
// platform.* and cost.* keys the VMX and LAPIC models need.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/core/metrics.h"
#include "sim/core/params.h"
#include "sim/lapic/apic_map.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

// The per-VM configuration every vCPU of a VM gets (checked for
// combinations no kernel has).
struct VmConfig {
  VcpuCosts vcpu_costs;
  VmxConfig vmx;
  LapicConfig lapic;
  LapicCosts lapic_costs;
  TscScaling tsc;
  std::uint64_t guest_tsc_khz = 0;
};
VmConfig vm_config(const ParamSet& p, const TscClock& clk);

class Vm {
 public:
  // `place(vcpu_id)`: the pCPU each vCPU thread starts on and its affinity.
  Vm(int id, int first_vcpu_id, int vcpus, const VmConfig& cfg,
     const std::function<std::pair<Pcpu*, CpuMask>(int)>& place);

  [[nodiscard]] int id() const { return id_; }
  [[nodiscard]] const std::vector<std::unique_ptr<Vcpu>>& vcpus() const { return vcpus_; }
  [[nodiscard]] std::uint64_t guest_tsc_khz() const { return guest_tsc_khz_; }

 private:
  VmConfig cfg_;          // what every vCPU of this VM reads (they keep references)
  VmVcpuList spin_list_;  // kvm->vcpus for kvm_vcpu_on_spin()
  int id_;
  std::uint64_t guest_tsc_khz_;
  std::vector<std::unique_ptr<Vcpu>> vcpus_;
  ApicMap apic_map_;
};

// vmx.*, vcpu.* and lapic.* counters summed over `vcpus` (kvm's per-vCPU
// stats, as kvm_stat sums them).
class VcpuMetrics : public MetricSource {
 public:
  explicit VcpuMetrics(std::vector<Vcpu*> vcpus, int measuring_vcpu)
      : vcpus_(std::move(vcpus)), measuring_(measuring_vcpu) {}
  void report(Metrics& m, const TscClock& clk) const override;

 private:
  std::vector<Vcpu*> vcpus_;
  int measuring_;
};

}  // namespace kvmsim
