// The tracepoints of KVM's x86 core and of vmx.c that the vCPU fires
// (trace/events/kvm.h, arch/x86/kvm/trace.h), as open signals
// (sim/core/signal.h): trace, statistics, views and checks connect to them.
#pragma once

#include <cstdint>

#include "sim/core/signal.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim {

struct KvmSignals {
  // kvm_exit: (vcpu, pcpu, reason, t).
  Signal<int, int, ExitReason, Tsc> kvm_exit;
  // kvm_entry: (vcpu, pcpu, t).
  Signal<int, int, Tsc> kvm_entry;
  // kvm_vcpu_halt() starts polling kvm_vcpu_check_block() (halt polling); it
  // ends with kvm_vcpu_wakeup (waited = false) or vcpu_block: (vcpu, pcpu, t).
  Signal<int, int, Tsc> vcpu_poll;
  // The vCPU thread schedules out in kvm_vcpu_block(): (vcpu, pcpu, t).
  Signal<int, int, Tsc> vcpu_block;
  // kvm_vcpu_wakeup: the thread returns from kvm_vcpu_block() after `ns`
  // (waited = it slept, not polled): (vcpu, waited, ns, t).
  Signal<int, bool, std::int64_t, Tsc> kvm_vcpu_wakeup;
  // EXIT_FASTPATH_REENTER_GUEST: the fastpath handled the exit and the vCPU
  // enters again within the same vcpu_enter_guest() call: (vcpu, t).
  Signal<int, Tsc> fastpath_reenter;
  // vcpu_enter_guest() after the world switch (and any fastpath re-entries),
  // interrupts on again, right before kvm_x86_ops->handle_exit(): (vcpu, t).
  Signal<int, Tsc> before_handle_exit;
  // kvm_halt_poll_ns: the poll window grew or shrank: (vcpu, grow, new_ns, old_ns, t).
  Signal<int, bool, std::uint32_t, std::uint32_t, Tsc> kvm_halt_poll_ns;
  // grow_ple_window() (handle_pause) or shrink_ple_window() (vmx_sched_in),
  // every call, changed or not: (vcpu, grow, new, old, t).
  Signal<int, bool, std::uint32_t, std::uint32_t, Tsc> kvm_ple_window;
  // kvm_hypercall: kvm_emulate_hypercall(): (vcpu, nr, a0, a1, t).
  Signal<int, std::uint64_t, std::uint64_t, std::uint64_t, Tsc> kvm_hypercall;
  // kvm_inj_virq: vmx_inject_irq(), an interrupt injected through the
  // VM-entry interruption field (no APICv); `reinjected`: the entry before
  // did not deliver it (vmx_complete_interrupts()): (vcpu, vector, reinjected, t).
  Signal<int, std::uint8_t, bool, Tsc> kvm_inj_virq;
  // kvm_msr, a write: (vcpu, msr, value, t).
  Signal<int, std::uint32_t, std::uint64_t, Tsc> kvm_msr_write;
  // kvm_pv_tlb_flush: record_steal_time() with KVM_FEATURE_PV_TLB_FLUSH,
  // whether the guest had set KVM_VCPU_FLUSH_TLB: (vcpu, need_flush_tlb, t).
  Signal<int, bool, Tsc> kvm_pv_tlb_flush;
};

}  // namespace kvmsim
