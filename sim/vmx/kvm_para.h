// The guest/host paravirtual ABI the model uses (include/uapi/linux/kvm_para.h,
// arch/x86/include/uapi/asm/kvm_para.h): hypercall numbers and the bits of
// struct kvm_steal_time's `preempted` byte.
#pragma once

#include <cstdint>

namespace kvmsim {

// KVM hypercall numbers (VMCALL with the number in RAX).
constexpr std::uint32_t KVM_HC_KICK_CPU = 5;
constexpr std::uint32_t KVM_HC_SCHED_YIELD = 11;

// struct kvm_steal_time's `preempted` byte.
inline constexpr std::uint8_t KVM_VCPU_PREEMPTED = 1U << 0;
inline constexpr std::uint8_t KVM_VCPU_FLUSH_TLB = 1U << 1;

}  // namespace kvmsim
