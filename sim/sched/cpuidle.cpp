#include "sim/sched/cpuidle.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace kvmsim {

std::vector<CpuidleState> parse_cpuidle_states(const std::string& table, int max_cstate) {
  // State 0 is the kernel's POLL state (CPUIDLE_DRIVER_STATE_START = 1 on
  // x86 before v4.17): exit_latency 0, target_residency 0, stays in C0.
  std::vector<CpuidleState> states{{"POLL", 0, 0, false}};
  std::stringstream ss(table);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // An optional fourth field, "tlb_flushed", is the kernel's
    // CPUIDLE_FLAG_TLB_FLUSHED: the state loses the core's TLB and caches.
    CpuidleState s;
    static const std::string kFlushed = ":tlb_flushed";
    if (item.size() > kFlushed.size() &&
        item.compare(item.size() - kFlushed.size(), kFlushed.size(), kFlushed) == 0) {
      s.tlb_flushed = true;
      item.resize(item.size() - kFlushed.size());
    }
    const auto a = item.find(':');
    const auto b = a == std::string::npos ? a : item.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos || a == 0)
      throw std::invalid_argument(
          "host.cpuidle_states: '" + item +
          "' is not NAME:EXIT_LATENCY_US:TARGET_RESIDENCY_US[:tlb_flushed]");
    s.name = item.substr(0, a);
    try {
      std::size_t used = 0;
      const std::string el = item.substr(a + 1, b - a - 1);
      const std::string tr = item.substr(b + 1);
      const unsigned long e = std::stoul(el, &used);
      if (used != el.size()) throw std::invalid_argument(el);
      const unsigned long t = std::stoul(tr, &used);
      if (used != tr.size()) throw std::invalid_argument(tr);
      if (e > 100000 || t > 1000000) throw std::out_of_range(item);
      s.exit_latency_us = static_cast<std::uint32_t>(e);
      s.target_residency_us = static_cast<std::uint32_t>(t);
    } catch (const std::logic_error&) {
      throw std::invalid_argument("host.cpuidle_states: '" + item +
                                  "': exit latency / target residency must be integers (us, "
                                  "at most 100000 / 1000000)");
    }
    if (static_cast<int>(states.size()) > max_cstate) break;  // intel_idle.max_cstate
    states.push_back(std::move(s));
  }
  return states;
}

MenuGovernor::MenuGovernor() {
  // menu_enable_device(): every bucket starts at unity.
  correction_factor_.fill(kResolution * kDecay);
}

// which_bucket(): by order of magnitude of the time to the next timer (no
// I/O waiters on an idle host pCPU: the lower half of the buckets).
int MenuGovernor::which_bucket(std::uint64_t duration_us) {
  if (duration_us < 10) return 0;
  if (duration_us < 100) return 1;
  if (duration_us < 1000) return 2;
  if (duration_us < 10000) return 3;
  if (duration_us < 100000) return 4;
  return 5;
}

// get_typical_interval(): the mean of the last eight idle periods replaces
// the prediction when they are regular (stddev <= 20 us, or the mean above
// six standard deviations with at least 3/4 of the samples); upper outliers
// are dropped one at a time down to 3/4 of the samples.
void MenuGovernor::typical_interval() {
  std::uint64_t thresh = std::numeric_limits<std::uint32_t>::max();
  for (;;) {
    std::uint64_t max = 0;
    std::uint64_t sum = 0;
    int n = 0;
    for (const std::uint64_t v : intervals_)
      if (v <= thresh) {
        sum += v;
        ++n;
        max = std::max(max, v);
      }
    if (n == 0) return;
    const std::uint64_t avg = sum / static_cast<std::uint64_t>(n);
    std::uint64_t var = 0;
    for (const std::uint64_t v : intervals_)
      if (v <= thresh) {
        const auto d = static_cast<std::int64_t>(v) - static_cast<std::int64_t>(avg);
        var += static_cast<std::uint64_t>(d * d);
      }
    var /= static_cast<std::uint64_t>(n);
    const auto stddev = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(var)));
    if ((avg > stddev * 6 && n * 4 >= kIntervals * 3) || stddev <= 20) {
      if (next_timer_us_ > avg) predicted_us_ = avg;
      return;
    }
    if (n * 4 <= kIntervals * 3) return;
    thresh = max - 1;
  }
}

int MenuGovernor::select(const std::vector<CpuidleState>& states, std::uint64_t next_timer_us,
                         std::uint64_t latency_req_us) {
  if (latency_req_us == 0) return 0;  // PM QoS forbids any C-state: POLL
  next_timer_us_ = next_timer_us;
  bucket_ = which_bucket(next_timer_us);
  const std::uint64_t cf = correction_factor_[static_cast<std::size_t>(bucket_)];
  // DIV_ROUND_CLOSEST_ULL(next_timer_us * cf, RESOLUTION * DECAY)
  predicted_us_ = (next_timer_us * cf + kResolution * kDecay / 2) / (kResolution * kDecay);
  typical_interval();
  // performance_multiplier() is 1 here (no I/O waiters, no load).
  const std::uint64_t latency = std::min(latency_req_us, predicted_us_);
  // POLL only when the next timer is at most 5 us away; otherwise at least C1.
  int idx = next_timer_us > 5 && states.size() > 1 ? 1 : 0;
  for (std::size_t i = 1; i < states.size(); ++i) {
    if (states[i].target_residency_us > predicted_us_) continue;
    if (states[i].exit_latency_us > latency) continue;
    idx = static_cast<int>(i);
  }
  return idx;
}

void MenuGovernor::update(const std::vector<CpuidleState>& states, int idx,
                          std::uint64_t residency_us) {
  // The residency includes the exit latency: deduct it (v4.3 rule).
  std::uint64_t measured = residency_us;
  const std::uint64_t exit = states[static_cast<std::size_t>(idx)].exit_latency_us;
  if (measured > exit) measured -= exit;
  if (measured > next_timer_us_) measured = next_timer_us_;  // never above unity
  std::uint64_t f = correction_factor_[static_cast<std::size_t>(bucket_)];
  f -= f / kDecay;
  if (next_timer_us_ > 0 && measured < kMaxInteresting)
    f += kResolution * measured / next_timer_us_;
  else
    f += kResolution;  // idle so long: count it as a perfect prediction
  correction_factor_[static_cast<std::size_t>(bucket_)] = f;
  intervals_[static_cast<std::size_t>(interval_ptr_)] = measured;
  interval_ptr_ = (interval_ptr_ + 1) % kIntervals;
}

CpuidleConfig cpuidle_config(const ParamSet& p, const TscClock& clk) {
  CpuidleConfig c;
  c.enabled = p.s("host.cpuidle") == "menu";
  c.latency_req_us = static_cast<std::uint64_t>(p.i("host.cpuidle_latency_req_us"));
  c.enter_cost = p.dist("cost.host.idle_enter").bind(clk);
  c.select_cost = p.dist("cost.host.cpuidle_select").bind(clk);
  c.refill_cost = p.dist("cost.host.cstate_refill").bind(clk);
  c.leave_mm_cost = p.dist("cost.host.leave_mm").bind(clk);
  if (c.enabled) {
    c.states =
        parse_cpuidle_states(p.s("host.cpuidle_states"), static_cast<int>(p.i("host.max_cstate")));
    if (c.states.size() < 2)
      throw std::invalid_argument(
          "host.cpuidle: menu needs host.cpuidle_states (the platform's intel_idle table) and "
          "host.max_cstate >= 1");
  }
  return c;
}

}  // namespace kvmsim
