// VMX basic exit reasons (Intel SDM Vol. 3, Appendix C), printed as the
// kernel's VMX_EXIT_REASONS table does (arch/x86/include/uapi/asm/vmx.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace kvmsim {

enum class ExitReason : std::uint8_t {
  EXCEPTION_NMI = 0,
  EXTERNAL_INTERRUPT = 1,
  INTERRUPT_WINDOW = 7,
  CPUID = 10,
  HLT = 12,
  VMCALL = 18,
  IO_INSTRUCTION = 30,
  MSR_READ = 31,
  MSR_WRITE = 32,
  PAUSE_INSTRUCTION = 40,
  EPT_VIOLATION = 48,
  PREEMPTION_TIMER = 52,
};
inline constexpr int kMaxExitReason = 64;

inline std::string_view exit_reason_name(ExitReason r) {
  switch (r) {
    case ExitReason::EXCEPTION_NMI:
      return "EXCEPTION_NMI";
    case ExitReason::EXTERNAL_INTERRUPT:
      return "EXTERNAL_INTERRUPT";
    case ExitReason::INTERRUPT_WINDOW:
      return "INTERRUPT_WINDOW";
    case ExitReason::CPUID:
      return "CPUID";
    case ExitReason::HLT:
      return "HLT";
    case ExitReason::VMCALL:
      return "VMCALL";
    case ExitReason::IO_INSTRUCTION:
      return "IO_INSTRUCTION";
    case ExitReason::MSR_READ:
      return "MSR_READ";
    case ExitReason::MSR_WRITE:
      return "MSR_WRITE";
    case ExitReason::PAUSE_INSTRUCTION:
      return "PAUSE_INSTRUCTION";
    case ExitReason::EPT_VIOLATION:
      return "EPT_VIOLATION";
    case ExitReason::PREEMPTION_TIMER:
      return "PREEMPTION_TIMER";
  }
  return "UNKNOWN";
}

// MSRs the model handles.
inline constexpr std::uint32_t MSR_IA32_TSC_DEADLINE = 0x6e0;
inline constexpr std::uint32_t APIC_ICR = 0x300;  // apicdef.h
inline constexpr std::uint32_t APIC_ICR2 = 0x310;
inline constexpr std::uint64_t APIC_ICR_BUSY = 0x1000;   // delivery status, bit 12
inline constexpr std::uint32_t MSR_X2APIC_BASE = 0x800;  // APIC_BASE_MSR
inline constexpr std::uint32_t MSR_X2APIC_LAST = 0x8ff;
inline constexpr std::uint32_t MSR_X2APIC_EOI = 0x80b;
inline constexpr std::uint32_t MSR_X2APIC_ICR = 0x830;    // APIC_BASE_MSR + (APIC_ICR >> 4)
inline constexpr std::uint32_t MSR_X2APIC_ICR2 = 0x831;   // not writable in x2APIC mode
inline constexpr std::uint32_t MSR_X2APIC_LVTT = 0x832;   // APIC_BASE_MSR + (APIC_LVTT >> 4)
inline constexpr std::uint32_t MSR_X2APIC_TMICT = 0x838;  // APIC_BASE_MSR + (APIC_TMICT >> 4)
// kvm_x2apic_msr_write(): the APIC register an x2APIC MSR stands for.
constexpr std::uint32_t x2apic_msr_reg(std::uint32_t msr) { return (msr - MSR_X2APIC_BASE) << 4; }

}  // namespace kvmsim
