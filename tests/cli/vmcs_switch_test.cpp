// vcpu_put / vcpu_load between vCPU threads (sim/vmx/loaded_vmcs.h): every
// switch from one vCPU to another on a pCPU is a VMPTRLD (with the v4.16+
// IBPB when the host has it), a vCPU that moved pCPU pays one VMCS clear, and
// what the notifiers cost comes out of the guests' time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "tests/cli/traced_run.h"

using namespace kvmsim::test;

namespace {
namespace tr = kvmsim::trace;

// A vCPU thread's comm ("CPU 3/KVM").
bool is_vcpu(const std::string& comm) { return comm.rfind("CPU ", 0) == 0; }

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
  const TracedRun run = traced_run(
      "vmcs-float",
      "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=2 --set host.hog.count=0 "
      "--set vm.vcpus=6 --set host.sched_load_balance=true");
  const auto& m = run.metrics;
  // From the trace: switch-ins of a vCPU thread on a pCPU other than its last one.
  std::map<int, int> last_cpu;  // vCPU thread -> pCPU
  int moved = 0;
  for (const TracedEvent& e : run.events) {
    const auto* sw = std::get_if<tr::SchedSwitch>(&e.data);
    if (sw == nullptr || !is_vcpu(sw->next_comm)) continue;
    const auto it = last_cpu.find(sw->next_pid);
    if (it != last_cpu.end() && it->second != e.cpu) ++moved;
    last_cpu[sw->next_pid] = e.cpu;
  }
  INFO("migrations " << m.at("host.sched.migrations").get<double>() << ", runs on a new pCPU "
                     << moved);
  REQUIRE(moved > 0);
  CHECK(m.at("vcpu.loaded_vmcs_clears").get<double>() == moved);
}

namespace {
// The shortest time from a sched_switch that puts a vCPU thread on a pCPU,
// after another vCPU thread, to that vCPU's next kvm_entry there. Only
// vCPUs that ran before: a vCPU's first run is its creation's load (free).
double pairs_min_gap(const std::string& name, const std::string& sets) {
  const TracedRun run = traced_run(name, std::string(kPinnedPairs) + sets);
  std::map<int, std::pair<int, std::int64_t>> pending;  // cpu -> (vCPU thread, ts)
  std::set<int> ran;
  double best = 1e300;
  for (const TracedEvent& e : run.events) {
    if (const auto* sw = std::get_if<tr::SchedSwitch>(&e.data)) {
      if (is_vcpu(sw->next_comm) && is_vcpu(sw->prev_comm) && ran.count(sw->next_pid)) {
        pending[e.cpu] = {sw->next_pid, e.ts};
      } else {
        pending.erase(e.cpu);
      }
      if (is_vcpu(sw->next_comm)) ran.insert(sw->next_pid);
    } else if (std::holds_alternative<tr::KvmEntry>(e.data)) {
      const auto it = pending.find(e.cpu);
      if (it != pending.end() && it->second.first == e.pid) {
        best = std::min(best, static_cast<double>(e.ts - it->second.second) / 1e3);
        pending.erase(it);
      }
    }
  }
  return best;
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
