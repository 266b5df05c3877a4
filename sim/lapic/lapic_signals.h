// The tracepoints the in-kernel LAPIC fires (arch/x86/kvm/trace.h), as open
// signals (sim/core/signal.h).
#pragma once

#include <cstdint>

#include "sim/core/signal.h"
#include "sim/core/time.h"

namespace kvmsim {

struct LapicSignals {
  // kvm_hv_timer_state: the LAPIC timer moved to (or off) the VMX preemption
  // timer: (vcpu, hv_timer, t).
  Signal<int, bool, Tsc> kvm_hv_timer_state;
  // kvm_wait_lapic_expire: delta = guest TSC - deadline (< 0: early): (vcpu, delta, t).
  Signal<int, std::int64_t, Tsc> kvm_wait_lapic_expire;
  // kvm_apic_accept_irq: __apic_accept_irq() accepted a vector of the vCPU's
  // own LAPIC (its timer) into the (v)IRR: (vcpu, vector, t).
  Signal<int, std::uint8_t, Tsc> kvm_apic_accept_irq;
  // kvm_apic_accept_irq for an IPI: accepted into `target`'s LAPIC by
  // `sender`'s thread: (sender, target, vector, t).
  Signal<int, int, std::uint8_t, Tsc> kvm_apic_accept_ipi;
  // kvm_apic_ipi: kvm_apic_send_ipi() (ICR low word, destination): (vcpu, icr_low, dest_id, t).
  Signal<int, std::uint32_t, std::uint32_t, Tsc> kvm_apic_ipi;
  // kvm_apic (write): trace_kvm_apic_write() of an x2APIC register write
  // KVM emulates (kvm_lapic_reg_write(), the ICR fastpath,
  // kvm_x2apic_icr_write()): (vcpu, reg, val, t), reg the APIC register
  // offset (APIC_ICR = 0x300), val 32 bits but the v5.18+ ICR's 64.
  Signal<int, std::uint32_t, std::uint64_t, Tsc> kvm_apic_write;
  // kvm_eoi: apic_set_eoi() ended `vector` in service: a trapped EOI write,
  // or a PV EOI that KVM reads back at the next exit; -1 if nothing was in
  // service (the kernel traces that too): (vcpu, vector, t).
  Signal<int, int, Tsc> kvm_eoi;
  // kvm_pv_eoi: apic_sync_pv_eoi_from_guest() after the apic_set_eoi() of a
  // PV EOI (its kvm_eoi): (vcpu, vector, t).
  Signal<int, int, Tsc> kvm_pv_eoi;
};

}  // namespace kvmsim
