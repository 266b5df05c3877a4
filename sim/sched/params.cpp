// Host side: isolation, host tick, interrupt costs, noise.
#include "sim/model_params.h"

namespace kvmsim {

void declare_sched_params(ParamRegistry& r) {
  // The host kernel of the measurement. It chooses the defaults of the
  // host-side version switches (their tables sit next to each switch's
  // declaration, ParamRegistry::set_eras); a key set in a file or with
  // --set keeps its value.
  r.declare({"host.kernel",
             ParamType::String,
             "6.6",
             "version",
             {},
             {},
             {},
             "Host kernel version (e.g. 4.8, 5.4, 5.8, 6.6): sets the defaults of every "
             "host-side version switch (kind 'version switch' in `kvmsim params`)."});
  r.declare({"host.isolcpus",
             ParamType::IntList,
             "[]",
             "cpu",
             0,
             4095,
             {},
             "Isolated pCPUs (isolcpus/nohz_full); vCPU threads are pinned to them."});
  r.declare({"host.isolation",
             ParamType::String,
             "nohz_full",
             "",
             {},
             {},
             {"none", "isolcpus", "nohz_full"},
             "How the pCPUs in host.isolcpus are isolated: nohz_full (isolcpus= nohz_full=: the "
             "1 Hz residual tick while one task runs, no softlockup watchdog there from v3.11, "
             "the LAPIC hrtimers of posted timer interrupts on a housekeeping pCPU); isolcpus "
             "(isolcpus= alone: no other tasks, but the CONFIG_HZ tick while a thread runs and "
             "the per-CPU kernel timers); none (the list only places the vCPU threads; the "
             "pCPUs are stock ones)."});
  r.declare({"host.tick_hz",
             ParamType::Int,
             "-1",
             "Hz",
             -1,
             1000,
             {},
             "Host scheduler tick on every pCPU the run uses; -1 = by context: 1 on the pCPUs "
             "in host.isolcpus (the residual tick nohz_full keeps while one task runs), host.hz "
             "(CONFIG_HZ) on the others (a stock pCPU, where CFS preempts at the tick). "
             "0 = no tick."});
  r.declare({"host.nohz_idle",
             ParamType::Bool,
             "true",
             "bool",
             {},
             {},
             {},
             "CONFIG_NO_HZ_IDLE (the default of every distribution kernel): a pCPU stops its "
             "tick when it goes idle (tick_nohz_idle_enter() -> tick_nohz_stop_sched_tick()) "
             "and restarts it on the tick's grid when a thread runs again "
             "(tick_nohz_idle_exit() -> tick_nohz_restart_sched_tick(); its work is part of "
             "cost.vcpu_wakeup for a vCPU). The host has no timer-wheel timers or RCU callbacks "
             "in the model, so the tick always stops. false = CONFIG_HZ_PERIODIC or nohz=off: "
             "the tick fires on idle pCPUs too."});
  r.declare({"host.hz",
             ParamType::Int,
             "250",
             "Hz",
             100,
             1000,
             {},
             "The host kernel's CONFIG_HZ (250 in Debian's and Ubuntu's kernels, 1000 in "
             "RHEL's): the tick of the pCPUs not in host.isolcpus when host.tick_hz is -1."});
  r.declare({"cost.host.irq_entry",
             ParamType::Dist,
             "300ns",
             "time",
             {},
             {},
             {},
             "Host hard-IRQ entry (IDT, irq_enter) up to the handler."});
  r.declare({"cost.host.irq_exit",
             ParamType::Dist,
             "200ns",
             "time",
             {},
             {},
             {},
             "Host irq_exit() and return, without softirq work."});
  r.declare({"cost.host.hrtimer_interrupt",
             ParamType::Dist,
             "400ns",
             "time",
             {},
             {},
             {},
             "Host hrtimer_interrupt() bookkeeping incl. clockevent reprogramming."});
  r.declare({"cost.host.ipi_latency",
             ParamType::Dist,
             "400cyc",
             "time",
             {},
             {},
             {},
             "Physical IPI between two pCPUs: from the sender's ICR write until the target "
             "takes the interrupt (or, in non-root mode, starts posted-interrupt processing)."});
  r.declare({"cost.host.reschedule_ipi",
             ParamType::Dist,
             "100ns",
             "time",
             {},
             {},
             {},
             "scheduler_ipi() handler of RESCHEDULE_VECTOR (irq entry/exit counted apart)."});
  r.declare({"cost.host.posted_intr_ipi",
             ParamType::Dist,
             "50ns",
             "time",
             {},
             {},
             {},
             "Host handler of POSTED_INTR_VECTOR when the notification lands in root mode."});
  r.declare({"cost.host.tick",
             ParamType::Dist,
             "2us",
             "time",
             {},
             {},
             {},
             "Host tick_sched_timer() work (scheduler tick, RCU, accounting)."});
  // Host cpuidle (sim/sched/cpuidle.h): off = the idle loop of the
  // calibrated hosts (no governor, no C-state exit latency, no idle-entry
  // work); menu = intel_idle's states and the menu governor (~v4.3).
  r.declare({"host.cpuidle",
             ParamType::String,
             "off",
             "",
             {},
             {},
             {"off", "menu"},
             "Host idle: off (the idle task waits for the next interrupt; no C-states, no "
             "governor, no idle-entry cost) or menu (intel_idle states of "
             "host.cpuidle_states chosen by the menu governor of ~v4.3; the exit latency "
             "delays the wake-up)."});
  r.declare({"host.cpuidle_states",
             ParamType::String,
             "",
             "",
             {},
             {},
             {},
             "intel_idle's state table for the platform's CPU model, "
             "NAME:EXIT_LATENCY_US:TARGET_RESIDENCY_US[:tlb_flushed],... "
             "(drivers/idle/intel_idle.c, the states CPUID leaf 5 enables; tlb_flushed = "
             "CPUIDLE_FLAG_TLB_FLUSHED: leave_mm() before MWAIT, and the core loses its TLB and "
             "L1/L2, see cost.host.cstate_refill); the POLL state is added as state 0."});
  r.declare({"host.max_cstate",
             ParamType::Int,
             "9",
             "count",
             1,
             9,
             {},
             "intel_idle.max_cstate: only the first N entries of host.cpuidle_states."});
  r.declare({"host.cpuidle_latency_req_us",
             ParamType::Int,
             "2000000000",
             "us",
             0,
             2000000000,
             {},
             "PM QoS CPU latency limit (/dev/cpu_dma_latency; default: none): states with a "
             "larger exit latency are not chosen; 0 = POLL only."});
  r.declare({"cost.host.idle_enter",
             ParamType::Dist,
             "1000ns",
             "time",
             {},
             {},
             {},
             "Host idle entry with host.cpuidle menu, IRQs off, once per idle period: "
             "tick_nohz_idle_enter() stopping the tick (get_next_timer_interrupt, clockevent "
             "reprogram). Estimate, not measured."});
  r.declare({"cost.host.cpuidle_select",
             ParamType::Dist,
             "500ns",
             "time",
             {},
             {},
             {},
             "Each round of the host idle loop with host.cpuidle menu: cpuidle_idle_call() -> "
             "menu_select(), cpuidle_enter_state(), intel_idle() up to MWAIT. Estimate."});
  r.declare({"cost.host.cstate_refill",
             ParamType::Dist,
             "8us",
             "time",
             {},
             {},
             {},
             "With host.cpuidle menu: the extra C0 time of the work that runs after a wake-up "
             "from a tlb_flushed state (C3 / C6: the core's L1 / L2 were flushed to L3 and its "
             "TLB lost), paid as that work runs at half speed until it is spent. Estimate: the "
             "host wake-up path, the vCPU thread's entry and the guest's interrupt path touch "
             "~20-50 KB of code and data (no published footprint), ~300-800 lines at an L3 "
             "latency of ~17-22 ns (LMBench on the Broadwell-EP E5-2699 v4), partly "
             "overlapped, plus 1-3 us of page walks."});
  r.declare({"cost.host.leave_mm",
             ParamType::Dist,
             "200ns",
             "time",
             {},
             {},
             {},
             "With host.cpuidle menu: intel_idle()'s leave_mm() before a tlb_flushed state "
             "(CR3 = swapper_pg_dir, the pCPU cleared from the mm's cpumask) and switch_mm()'s "
             "CR3 reload when a thread of the same mm (the same QEMU) runs next, charged to that "
             "context switch. "
             "Estimate: two CR3 writes and two locked cpumask updates."});
  r.declare({"noise.irq.rate_hz",
             ParamType::Double,
             "0",
             "Hz",
             0,
             1e6,
             {},
             "Rate of host device interrupts/IPIs landing on each vCPU's pCPU (Poisson)."});
  r.declare({"noise.irq.duration",
             ParamType::Dist,
             "5us",
             "time",
             {},
             {},
             {},
             "Handler time of one such host interrupt."});
  r.declare({"noise.softirq.rate_hz",
             ParamType::Double,
             "0",
             "Hz",
             0,
             1e6,
             {},
             "Rate at which deferred host work (softirq, irq_work) is raised on each pCPU; "
             "it runs at the next irq_exit there."});
  r.declare({"noise.softirq.duration",
             ParamType::Dist,
             "5us",
             "time",
             {},
             {},
             {},
             "Run time of one deferred work item."});
  // CFS of v4.x-v5.x (sim/sched/cfs.h); EEVDF (v6.6+) is not modelled. The
  // values are the kernel's normalized_sysctl_* bases; the effective value,
  // which /proc/sys/kernel/sched_*_ns shows, is base x the scaling factor.
  r.declare({"host.sched_latency_ns",
             ParamType::Int,
             "6000000",
             "ns",
             100000,
             1000000000,
             {},
             "CFS targeted preemption latency (the period shared by up to sched_nr_latency "
             "tasks), before host.sched_tunable_scaling: normalized_sysctl_sched_latency; "
             "/proc/sys/kernel/sched_latency_ns (debugfs sched/latency_ns on v5.13+) shows "
             "the scaled value, e.g. 24 ms on 8+ CPUs. CFS of v4.x-v5.x only, not EEVDF."});
  r.declare({"host.sched_min_granularity_ns",
             ParamType::Int,
             "750000",
             "ns",
             100000,
             1000000000,
             {},
             "CFS minimum run before the tick preempts for a vruntime lead, and each task's "
             "period share above sched_nr_latency tasks, before scaling; "
             "/proc/sys/kernel/sched_min_granularity_ns (debugfs sched/min_granularity_ns on "
             "v5.13+). CFS of v4.x-v5.x only."});
  r.declare({"host.sched_wakeup_granularity_ns",
             ParamType::Int,
             "1000000",
             "ns",
             0,
             1000000000,
             {},
             "CFS wake-up preemption: a woken task preempts only if its vruntime lead exceeds "
             "this (scaled by its weight), before scaling; "
             "/proc/sys/kernel/sched_wakeup_granularity_ns (debugfs sched/wakeup_granularity_ns "
             "on v5.13+). CFS of v4.x-v5.x only."});
  r.declare({"host.sched_feat_wakeup_preemption",
             ParamType::Bool,
             "true",
             "bool",
             {},
             {},
             {},
             "sched_features WAKEUP_PREEMPTION (debugfs sched_features, NO_WAKEUP_PREEMPTION "
             "to clear): false = a woken task never preempts a running one "
             "(check_preempt_wakeup() returns early; an idle pCPU is still preempted), the "
             "tick does. A probe for experiments; the kernel's default is on."});
  r.declare({"host.sched_tunable_scaling",
             ParamType::String,
             "log",
             "",
             {},
             {},
             {"none", "log", "linear"},
             "How the three CFS granularities grow with the CPU count (cpus capped at 8): none "
             "x1, log x(1 + ilog2(cpus)), linear x cpus; /proc/sys/kernel/sched_tunable_scaling "
             "(debugfs sched/tunable_scaling on v5.13+), 0/1/2."});
  r.declare({"host.sched_migration_cost_ns",
             ParamType::Int,
             "500000",
             "ns",
             0,
             1000000000,
             {},
             "A task that ran within this long is cache hot and not pulled by idle balancing "
             "(task_hot(); 0 = never hot); /proc/sys/kernel/sched_migration_cost_ns (debugfs "
             "sched/migration_cost_ns on v5.13+). Not scaled."});
  r.declare({"host.sched_load_balance",
             ParamType::Bool,
             "false",
             "bool",
             {},
             {},
             {},
             "Periodic load balancing at the host tick (rebalance_domains() -> load_balance(), "
             "v4.16 find_busiest_group / calculate_imbalance / detach_tasks, simplified: no "
             "PELT, no balance_interval growth, no active balancing). Off by default so that "
             "runs without it keep their results; the ebizzy scenarios turn it on."});
  r.declare({"cost.host.context_switch",
             ParamType::Dist,
             "1500ns",
             "time",
             {},
             {},
             {},
             "Host __schedule() + context_switch() between two threads (switches to and from "
             "the idle task are in the sleeping / waking thread's own costs)."});
  r.declare({"host.hog.count",
             ParamType::Int,
             "0",
             "count",
             0,
             4096,
             {},
             "CPU-bound host processes (a while(1) loop, stress-ng --cpu) under the fair "
             "scheduler."});
  r.declare({"host.hog.affinity",
             ParamType::IntList,
             "[]",
             "cpu",
             0,
             4095,
             {},
             "pCPUs the host CPU hogs may run on; empty = all pCPUs."});
  r.declare({"host.hog.nice",
             ParamType::Int,
             "0",
             "nice",
             -20,
             19,
             {},
             "Nice value of the host CPU hogs (weight from sched_prio_to_weight)."});
  r.declare({"host.hog.cgroup",
             ParamType::String,
             "root",
             "",
             {},
             {},
             {"root", "own"},
             "Where the host CPU hogs sit in the host's CFS group hierarchy: root = beside "
             "the VMs' groups, as host processes in the root cgroup; own = one task group of "
             "cpu.shares 1024 for all of them (another VM's busy vCPUs, or another session's "
             "autogroup). 'own' turns group scheduling on."});
  r.declare({"host.sched_autogroup",
             ParamType::String,
             "off",
             "",
             {},
             {},
             {"off", "per_session"},
             "Autogroup (CONFIG_SCHED_AUTOGROUP, kernel.sched_autogroup_enabled): off = the "
             "sysctl at 0 or a kernel without it; per_session = on, with each QEMU and the "
             "hogs' program started from a session of its own (a shell or a service each): "
             "threads that no cgroup takes out of the root (vm.cgroup none, host.hog.cgroup "
             "root) run in their session's group of weight 1024 (nice 0), so this acts like "
             "vm.cgroup per_vm with the hogs in their own group. Autogroup is ignored for "
             "threads in a cgroup (task_wants_autogroup()). QEMUs all started from one shell "
             "share one autogroup: vm.cgroup shared is the nearest set-up."});
  r.declare({"vm.cgroup",
             ParamType::String,
             "none",
             "",
             {},
             {},
             {"none", "per_vm", "shared"},
             "The vCPU threads' task group on the host (CONFIG_FAIR_GROUP_SCHED): none = the "
             "root, one flat run queue per pCPU (QEMU started by hand with autogroup off or "
             "inactive); per_vm = a group per VM (libvirt's machine.slice scope per VM, or an "
             "autogroup per QEMU session): VMs share a pCPU by their groups' weights first, "
             "then a VM's threads among themselves; shared = all VMs in one group (QEMUs of "
             "one session). A group's weight on a pCPU is cpu.shares x its runnable load there "
             "/ its load on all pCPUs (calc_group_shares() without PELT's averages)."});
  r.declare({"vm.cpu_shares",
             ParamType::Int,
             "1024",
             "shares",
             2,
             262144,
             {},
             "cpu.shares of each VM's task group (vm.cgroup per_vm or shared): 1024 is "
             "libvirt's and the kernel's default, the weight of one nice-0 task."});
  r.declare({"host.kernel_timers",
             ParamType::Bool,
             "false",
             "bool",
             {},
             {},
             {},
             "The host kernel's own per-CPU timers on every pCPU the run uses, each at its "
             "kernel period (sim/sched/host_kernel_timers.h): the softlockup watchdog's hrtimer "
             "and the kthread it wakes, the MCE poll timer, the clocksource watchdog's turn. "
             "false: the platform's noise.* rates stand for all of a pCPU's background (the "
             "calibrated platforms' tails were fitted with them)."});
  r.declare({"host.watchdog_thresh",
             ParamType::Int,
             "10",
             "s",
             0,
             60,
             {},
             "kernel.watchdog_thresh: the softlockup hrtimer (watchdog_timer_fn) fires every "
             "2 * thresh / 5 s (4 s by default) and wakes the per-CPU kthread that touches the "
             "watchdog; 0 = the watchdog off. Acts with host.kernel_timers."});
  r.declare({"host.softlockup_kthread",
             ParamType::String,
             "stopper",
             "",
             {},
             {},
             {"watchdog", "stopper"},
             "The kthread the softlockup hrtimer wakes: watchdog (the smpboot watchdog/N "
             "thread, SCHED_FIFO 99) or stopper (cpu_stop_work on migration/N, the stop "
             "class). Both preempt whatever runs; the model's CFS-only scheduler gives the "
             "thread nice -20 and a sleeper's placement, which preempt at once. A version "
             "switch: host.kernel sets it."});
  r.declare({"host.softlockup_on_nohz_full",
             ParamType::Bool,
             "false",
             "bool",
             {},
             {},
             {},
             "The softlockup watchdog also runs on nohz_full pCPUs (before watchdog_cpumask "
             "defaulted to the housekeeping CPUs). A version switch: host.kernel sets it."});
  r.declare({"host.mce_check_interval_s",
             ParamType::Int,
             "300",
             "s",
             0,
             86400,
             {},
             "check_interval of the MCE poll timer (mce_timer_fn(), per CPU, pinned, not "
             "deferrable): 5 minutes while no corrected error is found; 0 = off. Acts with "
             "host.kernel_timers."});
  r.declare({"host.tsc_clocksource_watchdog",
             ParamType::Bool,
             "false",
             "bool",
             {},
             {},
             {},
             "The clocksource watchdog checks the host TSC (CLOCK_SOURCE_MUST_VERIFY): "
             "clocksource_watchdog() runs every 0.5 s on the next online CPU in turn, so each "
             "pCPU of the platform gets it every 0.5 s x the number of CPUs. A version switch: "
             "host.kernel sets it; the era's false (v5.17+) holds only on platforms of at most "
             "2 sockets, larger ones keep the watchdog. Acts with host.kernel_timers."});
  r.declare({"cost.host.softlockup",
             ParamType::Dist,
             "1us",
             "time",
             {},
             {},
             {},
             "Work of the softlockup kthread's run (__touch_watchdog()) before it sleeps "
             "(estimate: a few cache lines)."});
  r.declare({"cost.host.mce_poll",
             ParamType::Dist,
             "2us",
             "time",
             {},
             {},
             {},
             "machine_check_poll() from mce_timer_fn(): one RDMSR of MCi_STATUS per bank "
             "(about 20 banks on a Xeon), in the timer softirq (estimate)."});
  r.declare({"cost.host.clocksource_watchdog",
             ParamType::Dist,
             "2us",
             "time",
             {},
             {},
             {},
             "clocksource_watchdog(): the watchdog clocksource (HPET, uncached MMIO reads) and "
             "the TSC read and compared, in the timer softirq (estimate)."});
  r.declare({"host.kworker.cpus",
             ParamType::IntList,
             "[]",
             "cpu",
             0,
             4095,
             {},
             "One periodic per-CPU kworker pinned to each listed pCPU (vmstat_update-like work)."});
  r.declare({"host.kworker.period_us",
             ParamType::Int,
             "1000",
             "us",
             10,
             1e9,
             {},
             "Period of the kworkers' timer (a host hrtimer waking them)."});
  r.declare({"cost.host.kworker",
             ParamType::Dist,
             "20us",
             "time",
             {},
             {},
             {},
             "Work of one kworker run before it sleeps again."});
}

// The host kernels' defaults of the host-side version switches of this
// folder (host.kernel).
void declare_sched_eras(ParamRegistry& r) {
  r.set_eras("host.softlockup_kthread", "host.kernel",
             {{"3.10", "watchdog",
               "the smpboot watchdog/N kthread (SCHED_FIFO 99), woken by watchdog_timer_fn()"},
              {"4.19", "stopper",
               "9cf57731b63e watchdog/softlockup: replace the watchdog/N threads with "
               "cpu_stop_work (2018)"}});
  r.set_eras("host.softlockup_on_nohz_full", "host.kernel",
             {{"3.10", "true", "the softlockup watchdog runs on every online CPU"},
              {"3.11", "false",
               "full dynticks boot-disables the lockup detectors (on every CPU; the model "
               "keeps them on the housekeeping pCPUs)"},
              {"4.2", "false",
               "fe4ba3c34352 watchdog: add watchdog_cpumask sysctl to assist nohz (2015): the "
               "mask defaults to the housekeeping CPUs"}});
  r.set_eras("host.tsc_clocksource_watchdog", "host.kernel",
             {{"3.10", "true", "the TSC is CLOCK_SOURCE_MUST_VERIFY; the HPET watches it"},
              {"5.17", "false",
               "b50db7095fe0 x86/tsc: disable the clocksource watchdog for the TSC on "
               "qualified platforms (constant, nonstop TSC with TSC_ADJUST, at most 2 "
               "sockets; 2021)"}});
}

}  // namespace kvmsim
