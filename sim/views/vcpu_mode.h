// The mode a vCPU is in, as the teaching views show it (the Perfetto vCPU
// track, the VCD `vcpuN.mode` signal), derived from the model's events:
//   Root    from a VM exit to the next entry (KVM handles the exit in the
//           vCPU thread), and from kvm_vcpu_wakeup to the next entry;
//   Guest   from a VM entry to the next exit;
//   Halted  from on_vcpu_block (the thread schedules out in kvm_vcpu_block()
//           after a HLT exit) to on_vcpu_wakeup;
//   Polling reserved for halt polling, which the model does not have yet
//           (kvm.halt_poll_ns = 0). When it does, an `on_vcpu_poll(vcpu, t)`
//           hook emitted where the polling loop starts only has to call the
//           views' set_vcpu_mode(vcpu, VcpuMode::Polling, t), which already
//           handles any mode; on_vcpu_wakeup(waited = false) ends it.
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
