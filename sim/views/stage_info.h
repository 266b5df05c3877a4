// What each stage models, in one line, for the teaching views (kvmsim explain,
// the args of the Perfetto trace's slices). The text follows the comments of
// sim/core/stage.h and the Vcpu state machine in sim/vmx/vcpu.cpp.
#pragma once

#include <string_view>

#include "sim/core/stage.h"

namespace kvmsim::views {

// Guest stages run in VMX non-root mode; the others are host (root mode).
// (Of the stages appended after GuestUser, HaltPoll and VcpuRun are host
// stages, GuestHaltPoll a guest one.)
inline bool stage_is_guest(Stage s) {
  return (s >= Stage::Guest && s <= Stage::GuestUser) || s == Stage::GuestHaltPoll;
}
inline std::string_view stage_category(Stage s) { return stage_is_guest(s) ? "guest" : "host"; }

inline std::string_view stage_explanation(Stage s) {
  switch (s) {
    case Stage::VmExit:
      return "hardware VM exit + vmx_vcpu_run() exit half";
    case Stage::HandleExit:
      return "vmx_handle_exit(): dispatch + exit handler + its LAPIC work";
    case Stage::VcpuEnterGuest:
      return "vcpu_enter_guest(): requests, timer IRQ injection, IRQs off";
    case Stage::VmxVcpuRun:
      return "vmx_vcpu_run() software entry half; loads the preemption timer at its end";
    case Stage::VmEntry:
      return "VMRESUME + hardware VM entry";
    case Stage::ExitFastpath:
      return "vmx_exit_handlers_fastpath() + the REENTER_GUEST loop, IRQs off";
    case Stage::WaitLapicExpire:
      return "kvm_wait_lapic_expire() busy-wait to the guest deadline";
    case Stage::VcpuBlock:
      return "vcpu_block(): timer to a host hrtimer, schedule() out";
    case Stage::HaltPoll:
      return "kvm_vcpu_halt(): halt polling, kvm_vcpu_check_block() until a wake-up or the window "
             "ends";
    case Stage::VcpuRun:
      return "vcpu_run(): kvm_inject_pending_timer_irqs() of a pending timer, IRQs on";
    case Stage::GuestHaltPoll:
      return "guest cpuidle-haltpoll: poll_idle() spins on need_resched before HLT";
    case Stage::HostIdleEnter:
      return "host idle entry: tick_nohz_idle_enter() stops the tick, menu_select() picks a "
             "C-state";
    case Stage::HostCstateExit:
      return "host core leaving its C-state (exit latency) before it takes the interrupt";
    case Stage::VcpuWakeup:
      return "back from kvm_vcpu_block(): schedule() in, timer back to hv";
    case Stage::HostIrq:
      return "host hard IRQ: hrtimer_interrupt() -> apic_timer_fn() or a device, irq_exit()";
    case Stage::HostIdle:
      return "pCPU idle loop (a blocked vCPU thread sleeps here)";
    case Stage::HostContextSwitch:
      return "host __schedule(): context switch to another host thread";
    case Stage::HostTask:
      return "a host task's own work (CPU hog, kworker)";
    case Stage::Guest:
      return "guest code (kvm-unit-tests main loop or handler body)";
    case Stage::GuestIdle:
      return "guest idle loop (idle=poll) or busy-wait for the interrupt";
    case Stage::GuestIrqEntry:
      return "guest interrupt entry: vector delivery, irq_enter()";
    case Stage::GuestHrtimerInterrupt:
      return "guest hrtimer_interrupt(): expire timers, wake the sleeper";
    case Stage::GuestIrqExit:
      return "guest irq_exit() + iret";
    case Stage::GuestContextSwitch:
      return "guest __schedule(): context switch";
    case Stage::GuestSyscall:
      return "guest kernel: clock_nanosleep() entry or clockevent programming";
    case Stage::GuestUser:
      return "guest user space: nanosleep return + clock_gettime()";
    case Stage::Count:
      break;
  }
  return "?";
}

}  // namespace kvmsim::views
