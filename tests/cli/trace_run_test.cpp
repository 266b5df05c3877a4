// `kvmsim run --trace`: the simulated host's tracepoints as trace-cmd report
// text, read back by `kvmsim trace-stats`, and tracing as a pure observer.
#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
nlohmann::json json_from_output(const std::string& out) {
  // libsystemc's banner precedes the JSON on the shared stdout/stderr.
  return nlohmann::json::parse(out.substr(out.find('{')));
}
}  // namespace

TEST_CASE("run --trace: trace-stats reads back the same exit counts as summary.json",
          "[cli][trace]") {
  for (const char* hv : {"true", "false"}) {
    const auto dir = out_dir(std::string("trace-run-") + hv);
    const auto trace = dir / "trace.txt";
    const auto r =
        run_cli(std::string("run scenarios/cyclictest_pinned.yaml --set cyclictest.loops=3000 "
                            "--set kvm.enable_hv_timer=") +
                hv + " -q --out " + dir.string() + " --trace " + trace.string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto metrics = read_json(dir / "summary.json").at("metrics");
    const auto st = run_cli("trace-stats --json " + trace.string());
    REQUIRE(st.exit_code == 0);
    const auto stats = json_from_output(st.output);
    CHECK(stats.at("malformed").at("count") == 0);
    const auto& reasons = stats.at("exits").at("reasons");
    double total = 0;
    for (auto it = metrics.begin(); it != metrics.end(); ++it) {
      const std::string k = it.key();
      if (k.rfind("exits.", 0) != 0 || k.size() < 12 || k.substr(k.size() - 6) != ".count")
        continue;
      const std::string reason = k.substr(6, k.size() - 12);
      INFO(reason);
      REQUIRE(reasons.contains(reason));
      CHECK(reasons.at(reason).at("count").get<double>() == it.value().get<double>());
      total += it.value().get<double>();
    }
    CHECK(stats.at("exits").at("total").get<double>() == total);
    // Every exit is followed by its entry on the same thread.
    CHECK(stats.at("exits").at("paired").get<double>() == total);
    // One TSC-deadline write per loop.
    CHECK(stats.at("msr").dump().find("6e0") != std::string::npos);
  }
}

TEST_CASE("run --trace does not change the simulation", "[cli][trace]") {
  const auto a = out_dir("trace-off");
  const auto b = out_dir("trace-on");
  const std::string base =
      "run scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=500 -q --out ";
  REQUIRE(run_cli(base + a.string()).exit_code == 0);
  REQUIRE(run_cli(base + b.string() + " --trace " + (b / "t.txt").string()).exit_code == 0);
  auto ma = read_json(a / "summary.json").at("metrics");
  auto mb = read_json(b / "summary.json").at("metrics");
  ma.erase("sim.wall_s");
  mb.erase("sim.wall_s");
  CHECK(ma == mb);
  // The T2 path shows its tracepoints: the advance busy-wait and the LAPIC timer vector.
  const std::string text = read_text(b / "t.txt");
  CHECK(text.find("kvm_wait_lapic_expire: vcpu 0: delta ") != std::string::npos);
  CHECK(text.find("kvm_apic_accept_irq:  apicid 0 vec 236 (Fixed|edge)") != std::string::npos);
  CHECK(text.find("msr_write 80b = 0x0") != std::string::npos);  // EOI traps without APICv
}
