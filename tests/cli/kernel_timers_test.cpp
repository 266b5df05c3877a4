// The host kernel's own per-CPU timers (host.kernel_timers,
// sim/sched/host_kernel_timers.h), each at its kernel period, and
// host.isolation deciding which of them a pCPU in host.isolcpus keeps.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tests/cli/traced_run.h"

using namespace kvmsim;
using namespace kvmsim::test;

namespace {

// T5b's stock host (an idle guest pinned to pCPU 2), 20 simulated seconds.
const std::string kIdle =
    "scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=20 --set kvm.halt_poll_ns=0";

// Switches into the thread `comm`; a comm ending in '/' counts every pCPU's
// ("watchdog/").
std::size_t switches_into(const TracedRun& run, const std::string& comm) {
  const bool any = comm.back() == '/';
  return run.count_if<trace::SchedSwitch>([&](const trace::SchedSwitch& e) {
    return any ? e.next_comm.rfind(comm, 0) == 0 : e.next_comm == comm;
  });
}

// The times (ns) of the events `T` whose thread name `comm_of` gives is `comm`.
template <class T, class CommOf>
std::vector<std::int64_t> times_of(const TracedRun& run, const std::string& comm, CommOf comm_of) {
  std::vector<std::int64_t> out;
  for (const TracedEvent& e : run.events)
    if (const T* d = std::get_if<T>(&e.data); d != nullptr && comm_of(*d) == comm)
      out.push_back(e.ts);
  return out;
}

}  // namespace

TEST_CASE(
    "host.kernel_timers: the softlockup hrtimer wakes the per-CPU kthread every 2 * "
    "watchdog_thresh / 5 s, watchdog/N before v4.19 and migration/N after, and none when off",
    "[cli][sched][kernel_timers]") {
  const auto v43 = traced_run("kt-v43", kIdle);  // the scenario's stock host has them
  CHECK(switches_into(v43, "watchdog/2") == 5);  // 20 s / 4 s
  CHECK(switches_into(v43, "migration/2") == 0);
  // Each run follows its wake-up at once (a sleeping kthread preempts), and
  // the runs are 4 s apart.
  const auto woken = times_of<trace::SchedWakeup>(
      v43, "watchdog/2", [](const trace::SchedWakeup& e) { return e.comm; });
  const auto ran = times_of<trace::SchedSwitch>(
      v43, "watchdog/2", [](const trace::SchedSwitch& e) { return e.next_comm; });
  REQUIRE(ran.size() == 5);
  REQUIRE(woken.size() == ran.size());
  for (std::size_t i = 0; i < ran.size(); ++i) {
    CHECK(ran[i] - woken[i] >= 0);
    CHECK(ran[i] - woken[i] < 20000);  // 20 us
    if (i > 0) CHECK(static_cast<double>(ran[i] - ran[i - 1]) == Approx(4e9).margin(50e3));
  }
  // The v4.19 switch: 4.18 still has watchdog/N.
  const auto v418 = traced_run("kt-v418", kIdle + " --set host.kernel=4.18");
  CHECK(switches_into(v418, "watchdog/2") == 5);
  const auto v419 = traced_run("kt-v419", kIdle + " --set host.kernel=4.19");
  CHECK(switches_into(v419, "migration/2") == 5);
  const auto v54 =
      traced_run("kt-v54", kIdle + " --set host.kernel_timers=true --set host.kernel=5.4");
  CHECK(switches_into(v54, "migration/2") == 5);
  const auto thresh5 = traced_run(
      "kt-thresh5", kIdle + " --set host.kernel_timers=true --set host.watchdog_thresh=5");
  CHECK(switches_into(thresh5, "watchdog/2") == 10);  // every 2 s
  const auto off = traced_run("kt-off", kIdle + " --set host.kernel_timers=false");
  CHECK(switches_into(off, "watchdog/") == 0);
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
  const auto v516 =
      run_metrics("kt-cs-v516", quiet + " --set host.kernel_timers=true --set host.kernel=5.16");
  CHECK(metric(v516, "host.irqs") - metric(base, "host.irqs") == 10);
  // ... and on up to 2 sockets only: 4 sockets x 1 CPU keep it on v6.6.
  const std::string four = quiet + " --set platform.sockets=4 --set platform.cores_per_socket=1";
  const auto base4 = run_metrics("kt-cs-4s-off", four + " --set host.kernel_timers=false");
  const auto v66_4 =
      run_metrics("kt-cs-4s-v66", four + " --set host.kernel_timers=true --set host.kernel=6.6");
  CHECK(metric(v66_4, "host.irqs") - metric(base4, "host.irqs") == 10);
  const auto mce = run_metrics("kt-mce", quiet +
                                             " --set host.kernel_timers=true --set "
                                             "host.tsc_clocksource_watchdog=false --set "
                                             "host.mce_check_interval_s=1");
  CHECK(metric(mce, "host.irqs") - metric(base, "host.irqs") == 20);
}

TEST_CASE(
    "host.isolation: a nohz_full pCPU has no softlockup watchdog from v3.11, an isolcpus= one "
    "keeps it and ticks at CONFIG_HZ while its vCPU runs",
    "[cli][sched][kernel_timers]") {
  // T1's host (v4.8, host.isolcpus [2, 3]) without its explicit residual tick.
  const std::string t1 =
      "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=20000 --set host.tick_hz=-1 "
      "--set host.kernel_timers=true";
  const auto nohz_full = traced_run("iso-nohz-full", t1);
  CHECK(switches_into(nohz_full, "watchdog/") == 0);
  const auto before = traced_run("iso-v41-rule", t1 + " --set host.softlockup_on_nohz_full=true");
  CHECK(switches_into(before, "watchdog/2") == 5);  // 20 s / 4 s
  CHECK(switches_into(before, "watchdog/3") == 5);
  const auto iso_trace = traced_run("iso-isolcpus-trace", t1 + " --set host.isolation=isolcpus");
  CHECK(switches_into(iso_trace, "watchdog/2") == 5);
  const auto v41 =
      traced_run("iso-v41", t1 + " --set host.kernel=4.1 --set kvm.enable_hv_timer=false");
  CHECK(switches_into(v41, "watchdog/") == 0);  // 3.11-4.1: off with nohz_full
  const auto iso = run_metrics("iso-isolcpus", t1 + " --set host.isolation=isolcpus");
  const auto full = run_metrics("iso-nohz-full-m", t1);
  // The CONFIG_HZ (250) tick while cyclictest's vCPU runs: external-interrupt
  // exits the nohz_full pCPU does not take.
  CHECK(metric_or_zero(iso, "exits.EXTERNAL_INTERRUPT.count") >
        metric_or_zero(full, "exits.EXTERNAL_INTERRUPT.count") + 100);
}

TEST_CASE("host.kernel_timers and host.isolation: a setting that cannot act is a warning naming it",
          "[cli][sched][kernel_timers]") {
  const auto off = run_cli("run " + kIdle +
                           " -q --set host.kernel_timers=false --set host.watchdog_thresh=5 "
                           "--set host.mce_check_interval_s=60 --out " +
                           out_dir("kt-inactive").string());
  INFO(off.output);
  REQUIRE(off.exit_code == 0);
  CHECK(off.output.find("host.watchdog_thresh, host.mce_check_interval_s have no effect: "
                        "host.kernel_timers is false") != std::string::npos);
  // The era's value of a version switch is not a choice of the user's.
  CHECK(off.output.find("host.softlockup_kthread") == std::string::npos);
  const auto iso = run_cli("run " + kIdle + " -q --set host.isolation=isolcpus --out " +
                           out_dir("iso-inactive").string());
  INFO(iso.output);
  REQUIRE(iso.exit_code == 0);
  CHECK(iso.output.find("host.isolation = isolcpus has no effect: host.isolcpus lists no pCPU") !=
        std::string::npos);
  // Where they act, no such warning.
  const auto on = run_cli("run " + kIdle + " -q --set host.watchdog_thresh=5 --out " +
                          out_dir("kt-active").string());
  CHECK(on.output.find("no effect: host.kernel_timers") == std::string::npos);
}
