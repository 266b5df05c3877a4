// vcpu_put / vcpu_load between vCPU threads (sim/vmx/loaded_vmcs.h): every
// switch from one vCPU to another on a pCPU is a VMPTRLD (with the v4.16+
// IBPB when the host has it), a vCPU that moved pCPU pays one VMCS clear, and
// what the notifiers cost comes out of the guests' time.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
const char* const kPinnedPairs =
    "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=2 --set host.hog.count=0 "
    "--set vm.affinity=[] --set vm.pinning=[0,0,1,1,2,2,3,3]";
}  // namespace

TEST_CASE(
    "two CPU-bound vCPUs pinned to each pCPU: every switch between them is one VMPTRLD and, on "
    "a v5.4 host, one IBPB. Nothing migrates, so no VMCS is cleared",
    "[cli][vmcs]") {
  const auto m = run_metrics("vmcs-pairs", kPinnedPairs);
  const double switches = m.at("host.sched.context_switches").get<double>();
  REQUIRE(switches > 300);
  // The 8 first loads are the vCPUs' creation (free); the idle task never runs.
  CHECK(m.at("vcpu.vmptrlds").get<double>() == Approx(switches - 8).margin(4));
  CHECK(m.at("vcpu.ibpbs").get<double>() == m.at("vcpu.vmptrlds").get<double>());
  CHECK(m.at("vcpu.loaded_vmcs_clears").get<double>() == 0);
  CHECK(m.at("vcpu.preemptions").get<double>() == Approx(switches).margin(8));
}

TEST_CASE(
    "without the IBPB (host.spectre_v2_ibpb false) the same switches each cost the barrier "
    "less",
    "[cli][vmcs]") {
  const auto with = run_metrics("vmcs-ibpb", kPinnedPairs);
  const auto without =
      run_metrics("vmcs-noibpb", std::string(kPinnedPairs) + " --set host.spectre_v2_ibpb=false");
  CHECK(without.at("vcpu.ibpbs").get<double>() == 0);
  CHECK(without.at("vcpu.vmptrlds").get<double>() == with.at("vcpu.vmptrlds").get<double>());
  const double saved_us = with.at("vcpu.vmcs_switch_us").get<double>() -
                          without.at("vcpu.vmcs_switch_us").get<double>();
  // cost.host.ibpb: 4000 cycles at the desktop's 3.4 GHz TSC, per switch.
  CHECK(saved_us == Approx(with.at("vcpu.ibpbs").get<double>() * 4000 / 3400.0).epsilon(0.01));
}

TEST_CASE(
    "vCPUs that float over the pCPUs: a vCPU switched in on another pCPU than where it last "
    "ran pays one VMCS clear, and only then",
    "[cli][vmcs]") {
  const auto dir = out_dir("vmcs-float");
  const auto r = run_cli(
      "run scenarios/overcommit_busy.yaml --set sim.max_simulated_s=2 --set host.hog.count=0 "
      "--set vm.vcpus=6 --set host.sched_load_balance=true -q --out " +
      dir.string() + " --trace " + (dir / "t.txt").string());
  REQUIRE(r.exit_code == 0);
  const auto m = read_json(dir / "summary.json").at("metrics");
  // From the trace: switch-ins of a vCPU thread on a pCPU other than its last one.
  std::map<std::string, std::string> last_cpu;
  int moved = 0;
  std::istringstream lines(read_text(dir / "t.txt"));
  for (std::string line; std::getline(lines, line);) {
    const auto sw = line.find("sched_switch:");
    const auto arrow = line.find("==> ");
    if (sw == std::string::npos || arrow == std::string::npos) continue;
    const auto lb = line.find('[');
    const std::string cpu = line.substr(lb + 1, 3);
    const std::string next = line.substr(arrow + 4, line.find(':', arrow) - arrow - 4);
    if (next.rfind("CPU ", 0) != 0) continue;
    const auto it = last_cpu.find(next);
    if (it != last_cpu.end() && it->second != cpu) ++moved;
    last_cpu[next] = cpu;
  }
  INFO("migrations " << m.at("host.sched.migrations").get<double>() << ", runs on a new pCPU "
                     << moved);
  REQUIRE(moved > 0);
  CHECK(m.at("vcpu.loaded_vmcs_clears").get<double>() == moved);
}

namespace {
// From a --trace file: the shortest time from a sched_switch that puts a vCPU
// thread on a pCPU to that vCPU's next kvm_entry there.
double min_switch_to_entry_us(const std::string& trace) {
  std::map<std::string, std::pair<std::string, double>> pending;  // cpu -> (comm, t)
  std::set<std::string> ran;
  double best = 1e300;
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);) {
    const auto lb = line.find('[');
    const auto colon = line.find(": ", lb);
    if (lb == std::string::npos || colon == std::string::npos) continue;
    const std::string cpu = line.substr(lb + 1, 3);
    const double t = std::stod(line.substr(lb + 5, colon - lb - 5));
    if (line.find("sched_switch:") != std::string::npos) {
      // From one vCPU thread to another that ran before (its first run is
      // its creation's load: free).
      const auto arrow = line.find("==> ");
      const std::string next = line.substr(arrow + 4, line.find(':', arrow) - arrow - 4);
      const auto prev = line.find_first_not_of(' ', line.find("sched_switch:") + 13);
      if (next.rfind("CPU ", 0) == 0 && line.compare(prev, 4, "CPU ") == 0 && ran.count(next))
        pending[cpu] = {next, t};
      else
        pending.erase(cpu);
      if (next.rfind("CPU ", 0) == 0) ran.insert(next);
    } else if (line.find("kvm_entry:") != std::string::npos) {
      const auto it = pending.find(cpu);
      if (it != pending.end() && line.find(it->second.first + "-") != std::string::npos) {
        best = std::min(best, (t - it->second.second) * 1e6);
        pending.erase(it);
      }
    }
  }
  return best;
}

double pairs_min_gap(const std::string& name, const std::string& sets) {
  const auto dir = out_dir(name);
  const auto r = run_cli(std::string("run ") + kPinnedPairs + sets + " -q --out " + dir.string() +
                         " --trace " + (dir / "t.txt").string());
  REQUIRE(r.exit_code == 0);
  return min_switch_to_entry_us(read_text(dir / "t.txt"));
}
}  // namespace

TEST_CASE(
    "the switch to another vCPU holds the pCPU for the notifiers' work: the IBPB and the put "
    "and load show in the time from sched_switch to the vCPU's kvm_entry",
    "[cli][vmcs]") {
  const double full = pairs_min_gap("vmcs-gap", "");
  const double no_ibpb = pairs_min_gap("vmcs-gap-noibpb", " --set host.spectre_v2_ibpb=false");
  const double bare = pairs_min_gap(
      "vmcs-gap-bare",
      " --set host.spectre_v2_ibpb=false --set cost.vcpu_put=0ns --set cost.vcpu_load=0ns");
  INFO("shortest switch -> entry: " << full << " us, without IBPB " << no_ibpb
                                    << " us, without put / load too " << bare << " us");
  CHECK(full - no_ibpb == Approx(4000 / 3400.0).margin(0.01));  // cost.host.ibpb at 3.4 GHz
  CHECK(no_ibpb - bare == Approx(0.45).margin(0.01));           // 150 ns + 300 ns
}

TEST_CASE(
    "a vCPU woken on a pCPU where another vCPU ran meanwhile pays the VMPTRLD and IBPB, one "
    "preempted by a host task pays only the put and the load",
    "[cli][vmcs]") {
  // Two vCPUs on one pCPU waking each other with IPIs (a v5.8 host): each
  // wake-up after a halt switches VMCS, though nothing was preempted.
  const auto shared = run_metrics("vmcs-wake",
                                  "scenarios/ipi_pingpong.yaml --set vm.pinning=[2,2] --set "
                                  "ipi_pingpong.rounds=2000");
  const double vmptrlds = shared.at("vcpu.vmptrlds").get<double>();
  const double preemptions = shared.at("vcpu.preemptions").get<double>();
  const double halts = shared.at("vcpu.halts").get<double>();
  INFO("VMPTRLDs " << vmptrlds << ", preemptions " << preemptions << ", halts " << halts);
  REQUIRE(halts > 1000);
  CHECK(vmptrlds - preemptions == Approx(halts).margin(0.01 * halts));
  CHECK(shared.at("vcpu.ibpbs").get<double>() == vmptrlds);
  // A kworker beside a pinned vCPU: its VMCS stays current.
  const auto kworker =
      run_metrics("vmcs-kworker",
                  "scenarios/cyclictest_pinned.yaml --set host.kworker.cpus=[3] --set "
                  "host.kworker.period_us=500 --set cyclictest.loops=2000");
  const double kw_preemptions = kworker.at("vcpu.preemptions").get<double>();
  REQUIRE(kw_preemptions > 10);
  CHECK(kworker.at("vcpu.vmptrlds").get<double>() == 0);
  CHECK(kworker.at("vcpu.vmcs_switch_us").get<double>() ==
        Approx(kw_preemptions * 0.45).margin(0.45));
}
