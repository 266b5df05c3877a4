// RunGuard and ExitStats connect to the signals they need through the
// registry: exit statistics pair kvm_exit with the next kvm_entry, an IPI
// accepted into another vCPU's LAPIC counts in the fingerprint like any
// accepted vector, and kvm_pv_tlb_flush does not (runs without PV flush keep
// their fingerprints).
#include "sim/checks/run_guard.h"

#include <catch2/catch.hpp>

#include "sim/core/model_signals.h"
#include "sim/lapic/lapic_signals.h"
#include "sim/vmx/exit_stats.h"
#include "sim/vmx/kvm_signals.h"

using kvmsim::ExitReason;

TEST_CASE("run guard and exit stats: what each signal feeds", "[signal][fingerprint]") {
  kvmsim::SignalRegistry reg;
  kvmsim::ExitStats stats;
  kvmsim::RunGuard guard;
  kvmsim::RunGuard fresh;
  stats.connect(reg);
  guard.connect(reg);
  auto& kvm = reg.get<kvmsim::KvmSignals>();
  auto& lapic = reg.get<kvmsim::LapicSignals>();
  kvm.kvm_exit(0, 0, ExitReason::HLT, 10);
  kvm.kvm_entry(0, 0, 25);
  CHECK(stats.reason(ExitReason::HLT).count == 1);
  CHECK(stats.reason(ExitReason::HLT).total == 15);
  CHECK(guard.fingerprint() != fresh.fingerprint());

  auto before = guard.fingerprint();
  kvm.kvm_pv_tlb_flush(0, true, 30);
  CHECK(guard.fingerprint() == before);
  lapic.kvm_apic_accept_ipi(1, 0, 0xfd, 31);
  CHECK(guard.fingerprint() != before);

  // The IPI counts as kvm_apic_accept_irq on its target.
  kvmsim::SignalRegistry reg2;
  kvmsim::RunGuard direct;
  kvmsim::RunGuard via_ipi;
  direct.connect(reg2);
  kvmsim::SignalRegistry reg3;
  via_ipi.connect(reg3);
  reg2.get<kvmsim::LapicSignals>().kvm_apic_accept_irq(0, 0xfd, 31);
  reg3.get<kvmsim::LapicSignals>().kvm_apic_accept_ipi(1, 0, 0xfd, 31);
  CHECK(direct.fingerprint() == via_ipi.fingerprint());
}
