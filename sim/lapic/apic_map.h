// kvm_apic_map: a VM's LAPICs by x2APIC ID, for kvm_irq_delivery_to_apic_fast()
// (physical destination mode, one target). APIC ID = vCPU index in its VM.
#pragma once

#include <cstdint>
#include <vector>

namespace kvmsim {

class KvmLapic;

class ApicMap {
 public:
  void add(KvmLapic* v) { phys_.push_back(v); }
  // nullptr for an ID no vCPU has (the IPI is dropped, as KVM does).
  [[nodiscard]] KvmLapic* find(std::uint32_t apic_id) const {
    return apic_id < phys_.size() ? phys_[apic_id] : nullptr;
  }
  [[nodiscard]] std::size_t size() const { return phys_.size(); }

 private:
  std::vector<KvmLapic*> phys_;
};

}  // namespace kvmsim
