// Kernel eras (host.kernel / guest.kernel) as the defaults of the version
// switches, and the behaviours they switch: the adaptive-advance rule of
// v5.4..v5.13, apic_timer_expired()'s direct injection (v5.8), the timer
// fastpaths (v5.8), and the 4.9 guest's tick restart on leaving idle=poll.
#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

TEST_CASE("host.kernel picks the version switches a scenario leaves alone, an explicit key wins",
          "[era][cli]") {
  const auto p = run_cli("params");
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.output, Catch::Contains("host.kernel") && Catch::Contains("version switch"));
  const auto dir = out_dir("era-t3");
  const auto r = run_cli(
      "run scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=1048576 "
      "--set host.kernel=5.4 -q --out " +
      dir.string());
  REQUIRE(r.exit_code == 0);
  const auto params = read_json(dir / "summary.json").at("params");
  INFO(params.dump());
  // 5.4: the loosened filter, spin then tune; no timer fastpath yet.
  CHECK(params.at("kvm.lapic_timer_advance_tuning") == "spin_then_tune");
  CHECK(params.at("kvm.exit_fastpath_timer") == "false");
  // The scenario sets kvm.exit_fastpath itself: the era does not touch it.
  CHECK(params.at("kvm.exit_fastpath") == "false");
}

TEST_CASE("a host.kernel that is not a version is refused", "[era][cli][errors]") {
  const auto r = run_cli("run scenarios/vmexit_tscdeadline.yaml --set host.kernel=newest -q");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("host.kernel") && Catch::Contains("not a kernel version"));
}

TEST_CASE("before v5.8 the fastpath covers no timer exit: vmexit.flat tscdeadline gains nothing",
          "[era][cli][fastpath]") {
  const std::string base =
      "scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=16777216 --set "
      "kvm.exit_fastpath=true";
  const auto v58 = run_metrics("era-fp58", base);
  const auto v57 = run_metrics("era-fp57", base + " --set host.kernel=5.7");
  const auto off = run_metrics("era-fpoff",
                               "scenarios/vmexit_tscdeadline.yaml --set "
                               "vmexit.goal_cycles=16777216 --set host.kernel=5.7");
  const double immed58 = v58.at("vmexit.tscdeadline_immed.cycles");
  const double immed57 = v57.at("vmexit.tscdeadline_immed.cycles");
  const double immed_off = off.at("vmexit.tscdeadline_immed.cycles");
  INFO("5.8 " << immed58 << " 5.7 " << immed57 << " off " << immed_off);
  CHECK(immed58 < 0.9 * immed57);
  CHECK(immed57 == Approx(immed_off).epsilon(0.01));
}

TEST_CASE(
    "a 4.9-era idle=poll guest restarts its tick on idle exit: one more TSC-deadline "
    "write per loop, on the wake-up path",
    "[era][cli][guest]") {
  const std::string base = "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=5000";
  const auto old_guest = run_metrics("era-g47", base);  // guest.kernel 4.7 in the scenario
  const auto new_guest = run_metrics("era-g66", base + " --set guest.kernel=6.6");
  const double loops = old_guest.at("cyclictest.loops");
  // 4.7: the restart on idle exit and the stop on idle entry write the
  // deadline; cyclictest's re-arm lands behind the restarted tick (no write).
  CHECK(old_guest.at("exits.MSR_WRITE.count").get<double>() / loops == Approx(2).epsilon(0.02));
  // The tick never fires: stopped at every idle entry, restarted at every exit.
  CHECK(old_guest.at("exits.PREEMPTION_TIMER.count").get<double>() / loops ==
        Approx(1).epsilon(0.02));
  // 6.6 with the same HZ=1000 tick: idle=poll keeps the tick, which fires
  // in idle (at least one more timer exit per loop).
  CHECK(new_guest.at("exits.PREEMPTION_TIMER.count").get<double>() / loops >= 1.98);
}

TEST_CASE(
    "before v5.8 a preemption-timer expiry is injected by vcpu_run(), not from the exit "
    "path",
    "[era][cli][lapic]") {
  const std::string base = "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=2000";
  const auto pending = run_metrics("era-inj48", base);
  const auto direct = run_metrics("era-inj58", base + " --set kvm.apic_timer_expired_inject=true");
  CHECK(pending.at("breakdown.vcpu_run.avg_ns").get<double>() > 50);
  CHECK_FALSE(direct.contains("breakdown.vcpu_run.avg_ns"));
}

TEST_CASE("the guest's clockevent shutdown when its last timer goes follows guest.kernel",
          "[era][cli][guest]") {
  // hz=0, no watchdog: cyclictest's timer is the only one, so every expiry
  // leaves hrtimer_interrupt() with nothing to program.
  const std::string base =
      "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=2000 --set guest.hz=0";
  const auto v47 = run_metrics("era-sd47", base + " --set guest.kernel=4.7");
  const auto v66 = run_metrics("era-sd66", base + " --set guest.kernel=6.6");
  const auto v612 = run_metrics("era-sd612", base + " --set guest.kernel=6.12");
  const auto per_loop = [](const nlohmann::json& m) {
    return m.at("exits.MSR_WRITE.count").get<double>() / m.at("cyclictest.loops").get<double>();
  };
  // Before v4.11: nothing; only cyclictest's re-arm writes the deadline.
  CHECK(per_loop(v47) == Approx(1).epsilon(0.01));
  // v4.11..v6.11: mask LVTT + zero TMICT in the interrupt, unmask LVTT before
  // the re-arm's TSC-deadline write; v6.12 also writes TSC_DEADLINE=0.
  CHECK(per_loop(v66) == Approx(4).epsilon(0.01));
  CHECK(per_loop(v612) == Approx(5).epsilon(0.01));
  // The shutdown writes sit on the wake-up path (inside hrtimer_interrupt()).
  CHECK(v66.at("cyclictest.avg_us").get<double>() > v47.at("cyclictest.avg_us").get<double>() + 2);
}
