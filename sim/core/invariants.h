// Invariants checked in every run (cheap: a compare per event). A violation is
// a bug in the model, never a property of the input: it stops the run at once
// and run_simulation() throws InvariantError naming the simulated time and the
// component, so no result computed past it is ever reported.
//
// Model code reports with invariant_failed(); the checks of the event stream
// are observers (sim/checks/invariant_observer.h).
// KvmLapic checks that an acknowledged vector is ended once (no EOI finds the
// ISR empty) and that an armed deadline is delivered once, held by one back
// end (hrtimer or preemption timer) at a time; Vcpu that the preemption-timer
// value fits in 32 bits.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvmsim {

class InvariantError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Records the first violation (component, what, simulated TSC now) and stops
// the simulation at the end of the current delta cycle.
void invariant_failed(const std::string& component, const std::string& what);
// The first violation of this process, "" when none.
const std::string& invariant_violation();
// Fault injection for the tests that make an invariant fire through the real
// model: true when the environment variable KVMSIM_FAULT names `fault`
// (read once per process). Model code asks once, at construction.
bool fault_injected(const char* fault);

}  // namespace kvmsim
