// What every model component shares: the host TSC clock, the run seed, the
// observer hub and the event counter.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "sim/core/observer.h"
#include "sim/core/random.h"
#include "sim/core/time.h"

namespace kvmsim {

struct SimContext {
  TscClock clock;
  std::uint64_t seed = 1;
  Observers obs;
  std::uint64_t events = 0;  // model events dispatched (sim.events)

  [[nodiscard]] Rng stream(const std::string& component) const { return Rng(seed, component); }
};

// Current simulated time in host TSC cycles (1 SystemC time unit = 1 cycle).
// (sc_time_stamp() itself is an out-of-line library call; the simcontext's
// time_stamp() is inline, and this runs several times per event.)
inline Tsc now_tsc() { return sc_core::sc_get_curr_simcontext()->time_stamp().value(); }
inline sc_core::sc_time cycles(Tsc c) { return sc_core::sc_time::from_value(c); }

}  // namespace kvmsim
