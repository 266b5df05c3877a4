// Halt polling in kvm_vcpu_halt(): the dynamic window (grow / shrink /
// keep), polling for an upcoming timer (halt_poll_ns_timer), the stats and
// the tracepoints, and what polling costs the pCPU.
#include <catch2/catch.hpp>

#include <regex>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
const std::string kHlt59us =
    "scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.hlt=true "
    "--set tscdeadline_latency.size=2000 --set kvm.lapic_timer_advance_ns=0";
}

TEST_CASE(
    "dynamic halt polling: a 57 us halt grows the window 10000, 20000, 40000, 80000 ns, then "
    "every halt is a successful poll and the vCPU stops sleeping",
    "[cli][halt]") {
  const auto dir = out_dir("hp-grow");
  const auto r = run_cli("run " + kHlt59us + " --set kvm.halt_poll_ns=200000 -q --out " +
                         dir.string() + " --trace " + (dir / "t.txt").string());
  REQUIRE(r.exit_code == 0);
  const auto m = read_json(dir / "summary.json").at("metrics");
  CHECK(m.at("halt_poll.grow") == 4);
  CHECK(m.at("halt_poll.shrink") == 0);
  CHECK(m.at("halt_poll.attempted").get<double>() >= 1997);
  CHECK(m.at("halt_poll.successful").get<double>() >= 1996);
  CHECK(m.at("vcpu.blocks").get<double>() <= 5);  // the halts before the window was big enough
  CHECK(
      m.at("halt_poll.poll_ns_total").get<double>() ==
      Approx(m.at("halt_poll.success_ns").get<double>() + m.at("halt_poll.fail_ns").get<double>()));
  // The trace has the kernel's grow lines in order.
  const std::string t = read_text(dir / "t.txt");
  std::vector<std::string> grows;
  const std::regex re("kvm_halt_poll_ns: +vcpu 0: halt_poll_ns ([0-9]+) \\(grow ([0-9]+)\\)");
  for (std::sregex_iterator it(t.begin(), t.end(), re), end; it != end; ++it)
    grows.push_back((*it)[2].str() + "->" + (*it)[1].str());
  CHECK(grows ==
        std::vector<std::string>{"0->10000", "10000->20000", "20000->40000", "40000->80000"});
  CHECK(t.find("kvm_vcpu_wakeup:      poll time") != std::string::npos);
  const auto s = run_cli("trace-stats " + (dir / "t.txt").string() + " --json");
  REQUIRE(s.exit_code == 0);
  const auto j = nlohmann::json::parse(s.output.substr(s.output.find('{')));
  CHECK(j.at("events").at("kvm_halt_poll_ns").at("count") == 4);
}

TEST_CASE("a halt longer than halt_poll_ns never grows the window: no polling at all",
          "[cli][halt]") {
  const auto m = run_metrics("hp-max", kHlt59us + " --set kvm.halt_poll_ns=50000");
  CHECK(m.at("halt_poll.attempted") == 0);
  CHECK(m.at("halt_poll.grow") == 0);
  CHECK(m.at("vcpu.blocks").get<double>() >= 2000);
}

TEST_CASE(
    "polling makes the pCPU look busy: the wake-up gets faster, the halted vCPU's pCPU goes "
    "from mostly idle to fully busy",
    "[cli][halt]") {
  const auto off = run_metrics("hp-off", kHlt59us);
  const auto on = run_metrics("hp-on", kHlt59us + " --set kvm.halt_poll_ns=200000");
  CHECK(on.at("timer_wakeup.avg_us").get<double>() < off.at("timer_wakeup.avg_us").get<double>());
  CHECK(off.at("host.cpu.1.busy_frac").get<double>() < 0.2);
  CHECK(on.at("host.cpu.1.busy_frac").get<double>() > 0.95);
  CHECK(on.at("host.cpu.1.poll_s").get<double>() > 0.8 * on.at("sim.simulated_s").get<double>());
  CHECK(off.at("halt_poll.attempted") == 0);
}

TEST_CASE(
    "halt_poll_ns_timer: a timer due within the window is polled for, the wake-up latency drops by "
    "about the schedule-out/wake-up cost (cost.vcpu_wakeup - cost.halt_poll_exit)",
    "[cli][halt]") {
  const std::string base = "scenarios/halt_poll_timer.yaml --set tscdeadline_latency.size=3000";
  const auto off = run_metrics("hpt-off", base);
  const auto on = run_metrics("hpt-on", base + " --set kvm.halt_poll_ns_timer=10000");
  CHECK(off.at("halt_poll.attempted") == 0);
  CHECK(on.at("halt_poll.successful").get<double>() >= 2999);
  CHECK(on.at("vcpu.blocks") == 0);
  const double drop =
      off.at("timer_wakeup.avg_us").get<double>() - on.at("timer_wakeup.avg_us").get<double>();
  // Haswell desktop: vcpu_wakeup 1.4 us, halt_poll_exit 0.15 us.
  CHECK(drop == Approx(1.25).margin(0.3));
  CHECK(on.at("host.cpu.1.poll_s").get<double>() > 0);
  // A timer farther away than the window: no polling.
  const auto far = run_metrics(
      "hpt-far",
      base + " --set kvm.halt_poll_ns_timer=10000 --set tscdeadline_latency.delta=200000");
  CHECK(far.at("halt_poll.attempted") == 0);
}
