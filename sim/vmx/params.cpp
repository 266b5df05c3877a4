// VMX exits/entries, the preemption timer, TSC, VM shape and pinning.
#include "sim/model_params.h"

namespace kvmsim {

// One declaration per parameter, one per row: kept compact by hand.
// clang-format off
void declare_vmx_params(ParamRegistry& r) {
  r.declare({"platform.preemption_timer_rate", ParamType::Int, "5", "shift", 0, 31, {},
             "IA32_VMX_MISC[4:0]: the preemption timer counts TSC >> this (5 Haswell, 7 Skylake)."});
  r.declare({"platform.apicv", ParamType::Bool, "true", "bool", {}, {}, {},
             "APICv: virtual-interrupt delivery; the exit path injects the timer straight into vIRR."});
  r.declare({"kvm.enable_hv_timer", ParamType::Bool, "true", "bool", {}, {}, {},
             "kvm_intel.preemption_timer: emulate the TSC-deadline timer with the VMX "
             "preemption timer (else a host hrtimer)."});
  r.declare({"kvm.exit_fastpath", ParamType::Bool, "false", "bool", {}, {}, {},
             "vmx_exit_handlers_fastpath(): exits handled with IRQs off right after the world "
             "switch; the x2APIC ICR write (v5.6+) and, with kvm.exit_fastpath_timer, the "
             "TSC-deadline WRMSR and the preemption timer (REENTER_GUEST, v5.8+)."});
  r.declare({"kvm.exit_fastpath_timer", ParamType::Bool, "true", "bool", {}, {}, {},
             "The fastpath also covers the TSC-deadline WRMSR (when the hv timer is usable) and "
             "the preemption-timer exit (v5.8+); only with kvm.exit_fastpath."});
  r.declare({"kvm.halt_poll_ns", ParamType::Int, "0", "ns", 0, 1e9, {},
             "kvm.halt_poll_ns: the maximum halt-polling window of kvm_vcpu_halt(); 0 = no "
             "polling. The kernel's x86 default is 200000 (500000 in 2015); the scenarios set "
             "what their measurement ran with."});
  r.declare({"kvm.halt_poll_ns_grow", ParamType::Int, "2", "factor", 0, 1000, {},
             "kvm.halt_poll_ns_grow: multiplier of a vCPU's window when a halt ended after it "
             "but within the maximum; 0 = never grow."});
  r.declare({"kvm.halt_poll_ns_grow_start", ParamType::Int, "10000", "ns", 0, 1e9, {},
             "kvm.halt_poll_ns_grow_start: the first non-zero window; a shrunk window below it "
             "is 0."});
  r.declare({"kvm.halt_poll_ns_shrink", ParamType::Int, "0", "divisor", 0, 1000, {},
             "kvm.halt_poll_ns_shrink: divisor of the window when a halt outlasted the maximum; "
             "0 = reset to 0 (the historic default; recent kernels use 2)."});
  r.declare({"kvm.halt_poll_rule", ParamType::String, "v6.2", "", {}, {}, {"v4.0", "v4.3", "v4.7", "v5.2", "v5.15", "v6.2"},
             "Era of kvm_vcpu_halt()'s window rule (sim/vmx/halt_poll.h), by the first kernel that "
             "had it: v4.0 a fixed window (every halt polls halt_poll_ns); v4.3 first grow 10000 ns, no floor, no cap; v4.7 grow capped at "
             "halt_poll_ns, invalid wake-ups shrink; v5.2 grow_start as the first step; v5.15 a shrink below grow_start gives 0; v6.2 the cap "
             "at the start of each halt (the rule of v6.6). A version switch: host.kernel sets it."});
  r.declare({"kvm.poll_control", ParamType::Bool, "true", "bool", {}, {}, {},
             "KVM_FEATURE_POLL_CONTROL (v5.3+) offered to the guest: a guest with "
             "cpuidle-haltpoll (guest.haltpoll_ns) then turns host halt polling off through "
             "MSR_KVM_POLL_CONTROL; false = both poll."});
  r.declare({"kvm.halt_poll_ns_timer", ParamType::Int, "0", "ns", 0, 1e9, {},
             "halt_poll_ns_timer (2016 proposal, not merged): poll instead of scheduling out "
             "when the vCPU's own LAPIC timer fires within this many ns; 0 = off."});
  r.declare({"cost.halt_poll_exit", ParamType::Dist, "150ns", "time", {}, {}, {},
             "A successful halt poll: the loop's last kvm_vcpu_check_block(), stats and trace, "
             "back to vcpu_block() (an estimate)."});
  r.declare({"kvm.steal_time_atomic_preempted", ParamType::Bool, "true", "bool", {}, {}, {},
             "record_steal_time() clears the steal-time `preempted` byte with an xchg on the "
             "guest's memory (v5.6+, the CVE-2019-3016 fix); false = v4.16-v5.5: the whole "
             "struct is copied, updated and written back after vcpu_enter_guest()'s request "
             "processing, so a KVM_VCPU_FLUSH_TLB set in between is lost."});
  // Pause-Loop Exiting, vmx.c module parameters (v4.16 values in the docs;
  // the scenarios of that era set kvm.ple_gap: 128).
  r.declare({"kvm.ple_gap", ParamType::Int, "0", "cycles", 0, 1e6, {},
             "ple_gap: PAUSEs closer than this belong to one spin loop; 0 = Pause-Loop Exiting "
             "off (v4.16's default is 128; the model has no default PLE so that runs without "
             "it keep their results). Only guest spin-waits on csds (csd_lock_wait) are PAUSE "
             "loops in the model."});
  r.declare({"kvm.ple_window", ParamType::Int, "4096", "cycles", 1, 1e9, {},
             "ple_window: cycles of one PAUSE loop before a PAUSE_INSTRUCTION exit (v4.16: 4096)."});
  r.declare({"kvm.ple_window_grow", ParamType::Int, "2", "factor", 1, 1000, {},
             "ple_window_grow: the window is multiplied by this on every PAUSE exit (v4.16: 2)."});
  r.declare({"kvm.ple_window_shrink", ParamType::Int, "0", "divisor", 0, 1e9, {},
             "ple_window_shrink: at sched_in the window is divided by this (below ple_window) "
             "or reduced by it; 0 = reset to ple_window (v4.16: 0)."});
  r.declare({"kvm.ple_window_max", ParamType::Int, "1073741823", "cycles", 1, 4294967295.0, {},
             "ple_window_max: the grown window's cap (v4.16: INT_MAX / ple_window_grow)."});
  r.declare({"cost.handle_pause", ParamType::Dist, "400ns", "time", {}, {}, {},
             "handle_pause(): grow_ple_window() and kvm_vcpu_on_spin()'s scan of the VM's "
             "vCPUs up to yield_to() (estimate)."});
  r.declare({"cost.host.yield_to", ParamType::Dist, "300ns", "time", {}, {}, {},
             "yield_to() up to its schedule() (kvm_vcpu_yield_to() from kvm_vcpu_on_spin() or "
             "kvm_sched_yield()): double_rq_lock() of this and the target's run queue (a "
             "remote queue's lock line comes from another core), yield_to_task_fair(), "
             "resched_curr() with the ICR write of the reschedule IPI, the unlock (estimate). "
             "Not paid on -ESRCH, decided before the locks. The switch that follows is "
             "cost.host.context_switch and the vCPU's put / load."});
  r.declare({"cost.handle_kick_cpu", ParamType::Dist, "500ns", "time", {}, {}, {},
             "handle_vmcall() -> kvm_emulate_hypercall(KVM_HC_KICK_CPU) -> "
             "kvm_pv_kick_cpu_op(): APIC_DM_REMRD delivery to the target (pv_unhalted, "
             "kvm_vcpu_kick(); the wake-up itself is cost.kick_wakeup) (estimate)."});
  r.declare({"cost.pv_tlb_flush", ParamType::Dist, "300ns", "time", {}, {}, {},
             "record_steal_time() finding KVM_VCPU_FLUSH_TLB: kvm_vcpu_flush_tlb() -> "
             "vmx_flush_tlb(), an INVVPID/INVEPT of the guest's context before the entry "
             "(estimate; the refills after it are the guest's)."});
  r.declare({"vm.count", ParamType::Int, "1", "count", 1, 256, {}, "Number of VMs."});
  r.declare({"vm.vcpus", ParamType::Int, "2", "count", 1, 256, {}, "vCPUs per VM."});
  r.declare({"vm.pinning", ParamType::IntList, "[]", "cpu", 0, 4095, {},
             "pCPU each vCPU thread is pinned to (VM-major order; a pCPU may repeat: the vCPUs "
             "then share it under the host scheduler); empty = vm.affinity, else the isolated "
             "pCPUs in order."});
  r.declare({"vm.affinity", ParamType::IntList, "[]", "cpu", 0, 4095, {},
             "pCPUs every vCPU thread may run on (taskset of the whole VM, unpinned threads "
             "placed by the host scheduler); empty = use vm.pinning."});
  r.declare({"kvm.steal_time_preempted_on_block", ParamType::Bool, "true", "bool", {}, {}, {},
             "Kernel-version switch (not a module parameter): kvm_arch_vcpu_put() marks "
             "KVM_VCPU_PREEMPTED on every put, a halted vCPU included (v4.16..v5.18); false = "
             "only when preempted while runnable (v5.19+)."});
  r.declare({"kvm.directed_yield_ready", ParamType::Bool, "false", "bool", {}, {}, {},
             "Kernel-version switch: kvm_vcpu_on_spin() boosts vcpu->ready vCPUs, i.e. also "
             "those woken from a halt by an interrupt (kvm_vcpu_wake_up()), in any CPU mode; "
             "preempted ones still only in kernel mode (d73eb57b80b \"KVM: Boost vCPUs that "
             "are delivering interrupts\", v5.3). false = v4.16..v5.2: preempted vCPUs in "
             "kernel mode only."});
  r.declare({"kvm.kick_cpu_yield", ParamType::Bool, "false", "bool", {}, {}, {},
             "Kernel-version switch: after KVM_HC_KICK_CPU the kicker yields to the kicked vCPU "
             "if it is vcpu->ready (kvm_sched_yield(); 266e85a5ec9 \"KVM: X86: Boost queue head "
             "vCPU to mitigate lock waiter preemption\", v5.3). false = v4.16..v5.2."});
  r.declare({"kvm.pv_sched_yield", ParamType::Bool, "false", "bool", {}, {}, {},
             "Kernel-version switch: the host offers KVM_FEATURE_PV_SCHED_YIELD and handles "
             "KVM_HC_SCHED_YIELD with kvm_sched_yield() (v5.3, Wanpeng Li 2019): the default of "
             "guest.cpuid.pv_sched_yield. false = before v5.3."});
  r.declare({"cost.handle_sched_yield", ParamType::Dist, "400ns", "time", {}, {}, {},
             "handle_vmcall() -> kvm_sched_yield(): the APIC-map lookup of the target before "
             "yield_to() (estimate; the yield and switch are the scheduler's)."});
  r.declare({"vm.tsc_khz", ParamType::Int, "0", "kHz", 0, 10000000, {},
             "Guest TSC frequency; 0 = the host's (no TSC scaling)."});
  r.declare({"vm.tsc_offset", ParamType::Int, "0", "cycles", -9.0e18, 9.0e18, {},
             "VMCS TSC offset added to the (scaled) host TSC."});
  r.declare({"cost.vmexit", ParamType::Dist, "400ns", "time", {}, {}, {},
             "Hardware VM exit + vmx_vcpu_run() exit half (until handle_exit_irqoff)."});
  r.declare({"cost.vmx_vcpu_run", ParamType::Dist, "0ns", "time", {}, {}, {},
             "vmx_vcpu_run() software entry half (state loads, mitigations, perf MSRs) up to "
             "vmx_update_hv_timer(), which loads the preemption timer at its end, right before "
             "kvm_wait_lapic_expire() (v5.3+ site); 0 = folded into cost.vmentry."});
  r.declare({"cost.vmentry", ParamType::Dist, "400ns", "time", {}, {}, {},
             "VMRESUME + hardware VM entry up to the first guest instruction (plus the "
             "software entry half when cost.vmx_vcpu_run is 0)."});
  r.declare({"cost.vcpu_enter_guest", ParamType::Dist, "300ns", "time", {}, {}, {},
             "vcpu_enter_guest() from a handled exit to vmx_vcpu_run() (requests, IRQs off)."});
  r.declare({"cost.handle_exit", ParamType::Dist, "100ns", "time", {}, {}, {},
             "vmx_handle_exit() common dispatch."});
  r.declare({"cost.handle_wrmsr", ParamType::Dist, "150ns", "time", {}, {}, {},
             "kvm_emulate_wrmsr() -> kvm_set_msr_common() before the LAPIC work."});
  r.declare({"cost.handle_preemption_timer", ParamType::Dist, "50ns", "time", {}, {}, {},
             "handle_preemption_timer() itself (LAPIC work counted separately)."});
  r.declare({"cost.handle_external_interrupt", ParamType::Dist, "50ns", "time", {}, {}, {},
             "handle_external_interrupt() after the host handler ran."});
  r.declare({"cost.handle_interrupt_window", ParamType::Dist, "50ns", "time", {}, {}, {},
             "handle_interrupt_window() (no APICv): clear the window control, KVM_REQ_EVENT "
             "(estimate, as cost.handle_external_interrupt; the injection is "
             "cost.lapic.inject_irq)."});
  r.declare({"cost.exit_fastpath", ParamType::Dist, "100ns", "time", {}, {}, {},
             "vmx_exit_handlers_fastpath() dispatch + one REENTER_GUEST loop turn "
             "(sync_pir_to_irr, kvm_vcpu_exit_request)."});
  r.declare({"cost.handle_halt", ParamType::Dist, "100ns", "time", {}, {}, {},
             "handle_halt() -> kvm_emulate_halt(): skip HLT, mark the vCPU halted."});
  r.declare({"cost.vcpu_block", ParamType::Dist, "1us", "time", {}, {}, {},
             "vcpu_block() -> kvm_vcpu_halt() -> kvm_vcpu_block(): prepare to wait and "
             "schedule() to the idle task (LAPIC timer switch counted separately)."});
  r.declare({"cost.vcpu_wakeup", ParamType::Dist, "2us", "time", {}, {}, {},
             "From the kick in apic_timer_fn to the vCPU thread running again: idle exit, "
             "try_to_wake_up(), schedule() in, return from kvm_vcpu_block()."});
  r.declare({"cost.vcpu_block_abort", ParamType::Dist, "300ns", "time", {}, {}, {},
             "kvm_vcpu_block() woken from another pCPU before it left its run queue "
             "(ttwu_runnable): the schedule() under way returns to the vCPU task without a "
             "context switch; replaces the rest of cost.vcpu_block."});
  // vcpu_put / vcpu_load on a switch between vCPU threads (loaded_vmcs.h).
  // No published cost of these steps was found: estimates from the v4.16
  // path, in the units the hardware counts them in.
  r.declare({"host.spectre_v2_ibpb", ParamType::Bool, "false", "bool", {}, {}, {},
             "Host set-up: the kernel issues an indirect branch prediction barrier after every "
             "VMPTRLD of another VMCS in vmx_vcpu_load() (15d45071523d \"KVM/x86: Add IBPB "
             "support\", v4.16 and 4.15.y stable; X86_FEATURE_USE_IBPB: microcode with IBPB and "
             "spectre_v2 mitigations not turned off). Also between vCPUs of one VM. false = a "
             "kernel before it, microcode without IBPB, or spectre_v2=off / nospectre_v2 / "
             "spectre_v2_user=off."});
  r.declare({"cost.host.ibpb", ParamType::Dist, "4000cyc", "time", {}, {}, {},
             "The IBPB itself: WRMSR IA32_PRED_CMD (estimate: 'several thousand cycles' on "
             "Haswell- to Skylake-era cores with 2018-2019 microcode; no exact figure found)."});
  r.declare({"cost.vmptrld", ParamType::Dist, "500cyc", "time", {}, {}, {},
             "VMPTRLD of a vCPU's VMCS in vmx_vcpu_load() when another VMCS is current on the "
             "pCPU (estimate: no published cycle count found)."});
  r.declare({"cost.vcpu_put", ParamType::Dist, "150ns", "time", {}, {}, {},
             "kvm_arch_vcpu_put() of a vCPU preempted or yielding to another thread: the CPL "
             "read, kvm_steal_time_set_preempted(), vmx_vcpu_put() -> __vmx_load_host_state() "
             "(GS/LDT reload, WRMSR MSR_KERNEL_GS_BASE, LGDT) (estimate). A halting vCPU's put "
             "is in cost.vcpu_block."});
  r.declare({"cost.vcpu_load", ParamType::Dist, "300ns", "time", {}, {}, {},
             "kvm_arch_vcpu_load() of a vCPU resuming after a preemption, without the VMPTRLD: "
             "pi_load, TSC and request bookkeeping, then at the next entry record_steal_time() "
             "(read and two writes of the guest's struct) and vmx_save_host_state() (selector "
             "and base VMWRITEs, RDMSR/WRMSR of KERNEL_GS_BASE) (estimate). A woken vCPU's load "
             "is in cost.vcpu_wakeup."});
  r.declare({"cost.loaded_vmcs_clear", ParamType::Dist, "1800ns", "time", {}, {}, {},
             "loaded_vmcs_clear() when a vCPU runs on another pCPU than last time: "
             "smp_call_function_single(wait=1) to the old pCPU, its VMCLEAR, the return (~1.75 "
             "us per synchronous call in a published ipi_benchmark; the old pCPU's handler is "
             "not charged to it)."});
  r.declare({"cost.vcpu_enter_guest_exit_share", ParamType::Double, "0.5", "fraction", 0, 1, {},
             "Share of cost.vcpu_enter_guest spent on the exit side (handle_exit_irqoff, IRQ "
             "enable/disable, guest_exit_irqoff, srcu_read_lock) before vmx_handle_exit(). The "
             "model splits the stage only for an exit whose handler's effect leaves mid-way "
             "(the ICR write's IPI); elsewhere the whole stage follows the handler."});
  r.declare({"cost.fastpath_wrmsr", ParamType::Dist, "50ns", "time", {}, {}, {},
             "handle_fastpath_set_msr_irqoff(): decode and skip the WRMSR before the LAPIC work."});
}

// clang-format on

// The host kernels' defaults of the VMX-side version switches (host.kernel).
void declare_vmx_eras(ParamRegistry& r) {
  r.set_eras("kvm.exit_fastpath", "host.kernel",
             {{"4.0", "false", "no exit fastpath"},
              {"5.6", "true", "v5.6: handle_fastpath_set_x2apic_icr_irqoff()"}});
  r.set_eras("kvm.exit_fastpath_timer", "host.kernel",
             {{"4.0", "false", "the fastpath handles the ICR write only"},
              {"5.8", "true",
               "v5.8 (Wanpeng Li 2020, vmexit-cost ref e): TSC-deadline WRMSR and preemption "
               "timer fastpaths, REENTER_GUEST"}});
  r.set_eras("kvm.steal_time_preempted_on_block", "host.kernel",
             {{"4.16", "true", "KVM_VCPU_PREEMPTED on every put, a halted vCPU included"},
              {"5.19", "false", "v5.19: only a vCPU preempted while runnable"}});
  r.set_eras("host.spectre_v2_ibpb", "host.kernel",
             {{"4.0", "false", "no IBPB (before the Spectre mitigations of 2018)"},
              {"4.16", "true",
               "15d45071523d: IBPB after VMPTRLD of another VMCS (with IBPB microcode and "
               "the default spectre_v2 mitigation)"}});
  r.set_eras("kvm.directed_yield_ready", "host.kernel",
             {{"4.0", "false", "candidates: preempted vCPUs in kernel mode"},
              {"5.3", "true", "d73eb57b80b: also vCPUs woken to take an interrupt"}});
  r.set_eras("kvm.kick_cpu_yield", "host.kernel",
             {{"4.0", "false", "KVM_HC_KICK_CPU only kicks"},
              {"5.3", "true", "266e85a5ec9: the kicker yields to the kicked vCPU"}});
  r.set_eras("kvm.pv_sched_yield", "host.kernel",
             {{"4.0", "false", "no KVM_HC_SCHED_YIELD"},
              {"5.3", "true", "KVM_FEATURE_PV_SCHED_YIELD offered (Wanpeng Li 2019)"}});
  r.set_eras("kvm.halt_poll_ns", "host.kernel",
             {{"4.0", "0", "no halt polling by default before dynamic polling (2015)"},
              {"4.3", "200000",
               "dynamic halt polling (v4.3, 2015); x86 KVM_HALT_POLL_NS_DEFAULT 200000 (the "
               "earlier x86 500000/400000 are not tabled)"}});
  r.set_eras("kvm.halt_poll_rule", "host.kernel",
             {{"4.0", "v4.0", "halt_poll_ns: a fixed poll before every block (2015)"},
              {"4.3", "v4.3", "aca6ff29c406: dynamic halt polling, per-vCPU window"},
              {"4.7", "v4.7", "3491caf2755e: invalid wake-ups qualify; grow capped"},
              {"5.2", "v5.2", "halt_poll_ns_grow_start (Nir Weiner, 2019)"},
              {"5.15", "v5.15", "no shrink below grow_start (Sergey Senozhatsky, 2021)"},
              {"6.2", "v6.2", "the cap at the start of kvm_vcpu_halt() (David Matlack, 2022)"}});
  r.set_eras("kvm.halt_poll_ns_shrink", "host.kernel",
             {{"4.3", "0", "a halt that outlasted the maximum resets the window"},
              {"6.11", "2", "v6.11 (KVM generic 6.11): halt-poll shrinking on by default"}});
}

}  // namespace kvmsim
