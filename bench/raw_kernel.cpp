#include "bench/raw_kernel.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

namespace kvmsim::bench {
namespace {

// Shared event budget of all tickers.
struct Budget {
  std::uint64_t limit = 0;
  std::uint64_t count = 0;
};

// One SC_METHOD that re-arms itself with next_trigger(delay) and does nothing else.
class Ticker : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Ticker);

  Ticker(const sc_core::sc_module_name& name, Budget& budget, std::uint64_t seed)
      : sc_core::sc_module(name), budget_(budget), lcg_(seed) {
    SC_METHOD(Tick);  // runs once at initialization, then only on its own next_trigger
  }

 private:
  // Delays in TSC cycles (= ps), 1..kMaxDelay.
  static constexpr std::uint64_t kMaxDelay = 8192;

  void Tick() {
    if (budget_.count >= budget_.limit) {
      return;  // no next_trigger: the process goes dormant; sc_start() returns when all are
    }
    ++budget_.count;
    lcg_ = lcg_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t delay = 1 + ((lcg_ >> 33) % kMaxDelay);
    next_trigger(sc_core::sc_time::from_value(delay));
  }

  Budget& budget_;
  std::uint64_t lcg_;
};

}  // namespace

RawKernelResult RunRawKernel(std::uint64_t events, unsigned processes) {
  if (events == 0 || processes == 0) {
    throw std::invalid_argument("RunRawKernel: events and processes must be > 0");
  }
  // Project convention: 1 ps resolution, one time unit = one TSC cycle. Must precede
  // any non-zero sc_time and module construction.
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);

  Budget budget;
  budget.limit = events;
  std::vector<std::unique_ptr<Ticker>> tickers;
  tickers.reserve(processes);
  for (unsigned i = 0; i < processes; ++i) {
    const std::string name = "ticker" + std::to_string(i);
    tickers.push_back(
        std::make_unique<Ticker>(name.c_str(), budget, 0x9E3779B97F4A7C15ULL * (i + 1)));
  }

  const auto start = std::chrono::steady_clock::now();
  sc_core::sc_start();  // returns when no activity is left
  const auto stop = std::chrono::steady_clock::now();

  RawKernelResult result;
  result.events = budget.count;
  result.wall_s = std::chrono::duration<double>(stop - start).count();
  result.simulated_s = sc_core::sc_time_stamp().to_seconds();
  return result;
}

}  // namespace kvmsim::bench
