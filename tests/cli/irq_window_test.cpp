// The interrupt-window exit (vmx.c handle_interrupt_window()): without
// APICv KVM injects a vector only at VM entry. One that stays pending at
// entry because the guest runs with RFLAGS.IF clear (a spin_lock_irqsave()
// section of ebizzy's page-fault path) arms interrupt-window exiting, and
// the guest exits as soon as it enables interrupts; with APICv the CPU
// delivers the vector then, with no exit. A vector that waits behind the
// injected one (IRR not empty at entry) turns PV EOI off for that handler:
// its EOI is a trapped x2APIC WRMSR (MSR 0x80b).
#include <catch2/catch.hpp>

#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
// T4's over-committed 16-vCPU ebizzy on the desktop Haswell (no APICv).
const std::string kRun =
    "scenarios/ebizzy_overcommit.yaml --set sim.max_simulated_s=0.3 --set vm.vcpus=16";
}  // namespace

TEST_CASE(
    "no APICv: a vector pending while the guest has interrupts off is injected after an "
    "INTERRUPT_WINDOW exit, and one behind the injected vector after its trapped EOI (with "
    "APICv neither exits)",
    "[cli][lapic][irq_window]") {
  const auto dir = out_dir("irqwin-noapicv");
  const auto r = run_cli("run " + kRun + " --set platform.apicv=false -q --out " + dir.string() +
                         " --trace " + (dir / "t.txt").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto off = read_json(dir / "summary.json").at("metrics");
  const std::string trace = read_text(dir / "t.txt");
  std::size_t eoi_writes = 0;
  for (std::size_t at = trace.find("msr_write 80b"); at != std::string::npos;
       at = trace.find("msr_write 80b", at + 1))
    ++eoi_writes;
  CHECK(eoi_writes > 0);
  const auto on = run_metrics("irqwin-apicv", kRun + " --set platform.apicv=true");
  CHECK(metric_or_zero(off, "exits.INTERRUPT_WINDOW.count") > 0);
  // Each window exit is handled like any exit: a short handle_exit stage.
  CHECK(metric_or_zero(off, "exits.INTERRUPT_WINDOW.avg_ns") > 0);
  CHECK(metric_or_zero(off, "exits.INTERRUPT_WINDOW.avg_ns") < 100000);
  CHECK(metric_or_zero(on, "exits.INTERRUPT_WINDOW.count") == 0);
  CHECK(metric_or_zero(off, "ebizzy.records_per_s") > 0);
}
