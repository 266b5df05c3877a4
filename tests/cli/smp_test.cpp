// Guest SMP through the CLI: cross-vCPU wake-ups with reschedule IPIs
// (ipi_pingpong) and smp_call_function with and without wait (smp_call),
// on the Skylake-SP 2-vCPU scenario, with the invariant checks on.
#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

const char* kPingPong =
    "scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=2000 --set sim.max_simulated_s=2 "
    "--set sim.check_invariants=true";
// smp_call on 4 vCPUs of the same platform (targets: vCPUs 1-3).
const char* kSmpCall4 =
    "scenarios/ipi_pingpong.yaml --set workload.type=smp_call --set smp_call.calls=2000 "
    "--set vm.vcpus=4 --set vm.pinning=[0,1,2,3] --set sim.max_simulated_s=2 "
    "--set sim.check_invariants=true";

void check_clean(const nlohmann::json& r) {
  CHECK(metric(r, "invariants.violations") == 0);
  CHECK(metric(r, "vcpu.kicks_lost") == 0);
  // Every guest IPI is one ICR write that KVM delivered once.
  CHECK(metric(r, "ipi.sent") == metric(r, "guest.ipi.sent"));
  CHECK(metric(r, "ipi.accepted") == metric(r, "ipi.sent"));
}

}  // namespace

TEST_CASE("ipi_pingpong (HLT idle): every reschedule IPI is handled once, no wake-up is lost",
          "[cli][smp]") {
  const auto r = run_metrics("smp-pingpong-hlt", kPingPong);
  // All round trips completed (a lost wake-up leaves both tasks asleep
  // until sim.max_simulated_s).
  CHECK(metric(r, "ipi_pingpong.round_trips") == 2000);
  // Two hops per round trip, each a remote wake-up of a task whose vCPU
  // sleeps in HLT: one RESCHEDULE_VECTOR IPI each, handled exactly once.
  CHECK(metric(r, "guest.wakeups.remote") == 4000);
  CHECK(metric(r, "guest.ipi.reschedule.sent") == 4000);
  CHECK(metric(r, "guest.ipi.reschedule.handled") == 4000);
  CHECK(metric(r, "guest.ipi.call_function.sent") == 0);
  CHECK(metric(r, "exits.HLT.count") >= 4000);
  CHECK(metric(r, "vcpu.kicks") >= 4000);  // the target's vCPU thread is woken in KVM
  check_clean(r);
}

TEST_CASE("ipi_pingpong: the round trip is longer with HLT idle than with idle=poll",
          "[cli][smp]") {
  const auto hlt = run_metrics("smp-pingpong-hlt2", kPingPong);
  const auto poll =
      run_metrics("smp-pingpong-poll", std::string(kPingPong) + " --set guest.idle=poll");
  const double h = metric(hlt, "ipi_pingpong.avg_us"), p = metric(poll, "ipi_pingpong.avg_us");
  INFO("round trip: hlt " << h << " us, poll " << p << " us");
  CHECK(metric(poll, "ipi_pingpong.round_trips") == 2000);
  // The polling idle loop sees need_resched itself (TIF_POLLING_NRFLAG): no
  // IPI, no exit; HLT pays the ICR exit, the kick, the vCPU wake-up and the
  // entry with injection on every hop.
  CHECK(metric(poll, "guest.ipi.sent") == 0);
  CHECK(metric(poll, "guest.wakeups.remote_polling") == 4000);
  CHECK(h > 2 * p);
  check_clean(poll);
}

TEST_CASE("ipi_pingpong: unpinned tasks wake each other across vCPUs", "[cli][smp]") {
  const auto r = run_metrics("smp-pingpong-unpinned",
                             "scenarios/ipi_pingpong.yaml "
                             "--set ipi_pingpong.rounds=1000 --set ipi_pingpong.pinned=false "
                             "--set vm.vcpus=3 --set vm.pinning=[1,2,3] "
                             "--set sim.max_simulated_s=2 --set sim.check_invariants=true");
  CHECK(metric(r, "ipi_pingpong.round_trips") == 1000);
  // Each wakee goes back to its previous, idle vCPU: every hop crosses.
  CHECK(metric(r, "guest.wakeups.remote") == 2000);
  CHECK(metric(r, "guest.ipi.reschedule.handled") == metric(r, "guest.ipi.reschedule.sent"));
  check_clean(r);
}

TEST_CASE("smp_call_function_many with wait returns only after every target ran the function",
          "[cli][smp]") {
  const auto r = run_metrics("smp-call-wait", kSmpCall4);
  CHECK(metric(r, "smp_call.calls") == 2000);
  CHECK(metric(r, "smp_call.early_returns") == 0);
  CHECK(metric(r, "smp_call.functions_run") == 6000);
  // One CALL_FUNCTION_VECTOR IPI per target and call (x2APIC physical:
  // one ICR write each), each handled once, each csd run once.
  CHECK(metric(r, "guest.ipi.call_function.sent") == 6000);
  CHECK(metric(r, "guest.ipi.call_function.handled") == 6000);
  CHECK(metric(r, "guest.smp_call.csd_run") == 6000);
  CHECK(metric(r, "exits.MSR_WRITE.count") >= 6000);
  check_clean(r);
  // The caller's latency covers the slowest target's wake-up from HLT.
  CHECK(metric(r, "smp_call.avg_us") > 2);
}

TEST_CASE("smp_call_function_single with wait: CALL_FUNCTION_SINGLE_VECTOR, handled once",
          "[cli][smp]") {
  const auto r = run_metrics("smp-call-single",
                             "scenarios/ipi_pingpong.yaml --set workload.type=smp_call "
                             "--set smp_call.calls=2000 --set sim.check_invariants=true");
  CHECK(metric(r, "smp_call.calls") == 2000);
  CHECK(metric(r, "smp_call.early_returns") == 0);
  CHECK(metric(r, "guest.ipi.call_function_single.sent") == 2000);
  CHECK(metric(r, "guest.ipi.call_function_single.handled") == 2000);
  CHECK(metric(r, "guest.ipi.call_function.sent") == 0);
  check_clean(r);
}

TEST_CASE("smp_call_function without wait returns before the targets ran the function",
          "[cli][smp]") {
  // The same check as with wait sees the early returns: it can fail.
  const auto r = run_metrics("smp-call-nowait", std::string(kSmpCall4) +
                                                    " --set smp_call.wait=false "
                                                    "--set cost.smp_call.gap=100ns");
  CHECK(metric(r, "smp_call.calls") == 2000);
  CHECK(metric(r, "smp_call.early_returns") > 0);
  // Back-to-back calls find the per-target csd still locked (csd_lock()
  // waits), so no IPI coalesces: each sent is handled once, bar the last
  // call's, still in flight when the run ends.
  CHECK(metric(r, "guest.smp_call.csd_lock_waits") > 0);
  const double sent = metric(r, "guest.ipi.call_function.sent");
  const double handled = metric(r, "guest.ipi.call_function.handled");
  CHECK(sent == 6000);
  CHECK(handled <= sent);
  CHECK(handled >= sent - 3);
  CHECK(metric(r, "guest.smp_call.csd_run") == handled);
  check_clean(r);
}
