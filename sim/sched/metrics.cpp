// The host's metric keys (host.*): pCPUs, host interrupts, the CFS host
// scheduler, cpuidle. Reported by Host::report() (host.cpp).
#include "sim/core/metric_decl.h"

// One declaration per row: kept compact by hand.
// clang-format off
KVMSIM_DECLARE_METRICS(sched, {
    {"host.cpu.<n>.busy_frac", "fraction", "host", "Share of the run pCPU `<n>` was not in its idle task (threads running, halt polling included)."},
    {"host.cpu.<n>.c0_frac", "fraction", "host", "C0 residency of pCPU `<n>` as turbostat's %C0 (MPERF / TSC): busy_frac plus the idle task's own work (host interrupts on the idle pCPU, idle entry, the governor); C-state residency and exit latency are not C0."},
    {"host.cpu.<n>.poll_s", "s", "host", "Time pCPU `<n>` spent halt polling in kvm_vcpu_halt() (the halt_poll stage)."},
    {"host.cpu.<n>.cpuidle.<state>.usage", "count", "host", "Entries of pCPU `<n>` into cpuidle state `<state>` (sysfs cpuidle/stateN/usage); `<state>` is a state name of the platform's C-state table (POLL, C1-HSW, C6-SKX, ...). Only with host.cpuidle."},
    {"host.cpu.<n>.cpuidle.<state>.time_s", "s", "host", "Residency of pCPU `<n>` in cpuidle state `<state>` (sysfs cpuidle/stateN/time). Only with host.cpuidle."},
    {"host.cpu.<n>.cpuidle.exit_s", "s", "host", "Time pCPU `<n>` spent leaving C-states (their exit latency; neither C0 nor residency). Only with host.cpuidle."},
    {"host.cpu.<n>.cpuidle.refill_s", "s", "host", "C0 time pCPU `<n>` added to the work after wake-ups from states that flush the core's caches and TLB (tlb_flushed: cost.host.cstate_refill). Only with host.cpuidle."},
    {"host.cpu.<n>.cpuidle.leave_mm", "count", "host", "Switches on pCPU `<n>` back to a user thread's mm after intel_idle()'s leave_mm() (each reloads CR3: cost.host.leave_mm). Only with host.cpuidle."},
    {"host.irqs", "count", "host", "Host interrupts taken on all pCPUs: timer, noise, reschedule and posted-interrupt IPIs."},
    {"host.noise_irqs", "count", "host", "Of host.irqs, the noise interrupts (device and other interrupts at noise.irq.rate_hz)."},
    {"host.softirq_runs", "count", "host", "irq_exit() -> invoke_softirq() calls that ran deferred softirq work (noise.softirq.*)."},
    {"host.ipis", "count", "host", "Physical IPIs taken: reschedule IPIs plus posted-interrupt notification vectors taken in root mode."},
    {"host.resched_ipis", "count", "host", "Of host.ipis, reschedule IPIs (RESCHEDULE_VECTOR -> scheduler_ipi())."},
    {"host.sched.context_switches", "count", "host", "CFS context switches over all pCPUs (rq->nr_switches: pick_next() chose another entity; the idle task counts as one)."},
    {"host.sched.migrations", "count", "host", "Entities enqueued on another pCPU than the one they last ran on."},
    {"host.sched.wakeups", "count", "host", "Wake-ups: enqueues with ENQUEUE_WAKEUP (try_to_wake_up())."},
    {"host.sched.wakeup_preemptions", "count", "host", "Wake-ups whose check_preempt_wakeup() set need_resched on a busy pCPU."},
    {"host.sched.tick_preemptions", "count", "host", "Scheduler ticks whose check_preempt_tick() set need_resched."},
    {"host.sched.idle_balance_pulls", "count", "host", "Entities pulled by idle_balance() onto a pCPU going idle."},
    {"host.sched.load_balance_runs", "count", "host", "Periodic load_balance() calls (per domain level balanced). Only with host.sched_load_balance."},
    {"host.sched.load_balance_pulls", "count", "host", "Entities moved by the periodic load_balance(). Only with host.sched_load_balance."},
    {"host.sched.next_buddy_picks", "count", "host", "pick_next() calls that ran the next buddy (set by yield_to() or wake-up preemption; with task groups also a group whose task slept beside others) ahead of the leftmost entity, counted on the root queue. Only when a next buddy was ever queued."},
    {"host.sched.next_buddy_refused", "count", "host", "pick_next() calls that left a queued next buddy waiting (more than wakeup_gran right of the leftmost). Only when a next buddy was ever queued."},
    {"host.sched.yield_switches", "count", "host", "schedule() calls right after yield_task_fair() (sched_yield, yield_to) that ran another entity. Only in runs that yielded."},
    {"host.sched.yield_repicks", "count", "host", "schedule() calls right after yield_task_fair() that picked the yielder again (the second was within wakeup_gran of it). Only in runs that yielded."},
});
// clang-format on
