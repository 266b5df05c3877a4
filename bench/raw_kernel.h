// Raw SystemC kernel loop: the baseline that kvmsim-bench compares the model against.
//
// K SC_METHOD processes re-trigger themselves with pseudo-random timed delays and do no
// other work, until N activations (events) have run in total. This measures the cost of
// the SystemC scheduler alone. SystemC elaborates once per process, so this must run in
// its own process (kvmsim-bench --raw N).
#pragma once

#include <cstdint>

namespace kvmsim::bench {

struct RawKernelResult {
  std::uint64_t events = 0;  // process activations that ran
  double wall_s = 0.0;       // wall time around sc_start()
  double simulated_s = 0.0;  // simulated time reached
};

// Sets the project time resolution (1 ps = one TSC cycle), elaborates `processes`
// ticker modules and runs until `events` activations have happened in total.
// Throws std::invalid_argument if `events` or `processes` is zero.
RawKernelResult RunRawKernel(std::uint64_t events, unsigned processes = 4);

}  // namespace kvmsim::bench
