// HLT and vCPU blocking (vcpu_block -> kvm_vcpu_halt without polling), the
// guest's periodic tick and NO_HZ_IDLE, and what they do to timer latency.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {}  // namespace

TEST_CASE(
    "tscdeadline_latency with HLT: every interrupt wakes a blocked vCPU, and the "
    "preemption timer no longer matters (the deadline sits on an hrtimer while blocked)",
    "[kut][hlt]") {
  const std::string base =
      "scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=1000 "
      "--set tscdeadline_latency.hlt=true --set kvm.lapic_timer_advance_ns=0";
  const auto hv = run_metrics("hlt-hv", base + " --set kvm.enable_hv_timer=true");
  const auto sw = run_metrics("hlt-sw", base + " --set kvm.enable_hv_timer=false");
  // 1000 samples + the unrecorded first interrupt, each preceded by a block.
  CHECK(hv.at("vcpu.blocks") == 1001);
  CHECK(hv.at("exits.HLT.count") == hv.at("vcpu.blocks"));
  CHECK_FALSE(hv.contains("exits.PREEMPTION_TIMER.count"));
  const double a = hv.at("tscdeadline_latency.avg_cycles"),
               b = sw.at("tscdeadline_latency.avg_cycles");
  INFO("hv " << a << " sw " << b);
  CHECK(std::fabs(a - b) / b < 0.01);
  // Busy-waiting avoids the whole host wake-up path.
  const auto busy = run_metrics("hlt-busy",
                                "scenarios/tscdeadline_latency.yaml --set "
                                "tscdeadline_latency.size=1000 --set "
                                "kvm.lapic_timer_advance_ns=0");
  CHECK(busy.at("tscdeadline_latency.avg_cycles").get<double>() < a / 2);
}

TEST_CASE(
    "cyclictest in a HZ=1000 HLT-idle guest: one wake-up per loop (the idle tick is stopped), "
    "three clockevent writes, and the exit fastpath shortens the wake-up path",
    "[kut][hlt][fastpath]") {
  const std::string base = "scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=5000";
  const auto slow = run_metrics("cf-slow", base + " --set kvm.exit_fastpath=false");
  const auto fast = run_metrics("cf-fast", base + " --set kvm.exit_fastpath=true");
  const double loops = slow.at("cyclictest.loops");
  // Only cyclictest's timer wakes the vCPU: a high-res guest stops its
  // tick on every idle entry (only timer-wheel timers keep it) and restarts
  // it when cyclictest wakes. Writes per loop: hrtimer_interrupt()
  // reprograms for the far watchdog, tick_nohz_idle_exit() for the tick,
  // then cyclictest's re-arm (or, when the tick came first, the tick stop).
  CHECK(slow.at("exits.HLT.count").get<double>() / loops == Approx(1).epsilon(0.01));
  CHECK(slow.at("exits.MSR_WRITE.count").get<double>() / loops == Approx(3).epsilon(0.01));
  CHECK(slow.at("exits.HLT.count") == fast.at("exits.HLT.count"));
  // Nothing is lost while a vCPU sleeps (a pending host IRQ behind another
  // one is taken when that returns).
  CHECK(slow.at("cyclictest.max_us").get<double>() < 100);
  const double s = slow.at("cyclictest.avg_us"), f = fast.at("cyclictest.avg_us");
  INFO("avg slow " << s << " fast " << f);
  // Two of the writes are on the wake-up path (inside hrtimer_interrupt()
  // and the tick restart before schedule()): two WRMSR fastpaths (~540
  // cycles at 2.4 GHz = 0.22 us each).
  CHECK(s - f == Approx(0.44).margin(0.1));
}
