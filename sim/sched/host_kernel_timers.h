// The host kernel's own per-CPU timers (host.kernel_timers): what a pCPU
// runs for the kernel itself, whatever the workload, each at the period the
// kernel gives it.
//  - The softlockup watchdog: watchdog_timer_fn(), a pinned hrtimer every
//    2 * watchdog_thresh / 5 s, wakes a per-CPU kthread that touches the
//    watchdog's timestamp (watchdog/N before v4.19, cpu_stop_work on
//    migration/N after). Not on nohz_full pCPUs since watchdog_cpumask
//    defaults to the housekeeping CPUs.
//  - The MCE poll: mce_timer_fn(), a pinned timer every check_interval
//    (300 s while nothing is found), machine_check_poll() over the banks.
//  - The clocksource watchdog: clocksource_watchdog() every 0.5 s on the next
//    online CPU in turn (add_timer_on(cpumask_next())), while the TSC must be
//    verified; each pCPU gets it every 0.5 s x the platform's CPUs.
// Not modelled: the NMI hard-lockup detector (a perf cycles overflow every
// watchdog_thresh s of busy cycles: one NMI per 10 s on a busy pCPU, none in
// idle).
// Deferrable timers (vmstat_update, cache_reap) are not here: they never wake
// an idle pCPU and run only in a tick of a busy one. Timer-wheel timers are
// modelled as host hrtimers whose work runs in the interrupt (the timer
// softirq follows the tick's interrupt at once on an otherwise idle pCPU).
#pragma once

#include <memory>
#include <vector>

#include "sim/core/params.h"
#include "sim/sched/host_task.h"

namespace kvmsim {

// Adds the per-CPU kernel timers of host.kernel_timers to every pCPU the
// host has (call after Host::finalize()): the timers go to the host, the
// kthreads are returned (registered with `host`, started with the others).
std::vector<std::unique_ptr<HostTask>> make_kernel_timers(const ParamSet& p, Host& host);

}  // namespace kvmsim
