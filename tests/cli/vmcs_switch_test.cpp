// vcpu_put / vcpu_load between vCPU threads (sim/vmx/loaded_vmcs.h): every
// switch from one vCPU to another on a pCPU is a VMPTRLD (with the v4.16+
// IBPB when the host has it), a vCPU that moved pCPU pays one VMCS clear, and
// what the notifiers cost comes out of the guests' time.
#include <catch2/catch.hpp>

#include <map>
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
