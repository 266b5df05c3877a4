// The core's own signals: the stage machine's segments and the latency
// measurement every workload that measures wake-ups emits. KVM's tracepoints
// are declared by the mechanisms that fire them (sim/vmx/kvm_signals.h,
// sim/lapic/lapic_signals.h, sim/sched/sched_signals.h).
#pragma once

#include <cstdint>

#include "sim/core/signal.h"
#include "sim/core/stage.h"
#include "sim/core/time.h"

namespace kvmsim {

struct ModelSignals {
  // A pCPU finished (or was interrupted in) a segment of `stage`:
  // (pcpu, stage, begin, end).
  Signal<int, Stage, Tsc, Tsc> segment;
  // A guest timer deadline (host TSC) that a latency measurement waits for:
  // (vcpu, pcpu, deadline).
  Signal<int, int, Tsc> timer_armed;
  // A cyclictest-like sample on a vCPU, measured at `t`:
  // (vcpu, pcpu, deadline, t, latency_ns).
  Signal<int, int, Tsc, Tsc, std::int64_t> latency_sample;
};

}  // namespace kvmsim
