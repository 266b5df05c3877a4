// Run-ahead (Pcpu::dispatch runs a pCPU's next decision points inline in one
// SystemC activation) must not change anything: the same scenario with and
// without it (--no-run-ahead) gives byte-identical summary.json (sim.wall_s
// aside), histogram.txt and trace, on one busy pCPU (T1) and with cross-pCPU
// traffic (IPIs between vCPUs, wake-ups and kicks on shared pCPUs).
#include "tests/cli/same_outputs.h"

using namespace kvmsim::test;

namespace {
void check_same_with_and_without(const std::string& name, const std::string& args) {
  check_same_outputs("ra-" + name, args, "", "--no-run-ahead");
}
}  // namespace

TEST_CASE("run-ahead leaves every output identical", "[cli][run_ahead]") {
  SECTION("T1, hrtimer (host timer on the busy pCPU)") {
    check_same_with_and_without("t1",
                                "scenarios/cyclictest_pinned.yaml --seed 3 "
                                "--set cyclictest.loops=3000 --set kvm.enable_hv_timer=false");
  }
  SECTION("IPIs between vCPUs on two pCPUs, and on one shared pCPU") {
    check_same_with_and_without("ipi",
                                "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=2000000");
    check_same_with_and_without("ipi-shared",
                                "scenarios/vmexit_ipi.yaml --set vm.pinning=[2,2] "
                                "--set host.tick_hz=1000 --set vmexit.goal_cycles=2000000");
  }
  SECTION("random load on shared pCPUs (wake-ups, migrations, kicks)") {
    check_same_with_and_without("rand",
                                "tests/data/scenarios/sched_random_load.yaml --seed 2 "
                                "--set sim.max_simulated_s=0.3");
  }
  SECTION("a run ended by sim.max_simulated_s") {
    check_same_with_and_without("limit",
                                "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.2");
  }
}
