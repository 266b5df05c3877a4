// The cost of a directed yield (sim/vmx/directed_yield.cpp): after a
// PAUSE_INSTRUCTION exit, handle_pause() scans for a candidate
// (cost.handle_pause) and yield_to() locks both run queues and reschedules
// the target's (cost.host.yield_to) before the yielding vCPU's schedule().
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <variant>

#include "tests/cli/traced_run.h"

using namespace kvmsim::test;

namespace {
namespace tr = kvmsim::trace;

// The shortest time from a vCPU's kvm_ple_window grow (handle_pause()
// starting) to the sched_switch that takes that vCPU off its pCPU.
double run_min_gap(const std::string& name, const std::string& yield_to) {
  const TracedRun run =
      traced_run(name,
                 "scenarios/ebizzy_light_overcommit.yaml --set sim.max_simulated_s=0.05 --set "
                 "cost.host.yield_to=" +
                     yield_to);
  REQUIRE(run.metric("vcpu.directed_yields") > 100);
  std::map<int, std::pair<int, std::int64_t>> pending;  // cpu -> (vCPU thread, ts)
  double best = std::numeric_limits<double>::infinity();
  for (const TracedEvent& e : run.events) {
    if (const auto* w = std::get_if<tr::KvmPleWindow>(&e.data)) {
      if (w->grow) pending[e.cpu] = {e.pid, e.ts};
    } else if (const auto* sw = std::get_if<tr::SchedSwitch>(&e.data)) {
      const auto it = pending.find(e.cpu);
      if (it != pending.end() && sw->prev_pid == it->second.first)
        best = std::min(best, static_cast<double>(e.ts - it->second.second) / 1e3);
      pending.erase(e.cpu);
    }
  }
  return best;
}
}  // namespace

TEST_CASE(
    "a directed yield holds the vCPU's pCPU for cost.host.yield_to more between handle_pause() "
    "and the switch",
    "[cli][ple]") {
  const double base = run_min_gap("dy-cost-0", "0ns");
  const double slow = run_min_gap("dy-cost-3", "3us");
  INFO("shortest handle_pause -> sched_switch: " << base << " us with yield_to 0, " << slow
                                                 << " us with 3 us");
  REQUIRE(base < 5);
  CHECK(slow - base == Approx(3.0).margin(0.01));
}
