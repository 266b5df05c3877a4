// kvm-unit-tests vmexit.flat `ipi` / `ipi_halt` on two vCPUs through the
// CLI: T6 on a shortened run, the posted-interrupt path (no exit on the
// target), the path without APICv, the trace events, and "no IPI lost or
// delivered twice" under random timing.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

double rel_err(double sim, double pub) { return std::fabs(sim - pub) / pub; }

const char* kT6 =
    "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=67108864 --set vmexit.tests=ipi";
const char* kShort = "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=4194304";

// Every IPI sent was accepted once and handled once by the target.
void check_no_ipi_lost_or_doubled(const nlohmann::json& r) {
  CHECK(metric(r, "ipi.sent") > 0);
  CHECK(metric(r, "ipi.accepted") == metric(r, "ipi.sent"));
  CHECK(metric(r, "ipi.handled") == metric(r, "ipi.sent"));
}

}  // namespace

TEST_CASE("T6: the x2APIC ICR fastpath takes ~16% off vmexit.flat ipi (Skylake-SP, APICv)",
          "[kut][t6]") {
  const auto slow = run_metrics("t6-slow", std::string(kT6) + " --set kvm.exit_fastpath=false");
  const auto fast = run_metrics("t6-fast", std::string(kT6) + " --set kvm.exit_fastpath=true");
  const double s = metric(slow, "vmexit.ipi.cycles");
  const double f = metric(fast, "vmexit.ipi.cycles");
  INFO("ipi " << s << " -> " << f);
  const auto& ps = published_figure("T6", "no_fastpath");
  const auto& pf = published_figure("T6", "fastpath");
  const auto& pi = published_figure("T6", "improvement");
  CHECK(rel_err(s, ps.value) <= ps.tolerance.lo);
  CHECK(rel_err(f, pf.value) <= pf.tolerance.lo);
  CHECK(std::fabs(100 * (1 - f / s) - pi.value) <= pi.tolerance.lo);
  check_no_ipi_lost_or_doubled(slow);
  check_no_ipi_lost_or_doubled(fast);
  // One ICR write (MSR_WRITE exit) and one HLT exit per IPI; the fastpath
  // handled every ICR write (EXIT_HANDLED), the slow path none.
  CHECK(metric(slow, "exits.MSR_WRITE.count") == metric(slow, "ipi.sent"));
  CHECK(metric(slow, "vmx.fastpath.exit_handled") == 0);
  CHECK(metric(fast, "vmx.fastpath.exit_handled") == metric(fast, "exits.MSR_WRITE.count"));
  CHECK(metric(fast, "vmx.fastpath.reenter_guest") == 0);
  // The target is never in guest mode when the IPI comes (it HLTs right
  // after acknowledging): it is kicked out of kvm_vcpu_block(), not posted to.
  CHECK(metric(slow, "ipi.posted") == 0);
  CHECK(metric(slow, "vcpu.kicks") > 0.99 * metric(slow, "ipi.sent"));
}

TEST_CASE("ipi_halt: the target is back in HLT and asleep, the kick wakes it with an IPI",
          "[kut][t6]") {
  const auto r = run_metrics("ipi-halt", std::string(kShort) + " --set vmexit.tests=ipi_halt");
  check_no_ipi_lost_or_doubled(r);
  CHECK(metric(r, "vcpu.blocks") > 0.5 * metric(r, "ipi.sent"));
  CHECK(metric(r, "host.ipis") == metric(r, "vcpu.blocks"));  // one reschedule IPI per sleep
  CHECK(metric(r, "vmexit.ipi_halt.cycles") > 2000);
}

TEST_CASE("posted interrupts: a target still in guest mode takes the IPI with no VM exit",
          "[kut][posted]") {
  // A long handler epilogue keeps the target in guest mode (no HLT) when the
  // next IPI comes: the notification is processed in non-root mode.
  const auto r = run_metrics(
      "ipi-posted", std::string(kShort) + " --set vmexit.tests=ipi --set cost.kut.iret=20us");
  check_no_ipi_lost_or_doubled(r);
  CHECK(metric(r, "ipi.posted") > 0.9 * metric(r, "ipi.sent"));
  CHECK(metric(r, "exits.HLT.count") < 0.1 * metric(r, "ipi.sent"));
}

TEST_CASE("without APICv: IRR + KVM_REQ_EVENT + kick, the target's EOI write exits",
          "[kut][apicv]") {
  const auto r = run_metrics(
      "ipi-noapicv", std::string(kShort) + " --set vmexit.tests=ipi --set platform.apicv=false");
  check_no_ipi_lost_or_doubled(r);
  CHECK(metric(r, "ipi.posted") == 0);
  // ICR write on the sender + EOI write on the target per IPI (the run
  // stops when the sender sees the last ack, maybe before that EOI).
  CHECK(metric(r, "exits.MSR_WRITE.count") <= 2 * metric(r, "ipi.sent"));
  CHECK(metric(r, "exits.MSR_WRITE.count") >= 2 * metric(r, "ipi.sent") - 1);
  // A target in guest mode is forced out by the kick's IPI.
  const auto g =
      run_metrics("ipi-noapicv-guest", std::string(kShort) +
                                           " --set vmexit.tests=ipi --set platform.apicv=false "
                                           "--set cost.kut.iret=20us");
  check_no_ipi_lost_or_doubled(g);
  CHECK(metric(g, "exits.EXTERNAL_INTERRUPT.count") > 0.9 * metric(g, "ipi.sent"));
}

TEST_CASE("no IPI is lost or delivered twice under random timing", "[kut][ipi][random]") {
  // Random stage lengths move the IPI's arrival across every state of the
  // target (in guest, exiting, in the HLT path, blocking, asleep, waking)
  // and the sender's spin across the target's handler.
  const std::string jitter =
      " --set vmexit.tests=ipi,ipi_halt --set vmexit.goal_cycles=1048576"
      " --set 'cost.host.ipi_latency=exponential(1us)' --set 'cost.vcpu_block=uniform(50ns,3us)'"
      " --set 'cost.kut.iret=exponential(1us)' --set 'cost.kut.on_cpu=exponential(1us)'"
      " --set 'cost.vcpu_wakeup=uniform(100ns,4us)' --set noise.irq.rate_hz=20000";
  int runs = 0;
  for (const char* apicv : {"true", "false"})
    for (const char* fp : {"false", "true"})
      for (int seed : {1, 2}) {
        const std::string args =
            std::string("scenarios/vmexit_ipi.yaml") + jitter + " --set platform.apicv=" + apicv +
            " --set kvm.exit_fastpath=" + fp + " --seed " + std::to_string(seed);
        INFO(args);
        const auto r = run_metrics("ipi-random", args);
        check_no_ipi_lost_or_doubled(r);
        // Both tests finished (a lost IPI would leave the sender spinning).
        CHECK(r.contains("vmexit.ipi.cycles"));
        CHECK(r.contains("vmexit.ipi_halt.cycles"));
        ++runs;
      }
  CHECK(runs == 8);
}

TEST_CASE("the ipi tests need two vCPUs, timer and ipi tests do not mix", "[kut][cli]") {
  const auto r = run_cli("run scenarios/vmexit_ipi.yaml --set vm.vcpus=1 --set vm.pinning=[2] -q");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("vm.vcpus: 2") != std::string::npos);
  const auto r2 = run_cli("run scenarios/vmexit_ipi.yaml --set vmexit.tests=ipi,tscdeadline -q");
  CHECK(r2.exit_code == 2);
  CHECK(r2.output.find("run in separate scenarios") != std::string::npos);
}

TEST_CASE("run --trace: kvm_apic_ipi, kvm_msr 830 and the IPI vector read back", "[kut][trace]") {
  const auto dir = out_dir("ipi-trace");
  const auto r = run_cli("run " + std::string(kShort) + " --set vmexit.tests=ipi -q --out " +
                         dir.string() + " --trace " + (dir / "t.txt").string());
  REQUIRE(r.exit_code == 0);
  const auto mt = read_json(dir / "summary.json").at("metrics");
  const std::string text = read_text(dir / "t.txt");
  CHECK(text.find("kvm_apic_ipi:         dst 1 vec 32 (Fixed|physical|assert|edge|dst)") !=
        std::string::npos);
  CHECK(text.find("kvm_msr:              msr_write 830 = 0x100004020") != std::string::npos);
  CHECK(text.find("kvm_apic_accept_irq:  apicid 1 vec 32 (Fixed|edge)") != std::string::npos);
  const auto st = run_cli("trace-stats " + (dir / "t.txt").string() + " --json");
  REQUIRE(st.exit_code == 0);
  const auto js = nlohmann::json::parse(st.output.substr(st.output.find('{')));
  CHECK(js.at("events").at("kvm_apic_ipi").at("count").get<double>() == metric(mt, "ipi.sent"));
  CHECK(js.at("apic_accept_irq").at("32").get<double>() == metric(mt, "ipi.accepted"));
}
