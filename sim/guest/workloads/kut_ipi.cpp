#include "sim/guest/workloads/kut_ipi.h"

namespace kvmsim {

VmexitIpiTests::VmexitIpiTests(Vcpu& vcpu, KutCosts costs, KutIpiCosts ipi_costs,
                               std::vector<std::string> tests, std::uint64_t goal_cycles,
                               std::uint32_t target_apic_id, std::function<void()> on_done)
    : KutGuest(vcpu, std::move(costs), std::move(on_done)),
      ipi_costs_(std::move(ipi_costs)),
      harness_(std::move(tests), goal_cycles),
      target_(target_apic_id) {}

void VmexitIpiTests::ipi_done_store() {
  ipi_done_ = true;
  ++acks_;
  spin_done();               // a spin a VM exit cut short does not resume
  vcpu_.guest_store_seen();  // a spin running in guest mode ends now
}

GuestStep VmexitIpiTests::main_step(Tsc now) {
  switch (phase_) {
    case Phase::BatchStart:
      harness_.batch_start(rdtsc(now));  // do_test(): iterations *= 2; t1 = rdtsc();
      phase_ = Phase::Iter;
      [[fallthrough]];
    case Phase::Iter:
      // on_cpu(1, nop, 0) up to apic_icr_write(): x2APIC WRMSR(0x830).
      ipi_done_ = false;
      phase_ = Phase::Spin;
      ++sent_;
      return GuestStep::wrmsr(MSR_X2APIC_ICR,
                              (static_cast<std::uint64_t>(target_) << 32) | KUT_ON_CPU_ICR);
    case Phase::Spin:
      if (!ipi_done_) return spin();  // while (!ipi_done);
      // The store is seen once the line moved over; spin_unlock, return.
      phase_ = harness_.test() == "ipi_halt" ? Phase::HaltWait : Phase::IterEnd;
      return GuestStep::run(Stage::Guest,
                            ipi_costs_.cacheline_transfer(rng_) + ipi_costs_.on_cpu(rng_));
    case Phase::HaltWait:
      // ipi_halt: t = rdtsc() + 2000; while (rdtsc() < t);
      phase_ = Phase::IterEnd;
      {
        const Tsc until = vcpu_.tsc().host_tsc_at(rdtsc(now) + 2000);
        return GuestStep::run(Stage::Guest, until > now ? until - now : 0);
      }
    case Phase::IterEnd: {
      if (harness_.next_iteration()) {
        phase_ = Phase::Iter;
        // The harness loop and the next on_cpu()'s prologue.
        return GuestStep::run(Stage::Guest, costs_.loop(rng_) + ipi_costs_.on_cpu(rng_));
      }
      if (harness_.batch_end(rdtsc(now)) == VmexitHarness::BatchEnd::Done) {
        phase_ = Phase::Finished;
        done();
        return GuestStep::idle(Stage::GuestIdle);
      }
      phase_ = Phase::BatchStart;  // a bigger batch, or the next test
      return main_step(now);
    }
    case Phase::Finished:
      break;
  }
  return GuestStep::idle(Stage::GuestIdle);
}

// The BSP takes no interrupts in these tests.
GuestStep VmexitIpiTests::isr_step(int /*n*/, Tsc now) { return iret(now); }

KutIpiTarget::KutIpiTarget(Vcpu& vcpu, KutCosts costs, VmexitIpiTests* sender)
    : KutGuest(vcpu, std::move(costs), nullptr), sender_(sender) {}

// ap_online(): for (;;) hlt;
GuestStep KutIpiTarget::main_step(Tsc /*now*/) { return GuestStep::hlt(); }

GuestStep KutIpiTarget::isr_step(int n, Tsc now) {
  if (vector() != KUT_IPI_VECTOR) {  // no other vector is unmasked on the AP
    if (n == 0 && eoi_exits()) return GuestStep::wrmsr(MSR_X2APIC_EOI, 0);
    return iret(now);
  }
  switch (n) {
    case 0:
      return GuestStep::run(Stage::GuestIrqEntry, costs_.irq_delivery(rng_));
    case 1:
      // ipi(): function(data) (nop), atomic_dec(&active_cpus).
      return GuestStep::run(Stage::Guest, costs_.isr(rng_));
    case 2:
      // ipi_done = 1 (wait = 1: after the function), then EOI.
      ++handled_;
      if (sender_) sender_->ipi_done_store();
      if (eoi_exits()) return GuestStep::wrmsr(MSR_X2APIC_EOI, 0);
      [[fallthrough]];
    default:
      return iret(now);
  }
}

}  // namespace kvmsim
