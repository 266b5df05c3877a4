// handle_wrmsr() -> kvm_emulate_wrmsr() -> kvm_set_msr_common() (x86.c): the
// MSR writes the model's guests make, the TSC deadline (kvm_set_lapic_tscdeadline_msr),
// and, without APICv's virtualisation of them, x2APIC EOI and ICR
// (kvm_x2apic_msr_write()).
#include "sim/vmx/exit_handlers.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {
namespace {

Tsc handle_wrmsr(Vcpu& v, Tsc now, Tsc /*cost*/) {
  const GuestStep& wrmsr = v.exit_step();
  KvmLapic& lapic = v.lapic();
  // kvm_x2apic_msr_write() -> kvm_lapic_reg_write() traces kvm_apic first
  // (the ICR's in send_icr_ipi(); ICR2 is
  // refused before any trace).
  if (wrmsr.msr >= MSR_X2APIC_BASE && wrmsr.msr <= MSR_X2APIC_LAST && wrmsr.msr != MSR_X2APIC_ICR &&
      wrmsr.msr != MSR_X2APIC_ICR2)
    lapic.trace_reg_write(x2apic_msr_reg(wrmsr.msr), static_cast<std::uint32_t>(wrmsr.value), now);
  // trace_kvm_msr_write (after the write; for the ICR in send_icr_ipi())
  if (wrmsr.msr != MSR_X2APIC_ICR && wrmsr.msr != MSR_X2APIC_EOI)
    v.kvm_signals().kvm_msr_write(v.id(), wrmsr.msr, wrmsr.value, now);
  if (wrmsr.msr == MSR_IA32_TSC_DEADLINE) return lapic.set_tscdeadline_msr(wrmsr.value, now);
  if (wrmsr.msr == MSR_X2APIC_EOI) {  // x2APIC EOI trapped without APICv
    // apic_set_eoi() (kvm_eoi), then trace_kvm_msr_write after the write.
    const Tsc c = lapic.eoi(now);
    v.kvm_signals().kvm_msr_write(v.id(), wrmsr.msr, wrmsr.value, now);
    // apic_set_eoi() -> apic_update_ppr(): a vector the in-service one held
    // back is deliverable now (KVM_REQ_EVENT).
    if (lapic.has_interrupt()) v.request_event();
    return c;
  }
  if (wrmsr.msr == MSR_X2APIC_LVTT) {
    lapic.set_lvtt(wrmsr.value);  // kvm_x2apic_msr_write() -> kvm_lapic_reg_write(APIC_LVTT)
    return 0;
  }
  if (wrmsr.msr == MSR_X2APIC_ICR) {
    // kvm_x2apic_msr_write() -> kvm_lapic_reg_write(ICR2), (ICR) ->
    // kvm_apic_send_ipi(): the IPI goes out at the end of this stage
    // (send_icr_ipi). What lies between the exit and the send includes
    // vcpu_enter_guest()'s exit side, which the model otherwise counts
    // after the handler: drawn now, its entry side is kept for later.
    const Tsc exit_side = v.take_enter_guest_exit_side();
    const Tsc c = exit_side + lapic.costs().x2apic_msr_write(v.rng()) +
                  lapic.costs().x2apic_icr_write(v.rng());
    v.defer_icr_send();
    return c;
  }
  return 0;
}

}  // namespace

KVMSIM_EXIT_HANDLER(MSR_WRITE, "cost.handle_wrmsr", handle_wrmsr);

}  // namespace kvmsim
