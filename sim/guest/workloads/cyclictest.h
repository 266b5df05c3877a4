// rt-tests cyclictest, one measurement thread (-t 1 -i INTERVAL -l LOOPS
// -n -h BUCKETS): clock_nanosleep(TIMER_ABSTIME, next) on a guest hrtimer,
// then latency = clock_gettime() - next, truncated to whole microseconds in
// the histogram. With -N (CyclictestConfig::nsecs) the latency is kept in ns
// (rt-tests' calcdiff_ns()) and everything cyclictest derives from it is in
// ns too: min/act/avg/max and the histogram, whose buckets are then 1 ns
// wide (hist_sample() indexes by the same diff), so `-N -h 100` overflows
// every latency of 100 ns or more. The LatencyHistogram then counts ns
// where it says us.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sim/core/histogram.h"
#include "sim/core/metrics.h"
#include "sim/core/model_signals.h"
#include "sim/core/params.h"
#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

struct CyclictestConfig {
  std::uint64_t loops = 600000;
  std::uint64_t interval_us = 1000;
  std::size_t histogram_buckets = 100;
  bool nsecs = false;  // -N
  // cyclictest.loops, .interval_us, .histogram_us, .nsecs
  static CyclictestConfig from(const ParamSet& p);
};

struct CyclictestCosts {
  Sampler nanosleep_enter;   // loop bookkeeping, syscall entry, hrtimer_start()
  Sampler nanosleep_return;  // switch-in tail, syscall return, clock_gettime() (vDSO)
  // cost.cyclictest.nanosleep_enter / _return
  static CyclictestCosts from(const ParamSet& p, const TscClock& clk);
};

class Cyclictest : public GuestTask, public GuestHrtimer {
 public:
  Cyclictest(CyclictestConfig cfg, CyclictestCosts costs, std::function<void()> on_done);

  GuestStep run(GuestKernel& k, Tsc now) override;
  Tsc fn(GuestKernel& k, Tsc now) override;  // hrtimer_wakeup()

  [[nodiscard]] const LatencyHistogram& histogram() const { return hist_; }
  [[nodiscard]] std::uint64_t loops_done() const { return loops_; }
  [[nodiscard]] bool done() const { return state_ == State::Done; }

 private:
  enum class State : std::uint8_t { Start, Arm, Armed, Sleeping, Woken, Measure, Done };
  CyclictestConfig cfg_;
  CyclictestCosts costs_;
  std::function<void()> on_done_;
  LatencyHistogram hist_;
  State state_ = State::Start;
  std::uint64_t next_ns_ = 0;
  std::uint64_t loops_ = 0;
  Tsc deadline_host_ = 0;
  ModelSignals* signals_ = nullptr;  // looked up at the first step
  ModelSignals& signals(GuestKernel& k);
};

// cyclictest's Min/Avg/Max, p50/p99 and the overflows of `h` as <prefix>loops,
// <prefix>min_us ... (<prefix>min_ns ... with -N, where the histogram holds ns).
void report_cyclictest(const LatencyHistogram& h, bool nsecs, Metrics& m,
                       const std::string& prefix);

}  // namespace kvmsim
