// The stages a pCPU spends its time in. Every segment the model runs is
// tagged with one, so observers can say where the microseconds went.
#pragma once

#include <cstdint>
#include <string_view>

namespace kvmsim {

enum class Stage : std::uint8_t {
  // host, vCPU thread (arch/x86/kvm/x86.c, vmx/vmx.c)
  VmExit,           // hardware exit + vmx_vcpu_run() exit half
  HandleExit,       // vmx_handle_exit() dispatch + exit handler
  VcpuEnterGuest,   // vcpu_enter_guest(): requests, injection, IRQs off
  VmxVcpuRun,       // vmx_vcpu_run() software entry half (vmx_update_hv_timer ..)
  VmEntry,          // VMRESUME + hardware entry
  ExitFastpath,     // vmx_exit_handlers_fastpath() + REENTER_GUEST, IRQs off
  WaitLapicExpire,  // kvm_wait_lapic_expire() busy-wait
  VcpuBlock,        // vcpu_block(): switch to the sw timer, kvm_vcpu_halt(), schedule() out
  VcpuWakeup,       // idle exit, schedule() back in, switch to the hv timer
  // host, interrupts
  HostIrq,  // host hard IRQ (entry, handlers, irq_exit, softirqs)
  // host, other
  HostIdle,           // pCPU idle loop (a blocked vCPU thread sleeps here)
  HostContextSwitch,  // host __schedule() + context_switch() between two threads
  HostTask,           // a host task's own work (a CPU hog, a kworker)
  // guest
  Guest,      // guest code not otherwise classified
  GuestIdle,  // guest idle loop (idle=poll)
  GuestIrqEntry,
  GuestHrtimerInterrupt,
  GuestIrqExit,
  GuestContextSwitch,
  GuestSyscall,
  GuestUser,
  // Appended (the values above are hashed by sim.fingerprint).
  HaltPoll,  // kvm_vcpu_halt(): polling kvm_vcpu_check_block() before sleeping
  VcpuRun,   // vcpu_run() loop between two vcpu_enter_guest(), IRQs on (pending timer injection)
  GuestHaltPoll,   // guest cpuidle poll state (cpuidle-haltpoll's poll_idle()) before HLT
  HostIdleEnter,   // host do_idle(): tick_nohz_idle_enter() + cpuidle_select(), IRQs off
  HostCstateExit,  // the core leaving a C-state (exit latency) before the IRQ is taken
  Count
};

inline std::string_view stage_name(Stage s) {
  switch (s) {
    case Stage::VmExit:
      return "vmexit";
    case Stage::HandleExit:
      return "handle_exit";
    case Stage::VcpuEnterGuest:
      return "vcpu_enter_guest";
    case Stage::VmxVcpuRun:
      return "vmx_vcpu_run";
    case Stage::VmEntry:
      return "vmentry";
    case Stage::ExitFastpath:
      return "exit_fastpath";
    case Stage::WaitLapicExpire:
      return "wait_lapic_expire";
    case Stage::VcpuBlock:
      return "vcpu_block";
    case Stage::HaltPoll:
      return "halt_poll";
    case Stage::VcpuRun:
      return "vcpu_run";
    case Stage::GuestHaltPoll:
      return "guest_halt_poll";
    case Stage::HostIdleEnter:
      return "host_idle_enter";
    case Stage::HostCstateExit:
      return "host_cstate_exit";
    case Stage::VcpuWakeup:
      return "vcpu_wakeup";
    case Stage::HostIrq:
      return "host_irq";
    case Stage::HostIdle:
      return "host_idle";
    case Stage::HostContextSwitch:
      return "host_context_switch";
    case Stage::HostTask:
      return "host_task";
    case Stage::Guest:
      return "guest";
    case Stage::GuestIdle:
      return "guest_idle";
    case Stage::GuestIrqEntry:
      return "guest_irq_entry";
    case Stage::GuestHrtimerInterrupt:
      return "guest_hrtimer_interrupt";
    case Stage::GuestIrqExit:
      return "guest_irq_exit";
    case Stage::GuestContextSwitch:
      return "guest_context_switch";
    case Stage::GuestSyscall:
      return "guest_syscall";
    case Stage::GuestUser:
      return "guest_user";
    case Stage::Count:
      break;
  }
  return "?";
}
inline constexpr int kStageCount = static_cast<int>(Stage::Count);

}  // namespace kvmsim
