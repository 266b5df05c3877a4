// workload.type fleet (sim/guest/workloads/fleet_workload.cpp): ebizzy in the
// first fleet.ebizzy_vms VMs, one cyclictest thread in each other VM, on the
// cloud scenario (eight guests on the 64-pCPU Broadwell-EP host), shortened.
#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

const std::string kCloud = "scenarios/ebizzy_cloud.yaml --set sim.check_invariants=true ";

bool has_prefix(const nlohmann::json& j, const std::string& prefix) {
  for (const auto& [k, v] : j.items())
    if (k.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("fleet: ebizzy in VMs 0..k-1, cyclictest in each other VM, merged cyclictest keys",
          "[cli][fleet]") {
  const auto r = run_metrics("fleet-mixed", kCloud +
                                                "--set fleet.ebizzy_vms=5 --set vm.vcpus=8 "
                                                "--set sim.max_simulated_s=0.1");
  CHECK(metric(r, "invariants.violations") == 0);
  // VMs 0-4 run ebizzy, VMs 5-7 cyclictest (1 ms interval: ~99 samples in 0.1 s).
  for (int vm = 0; vm < 5; ++vm) {
    CHECK(metric(r, "ebizzy.vm" + std::to_string(vm) + ".records") > 0);
    CHECK_FALSE(r.contains("cyclictest.vm" + std::to_string(vm) + ".loops"));
  }
  double loops = 0, max = 0;
  for (int vm = 5; vm < 8; ++vm) {
    const std::string p = "cyclictest.vm" + std::to_string(vm) + ".";
    CHECK_FALSE(r.contains("ebizzy.vm" + std::to_string(vm) + ".records"));
    CHECK(metric(r, p + "loops") >= 95);
    CHECK(metric(r, p + "loops") <= 100);
    loops += metric(r, p + "loops");
    max = std::max(max, metric(r, p + "max_us"));
  }
  // The cyclictest.* keys are the three histograms added.
  CHECK(metric(r, "cyclictest.loops") == loops);
  CHECK(metric(r, "cyclictest.max_us") == max);
  CHECK(metric(r, "ebizzy.threads") == 5 * 16);  // ebizzy's default -t: 2 x online CPUs per VM
}

TEST_CASE("fleet: the run ends when every cyclictest has taken cyclictest.loops samples",
          "[cli][fleet]") {
  const auto r = run_metrics("fleet-loops", kCloud +
                                                "--set fleet.ebizzy_vms=6 --set vm.vcpus=4 "
                                                "--set cyclictest.loops=30 "
                                                "--set sim.max_simulated_s=5");
  CHECK(metric(r, "cyclictest.vm6.loops") == 30);
  CHECK(metric(r, "cyclictest.vm7.loops") == 30);
  CHECK(metric(r, "cyclictest.loops") == 60);
  CHECK(metric(r, "sim.simulated_s") < 0.05);  // 30 loops of 1 ms, not 5 s
  CHECK(metric(r, "ebizzy.records_per_s") > 0);
}

TEST_CASE("fleet: all-quiet and all-ebizzy fleets report only their part", "[cli][fleet]") {
  const auto quiet = run_metrics("fleet-quiet", kCloud +
                                                    "--set fleet.ebizzy_vms=0 --set vm.vcpus=4 "
                                                    "--set sim.max_simulated_s=0.02");
  CHECK_FALSE(has_prefix(quiet, "ebizzy."));
  CHECK_FALSE(has_prefix(quiet, "tlb."));
  CHECK(metric(quiet, "cyclictest.vm0.loops") > 0);
  CHECK(metric(quiet, "cyclictest.vm7.loops") > 0);
  const auto busy = run_metrics("fleet-busy", kCloud +
                                                  "--set fleet.ebizzy_vms=8 --set vm.vcpus=4 "
                                                  "--set sim.max_simulated_s=0.02");
  CHECK_FALSE(has_prefix(busy, "cyclictest."));
  CHECK(metric(busy, "ebizzy.vm7.records") > 0);
  CHECK(metric(busy, "sim.simulated_s") == Approx(0.02));
}

TEST_CASE(
    "fleet: a latency VM whose vCPUs share pCPUs with busy vCPUs waits longer than a quiet one",
    "[cli][fleet]") {
  // 16 vCPUs per guest: four ebizzy guests keep all 64 pCPUs busy, so the
  // cyclictest vCPU's wake-up preempts a busy vCPU thread (host CFS) instead of
  // finding an idle pCPU.
  const std::string args = kCloud + "--set vm.vcpus=16 --set sim.max_simulated_s=0.3 ";
  const auto quiet = run_metrics("fleet-nn-quiet", args + "--set fleet.ebizzy_vms=0");
  const auto noisy = run_metrics("fleet-nn-noisy", args + "--set fleet.ebizzy_vms=4");
  CHECK(metric(noisy, "cyclictest.avg_us") > metric(quiet, "cyclictest.avg_us") + 1);
  CHECK(metric(noisy, "host.sched.wakeup_preemptions") >
        metric(quiet, "host.sched.wakeup_preemptions"));
}

TEST_CASE("fleet: more ebizzy VMs than VMs, and cyclictest -N, are errors naming the key",
          "[cli][fleet]") {
  const auto many = run_cli("run " + kCloud + "--set fleet.ebizzy_vms=9 -q");
  CHECK(many.exit_code == 2);
  CHECK_THAT(many.output, Catch::Contains("fleet.ebizzy_vms") && Catch::Contains("vm.count is 8"));
  const auto ns = run_cli("run " + kCloud + "--set cyclictest.nsecs=true -q");
  CHECK(ns.exit_code == 2);
  CHECK_THAT(ns.output, Catch::Contains("cyclictest.nsecs"));
}
