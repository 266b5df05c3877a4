// The mode a vCPU is in, as the teaching views show it (the Perfetto vCPU
// track, the VCD `vcpuN.mode` signal), derived from the model's events:
//   Root    from a VM exit to the next entry (KVM handles the exit in the
//           vCPU thread), and from kvm_vcpu_wakeup to the next entry;
//   Guest   from a VM entry to the next exit;
//   Halted  from on_vcpu_block (the thread schedules out in kvm_vcpu_block()
//           after a HLT exit) to on_vcpu_wakeup;
//   Polling from on_vcpu_poll (kvm_vcpu_halt() polls kvm_vcpu_check_block()
//           after a HLT exit, halt polling) to on_vcpu_wakeup (waited =
//           false) or, when the window ends, on_vcpu_block.
#pragma once

#include <cstdint>
#include <string_view>

namespace kvmsim::views {

// The numbers are the values of the VCD `vcpuN.mode` signal.
enum class VcpuMode : std::uint8_t { Root = 0, Guest = 1, Halted = 2, Polling = 3 };

inline std::string_view vcpu_mode_name(VcpuMode m) {
  switch (m) {
    case VcpuMode::Root:
      return "root";
    case VcpuMode::Guest:
      return "guest";
    case VcpuMode::Halted:
      return "halted";
    case VcpuMode::Polling:
      return "polling";
  }
  return "?";
}

}  // namespace kvmsim::views
