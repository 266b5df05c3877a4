// Posted timer interrupts (kvm.pi_inject_timer, v5.3+, sim/lapic/lapic.cpp):
// on a nohz_full host with APICv the LAPIC timer's hrtimer fires on a
// housekeeping pCPU and posts the vector to a vCPU in guest mode, or kicks a
// halted one awake; the preemption timer and its exit fastpath are not used.
#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
// The T3 host (v5.8, Skylake-SP with APICv, vCPU pCPUs in host.isolcpus)
// with cyclictest in the guest; the scenario itself turns posting off.
const std::string kLoops = "2000";
const std::string kRun = "scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=" + kLoops +
                         " --set kvm.exit_fastpath=true";
}  // namespace

TEST_CASE(
    "kvm.pi_inject_timer: a vCPU in guest mode gets its timer posted from the housekeeping pCPU "
    "with no exit, and neither the preemption timer nor the TSC-deadline fastpath is used",
    "[cli][lapic][posted_timer]") {
  const double loops = std::stod(kLoops);
  const auto off = run_metrics("pi-off-poll", kRun + " --set guest.idle=poll");
  const auto on =
      run_metrics("pi-on-poll", kRun + " --set guest.idle=poll --set kvm.pi_inject_timer=-1");
  // Without posting (the scenario's setting): the hv timer and the fastpath.
  REQUIRE(metric_or_zero(off, "exits.PREEMPTION_TIMER.count") >= loops);
  REQUIRE(metric_or_zero(off, "vmx.fastpath.reenter_guest") >= loops);
  // With posting: every timer is posted (cyclictest's plus the guest's
  // watchdogs), none exits; WRMSR TSC_DEADLINE takes the slow path.
  CHECK(metric_or_zero(on, "exits.PREEMPTION_TIMER.count") == 0);
  CHECK(metric_or_zero(on, "vmx.fastpath.reenter_guest") == 0);
  CHECK(metric_or_zero(on, "vmx.fastpath.exit_handled") == 0);
  CHECK(metric_or_zero(on, "ipi.posted") >= loops);
  CHECK(metric_or_zero(on, "exits.EXTERNAL_INTERRUPT.count") < loops / 10);
  // The advance busy-wait runs in the hrtimer callback on the housekeeping
  // pCPU, once per posted timer.
  CHECK(metric_or_zero(on, "lapic.wait_lapic_expire.calls") >= metric_or_zero(on, "ipi.posted"));
  CHECK(metric_or_zero(on, "host.cpu.0.c0_frac") > 0);
  CHECK(metric_or_zero(on, "cyclictest.loops") == loops);
}

TEST_CASE(
    "kvm.pi_inject_timer: a halted vCPU is not posted to: the housekeeping pCPU's timer kicks it "
    "awake with a reschedule IPI and the timer is injected at entry",
    "[cli][lapic][posted_timer]") {
  const double loops = std::stod(kLoops);
  const auto on = run_metrics("pi-on-hlt", kRun + " --set kvm.pi_inject_timer=-1");
  CHECK(metric_or_zero(on, "exits.PREEMPTION_TIMER.count") == 0);
  CHECK(metric_or_zero(on, "ipi.posted") == 0);
  CHECK(metric_or_zero(on, "host.ipis") >= loops);  // one reschedule IPI per wake-up
  CHECK(metric_or_zero(on, "vcpu.halts") >= loops);
  CHECK(metric_or_zero(on, "cyclictest.loops") == loops);
}

TEST_CASE(
    "kvm.pi_inject_timer: a setting that cannot act is a warning, and a host with no "
    "housekeeping pCPU for the timers is an error",
    "[cli][lapic][posted_timer]") {
  // v5.18+: posting needs HLT or MWAIT in guest, which the model's VMs lack.
  const auto dir = out_dir("pi-v66");
  const auto r = run_cli("run " + kRun +
                         " --set cyclictest.loops=200 --set host.kernel=6.6 --set "
                         "kvm.pi_inject_timer=1 --out " +
                         dir.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("kvm.pi_inject_timer=1 has no effect") != std::string::npos);
  // The LAPIC hrtimer stays on the vCPU's pCPU: no reschedule IPIs to wake it.
  CHECK(metric_or_zero(read_json(dir / "summary.json").at("metrics"), "host.ipis") == 0);
  // Every pCPU of a 1-socket, 2-core, 2-thread host isolated.
  const auto all = run_cli("run " + kRun +
                           " --set kvm.pi_inject_timer=1 --set platform.sockets=1 --set "
                           "platform.cores_per_socket=2 --set platform.threads_per_core=2 "
                           "--set host.isolcpus=[0,1,2,3] --out " +
                           out_dir("pi-all-iso").string());
  INFO(all.output);
  CHECK(all.exit_code == 2);
  CHECK(all.output.find("need a housekeeping pCPU") != std::string::npos);
}

TEST_CASE(
    "kvm.pi_inject_timer: from a pCPU that is not nohz_full (host.isolation isolcpus) the LAPIC "
    "hrtimer is not moved: it interrupts the guest on the vCPU's pCPU and nothing is posted",
    "[cli][lapic][posted_timer]") {
  const double loops = std::stod(kLoops);
  const auto local = run_metrics("pi-isolcpus", kRun +
                                                    " --set guest.idle=poll --set "
                                                    "kvm.pi_inject_timer=1 --set "
                                                    "host.isolation=isolcpus");
  CHECK(metric_or_zero(local, "ipi.posted") == 0);
  CHECK_FALSE(local.contains("host.cpu.0.c0_frac"));  // no housekeeping pCPU was used
  CHECK(metric_or_zero(local, "exits.PREEMPTION_TIMER.count") == 0);  // posting possible: no hv
  CHECK(metric_or_zero(local, "exits.EXTERNAL_INTERRUPT.count") >= loops);
  CHECK(metric_or_zero(local, "cyclictest.loops") == loops);
}
