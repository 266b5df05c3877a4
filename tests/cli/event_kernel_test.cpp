// The model's event kernel (sim/core/event_kernel.h) reproduces SystemC's
// scheduling order, so a run on it and the same run on SystemC's own kernel
// (--systemc-kernel) give byte-identical summary.json (sim.wall_s aside),
// histogram.txt and trace: many pCPUs with events due at one time (the
// multi-VM and cloud fleets, ticks on a common grid), delta notifications
// (--no-run-ahead), and runs the workload ends (the stop) or the limit ends.
#include "tests/cli/same_outputs.h"

using namespace kvmsim::test;

namespace {
void check_same_on_both_kernels(const std::string& name, const std::string& args) {
  check_same_outputs("ek-" + name, args, "", "--systemc-kernel");
}
}  // namespace

TEST_CASE("event kernel: every output as on SystemC's kernel", "[cli][event_kernel]") {
  SECTION("three 64-vCPU guests on 64 pCPUs, native TLB flush") {
    check_same_on_both_kernels("multi-vm",
                               "scenarios/ebizzy_multi_vm.yaml --set vm.count=3 "
                               "--set sim.max_simulated_s=0.03");
  }
  SECTION("the mixed cloud fleet, PV TLB flush") {
    check_same_on_both_kernels("cloud",
                               "scenarios/ebizzy_cloud.yaml --set fleet.ebizzy_vms=4 "
                               "--set guest.pv_tlb_flush=true "
                               "--set sim.max_simulated_s=0.05");
  }
  SECTION("one vCPU per pCPU, ended by the workload (T1, hrtimer)") {
    check_same_on_both_kernels("t1",
                               "scenarios/cyclictest_pinned.yaml --seed 3 "
                               "--set cyclictest.loops=3000 "
                               "--set kvm.enable_hv_timer=false");
  }
  SECTION("shared pCPUs without run-ahead: zero-delay notifications") {
    check_same_outputs("ek-rand-nora",
                       "tests/data/scenarios/sched_random_load.yaml --seed 2 "
                       "--set sim.max_simulated_s=0.2",
                       "--no-run-ahead", "--no-run-ahead --systemc-kernel");
  }
}
