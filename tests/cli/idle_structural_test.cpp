// Structural check of the idle vCPU's wake-up cycle against a real host's
// sched trace (tests/data/traces/ftrace_sched_vcpu-thread-1ms-wakeups_idle-
// guest.txt: a vCPU thread woken from hard IRQ on its idle pCPU every
// 1.000 ms, running ~15 us, sched_stat_runtime 16.1-16.2 us, blocking
// again). The model's idle guest with a 1 kHz tick must show the same
// cycle, and with the host's C-states (host.cpuidle menu) its on-CPU time
// per wake-up within 20% of the real one (a prediction: no cost is fitted
// to this trace).
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

struct Cycle {
  std::vector<double> wake_s, in_s, out_s;  // the vCPU thread's sched_wakeup / switch in / out
  std::vector<double> runtime_ns;           // sched_stat_runtime (real trace only)
  int out_not_sleeping = 0;                 // switch-outs with a state other than S
  int out_not_to_idle = 0;                  // switch-outs to a thread other than swapper
  int wake_other_cpu = 0;                   // wake-ups targeting another CPU
};

// Both the kernel's key=value form (prev_comm=... prev_state=S ==>
// next_comm=...) and the model's trace-cmd form (comm:pid [prio] S ==> ...).
Cycle parse(const std::string& file, const std::string& comm) {
  std::ifstream f(file);
  REQUIRE(f.good());
  Cycle c;
  const std::regex ts(R"(\[(\d{3})\]\s+\S*\s*([0-9]+\.[0-9]+):\s+(sched_\w+):\s+(.*)$)");
  const std::regex sw_kv(
      R"(prev_comm=(.+) prev_pid=\d+ prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.+) next_pid)");
  const std::regex sw_tc(R"(^\s*(.+):\d+ \[\d+\] (\S+) ==> (.+):\d+ \[\d+\])");
  const std::regex wk_kv(R"(comm=(.+) pid=\d+ prio=\d+ (?:success=1 )?target_cpu=(\d+))");
  const std::regex wk_tc(R"(^\s*(.+):\d+ \[\d+\](?: success=1)? CPU:(\d+))");
  const std::regex rt(R"(comm=(.+) pid=\d+ runtime=(\d+) \[ns\])");
  std::string line;
  while (std::getline(f, line)) {
    std::smatch m, a;
    if (!std::regex_search(line, m, ts)) continue;
    const int cpu = std::stoi(m[1]);
    const double t = std::stod(m[2]);
    const std::string ev = m[3], rest = m[4];
    if (ev == "sched_switch" &&
        (std::regex_search(rest, a, sw_kv) || std::regex_search(rest, a, sw_tc))) {
      if (a[3] == comm) c.in_s.push_back(t);
      if (a[1] == comm) {
        c.out_s.push_back(t);
        if (a[2] != "S") ++c.out_not_sleeping;
        if (a[3].str().rfind("swapper/", 0) != 0) ++c.out_not_to_idle;
      }
    } else if (ev == "sched_wakeup" &&
               (std::regex_search(rest, a, wk_kv) || std::regex_search(rest, a, wk_tc))) {
      if (a[1] == comm) {
        c.wake_s.push_back(t);
        if (std::stoi(a[2]) != cpu) ++c.wake_other_cpu;
      }
    } else if (ev == "sched_stat_runtime" && std::regex_search(rest, a, rt) && a[1] == comm) {
      c.runtime_ns.push_back(std::stod(a[2]));
    }
  }
  return c;
}

// Mean on-CPU time of the runs that follow a wake-up (switch in -> out).
double mean_run_us(const Cycle& c) {
  double sum = 0;
  int n = 0;
  for (const double in : c.in_s)
    for (const double out : c.out_s)
      if (out > in) {
        sum += out - in;
        ++n;
        break;
      }
  return n ? 1e6 * sum / n : 0;
}

}  // namespace

TEST_CASE(
    "idle guest with a 1 kHz tick: the vCPU thread's wake / run / block cycle has the shape of "
    "a real host's sched trace",
    "[cli][structural][cpuidle]") {
  const auto real =
      parse(std::string(KVMSIM_SOURCE_DIR) +
                "/tests/data/traces/ftrace_sched_vcpu-thread-1ms-wakeups_idle-guest.txt",
            "CPU 0/KVM");
  REQUIRE(real.wake_s.size() == 2);
  REQUIRE(real.runtime_ns.size() == 2);
  CHECK(real.wake_s[1] - real.wake_s[0] == Approx(1.000e-3).margin(2e-6));
  CHECK(real.out_not_sleeping == 0);
  CHECK(real.out_not_to_idle == 0);

  for (const char* cpuidle : {"off", "menu"}) {
    DYNAMIC_SECTION("host.cpuidle=" << cpuidle) {
      const auto dir = out_dir(std::string("idle-struct-") + cpuidle);
      const auto r = run_cli(
          "run scenarios/halt_poll_idle.yaml --set guest.nohz=false --set guest.hz=1000 "
          "--set kvm.halt_poll_ns=0 --set sim.max_simulated_s=0.2 --set host.cpuidle=" +
          std::string(cpuidle) + " -q --out " + dir.string() + " --trace " +
          (dir / "t.txt").string());
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      const auto sim = parse((dir / "t.txt").string(), "CPU 0/KVM");
      REQUIRE(sim.wake_s.size() >= 195);
      // One wake-up per guest tick, 1.000 ms apart, on the thread's own pCPU.
      const double period =
          (sim.wake_s.back() - sim.wake_s.front()) / static_cast<double>(sim.wake_s.size() - 1);
      CHECK(period == Approx(1.000e-3).epsilon(0.002));
      CHECK(sim.wake_other_cpu == 0);
      // Each wake-up is followed by one run that ends in a block (state S)
      // with the pCPU going idle, as in the real trace.
      CHECK(sim.in_s.size() >= sim.wake_s.size());
      CHECK(sim.out_not_sleeping == 0);
      CHECK(sim.out_not_to_idle == 0);
      const double run_us = mean_run_us(sim);
      // The real trace's host was a stock one (C-states on): with
      // host.cpuidle menu the ~990 us idle periods go to C6, and the vCPU
      // thread's run pays part of the cold refill after it. Its switch-to-
      // switch time per wake-up must be within 20% of the real trace's
      // (14 and 15 us at 1 us resolution). Without C-states the thread runs
      // warm, shorter than the real one; that case is only printed.
      if (std::string(cpuidle) == "menu") {
        CHECK(run_us == Approx(mean_run_us(real)).epsilon(0.20));
      }
      WARN("host.cpuidle=" << cpuidle << ": simulated vCPU thread on-CPU time per wake-up "
                           << run_us << " us (real: " << mean_run_us(real)
                           << " us switch to switch, runtime " << real.runtime_ns[0] / 1e3 << " / "
                           << real.runtime_ns[1] / 1e3 << " us)");
      CHECK(run_us > 0);
    }
  }
}
