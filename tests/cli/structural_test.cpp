// Structural checks: ratios of tracepoint and exit counts per guest timer
// interrupt in simulated runs against what real hosts show (kvm_stat and
// perf kvm stat tables in tests/data/structural/, parsed here).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

const std::string kData = std::string(KVMSIM_SOURCE_DIR) + "/tests/data/structural/";

// Rows "  name  total ..." of the kvm_stat table (section "## (1)").
std::map<std::string, double> kvm_stat_totals(const std::string& file) {
  std::ifstream f(file);
  std::map<std::string, double> m;
  std::string line;
  bool in = false;
  const std::regex row(R"(^\s*(kvm_[a-z_]+)\s+(\d+)\s)");
  while (std::getline(f, line)) {
    if (line.rfind("## (1)", 0) == 0)
      in = true;
    else if (line.rfind("## (2)", 0) == 0)
      break;
    std::smatch mm;
    if (in && std::regex_search(line, mm, row)) m[mm[1]] = std::stod(mm[2]);
  }
  return m;
}

// Rows "  REASON  samples  samples%  time% ..." of a perf kvm stat table:
// reason -> {samples, time%}.
std::map<std::string, std::pair<double, double>> perf_kvm_stat(const std::string& file) {
  std::ifstream f(file);
  std::map<std::string, std::pair<double, double>> m;
  std::string line;
  const std::regex row(R"(^\s*([A-Z_]+)\s+(\d+)\s+([\d.]+)%\s+([\d.]+)%)");
  while (std::getline(f, line)) {
    std::smatch mm;
    if (std::regex_search(line, mm, row) && !m.count(mm[1]))
      m[mm[1]] = {std::stod(mm[2]), std::stod(mm[4])};
  }
  return m;
}

struct Traced {
  nlohmann::json metrics, stats;
};

Traced run_traced(const std::string& name, const std::string& args) {
  const auto dir = out_dir(name);
  const auto r = run_cli("run " + args + " -q --out " + dir.string() + " --trace " +
                         (dir / "trace.txt").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto st = run_cli("trace-stats --json " + (dir / "trace.txt").string());
  REQUIRE(st.exit_code == 0);
  return {read_json(dir / "summary.json").at("metrics"),
          nlohmann::json::parse(st.output.substr(st.output.find('{')))};
}

double ev(const Traced& t, const char* name) {
  const auto& e = t.stats.at("events");
  return e.contains(name) ? e.at(name).at("count").get<double>() : 0.0;
}

}  // namespace

TEST_CASE("idle HLT guest woken by timers: tracepoint ratios match a real idle guest's kvm_stat",
          "[cli][structural]") {
  const auto real =
      kvm_stat_totals(kData + "kvm_stat+perf-kvm-stat+ftrace_idle-openeuler-guest_4.19.txt");
  REQUIRE(real.at("kvm_exit") == 1133);
  // A guest that sleeps (HLT) and wakes on a 10 ms timer and its own tick.
  const auto sim = run_traced("struct-idle",
                              "scenarios/cyclictest_fastpath.yaml --set "
                              "cyclictest.interval_us=10000 --set cyclictest.loops=300");
  const double exits = ev(sim, "kvm_exit");
  REQUIRE(exits > 500);
  // Every exit has its entry.
  CHECK(ev(sim, "kvm_entry") / exits ==
        Approx(real.at("kvm_entry") / real.at("kvm_exit")).epsilon(0.01));
  // The hv timer is switched off at every HLT and on again at the next
  // TSC-deadline write: about one kvm_hv_timer_state per exit (real 0.993).
  CHECK(ev(sim, "kvm_hv_timer_state") / exits ==
        Approx(real.at("kvm_hv_timer_state") / real.at("kvm_exit")).epsilon(0.10));
  // One accepted interrupt per wake-up of the blocked vCPU (real 1.014).
  CHECK(ev(sim, "kvm_vcpu_wakeup") / ev(sim, "kvm_apic_accept_irq") ==
        Approx(real.at("kvm_vcpu_wakeup") / real.at("kvm_apic_accept_irq")).epsilon(0.10));
  // The real guest also takes IPIs and PV TLB flushes, which do not go
  // through kvm_wait_lapic_expire: the simulated share (timers only) is an
  // upper bound of the real one (146 / 287).
  CHECK(ev(sim, "kvm_wait_lapic_expire") / ev(sim, "kvm_apic_accept_irq") >=
        real.at("kvm_wait_lapic_expire") / real.at("kvm_apic_accept_irq"));
  // perf kvm stat: HLT holds ~100% of the exit-to-entry time of an idle guest.
  const auto perf =
      perf_kvm_stat(kData + "kvm_stat+perf-kvm-stat+ftrace_idle-openeuler-guest_4.19.txt");
  const double hlt_time = sim.metrics.at("exits.HLT.avg_ns").get<double>() *
                          sim.metrics.at("exits.HLT.count").get<double>();
  double all_time = 0;
  for (auto it = sim.metrics.begin(); it != sim.metrics.end(); ++it) {
    const std::string k = it.key();
    if (k.rfind("exits.", 0) == 0 && k.size() > 7 && k.substr(k.size() - 7) == ".avg_ns") {
      const std::string reason = k.substr(6, k.size() - 13);
      all_time +=
          it.value().get<double>() * sim.metrics.at("exits." + reason + ".count").get<double>();
    }
  }
  CHECK(100.0 * hlt_time / all_time == Approx(perf.at("HLT").second).margin(1.0));
}

TEST_CASE(
    "CPU-bound HZ=250 guest: the tick makes the preemption-timer exits, each with a "
    "clockevent write, as in a real sysbench guest's perf kvm stat",
    "[cli][structural]") {
  const auto real = perf_kvm_stat(kData + "perf-kvm-stat_sysbench-cpu-guest_2020.txt");
  const double real_s = 22.66;  // sysbench's run time in that file
  const double real_pt_rate = real.at("PREEMPTION_TIMER").first / real_s;
  const double real_msr_per_pt = real.at("MSR_WRITE").first / real.at("PREEMPTION_TIMER").first;
  const auto sim = run_traced("struct-busy",
                              "scenarios/cyclictest_fastpath.yaml --set "
                              "workload.type=busy --set guest.hz=250 --set "
                              "sim.max_simulated_s=2");
  const double pt = sim.metrics.at("exits.PREEMPTION_TIMER.count");
  const double msr = sim.metrics.at("exits.MSR_WRITE.count");
  // ~253 timer exits per second in the real guest: a 250 Hz tick.
  CHECK(pt / 2.0 == Approx(real_pt_rate).epsilon(0.05));
  // At least one TSC-deadline write per tick; the real guest writes more
  // (1.6 per timer exit: x2APIC IPIs and other MSRs the model does not have).
  CHECK(msr / pt >= 1.0);
  CHECK(msr / pt <= real_msr_per_pt);
  // Exits and entries pair up (up to the first entry of each of the 2 vCPUs
  // and an exit still open at the end); the trace agrees with the summary.
  CHECK(std::abs(ev(sim, "kvm_exit") - ev(sim, "kvm_entry")) <= 2);
  CHECK(sim.stats.at("exits").at("reasons").at("PREEMPTION_TIMER").at("count").get<double>() == pt);
}
