// What every model component shares: the host TSC clock, the run seed, the
// observer hub and the event counter.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "sim/core/observers.h"
#include "sim/core/random.h"
#include "sim/core/time.h"

namespace kvmsim {

struct SimContext {
  TscClock clock;
  std::uint64_t seed = 1;
  Observers obs;
  std::uint64_t events = 0;  // model events dispatched (sim.events)
  // A pCPU may run its next decision points inline, without a SystemC event
  // each, while no other process can act before them (Pcpu::dispatch). Off
  // with --no-run-ahead, and for views that sample state through SystemC
  // (VCD via sc_trace). Outputs are the same either way.
  bool run_ahead = true;
  Tsc run_until = kTscNever;      // the sc_start() limit: never run ahead to it
  std::uint64_t activations = 0;  // SystemC activations of the pCPUs (not a metric)
  // Run-aheads that ended with two pCPUs due at one time where SystemC's
  // order could differ from the one without run-ahead (0 in every scenario
  // checked; KVMSIM_RUN_AHEAD_STATS=1 prints it).
  std::uint64_t run_ahead_ties = 0;

  [[nodiscard]] Rng stream(const std::string& component) const { return Rng(seed, component); }
};

// Current simulated time in host TSC cycles (1 SystemC time unit = 1 cycle).
// (sc_time_stamp() itself is an out-of-line library call; the simcontext's
// time_stamp() is inline, and this runs several times per event.)
inline Tsc sc_now_tsc() { return sc_core::sc_get_curr_simcontext()->time_stamp().value(); }
// The model's time: SystemC's, or the time reached by a pCPU that runs ahead
// inline in one activation (SystemC runs one process at a time). After an
// sc_stop() from a step that ran ahead, it stays where the run stopped.
inline Tsc g_run_ahead_now = kTscNever;
// Bumped whenever a pCPU's event is (re-)armed or cancelled: a pCPU running
// ahead stops when one of its steps did that to another pCPU.
inline std::uint64_t g_notify_generation = 0;
inline Tsc now_tsc() { return g_run_ahead_now != kTscNever ? g_run_ahead_now : sc_now_tsc(); }
inline sc_core::sc_time cycles(Tsc c) { return sc_core::sc_time::from_value(c); }

}  // namespace kvmsim
