#include "sim/guest/workloads/cyclictest.h"

namespace kvmsim {

CyclictestConfig CyclictestConfig::from(const ParamSet& p) {
  CyclictestConfig c;
  c.loops = static_cast<std::uint64_t>(p.i("cyclictest.loops"));
  c.interval_us = static_cast<std::uint64_t>(p.i("cyclictest.interval_us"));
  c.histogram_buckets = static_cast<std::size_t>(p.i("cyclictest.histogram_us"));
  c.nsecs = p.b("cyclictest.nsecs");
  return c;
}

CyclictestCosts CyclictestCosts::from(const ParamSet& p, const TscClock& clk) {
  return {p.dist("cost.cyclictest.nanosleep_enter").bind(clk),
          p.dist("cost.cyclictest.nanosleep_return").bind(clk)};
}

Cyclictest::Cyclictest(CyclictestConfig cfg, CyclictestCosts costs, std::function<void()> on_done)
    : GuestTask("cyclictest"),
      cfg_(cfg),
      costs_(std::move(costs)),
      on_done_(std::move(on_done)),
      hist_(cfg.histogram_buckets) {}

ModelSignals& Cyclictest::signals(GuestKernel& k) {
  if (!signals_) signals_ = &k.vcpu().ctx().signals.get<ModelSignals>();
  return *signals_;
}

GuestStep Cyclictest::run(GuestKernel& k, Tsc now) {
  switch (state_) {
    case State::Start:
      next_ns_ = k.guest_ns(now) + cfg_.interval_us * 1000;
      state_ = State::Arm;
      [[fallthrough]];
    case State::Arm:
      state_ = State::Armed;
      return GuestStep::run(Stage::GuestSyscall, costs_.nanosleep_enter(k.rng()));
    case State::Armed: {
      // do_nanosleep(): arm the sleeper and schedule() away.
      const std::uint64_t deadline = k.ns_to_guest_tsc_ceil(next_ns_);
      deadline_host_ = k.vcpu().tsc().host_tsc_at(deadline);
      signals(k).timer_armed(k.vcpu().id(), k.vcpu().pcpu().id(), deadline_host_);
      state_ = State::Sleeping;
      k.hrtimer_start(this, deadline);
      k.block_current();
      return k.step(now);
    }
    case State::Woken:
      state_ = State::Measure;
      return GuestStep::run(Stage::GuestUser, costs_.nanosleep_return(k.rng()));
    case State::Measure: {
      const std::uint64_t now_ns = k.guest_ns(now);
      const auto diff = static_cast<std::int64_t>(now_ns) - static_cast<std::int64_t>(next_ns_);
      // -N: calcdiff_ns(), the ns value itself; otherwise calcdiff(), whole us.
      if (cfg_.nsecs)
        hist_.add_us(diff, loops_);
      else
        hist_.add_ns(diff, loops_);
      signals(k).latency_sample(k.vcpu().id(), k.vcpu().pcpu().id(), deadline_host_, now, diff);
      if (++loops_ >= cfg_.loops) {
        state_ = State::Done;
        k.block_current();
        if (on_done_) on_done_();
        return k.step(now);
      }
      next_ns_ += cfg_.interval_us * 1000;
      state_ = State::Arm;
      return run(k, now);
    }
    case State::Sleeping:
    case State::Done:
      break;
  }
  k.block_current();
  return k.step(now);
}

Tsc Cyclictest::fn(GuestKernel& k, Tsc /*now*/) {
  state_ = State::Woken;
  k.wake_up(this);
  return k.costs().hrtimer_wakeup(k.rng());
}

void report_cyclictest(const LatencyHistogram& h, bool nsecs, Metrics& m,
                       const std::string& prefix) {
  m[prefix + "loops"] = static_cast<double>(h.samples());
  // -N: the histogram holds ns (see cyclictest.h); avg is the exact mean,
  // which cyclictest prints truncated to a whole ns (or us).
  const std::string unit = nsecs ? "_ns" : "_us";
  m[prefix + "min" + unit] = static_cast<double>(h.min_us());
  m[prefix + "avg" + unit] = h.avg_us();
  m[prefix + "max" + unit] = static_cast<double>(h.max_us());
  m[prefix + "p50" + unit] = h.percentile_us(50);
  m[prefix + "p99" + unit] = h.percentile_us(99);
  m[prefix + "overflows"] = static_cast<double>(h.overflows());
}

}  // namespace kvmsim
