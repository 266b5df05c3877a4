// Every key of summary.json's "metrics" has a declaration (sim/core/metric_decl.h),
// and every declaration names keys some run emits: short runs of every
// scenario (as tools/pin-outputs.sh shortens them, shorter still) plus the
// settings that add keys of their own (cyclictest -N, guest haltpoll, the
// smp_call workload, a partial run).
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/core/metric_decl.h"
#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

struct Case {
  const char* name;
  std::string args;
};

// Every scenario in scenarios/ appears here (checked below).
const std::vector<Case> kCases = {
    {"t1_on", "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=300"},
    {"t1_off",
     "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=300 --set kvm.enable_hv_timer=false"},
    {"t1_nsecs",
     "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=300 --set cyclictest.nsecs=true"},
    {"fastpath", "scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=300"},
    {"t2", "scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=200"},
    {"t2_skylake", "scenarios/tscdeadline_latency_skylake.yaml --set tscdeadline_latency.size=200"},
    {"t3", "scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=262144"},
    {"t3_fast",
     "scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=262144 --set "
     "kvm.exit_fastpath=true"},
    {"t6", "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=262144"},
    {"t6_fast",
     "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=262144 --set kvm.exit_fastpath=true"},
    {"hp_idle", "scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=0.5"},
    {"hp_sweep", "scenarios/halt_poll_sweep.yaml --set cyclictest.loops=300"},
    {"hp_timer", "scenarios/halt_poll_timer.yaml --set tscdeadline_latency.size=200"},
    {"ipi_pingpong",
     "scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=300 --set kvm.halt_poll_ns=200000"},
    {"ipi_pingpong_guest_haltpoll",
     "scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=300 --set guest.idle=hlt --set "
     "guest.haltpoll_ns=200000"},
    {"lat_ctx", "scenarios/lat_ctx.yaml"},
    {"overcommit_busy", "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.1"},
    {"timer_storm", "scenarios/timer_storm.yaml --set timer_storm.expiries=500"},
    {"ebizzy_pv",
     "scenarios/ebizzy_overcommit.yaml --set sim.max_simulated_s=0.05 --set vm.vcpus=16 --set "
     "guest.pv_tlb_flush=true"},
    {"ebizzy_light", "scenarios/ebizzy_light_overcommit.yaml --set sim.max_simulated_s=0.05"},
    {"ebizzy_revert", "scenarios/ebizzy_pvspinlock_revert.yaml --set sim.max_simulated_s=0.02"},
    {"ebizzy_multi_vm", "scenarios/ebizzy_multi_vm.yaml --set sim.max_simulated_s=0.01"},
    {"ebizzy_cloud",
     "scenarios/ebizzy_cloud.yaml --set sim.max_simulated_s=0.01 --set fleet.ebizzy_vms=4"},
    {"smp_call",
     "scenarios/ipi_pingpong.yaml --set workload.type=smp_call --set smp_call.calls=300"},
    {"partial", "scenarios/cyclictest_pinned.yaml --set sim.max_simulated_s=0.01 --allow-partial"},
};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += "\n  " + s;
  return out;
}

}  // namespace

TEST_CASE("metric declarations: every key the scenarios emit is declared, none is stale",
          "[cli][metrics]") {
  std::set<std::string> used;
  for (const auto& c : kCases) used.insert(c.args.substr(0, c.args.find(' ')));
  std::vector<std::string> missing_scenarios;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(KVMSIM_SOURCE_DIR) + "/scenarios"))
    if (e.path().extension() == ".yaml" && !used.count("scenarios/" + e.path().filename().string()))
      missing_scenarios.push_back(e.path().filename().string());
  INFO("scenarios this test does not run (add a short case):" << join(missing_scenarios));
  CHECK(missing_scenarios.empty());

  const auto& reg = kvmsim::MetricRegistry::instance();
  std::set<std::string> keys;
  std::vector<std::string> undeclared;
  for (const auto& c : kCases) {
    const auto dir = out_dir(std::string("metric-decl-") + c.name);
    const auto r = run_cli("run " + c.args + " -q --out " + dir.string());
    INFO(c.name << ": kvmsim run " << c.args << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("has no declaration") == std::string::npos);
    const auto summary = read_json(dir / "summary.json");
    for (const auto& [key, value] : summary.at("metrics").items()) {
      keys.insert(key);
      if (!reg.find(key)) undeclared.push_back(std::string(c.name) + ": " + key);
    }
  }
  INFO(
      "keys without a declaration (declare them beside their emitter, "
      "sim/core/metric_decl.h):"
      << join(undeclared));
  CHECK(undeclared.empty());

  std::vector<std::string> stale;
  for (const auto& d : reg.all()) {
    bool hit = false;
    for (const auto& k : keys) hit = hit || kvmsim::metric_pattern_matches(d.pattern, k);
    if (!hit) stale.push_back(d.pattern);
  }
  INFO("declarations no run emits (remove them, or add a case that emits them):" << join(stale));
  CHECK(stale.empty());
}
