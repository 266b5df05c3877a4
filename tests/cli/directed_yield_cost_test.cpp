// The cost of a directed yield (sim/vmx/directed_yield.cpp): after a
// PAUSE_INSTRUCTION exit, handle_pause() scans for a candidate
// (cost.handle_pause) and yield_to() locks both run queues and reschedules
// the target's (cost.host.yield_to) before the yielding vCPU's schedule().
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
// From a --trace file: the shortest time from a vCPU's kvm_ple_window grow
// (handle_pause() starting) to the sched_switch that takes that vCPU off its
// pCPU.
double min_pause_to_switch_us(const std::string& trace) {
  std::map<std::string, std::pair<std::string, double>> pending;  // cpu -> (comm, t)
  double best = std::numeric_limits<double>::infinity();
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);) {
    const auto lb = line.find('[');
    const auto colon = line.find(": ", lb);
    if (lb == std::string::npos || colon == std::string::npos) continue;
    const std::string cpu = line.substr(lb + 1, 3);
    const double t = std::stod(line.substr(lb + 5, colon - lb - 5));
    const auto dash = line.rfind('-', lb);
    std::string comm = line.substr(0, dash);
    comm.erase(0, comm.find_first_not_of(' '));
    if (line.find("kvm_ple_window:") != std::string::npos &&
        line.find("(grow") != std::string::npos) {
      pending[cpu] = {comm, t};
    } else if (line.find("sched_switch:") != std::string::npos) {
      const auto it = pending.find(cpu);
      if (it != pending.end() && line.find(it->second.first + ":", colon) != std::string::npos &&
          line.find(" ==> ") > line.find(it->second.first + ":", colon)) {
        best = std::min(best, (t - it->second.second) * 1e6);
      }
      pending.erase(cpu);
    }
  }
  return best;
}

double run_min_gap(const std::string& name, const std::string& yield_to) {
  const auto dir = out_dir(name);
  const auto r = run_cli(
      "run scenarios/ebizzy_light_overcommit.yaml --set sim.max_simulated_s=0.05 --set "
      "cost.host.yield_to=" +
      yield_to + " -q --out " + dir.string() + " --trace " + (dir / "t.txt").string());
  REQUIRE(r.exit_code == 0);
  const auto m = read_json(dir / "summary.json").at("metrics");
  REQUIRE(m.at("vcpu.directed_yields").get<double>() > 100);
  return min_pause_to_switch_us(read_text(dir / "t.txt"));
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
