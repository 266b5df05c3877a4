// The model's time in host TSC cycles (1 SystemC time unit = 1 cycle).
//
// It is the event kernel's time (sim/core/event_kernel.h; SystemC's own in
// SystemC mode), except while one pCPU runs its next decision points
// inline in one SystemC activation (run-ahead, sim/core/run_ahead.h): then it
// is the time that pCPU has reached (SystemC runs one process at a time, so
// no other component can observe the difference). After an sc_stop() from a
// step that ran ahead, it stays where the run stopped.
//
// SystemC elaborates one simulation per process, so there is one ModelTime;
// only the run-ahead dispatcher moves it (and System resets it when it
// elaborates), everything else reads it with now_tsc().
#pragma once

#include <cstdint>

#include <systemc>

#include "sim/core/time.h"

namespace kvmsim {

// SystemC's own time. (sc_time_stamp() itself is an out-of-line library call;
// the simcontext's time_stamp() is inline, and this runs several times per
// event.)
inline Tsc sc_now_tsc() { return sc_core::sc_get_curr_simcontext()->time_stamp().value(); }

class ModelTime {
 public:
  [[nodiscard]] static Tsc now() { return ahead_ != kTscNever ? ahead_ : kernel_now(); }
  // The event kernel's time.
  [[nodiscard]] static Tsc kernel_now() { return systemc_ ? sc_now_tsc() : kernel_now_; }
  // A pCPU's SystemC event was (re-)armed or cancelled: a pCPU running ahead
  // stops when one of its steps did that to another pCPU.
  static void note_rearm() { ++generation_; }
  // Back to SystemC's time (a new elaboration).
  static void reset() { ahead_ = kTscNever; }

 private:
  friend class RunAhead;
  friend class EventKernel;
  static inline bool systemc_ = true;
  static inline Tsc kernel_now_ = 0;
  static inline Tsc ahead_ = kTscNever;
  static inline std::uint64_t generation_ = 0;
};

inline Tsc now_tsc() { return ModelTime::now(); }
inline sc_core::sc_time cycles(Tsc c) { return sc_core::sc_time::from_value(c); }

}  // namespace kvmsim
