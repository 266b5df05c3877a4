// The host scheduler's tracepoints (include/trace/events/sched.h), as open
// signals (sim/core/signal.h). pid 0 is the idle task (swapper/N); prio is
// 120 + nice.
#pragma once

#include <string>

#include "sim/core/signal.h"
#include "sim/core/time.h"

namespace kvmsim {

struct SchedSignals {
  // sched_switch: (pcpu, prev_comm, prev_pid, prev_prio, prev_runnable,
  // next_comm, next_pid, next_prio, t).
  Signal<int, const std::string&, int, int, bool, const std::string&, int, int, Tsc> sched_switch;
  // sched_waking: try_to_wake_up() of a sleeping task, in the waker's
  // context, before select_task_rq(): (waker_pcpu, comm, pid, prio,
  // task_cpu (the CPU it last ran on), t).
  Signal<int, const std::string&, int, int, int, Tsc> sched_waking;
  // sched_wakeup: (waker_pcpu, comm, pid, prio, target_pcpu, t).
  Signal<int, const std::string&, int, int, int, Tsc> sched_wakeup;
  // sched_migrate_task: (comm, pid, prio, orig_pcpu, dest_pcpu, t).
  Signal<const std::string&, int, int, int, int, Tsc> sched_migrate_task;
};

}  // namespace kvmsim
