// Host cpuidle (drivers/cpuidle/): what an idle pCPU does between the idle
// task being picked and the next interrupt, when `host.cpuidle` is `menu`.
//
//   do_idle() / cpu_idle_loop() -> tick_nohz_idle_enter() (stop the host
//   tick, reprogram the clockevent), cpuidle_select() -> menu_select(),
//   cpuidle_enter_state() -> intel_idle() (MWAIT with the state's hint)
//   ... interrupt ... the core leaves the C-state (the state's exit
//   latency), menu_reflect()/menu_update() learn from the residency, the
//   interrupt is handled, and the idle loop goes round again or schedules.
//
// The state table is intel_idle's for the platform's CPU model
// (`host.cpuidle_states`, e.g. hsw_cstates of Haswell / Haswell-EP: names,
// exit_latency and target_residency in us, the numbers of
// drivers/idle/intel_idle.c), state 0 is the kernel's POLL state. The
// governor is the menu governor of the ~v4.3 era (drivers/cpuidle/governors
// /menu.c): predicted idle = time to the next timer event scaled by a learnt
// correction factor per bucket, capped by the typical interval of the last
// eight idle periods when they are regular; the deepest enabled state whose
// target_residency fits the prediction and whose exit_latency meets the
// latency limit (PM QoS and the prediction, performance_multiplier = 1: no
// I/O waiters, no load on an idle pCPU).
//
// `host.cpuidle: off` (the default) keeps the idle loop of the calibrated
// hosts: no governor, no exit latency, no idle-entry work.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/dist.h"
#include "sim/core/params.h"
#include "sim/core/time.h"

namespace kvmsim {

struct CpuidleState {
  std::string name;
  std::uint32_t exit_latency_us = 0;      // drv->states[i].exit_latency
  std::uint32_t target_residency_us = 0;  // drv->states[i].target_residency
  // CPUIDLE_FLAG_TLB_FLUSHED: intel_idle() calls leave_mm() before MWAIT,
  // and the core loses its TLB and L1/L2 (C3 and C6 on Haswell, C6 on
  // Skylake-SP): the work after the wake-up runs cold (cost.host.cstate_refill).
  bool tlb_flushed = false;
};

// "C1-HSW:2:2,C1E-HSW:10:20" -> states (POLL first). Throws on a malformed
// table; `max_cstate` (intel_idle.max_cstate) keeps the first max_cstate
// table entries.
std::vector<CpuidleState> parse_cpuidle_states(const std::string& table, int max_cstate);

// menu_select() / menu_update() of one pCPU (struct menu_device).
class MenuGovernor {
 public:
  static constexpr int kBuckets = 12;
  static constexpr int kIntervals = 8;
  static constexpr std::uint64_t kResolution = 1024;
  static constexpr std::uint64_t kDecay = 8;
  static constexpr std::uint32_t kMaxInteresting = 50000;  // us

  MenuGovernor();
  // menu_select(): next_timer_us = tick_nohz_get_sleep_length();
  // latency_req_us = the PM QoS CPU latency limit. Returns the state index.
  int select(const std::vector<CpuidleState>& states, std::uint64_t next_timer_us,
             std::uint64_t latency_req_us);
  // menu_update(): the last state's residency (entry to the end of the exit,
  // as cpuidle_enter_state() measures it).
  void update(const std::vector<CpuidleState>& states, int idx, std::uint64_t residency_us);

  [[nodiscard]] std::uint64_t predicted_us() const { return predicted_us_; }
  [[nodiscard]] std::uint64_t correction_factor(int bucket) const {
    return correction_factor_[static_cast<std::size_t>(bucket)];
  }

 private:
  static int which_bucket(std::uint64_t duration_us);
  void typical_interval();  // get_typical_interval()

  std::array<std::uint64_t, kBuckets> correction_factor_{};
  std::array<std::uint64_t, kIntervals> intervals_{};
  int interval_ptr_ = 0;
  int bucket_ = 0;
  std::uint64_t next_timer_us_ = 0;
  std::uint64_t predicted_us_ = 0;
};

// Per-pCPU cpuidle configuration (from the parameters) and statistics.
struct CpuidleConfig {
  bool enabled = false;
  std::vector<CpuidleState> states;  // [0] = POLL
  std::uint64_t latency_req_us = 0;  // PM QoS cpu_dma_latency
  Sampler enter_cost;                // cost.host.idle_enter: tick_nohz_idle_enter()
  Sampler select_cost;               // cost.host.cpuidle_select: each idle-loop round
  Sampler refill_cost;    // cost.host.cstate_refill: cold caches / TLB after a tlb_flushed state
  Sampler leave_mm_cost;  // cost.host.leave_mm: leave_mm()'s and switch_mm()'s CR3 writes
};
CpuidleConfig cpuidle_config(const ParamSet& p, const TscClock& clk);

struct CpuidleStats {
  std::vector<std::uint64_t> usage;  // per state: entries (cpuidle/stateN/usage)
  std::vector<Tsc> residency;        // per state: cycles in the state (stateN/time)
  Tsc exit_cycles = 0;               // cycles spent leaving C-states (not C0)
  Tsc refill_cycles = 0;             // extra C0 cycles of cold work after a tlb_flushed state
  std::uint64_t leave_mm = 0;        // switches back to a thread's mm after leave_mm()
};

}  // namespace kvmsim
