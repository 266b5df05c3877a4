// Host cpuidle (host.cpuidle menu, sim/sched/cpuidle.h) on an idle guest's
// pCPU: the menu governor's choice for the guest's tick, the C-state exit
// latency delaying the timer wake-up, and what counts as C0.
#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
// A HZ=1000 nohz=off idle guest on Haswell-EP without halt polling: the
// vCPU blocks after each tick, its pCPU idles ~990 us, the LAPIC hrtimer
// wakes it.
const std::string kIdle1k =
    "scenarios/halt_poll_idle.yaml --set guest.nohz=false --set guest.hz=1000 "
    "--set kvm.halt_poll_ns=0 --set guest.clocksource_watchdog_ms=0 --set sim.max_simulated_s=2";
double at(const nlohmann::json& m, const std::string& k) { return m.at(k).get<double>(); }
}  // namespace

TEST_CASE(
    "cpuidle menu: ~990 us idle periods go to C6, and C6's 133 us exit latency delays every timer "
    "wake-up, max_cstate=2 leaves C1E and 10 us",
    "[cli][cpuidle]") {
  // The cold refill and leave_mm() after C3 / C6 are off here (the next
  // case pins them): only the exit latency and the idle entry differ.
  const std::string warm = " --set cost.host.cstate_refill=0 --set cost.host.leave_mm=0";
  const auto off = run_metrics("cpuidle-off", kIdle1k + " --set host.cpuidle=off");
  const auto c6 = run_metrics("cpuidle-c6", kIdle1k + " --set host.cpuidle=menu" + warm);
  const auto c1e = run_metrics("cpuidle-c1e",
                               kIdle1k + " --set host.cpuidle=menu --set host.max_cstate=2" + warm);
  const double n = at(c6, "timer_wakeup.count");
  REQUIRE(n > 1900);
  // Every tick-to-tick idle period fits C6's target residency (400 us).
  CHECK(at(c6, "host.cpu.2.cpuidle.C6-HSW.usage") >= 0.95 * n);
  CHECK(c1e.count("host.cpu.2.cpuidle.C6-HSW.usage") == 0);
  CHECK(at(c1e, "host.cpu.2.cpuidle.C1E-HSW.usage") >= 0.95 * n);
  // The interrupt is handled only after the core is back in C0.
  const double d6 = at(c6, "timer_wakeup.avg_us") - at(off, "timer_wakeup.avg_us");
  const double d1e = at(c1e, "timer_wakeup.avg_us") - at(off, "timer_wakeup.avg_us");
  CHECK(d6 == Approx(133.0).margin(3.0));
  CHECK(d1e == Approx(10.0).margin(2.0));
  // The exit time is not C0 and is accounted: ~133 us per wake-up.
  CHECK(at(c6, "host.cpu.2.cpuidle.exit_s") / n == Approx(133e-6).epsilon(0.05));
  // C0 = the threads' time plus the idle task's own work (host interrupts
  // on the idle pCPU, idle entry): above busy_frac, by about one
  // cost.host.idle_enter per idle entry more than without cpuidle.
  CHECK(at(c6, "host.cpu.2.c0_frac") > at(c6, "host.cpu.2.busy_frac"));
  CHECK(at(off, "host.cpu.2.c0_frac") > at(off, "host.cpu.2.busy_frac"));
  const double extra_us_per_wake =
      (at(c6, "host.cpu.2.c0_frac") - at(off, "host.cpu.2.c0_frac")) * 2e6 / n;
  CHECK(extra_us_per_wake == Approx(1.5).margin(0.3));  // cost.host.idle_enter 1500 ns
  // busy_frac (time outside the idle task) does not move with the C-state.
  CHECK(at(c6, "host.cpu.2.busy_frac") == Approx(at(off, "host.cpu.2.busy_frac")).epsilon(0.02));
}

TEST_CASE(
    "cpuidle menu: a wake-up from C6 (tlb_flushed) pays leave_mm()'s CR3 reload at the switch "
    "and the cold refill in the work after it, partly in the vCPU thread, and C1E pays neither",
    "[cli][cpuidle]") {
  const std::string costs = " --set cost.host.cstate_refill=8us --set cost.host.leave_mm=200ns";
  const auto warm =
      run_metrics("cpuidle-warm", kIdle1k +
                                      " --set host.cpuidle=menu --set cost.host.cstate_refill=0 "
                                      "--set cost.host.leave_mm=0");
  const auto cold = run_metrics("cpuidle-cold", kIdle1k + " --set host.cpuidle=menu" + costs);
  const auto c1e = run_metrics(
      "cpuidle-c1e-cold", kIdle1k + " --set host.cpuidle=menu --set host.max_cstate=2" + costs);
  const double n = at(cold, "timer_wakeup.count");
  REQUIRE(n > 1900);
  const double c6 =
      at(cold, "host.cpu.2.cpuidle.C6-HSW.usage") + at(cold, "host.cpu.2.cpuidle.C3-HSW.usage");
  // leave_mm() before each C3 / C6; the CR3 reload once per idle period,
  // when the vCPU thread runs again (a host interrupt that wakes no thread
  // sends the idle loop round, into C6 again, without a switch).
  CHECK(at(cold, "host.cpu.2.cpuidle.leave_mm") <= c6);
  CHECK(at(cold, "host.cpu.2.cpuidle.leave_mm") == Approx(n).epsilon(0.01));
  // The whole 8 us refill is paid after each of them (the work after a
  // wake-up is longer than 8 us), and it is C0 time.
  CHECK(at(cold, "host.cpu.2.cpuidle.refill_s") / c6 == Approx(8e-6).epsilon(0.01));
  const double c0_us = (at(cold, "host.cpu.2.c0_frac") - at(warm, "host.cpu.2.c0_frac")) * 2e6 / n;
  CHECK(c0_us == Approx(8.2).margin(0.3));
  // Part of it falls in the woken vCPU thread (busy_frac), part in the
  // host interrupt that woke it (the idle task's C0).
  const double busy_us =
      (at(cold, "host.cpu.2.busy_frac") - at(warm, "host.cpu.2.busy_frac")) * 2e6 / n;
  CHECK(busy_us > 2.0);
  CHECK(busy_us < 8.2);
  // C1E keeps the caches: no leave_mm(), no refill.
  CHECK(at(c1e, "host.cpu.2.cpuidle.leave_mm") == 0);
  CHECK(at(c1e, "host.cpu.2.cpuidle.refill_s") == 0);
}

TEST_CASE("cpuidle: a PM QoS latency limit of 0 keeps the idle pCPU in POLL (C0)",
          "[cli][cpuidle]") {
  const auto m = run_metrics(
      "cpuidle-qos0", kIdle1k + " --set host.cpuidle=menu --set host.cpuidle_latency_req_us=0");
  CHECK(at(m, "host.cpu.2.cpuidle.C1-HSW.usage") == 0);
  CHECK(at(m, "host.cpu.2.cpuidle.POLL.usage") > 1900);
  CHECK(at(m, "host.cpu.2.c0_frac") == Approx(1.0).margin(1e-6));
}

TEST_CASE("cpuidle: malformed state tables and menu without a table are errors", "[cli][cpuidle]") {
  auto r = run_cli("run " + kIdle1k + " -q --set host.cpuidle=menu --set host.cpuidle_states=C1:2");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("host.cpuidle_states") != std::string::npos);
  // The Haswell desktop platform file has no state table.
  r = run_cli(
      "run scenarios/tscdeadline_latency.yaml -q --set host.cpuidle=menu "
      "--set tscdeadline_latency.size=10");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("host.cpuidle") != std::string::npos);
}

TEST_CASE(
    "host NO_HZ_IDLE: an idle pCPU stops its 1000 Hz tick and restarts it on its grid when a "
    "thread runs (with host.nohz_idle=false it ticks through idle)",
    "[cli][cpuidle][tick]") {
  // A nohz guest idle but for its watchdogs (a few wake-ups per second) on a
  // stock pCPU ticking at 1000 Hz (no isolcpus, host.tick_hz=-1).
  const std::string idle =
      "scenarios/halt_poll_idle.yaml --set host.isolcpus=[] --set host.hz=1000 "
      "--set host.tick_hz=-1 --set kvm.halt_poll_ns=0 --set sim.max_simulated_s=2 "
      "--set host.cpuidle=menu";
  const auto nohz = run_metrics("nohz-idle-on", idle + " --set host.nohz_idle=true");
  const auto periodic = run_metrics("nohz-idle-off", idle + " --set host.nohz_idle=false");
  const double wakeups = at(nohz, "vcpu.halts");
  REQUIRE(wakeups > 2);
  REQUIRE(wakeups < 20);
  // Periodic: 2000 ticks in 2 s on the idle pCPU, each a host interrupt
  // (besides the platform's noise interrupts).
  const auto ticks_and_timers = [](const nlohmann::json& m) {
    return at(m, "host.irqs") - at(m, "host.noise_irqs");
  };
  CHECK(ticks_and_timers(periodic) >= 2000);
  // NO_HZ_IDLE: only the vCPU's own timer interrupts and the odd tick that
  // falls inside a ~10 us run; never a tick per millisecond of idle.
  CHECK(ticks_and_timers(nohz) < 2 * wakeups + 10);
  // The stopped tick no longer bounds the menu governor's sleep length:
  // more time in the deepest state, less C0.
  CHECK(at(nohz, "host.cpu.2.c0_frac") < at(periodic, "host.cpu.2.c0_frac"));
}
