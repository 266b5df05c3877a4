// The host kernel's own per-CPU timers (host.kernel_timers,
// sim/sched/host_kernel_timers.h), each at its kernel period, and
// host.isolation deciding which of them a pCPU in host.isolcpus keeps.
#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

// T5b's stock host (an idle guest pinned to pCPU 2), 20 simulated seconds.
const std::string kIdle =
    "scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=20 --set kvm.halt_poll_ns=0";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The trace of a run: sched_switch lines into the softlockup kthread.
std::string trace_of(const std::string& name, const std::string& args) {
  const auto dir = out_dir(name);
  const auto r = run_cli("run " + args + " -q --out " + dir.string() + " --trace " +
                         (dir / "trace.txt").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return read_text(dir / "trace.txt");
}

}  // namespace

TEST_CASE(
    "host.kernel_timers: the softlockup hrtimer wakes the per-CPU kthread every 2 * "
    "watchdog_thresh / 5 s, watchdog/N before v4.18 and migration/N after, and none when off",
    "[cli][sched][kernel_timers]") {
  const auto v43 = trace_of("kt-v43", kIdle);  // the scenario's stock host has them
  CHECK(count(v43, "==> watchdog/2:") == 5);   // 20 s / 4 s
  CHECK(count(v43, "==> migration/2:") == 0);
  const auto v54 =
      trace_of("kt-v54", kIdle + " --set host.kernel_timers=true --set host.kernel=5.4");
  CHECK(count(v54, "==> migration/2:") == 5);
  const auto thresh5 =
      trace_of("kt-thresh5", kIdle + " --set host.kernel_timers=true --set host.watchdog_thresh=5");
  CHECK(count(thresh5, "==> watchdog/2:") == 10);  // every 2 s
  const auto off = trace_of("kt-off", kIdle + " --set host.kernel_timers=false");
  CHECK(count(off, "==> watchdog/") == 0);
}

TEST_CASE(
    "host.kernel_timers: the clocksource watchdog visits each pCPU once per 0.5 s x the "
    "platform's CPUs, and the MCE poll once per check_interval",
    "[cli][sched][kernel_timers]") {
  // Four CPUs, no noise: each added timer is one more host interrupt.
  const std::string quiet = kIdle +
                            " --set noise.irq.rate_hz=0 --set noise.softirq.rate_hz=0 "
                            "--set platform.sockets=1 --set platform.cores_per_socket=4 "
                            "--set platform.threads_per_core=1 --set host.watchdog_thresh=0 "
                            "--set host.mce_check_interval_s=0";
  const auto base = run_metrics("kt-cs-off", quiet + " --set host.kernel_timers=false");
  const auto cs = run_metrics("kt-cs-on", quiet + " --set host.kernel_timers=true");
  REQUIRE(cs.contains("host.cpu.2.busy_frac"));
  CHECK_FALSE(cs.contains("host.cpu.0.busy_frac"));  // the run uses pCPU 2 only
  // 4 x 0.5 s = every 2 s on pCPU 2: 10 in 20 s (v4.3: the TSC is watched).
  CHECK(metric(cs, "host.irqs") - metric(base, "host.irqs") == 10);
  const auto v66 =
      run_metrics("kt-cs-v66", quiet + " --set host.kernel_timers=true --set host.kernel=6.6");
  CHECK(metric(v66, "host.irqs") == metric(base, "host.irqs"));  // b50db7095fe0: not watched
  const auto mce = run_metrics("kt-mce", quiet +
                                             " --set host.kernel_timers=true --set "
                                             "host.tsc_clocksource_watchdog=false --set "
                                             "host.mce_check_interval_s=1");
  CHECK(metric(mce, "host.irqs") - metric(base, "host.irqs") == 20);
}

TEST_CASE(
    "host.isolation: a nohz_full pCPU has no softlockup watchdog from v4.2, an isolcpus= one "
    "keeps it and ticks at CONFIG_HZ while its vCPU runs",
    "[cli][sched][kernel_timers]") {
  // T1's host (v4.8, host.isolcpus [2, 3]) without its explicit residual tick.
  const std::string t1 =
      "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=20000 --set host.tick_hz=-1 "
      "--set host.kernel_timers=true";
  const auto nohz_full = trace_of("iso-nohz-full", t1);
  CHECK(count(nohz_full, "==> watchdog/") == 0);
  const auto before = trace_of("iso-v41-rule", t1 + " --set host.softlockup_on_nohz_full=true");
  CHECK(count(before, "==> watchdog/2:") == 5);  // 20 s / 4 s
  CHECK(count(before, "==> watchdog/3:") == 5);
  const auto iso = run_metrics("iso-isolcpus", t1 + " --set host.isolation=isolcpus");
  const auto full = run_metrics("iso-nohz-full-m", t1);
  // The CONFIG_HZ (250) tick while cyclictest's vCPU runs: external-interrupt
  // exits the nohz_full pCPU does not take.
  CHECK(metric_or_zero(iso, "exits.EXTERNAL_INTERRUPT.count") >
        metric_or_zero(full, "exits.EXTERNAL_INTERRUPT.count") + 100);
}
