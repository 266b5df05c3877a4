// Interrupt entry and exit on the guest (arch/x86/kernel/apic/apic.c:
// smp_apic_timer_interrupt(); kernel/softirq.c: irq_enter(), irq_exit()),
// and local_irq_restore() taking a vector that became pending.
#include "sim/guest/kernel/guest_kernel.h"

#include "sim/core/context.h"
#include "sim/guest/kernel/guest_smp.h"

namespace kvmsim {

void GuestKernel::local_irq_restore(Tsc now) {
  irqs_off_ = false;
  vcpu_.deliver_pending_interrupt(now);
}

void GuestKernel::deliver_interrupt(std::uint8_t vector, Tsc now) {
  // The interrupted step (if any) was saved by suspend(); it resumes after
  // the handler unless a reschedule switches away from it.
  idle_.interrupt(vector, now);
  in_irq_ = true;
  irq_vector_ = vector;
  irq_state_ = Irq::Entry;
}

// The LAPIC timer interrupt: entry, hrtimer_interrupt() running every expired
// timer and reprogramming the next one, irq_exit().
GuestStep GuestKernel::irq_step(Tsc now) {
  if (!irq_q_.empty()) {
    GuestStep s = irq_q_.front();
    irq_q_.pop_front();
    return s;
  }
  while (!irq_work_.empty()) {
    if (auto s = irq_work_.front()->next(*this, now)) return *s;
    irq_work_.pop_front();
    if (!irq_q_.empty()) return irq_step(now);
  }
  switch (irq_state_) {
    case Irq::Entry:
      irq_state_ = Irq::Handler;
      return GuestStep::run(Stage::GuestIrqEntry, costs_.irq_entry(rng_));
    case Irq::Handler: {
      irq_state_ = Irq::Exit;
      // The LAPIC timer and the SMP IPIs have handler bodies; another
      // vector goes from entry straight to irq_exit().
      if (irq_vector_ != LOCAL_TIMER_VECTOR) return irq_handler_ipi(now);
      Tsc cost = costs_.hrtimer_interrupt(rng_);
      const std::uint64_t gnow = guest_tsc(now);
      idle_.timer_interrupt(gnow, clockevent_.programmed());
      cost += clockevent_.hrtimer_interrupt(gnow, now);
      return GuestStep::run(Stage::GuestHrtimerInterrupt, cost);
    }
    case Irq::Exit:
      irq_state_ = Irq::None;
      if (softirq_pending_) {
        // invoke_softirq() -> __do_softirq(): run_timer_softirq().
        softirq_pending_ = false;
        return GuestStep::run(Stage::GuestIrqExit,
                              costs_.irq_exit(rng_) + costs_.timer_softirq(rng_));
      }
      return GuestStep::run(Stage::GuestIrqExit, costs_.irq_exit(rng_));
    case Irq::None:
      break;
  }
  // Handler done. A reschedule preempts the idle loop (its endless resume is
  // dropped); a task's interrupted step finishes first (no kernel preemption
  // inside a step).
  in_irq_ = false;
  if (need_resched_ && has_resume_ &&
      (resume_.kind == GuestStep::Kind::Idle || resume_.stage == Stage::GuestHaltPoll))
    has_resume_ = false;
  // ack_APIC_irq(): no exit. With APICv the EOI is virtualized; without it
  // a Linux guest on KVM uses PV EOI (KVM_FEATURE_PV_EOI, v3.6+:
  // kvm_guest_apic_eoi_write() clears the flag KVM set at injection by
  // apic_sync_pv_eoi_to_guest() and skips the x2APIC EOI WRMSR; KVM reads it
  // back at the next exit). Not modelled: the EOI that does exit when
  // another vector was pending at injection (KVM then leaves PV EOI off).
  // Then a vector that became pending meanwhile.
  vcpu_.lapic().virtual_eoi();
  vcpu_.deliver_pending_interrupt(now);
  return step(now);
}

}  // namespace kvmsim
