// The timer-storm guest (sim/guest/workloads/timer_storm_workload.cpp,
// scenarios/timer_storm.yaml): what one expiry costs the host, counted as
// kvm_stat counts it. The ratios pinned here follow from the mechanism, per
// guest timer interrupt (the storm's expiries: the guest's HZ=1000 tick stops
// at the first idle entry, since only timer-wheel timers keep it, and no
// task ever wakes to restart it):
// the vCPU wakes from one HLT (one HLT exit, a successful halt poll, one
// kvm_vcpu_wakeup, one injected timer vector), re-arms the clockevent once
// (one WRMSR 0x6e0 exit, handled in the fastpath: one kvm_msr), and each exit
// has its entry. kvm_hv_timer_state goes to 0 when the halted vCPU's timer
// moves to the hrtimer and back to 1 at the re-arm; not on the wake-up
// itself (restart_apic_timer() leaves an expired one-shot timer alone).
#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

TEST_CASE("timer storm at 32 kHz: per guest timer interrupt one HLT and one fastpath WRMSR exit",
          "[cli][timer_storm]") {
  const auto dir = out_dir("storm");
  const auto trace = (dir / "t.txt").string();
  const auto r =
      run_cli("run scenarios/timer_storm.yaml --set timer_storm.expiries=8000 -q --out " +
              dir.string() + " --trace " + trace);
  REQUIRE(r.exit_code == 0);
  const auto m = read_json(dir / "summary.json").at("metrics");
  CHECK(m.at("timer_storm.expiries") == 8000);
  CHECK(m.at("timer_storm.overruns") == 0);
  CHECK(m.at("timer_storm.rate_hz").get<double>() == Approx(32000).epsilon(1e-3));
  const double span_s = m.at("sim.simulated_s");

  const auto s = run_cli("trace-stats " + trace + " --json");
  REQUIRE(s.exit_code == 0);
  const auto j = nlohmann::json::parse(s.output.substr(s.output.find('{')));
  const auto& ev = j.at("events");
  const auto& reasons = j.at("exits").at("reasons");
  const double hlt = reasons.at("HLT").at("count");
  const double wrmsr = reasons.at("MSR_WRITE").at("count");
  // Interrupts = storm expiries (+ at most a few: the softlockup watchdog,
  // the first re-arms at boot); the tick is stopped in idle (tick_nohz_
  // stop_sched_tick() sees no wheel timer) and no task wakes to restart it.
  const double interrupts = 8000;
  CHECK(span_s == Approx(8000 / 32000.0).epsilon(0.01));
  CHECK(hlt == Approx(interrupts).margin(4));
  CHECK(wrmsr == Approx(interrupts).margin(4));
  CHECK(m.at("vmx.fastpath.reenter_guest") == wrmsr);
  CHECK(ev.at("kvm_msr").at("count") == wrmsr);
  const double exits = ev.at("kvm_exit").at("count");
  CHECK(ev.at("kvm_entry").at("count").get<double>() == Approx(exits).margin(1));
  CHECK(ev.at("kvm_vcpu_wakeup").at("count") == hlt);
  CHECK(ev.at("kvm_apic_accept_irq").at("count").get<double>() == Approx(hlt).margin(1));
  CHECK(ev.at("kvm_hv_timer_state").at("count").get<double>() == Approx(2 * hlt).margin(2));
  // Halt polling: the window grows to 40 us within the first halts, then
  // every ~28 us halt ends inside it; the vCPU thread hardly sleeps.
  CHECK(m.at("halt_poll.successful").get<double>() >= hlt - 5);
  CHECK(m.at("vcpu.blocks").get<double>() <= 5);
  // Exits are nearly all HLT + MSR_WRITE.
  CHECK(hlt + wrmsr >= 0.99 * exits);

  // The kvm_stat view of the same trace: its rows and their order.
  const auto k = run_cli("trace-stats " + trace + " --kvm-stat --drilldown");
  REQUIRE(k.exit_code == 0);
  const auto at = [&](const std::string& row) { return k.output.find("\n " + row + " "); };
  CHECK(at("Event") != std::string::npos);
  CHECK(at("kvm_entry") < at("kvm_hv_timer_state"));
  CHECK(at("kvm_hv_timer_state") < at("kvm_msr"));
  CHECK(at("  MSR_WRITE") != std::string::npos);
  CHECK(at("  HLT") != std::string::npos);
  CHECK(k.output.find("sched_switch") == std::string::npos);
}

TEST_CASE("timer storm: rate_hz sets the expiry rate, a vCPU that does not exist is refused",
          "[cli][timer_storm]") {
  const auto m = run_metrics("storm-8k",
                             "scenarios/timer_storm.yaml --set timer_storm.rate_hz=8000 "
                             "--set timer_storm.expiries=2000");
  CHECK(m.at("timer_storm.rate_hz").get<double>() == Approx(8000).epsilon(1e-3));
  CHECK(m.at("timer_storm.period_ns") == 125000);
  const auto r = run_cli("run scenarios/timer_storm.yaml --set timer_storm.vcpu=3 -q");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("timer_storm.vcpu") != std::string::npos);
}
