// The vCPUs' and VMX's metric keys: exit statistics (exits.*), the run
// loop (vmx.*, vcpu.*), halt and halt polling (halt_poll.*), PLE and
// directed yield, hypercalls, steal time. Reported by System::run()'s exit
// table and VcpuMetrics::report() (vm.cpp) with the RegisterVcpuMetrics of
// halt.cpp, directed_yield.cpp, hypercall.cpp and steal_time.cpp.
#include "sim/core/metric_decl.h"

// One declaration per row: kept compact by hand.
// clang-format off
KVMSIM_DECLARE_METRICS(vmx, {
    {"exits.<reason>.count", "count", "kvm", "VM exits with basic exit reason `<reason>` (as perf kvm stat names them: EXTERNAL_INTERRUPT, HLT, MSR_WRITE, PAUSE_INSTRUCTION, PREEMPTION_TIMER, VMCALL, ...), all vCPUs; only reasons that occurred."},
    {"exits.<reason>.avg_ns", "ns", "kvm", "Mean time from each kvm_exit with reason `<reason>` to the same vCPU's next kvm_entry (perf kvm stat's Avg time: the vCPU's time out of the guest for it)."},
    {"vmx.hv_timer_fallbacks", "count", "kvm", "vmx_set_hv_timer() calls that failed (-ERANGE: the deadline does not fit the preemption timer), so the LAPIC timer fell back to a host hrtimer."},
    {"vmx.fastpath.reenter_guest", "count", "kvm", "Exits handled in vmx_exit_handlers_fastpath() that re-entered the guest at once (EXIT_FASTPATH_REENTER_GUEST)."},
    {"vmx.fastpath.exit_handled", "count", "kvm", "Exits handled in the fastpath that still went through vcpu_enter_guest() again (EXIT_FASTPATH_EXIT_HANDLED: the x2APIC ICR write, or a pending request ended the re-entry loop)."},
    {"vcpu.<n>.run_s", "s", "kvm", "CPU time vCPU thread `<n>` received (sum_exec_runtime); `<n>` counts the vCPUs VM-major (all of VM 0, then VM 1, ...)."},
    {"vcpu.<n>.steal_s", "s", "kvm", "Time vCPU thread `<n>` was runnable but waiting for its pCPU (sched_info run_delay, what record_steal_time() reports to the guest as steal)."},
    {"vcpu.steal_s", "s", "kvm", "Sum of `vcpu.<n>.steal_s` over all vCPUs."},
    {"vcpu.preemptions", "count", "kvm", "Times a vCPU thread was scheduled out while runnable (kvm_sched_out() with vcpu->preempted set)."},
    {"vcpu.kicks", "count", "kvm", "kvm_vcpu_kick() calls that woke or IPI'd a vCPU: timer kicks (apic_timer_fn) and interrupt-delivery kicks."},
    {"vcpu.kicks_lost", "count", "kvm", "Kicks of a blocked vCPU that did not wake it: a model bug, the run fails when non-zero."},
    {"vcpu.halts", "count", "kvm", "HLT exits handled by kvm_emulate_halt(), all vCPUs (KVM's halt_exits)."},
    {"vcpu.blocks", "count", "kvm", "Of vcpu.halts, the halts whose vCPU thread slept in kvm_vcpu_block() (one per halt, however often it was woken)."},
    {"vcpu.blocked_s", "s", "kvm", "Time vCPU threads spent asleep in kvm_vcpu_block()."},
    {"vcpu.spurious_wakeups", "count", "kvm", "Wake-ups of a vCPU halted with RFLAGS.IF clear (the PV qspinlock's halt) by an interrupt it cannot take: it slept again, or a new halt began. Only when non-zero."},
    {"halt_poll.attempted", "count", "kvm", "Halts that polled (KVM's halt_attempted_poll): a non-zero window, the only task on the pCPU, no need_resched."},
    {"halt_poll.successful", "count", "kvm", "Halts that ended during polling, without sleeping (KVM's halt_successful_poll)."},
    {"halt_poll.invalid", "count", "kvm", "Polls ended by an invalid wake-up (KVM's halt_poll_invalid); always 0 on x86, where every wake-up is valid."},
    {"halt_poll.grow", "count", "kvm", "Halts after which the vCPU's poll window grew (grow_halt_poll_ns(); the kvm_halt_poll_ns tracepoint with grow)."},
    {"halt_poll.shrink", "count", "kvm", "Halts after which the vCPU's poll window shrank (shrink_halt_poll_ns(); the kvm_halt_poll_ns tracepoint without grow)."},
    {"halt_poll.success_ns", "ns", "kvm", "Time spent polling in halts whose poll succeeded (KVM's halt_poll_success_ns)."},
    {"halt_poll.fail_ns", "ns", "kvm", "Time spent polling in halts that went on to sleep (KVM's halt_poll_fail_ns)."},
    {"halt_poll.poll_ns_total", "ns", "kvm", "halt_poll.success_ns + halt_poll.fail_ns."},
    {"halt_poll.wait_ns", "ns", "kvm", "Time halted vCPUs slept in kvm_vcpu_block() after polling or without it (KVM's halt_wait_ns)."},
    {"vcpu.pause_exits", "count", "kvm", "PAUSE_INSTRUCTION exits (Pause-Loop Exiting). This and the other PLE / directed-yield keys only in runs with PAUSE exits."},
    {"vcpu.ple_window_grows", "count", "kvm", "grow_ple_window() calls that raised a vCPU's ple_window."},
    {"vcpu.ple_window_peak", "cycles", "kvm", "The largest ple_window (cycles a PAUSE loop may run before a PAUSE_INSTRUCTION exit) any vCPU reached."},
    {"vcpu.directed_yields", "count", "kvm", "kvm_vcpu_on_spin() calls that yielded to another vCPU (yield_to() succeeded)."},
    {"vcpu.directed_yields_remote", "count", "kvm", "Of vcpu.directed_yields, those to a vCPU queued on another pCPU (resched_curr() there: an IPI)."},
    {"vcpu.directed_yield_ipis_saved", "count", "kvm", "Of vcpu.directed_yields_remote, those whose pCPU had need_resched set already: no IPI sent."},
    {"vcpu.directed_yields_woken", "count", "kvm", "Directed yields to a vCPU woken from a halt (vcpu->ready, not preempted); only with kvm.directed_yield_ready."},
    {"vcpu.yield_to_failed", "count", "kvm", "yield_to() calls that returned 0 (the candidate was running)."},
    {"vcpu.yield_to_esrch", "count", "kvm", "yield_to() calls that returned -ESRCH (both run queues had a single task)."},
    {"vcpu.dy_ineligible", "count", "kvm", "Candidates kvm_vcpu_eligible_for_directed_yield() passed over (themselves in kvm_vcpu_on_spin() with dy_eligible false)."},
    {"vcpu.vmptrlds", "count", "kvm", "vmx_vcpu_load() calls that made the vCPU's VMCS current with VMPTRLD because the pCPU had another one current (a switch between vCPU threads, or a wake-up after another vCPU ran there). These four only in runs where a vCPU was preempted or its VMCS gave way or moved."},
    {"vcpu.ibpbs", "count", "kvm", "Of vcpu.vmptrlds, those followed by an indirect branch prediction barrier (host.spectre_v2_ibpb)."},
    {"vcpu.loaded_vmcs_clears", "count", "kvm", "vmx_vcpu_load() calls on a pCPU other than the one the VMCS was last loaded on: loaded_vmcs_clear() waited for the old pCPU's VMCLEAR."},
    {"vcpu.vmcs_switch_us", "us", "kvm", "Time the preempt notifiers spent beyond the host context switch: vcpu_put / vcpu_load of preempted vCPUs, VMPTRLDs, IBPBs and VMCS clears (cost.vcpu_put, cost.vcpu_load, cost.vmptrld, cost.host.ibpb, cost.loaded_vmcs_clear)."},
    {"vcpu.pv_kicks", "count", "kvm", "KVM_HC_KICK_CPU hypercalls (the PV qspinlock's unlock kick). This and the next two only when non-zero."},
    {"vcpu.pv_kick_wakeups", "count", "kvm", "Of vcpu.pv_kicks, those that woke the target from a halt it slept in."},
    {"vcpu.kick_yields", "count", "kvm", "KVM_HC_KICK_CPU hypercalls followed by a yield_to() the kicked vCPU (kvm.kick_cpu_yield)."},
    {"vcpu.sched_yield_calls", "count", "kvm", "KVM_HC_SCHED_YIELD hypercalls (PV sched yield after a cross-call IPI to a preempted vCPU). Only when non-zero."},
    {"vcpu.sched_yields", "count", "kvm", "Of vcpu.sched_yield_calls, those that yielded to the target."},
    {"vcpu.pv_tlb_flush_requests", "count", "kvm", "Flushes the guest left to the host: its cmpxchg set KVM_VCPU_FLUSH_TLB in a preempted vCPU's steal-time area. Only with PV TLB flush in use."},
    {"vcpu.pv_tlb_flushes", "count", "kvm", "TLB flushes record_steal_time() did for the guest on entry (KVM_VCPU_FLUSH_TLB found set). Only with PV TLB flush in use."},
});
// clang-format on
