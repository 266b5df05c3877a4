// The guest kernel's metric keys that every Linux-guest workload may report:
// the idle loop and cpuidle-haltpoll (report_guest_idle()), IPIs, cross calls
// and wake-ups (report_guest_smp(), GuestSmp::report_stats()), the guest CFS.
// Summed over the guest CPUs of every VM. The ebizzy workload's TLB-flush,
// mmap_sem and spinlock keys are declared beside it.
#include "sim/core/metric_decl.h"

// One declaration per row: kept compact by hand.
// clang-format off
KVMSIM_DECLARE_METRICS(guest_kernel, {
    {"timer_wakeup.count", "count", "guest kernel", "LAPIC timer interrupts that found the guest CPU idle (the timer woke it). Only when non-zero."},
    {"timer_wakeup.avg_us", "us", "guest kernel, tscdeadline_latency", "Mean time from the timer deadline to hrtimer_interrupt() on a CPU the timer woke from idle (guest clock); tscdeadline_latency with tscdeadline_latency.hlt reports its mean latency here too."},
    {"guest.idle.hlt", "count", "guest kernel", "HLTs the guest idle loop executed (default_idle(), or haltpoll's state 1). Only when non-zero."},
    {"guest.haltpoll.polls", "count", "guest kernel", "cpuidle-haltpoll polls: haltpoll_select() chose the poll state. This and the other guest.haltpoll keys only when the guest polled."},
    {"guest.haltpoll.hits", "count", "guest kernel", "Polls that ended with work to do (need_resched) within the poll limit."},
    {"guest.haltpoll.timeouts", "count", "guest kernel", "Polls that ran out their poll limit; the next idle entry halts."},
    {"guest.haltpoll.poll_s", "s", "guest kernel", "Guest time spent polling in cpuidle-haltpoll."},
    {"guest.haltpoll.grow", "count", "guest kernel", "adjust_poll_limit() raised a CPU's poll limit (guest_halt_poll_grow)."},
    {"guest.haltpoll.shrink", "count", "guest kernel", "adjust_poll_limit() lowered a CPU's poll limit (guest_halt_poll_shrink)."},
    {"guest.ipi.reschedule.sent", "count", "guest kernel", "Reschedule IPIs (RESCHEDULE_VECTOR) the guests sent."},
    {"guest.ipi.reschedule.handled", "count", "guest kernel", "Reschedule IPIs the guests' handlers ran."},
    {"guest.ipi.call_function.sent", "count", "guest kernel", "CALL_FUNCTION_VECTOR IPIs sent (smp_call_function_many())."},
    {"guest.ipi.call_function.handled", "count", "guest kernel", "CALL_FUNCTION_VECTOR IPIs handled."},
    {"guest.ipi.call_function_single.sent", "count", "guest kernel", "CALL_FUNCTION_SINGLE_VECTOR IPIs sent (smp_call_function_single())."},
    {"guest.ipi.call_function_single.handled", "count", "guest kernel", "CALL_FUNCTION_SINGLE_VECTOR IPIs handled."},
    {"guest.ipi.sent", "count", "guest kernel", "Sum of the three guest.ipi.*.sent."},
    {"guest.ipi.handled", "count", "guest kernel", "Sum of the three guest.ipi.*.handled."},
    {"guest.smp_call.calls", "count", "guest kernel", "smp_call_function*() calls (TLB shootdowns and other cross calls)."},
    {"guest.smp_call.csd_queued", "count", "guest kernel", "csds queued on a target's call_single_queue."},
    {"guest.smp_call.csd_run", "count", "guest kernel", "csd->func() runs in the targets' handlers."},
    {"guest.smp_call.csd_lock_waits", "count", "guest kernel", "csd_lock() calls that found the csd still in use and waited."},
    {"guest.smp_call.pv_sched_yields", "count", "guest kernel", "KVM_HC_SCHED_YIELD hypercalls after a CALL_FUNCTION IPI-many to a preempted vCPU (PV sched yield)."},
    {"guest.wakeups.remote", "count", "guest kernel", "try_to_wake_up() calls onto another guest CPU."},
    {"guest.wakeups.remote_polling", "count", "guest kernel", "Of guest.wakeups.remote, wake-ups of a CPU whose idle loop was polling (TIF_POLLING_NRFLAG): no IPI sent."},
    {"guest.sched.tick_preemptions", "count", "guest kernel", "Guest ticks whose check_preempt_tick() preempted a SCHED_NORMAL task. The guest.sched keys only in runs with SCHED_NORMAL tasks."},
    {"guest.sched.wakeup_preemptions", "count", "guest kernel", "Wake-ups whose check_preempt_wakeup() preempted a SCHED_NORMAL task (the wakee's vruntime more than the wakeup granularity behind)."},
    {"guest.sched.fair_switches", "count", "guest kernel", "Guest context switches from one SCHED_NORMAL task to another."},
});
// clang-format on
