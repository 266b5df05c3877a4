// Run-ahead: one activation of a pCPU by the event kernel
// (sim/core/event_kernel.h, SystemC's order) runs its decision points one
// after the other while the next one lies strictly before every other
// pending activity and the run's limit: nothing else can act in between, so
// the order of everything, and every output, is what one event per decision
// point gives. A step that re-armed or cancelled another pCPU's event (a
// wake-up, an IPI, a kick, a store another vCPU spins on) ends the run
// ahead, so that every cross-pCPU effect is ordered by the kernel as before.
// Off with --no-run-ahead, and for views that sample state through SystemC
// (VCD via sc_trace). Outputs are the same either way.
#pragma once

#include <algorithm>
#include <cstdint>

#include <systemc>

#include "sim/core/event_kernel.h"
#include "sim/core/model_time.h"

namespace kvmsim {

class RunAhead {
 public:
  bool enabled = true;
  Tsc run_until = kTscNever;      // the sc_start() limit: never run ahead to it
  std::uint64_t activations = 0;  // SystemC activations of the pCPUs (not a metric)
  // Run-aheads that ended with two pCPUs due at one time where SystemC's
  // order could differ from the one without run-ahead (0 in every scenario
  // checked; KVMSIM_RUN_AHEAD_STATS=1 prints it).
  std::uint64_t ties = 0;

  // One SystemC activation of `cpu`, which provides step(now) (one decision
  // point) and next_decision(now). Returns false if the run stopped
  // (sc_stop()): the model's time then stays where it stopped.
  template <class Cpu>
  bool dispatch(Cpu& cpu, EventKernel& kernel);
  // After the activation re-armed its pCPU's event at the time it reached:
  // back to SystemC's time (unless the run stopped there).
  static void end_activation(bool running) {
    if (running) ModelTime::ahead_ = kTscNever;
  }
};

template <class Cpu>
bool RunAhead::dispatch(Cpu& cpu, EventKernel& kernel) {
  ++activations;
  const Tsc sc_now = ModelTime::kernel_now();
  Tsc now = sc_now;
  Tsc horizon = 0;
  bool horizon_known = false;
  bool last = false;
  for (;;) {
    ModelTime::ahead_ = now;
    const std::uint64_t generation = ModelTime::generation_;
    cpu.step(now);
    if (kernel.stopped()) return false;  // sc_stop()
    if (!enabled) break;
    // Due now (or in the past): without run-ahead a zero-delay re-arm, which
    // runs alone when nothing else is pending now (now < horizon).
    const Tsc next = std::max(cpu.next_decision(now), now);
    if (last) {
      if (next == now || ModelTime::generation_ != generation) ++ties;
      break;
    }
    if (ModelTime::generation_ != generation) {
      // The step armed another pCPU: SystemC orders what follows. One case
      // needs care: that pCPU became due now and so is this one. Without
      // run-ahead both were zero-delay (delta) notifications, and SystemC
      // runs this pCPU first (delta events trigger in reverse order of
      // notification; this pCPU re-armed last, on its way out): take that
      // one step here, as timed events at one time have no such order.
      if (next == now && now != sc_now) {
        last = true;
        continue;
      }
      break;
    }
    if (next == kTscNever) break;
    if (!horizon_known) {
      // sc_max_time() when nothing is pending; 0 if anything is runnable now.
      horizon = sc_now + kernel.time_to_pending_activity();
      horizon_known = true;
    }
    if (next >= horizon || next >= run_until) break;
    now = next;
  }
  return true;
}

}  // namespace kvmsim
