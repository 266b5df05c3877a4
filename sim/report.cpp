#include "sim/report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/core/summary_section.h"

namespace kvmsim {

std::string summary_json(const RunResult& r, const ParamSet& p, const std::string& scenario) {
  nlohmann::ordered_json j;
  j["scenario"] = scenario;
  j["metrics"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.metrics) j["metrics"][k] = v;
  j["params"] = nlohmann::ordered_json::object();
  for (const auto& k : p.keys()) j["params"][k] = p.text(k);
  return j.dump(2) + "\n";
}

std::string exit_table(const RunResult& r) {
  double total_ns = 0;
  std::uint64_t total = 0;
  for (const auto& e : r.exits) {
    total_ns += e.total_ns;
    total += e.count;
  }
  std::string s = fmt::format("{:>20} {:>10} {:>9} {:>9} {:>11} {:>11} {:>11}\n", "VM-EXIT",
                              "Samples", "Samples%", "Time%", "Min Time", "Max Time", "Avg time");
  for (const auto& e : r.exits) {
    s += fmt::format("{:>20} {:>10} {:>8.2f}% {:>8.2f}% {:>9.2f}us {:>9.2f}us {:>9.2f}us\n",
                     e.reason, e.count,
                     100.0 * static_cast<double>(e.count) / static_cast<double>(total),
                     total_ns > 0 ? 100.0 * e.total_ns / total_ns : 0.0, e.min_ns / 1e3,
                     e.max_ns / 1e3, e.total_ns / static_cast<double>(e.count) / 1e3);
  }
  s += fmt::format("\nTotal Samples:{}, Total events handled time:{:.2f}us.\n", total,
                   total_ns / 1e3);
  return s;
}

std::string summary_text(const RunResult& r, const ParamSet& p, const std::string& scenario) {
  const auto& m = r.metrics;
  auto get = [&](const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  std::string s =
      fmt::format("kvmsim: {} on {} (hv timer {}, seed {})\n", scenario, p.s("platform.name"),
                  p.b("kvm.enable_hv_timer") ? "on" : "off", p.i("sim.seed"));
  s += fmt::format("  simulated {:.3f} s in {:.2f} s wall, {:.0f} events ({:.1f} M events/s)\n",
                   get("sim.simulated_s"), get("sim.wall_s"), get("sim.events"),
                   get("sim.events") / std::max(get("sim.wall_s"), 1e-9) / 1e6);
  s += fmt::format(
      "  fingerprint {:.0f}{}\n", get("sim.fingerprint"),
      get("sim.partial") != 0.0 ? "  PARTIAL RESULT (the workload did not finish)" : "");
  // cyclictest -N keeps ns (cyclictest.*_ns); its histogram buckets are ns.
  const bool nsecs = m.count("cyclictest.avg_ns") != 0;
  if (r.histogram && nsecs) {
    s += fmt::format(
        "\ncyclictest -N: {:.0f} loops  min {:.0f} ns  avg {:.0f} ns ({:.1f})  p50 {:.0f} ns  "
        "p99 {:.0f} ns  max {:.0f} ns  overflows {:.0f} (histogram buckets of 1 ns)\n",
        // avg as cyclictest prints it (truncated), then the exact mean.
        get("cyclictest.loops"), get("cyclictest.min_ns"), std::trunc(get("cyclictest.avg_ns")),
        get("cyclictest.avg_ns"), get("cyclictest.p50_ns"), get("cyclictest.p99_ns"),
        get("cyclictest.max_ns"), get("cyclictest.overflows"));
  } else if (r.histogram) {
    s += fmt::format(
        "\ncyclictest: {:.0f} loops  min {:.0f} us  avg {:.2f} us  p50 {:.0f} us  p99 {:.0f} us  "
        "max {:.0f} us  overflows {:.0f}\n",
        get("cyclictest.loops"), get("cyclictest.min_us"), get("cyclictest.avg_us"),
        get("cyclictest.p50_us"), get("cyclictest.p99_us"), get("cyclictest.max_us"),
        get("cyclictest.overflows"));
  }
  if (r.histogram) {
    // A compact view of the non-empty buckets; -N's 1 ns buckets are shown
    // grouped by whole us (the histogram file keeps them all).
    const auto& h = *r.histogram;
    const std::size_t group = nsecs ? 1000 : 1;
    std::vector<std::uint64_t> rows((h.buckets() + group - 1) / group, 0);
    for (std::size_t b = 0; b < h.buckets(); ++b) rows[b / group] += h.count(b);
    std::uint64_t peak = 1;
    for (const auto c : rows) peak = std::max(peak, c);
    for (std::size_t b = 0; b < rows.size(); ++b) {
      if (!rows[b]) continue;
      const auto bar =
          static_cast<std::size_t>(50.0 * static_cast<double>(rows[b]) / static_cast<double>(peak));
      if (nsecs)
        s += fmt::format("  {:>4}-{:<4} us {:>9}  {}\n", b, b + 1, rows[b],
                         std::string(bar ? bar : 1, '#'));
      else
        s += fmt::format("  {:>4} us {:>9}  {}\n", b, rows[b], std::string(bar ? bar : 1, '#'));
    }
  }
  if (r.metrics.count("tscdeadline_latency.samples") != 0u) {
    // kvm-unit-tests x86/tscdeadline_latency's own numbers (guest TSC cycles).
    s += fmt::format(
        "\ntscdeadline_latency: {:.0f} samples  min {:.0f}  avg {:.0f}  max {:.0f} "
        "cycles (guest TSC)\n",
        get("tscdeadline_latency.samples"), get("tscdeadline_latency.min_cycles"),
        get("tscdeadline_latency.avg_cycles"), get("tscdeadline_latency.max_cycles"));
  }
  bool vmexit_header = false;
  for (const auto& [k, v] : m) {
    // x86/vmexit prints "<test> <cycles per iteration>" for each test.
    const std::string suffix = ".cycles";
    if (k.rfind("vmexit.", 0) != 0 || k.find(".stage.") != std::string::npos ||
        k.size() < suffix.size() || k.compare(k.size() - suffix.size(), suffix.size(), suffix))
      continue;
    if (!vmexit_header) s += "\nvmexit (cycles per iteration, as vmexit.flat prints them):\n";
    vmexit_header = true;
    const std::string name = k.substr(7, k.size() - 7 - suffix.size());
    s += fmt::format("  {} {:.0f}  ({:.0f} iterations)\n", name, v,
                     get("vmexit." + name + ".iterations"));
  }
  if (!r.headline.empty()) s += "\n" + r.headline;
  if (!r.breakdown.empty()) {
    s += "\nwhere the latency goes (mean per wake-up, from the timer deadline):\n";
    for (const auto& st : r.breakdown)
      s += fmt::format("  {:<26} {:>8.0f} ns\n", st.stage, st.mean_ns);
    s += fmt::format("  {:<26} {:>8.0f} ns\n", "total", get("breakdown.total.avg_ns"));
  }
  // What each mechanism in play did (sim/*/summary_sections.cpp).
  s += format_summary_sections(SummarySectionRegistry::instance().sections(p, m));
  s += "\n" + exit_table(r);
  return s;
}

}  // namespace kvmsim
