// kvm-unit-tests x86/vmexit.c `ipi` and `ipi_halt` on two vCPUs, with
// lib/x86/smp.c's on_cpu() and AP idle loop:
//   sender (BSP, vCPU 0): on_cpu(1, nop, 0): spin_lock, ipi_done = 0, the
//     ipi_* stores, apic_icr_write(APIC_INT_ASSERT | APIC_DEST_PHYSICAL |
//     APIC_DM_FIXED | IPI_VECTOR, 1) = WRMSR(0x830), then while (!ipi_done);
//     ipi_halt then spins rdtsc() + 2000 so the target is back in HLT.
//   target (AP, vCPU 1): for (;;) hlt; its IPI_VECTOR handler ipi() calls
//     the function (nop), atomic_dec(&active_cpus), sets ipi_done = 1
//     (wait = 1) and EOIs, then IRET back to the HLT loop.
// Both run under vmexit.c's do_test() harness (iterations double from 64
// until a batch takes GOAL cycles; cycles per iteration are printed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/guest/workloads/kut.h"

namespace kvmsim {

inline constexpr std::uint8_t KUT_IPI_VECTOR = 0x20;  // lib/x86/smp.c IPI_VECTOR
// on_cpu()'s ICR low word: APIC_INT_ASSERT | APIC_DEST_PHYSICAL | APIC_DM_FIXED | IPI_VECTOR.
inline constexpr std::uint32_t KUT_ON_CPU_ICR = APIC_INT_ASSERT | KUT_IPI_VECTOR;

struct KutIpiCosts {
  Sampler on_cpu;              // cost.kut.on_cpu
  Sampler cacheline_transfer;  // cost.kut.cacheline_transfer
};

class VmexitIpiTests : public KutGuest {
 public:
  VmexitIpiTests(Vcpu& vcpu, KutCosts costs, KutIpiCosts ipi_costs, std::vector<std::string> tests,
                 std::uint64_t goal_cycles, std::uint32_t target_apic_id,
                 std::function<void()> on_done);
  static bool known_test(const std::string& name) { return name == "ipi" || name == "ipi_halt"; }
  [[nodiscard]] const std::vector<VmexitResult>& results() const { return harness_.results(); }
  void set_stage_totals(const StageTotals* t) { harness_.set_stage_totals(t); }
  // The target's handler stored ipi_done = 1 (guest memory both vCPUs see).
  void ipi_done_store();
  // IPIs sent and handler acknowledgements seen, for the invariant checks.
  [[nodiscard]] std::uint64_t ipis_sent() const { return sent_; }
  [[nodiscard]] std::uint64_t acks() const { return acks_; }

 protected:
  GuestStep main_step(Tsc now) override;
  GuestStep isr_step(int n, Tsc now) override;

 private:
  enum class Phase : std::uint8_t { BatchStart, Iter, Spin, HaltWait, IterEnd, Finished };
  KutIpiCosts ipi_costs_;
  VmexitHarness harness_;
  std::uint32_t target_;
  Phase phase_ = Phase::BatchStart;
  bool ipi_done_ = false;
  std::uint64_t sent_ = 0, acks_ = 0;
};

// The AP: HLT loop, IPI_VECTOR handler.
class KutIpiTarget : public KutGuest {
 public:
  KutIpiTarget(Vcpu& vcpu, KutCosts costs, VmexitIpiTests* sender);
  [[nodiscard]] std::uint64_t handled() const { return handled_; }

 protected:
  GuestStep main_step(Tsc now) override;
  GuestStep isr_step(int n, Tsc now) override;

 private:
  VmexitIpiTests* sender_;
  std::uint64_t handled_ = 0;
};

}  // namespace kvmsim
