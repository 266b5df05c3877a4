// A KVM vCPU (struct kvm_vcpu / struct vcpu_vmx) on an Intel VMX host: the
// thread that runs KVM_RUN, its LAPIC, and the mechanisms around the
// vcpu_run() loop, as KVM splits them:
//   vcpu_run.h        the vcpu_run() / vcpu_enter_guest() loop with
//                     vmx_vcpu_run() and vmx_handle_exit() (VcpuRunLoop)
//   exit_handlers.h   the kvm_vmx_exit_handlers[] table (handle_*.cpp, one
//                     file per handler family, each registering itself)
//   fastpath.cpp      vmx_exit_handlers_fastpath()
//   hypercall.h       kvm_emulate_hypercall()'s table (hc_*.cpp)
//   halt.h            halt, block, halt polling and kick (kvm_main.c)
//   ple.h             Pause-Loop Exiting and its window (vmx.c)
//   directed_yield.h  kvm_vcpu_on_spin(), yield_to(), kvm_sched_yield()
//   steal_time.h      record_steal_time(), the preempted byte, PV TLB flush
//   loaded_vmcs.h     vcpu_put / vcpu_load: VMPTRLD, IBPB, loaded_vmcs_clear()
//   vcpu_kick.cpp     kvm_vcpu_kick() and interrupt delivery
// Each keeps its own counters and reports them (vcpu_metrics.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/counters.h"
#include "sim/core/dist.h"
#include "sim/lapic/lapic.h"
#include "sim/lapic/lapic_vcpu.h"
#include "sim/sched/pcpu.h"
#include "sim/vmx/directed_yield.h"
#include "sim/vmx/exit_reason.h"
#include "sim/vmx/guest_step.h"
#include "sim/vmx/halt.h"
#include "sim/vmx/hypercall.h"
#include "sim/vmx/kvm_para.h"
#include "sim/vmx/kvm_signals.h"
#include "sim/vmx/loaded_vmcs.h"
#include "sim/vmx/ple.h"
#include "sim/vmx/preemption_timer.h"
#include "sim/vmx/steal_time.h"
#include "sim/vmx/tsc.h"
#include "sim/vmx/vcpu_run.h"

namespace kvmsim {

class ParamSet;

struct VmxConfig {
  unsigned preemption_timer_rate = 5;  // IA32_VMX_MISC[4:0]
  bool exit_fastpath = false;          // kernels >= v5.6 handle some exits with IRQs off
  bool exit_fastpath_timer = true;     // ... the TSC-deadline WRMSR and preemption timer (v5.8+)
  HaltConfig halt;
  PleConfig ple;
  DirectedYieldConfig directed_yield;
  StealTimeConfig steal_time;
  LoadedVmcsConfig loaded_vmcs;
  HypercallConfig hypercall;
  static VmxConfig from(const ParamSet& p, const TscClock& clk);
};

// The run loop's counters (the mechanisms keep theirs).
struct VcpuStats {
  std::uint64_t exits = 0, entries = 0, hv_timer_fallbacks = 0;
  std::uint64_t fastpath_reenter = 0, fastpath_exit_handled = 0;
  std::uint64_t preemptions = 0;  // scheduled out while runnable (vcpu->preempted)
  std::uint64_t kicks = 0;        // kvm_vcpu_kick() calls that woke or IPI'd the vCPU
  std::uint64_t kicks_lost = 0;   // a kick of a blocked vCPU that did not wake it (a bug)
  using Fields = CounterFields<VcpuStats, &VcpuStats::exits, &VcpuStats::entries,
                               &VcpuStats::hv_timer_fallbacks, &VcpuStats::fastpath_reenter,
                               &VcpuStats::fastpath_exit_handled, &VcpuStats::preemptions,
                               &VcpuStats::kicks, &VcpuStats::kicks_lost>;
};

// The vCPUs of one VM as kvm_vcpu_on_spin() walks them (kvm->vcpus,
// kvm->last_boosted_vcpu).
struct VmVcpuList {
  std::vector<Vcpu*> vcpus;
  int last_boosted_vcpu = 0;
};

class Vcpu final : public VcpuRunLoop {
 public:
  // `pcpu`: where the thread starts; `allowed`: its affinity (one pCPU when
  // pinned). `costs` and `vmx` are the VM's and must outlive the vCPU.
  Vcpu(int vcpu_id, int vm_id, Pcpu& pcpu, CpuMask allowed, const VcpuCosts& costs,
       const VmxConfig& vmx, LapicConfig lapic_cfg, LapicCosts lapic_costs, TscScaling tsc);

  void set_guest(GuestVcpu* g) { guest_ = g; }
  [[nodiscard]] GuestVcpu* guest() const { return guest_; }
  void set_vm_vcpus(VmVcpuList* l) { vm_vcpus_ = l; }
  [[nodiscard]] VmVcpuList* vm_vcpus() const { return vm_vcpus_; }
  // The QEMU process's mm, shared by the VM's vCPU threads.
  [[nodiscard]] const void* mm() const override {
    return vm_vcpus_ != nullptr ? static_cast<const void*>(vm_vcpus_) : this;
  }
  void start();  // the thread enters KVM_RUN

  // kvm_sched_out() / kvm_sched_in(): the preempt notifiers -> vcpu_put / vcpu_load.
  Tsc sched_out(Pcpu& cpu, Tsc now, bool preempted) override;
  Tsc sched_in(Pcpu& cpu, Tsc now) override;
  void resched_requested(Pcpu& cpu, Tsc now) override;

  // LapicVcpu: vmx_set_hv_timer() / vmx_cancel_hv_timer(); false = -ERANGE.
  bool set_hv_timer(std::uint64_t guest_deadline_tsc, Tsc now, bool* expired) override;
  void cancel_hv_timer() override { hv_deadline_tsc_ = kHvDeadlineNone; }
  // kvm_vcpu_kick() from `from_cpu` (the pCPU the caller runs on): wake a
  // blocked vCPU, or IPI its pCPU when it is in guest mode elsewhere.
  void kick(Tsc now, int from_cpu) override;
  void kick(Tsc now) override { kick(now, pcpu_->id()); }

  // --- IPIs from other vCPUs (vcpu_kick.cpp) ---------------------------------
  // kvm_vcpu_kick() from `sender`'s thread at `at`: wake a blocked vCPU
  // (reschedule IPI to its pCPU), or IPI one in guest mode; returns the
  // sender's cost.
  Tsc kick_from(LapicVcpu& sender, Tsc at) override;
  // The one way a vector reaches the guest: if it can take one, the LAPIC
  // acknowledges the highest deliverable vector (kvm_get_apic_interrupt ->
  // apic_set_isr) and the guest's handler starts. Called at entry, on a
  // posted-interrupt notification, and by a guest's IRET (RFLAGS.IF again).
  void deliver_pending_interrupt(Tsc now);
  // The guest set RFLAGS.IF again (IRET, STI, POPF). With APICv a pending
  // vector is delivered now (virtual-interrupt delivery). Without, only a VM
  // entry injects: if the last entry left a vector pending, KVM armed
  // interrupt-window exiting (enable_irq_window()) and the guest exits now
  // (true: the guest's next step is the INTERRUPT_WINDOW exit).
  bool guest_irq_enabled(Tsc now);
  // The guest wrote memory another vCPU's guest spins on.
  void guest_store_seen() {
    if (!in_guest_mode()) return;
    if (ple_.spin_is_finite())  // the spin is a finite segment
      pcpu_->shorten_segment(now_tsc());
    else
      pcpu_->end_guest_spin();
  }

  [[nodiscard]] int vm_id() const { return vm_id_; }
  // The steal-time area's `preempted` byte (KVM_VCPU_PREEMPTED, KVM_VCPU_FLUSH_TLB).
  [[nodiscard]] std::uint8_t steal_time_preempted() const { return steal_.preempted(); }
  // The guest's try_cmpxchg() of KVM_VCPU_FLUSH_TLB into that byte
  // (StealTime::cmpxchg_flush()).
  bool steal_time_cmpxchg_flush(std::uint8_t state) { return steal_.cmpxchg_flush(state); }
  // Guest TLB flushes the host did on this vCPU's behalf (KVM_VCPU_FLUSH_TLB).
  [[nodiscard]] std::uint64_t pv_tlb_flushes() const { return steal_.stats().pv_tlb_flushes; }
  // The vCPU thread is current on its pCPU (not preempted, not blocked):
  // what the guest cannot see but a flush initiator waits on (statistics).
  [[nodiscard]] bool running_on_pcpu() const { return pcpu_->current() == this; }
  KvmLapic& lapic() { return lapic_; }
  // The tracepoints this vCPU fires (sim/vmx/kvm_signals.h).
  KvmSignals& kvm_signals() { return kvm_signals_; }
  [[nodiscard]] const KvmLapic& lapic() const { return lapic_; }
  [[nodiscard]] const TscScaling& tsc() const { return tsc_; }
  [[nodiscard]] const VmxConfig& vmx() const { return vmx_; }
  [[nodiscard]] std::uint64_t guest_tsc(Tsc host) const override { return tsc_.read_l1_tsc(host); }
  [[nodiscard]] std::uint64_t virtual_tsc_khz() const override {
    return tsc_.scale(pcpu_->ctx().clock.tsc_khz);
  }
  [[nodiscard]] bool tsc_scaled() const override { return tsc_.scaled(); }
  [[nodiscard]] Tsc hv_deadline_tsc() const { return hv_deadline_tsc_; }
  // What vmx_update_hv_timer() wrote for the current (or last) entry: whether
  // a deadline was loaded, and the 32-bit counter value (for the views).
  // RFLAGS.IF and not inside a handler: an injected vector is taken at entry.
  [[nodiscard]] bool guest_interruptible() const override {
    return guest_ != nullptr && guest_->interruptible();
  }
  // vcpu->preempted (scheduled out while runnable) and vcpu->ready (v5.3+:
  // preempted, or woken from kvm_vcpu_block()); the CPL at the last exit.
  [[nodiscard]] bool preempted() const { return preempted_; }
  [[nodiscard]] bool ready() const { return ready_; }

  // The mechanisms, with their counters.
  [[nodiscard]] const VcpuStats& stats() const { return stats_; }
  KvmHalt& halt() { return halt_; }
  [[nodiscard]] const KvmHalt& halt() const { return halt_; }
  PleWindow& ple() { return ple_; }
  [[nodiscard]] const PleWindow& ple() const { return ple_; }
  DirectedYield& directed_yield() { return dy_; }
  [[nodiscard]] const DirectedYield& directed_yield() const { return dy_; }
  [[nodiscard]] const StealTime& steal_time() const { return steal_; }
  [[nodiscard]] const LoadedVmcs& loaded_vmcs() const { return vmcs_; }
  HypercallStats& hypercall_stats() { return hc_stats_; }
  [[nodiscard]] const HypercallStats& hypercall_stats() const { return hc_stats_; }
  [[nodiscard]] const HaltPollStats& halt_poll_stats() const { return halt_.poll_stats(); }
  [[nodiscard]] std::uint32_t halt_poll_ns() const { return halt_.halt_poll_ns(); }
  // MSR_KVM_POLL_CONTROL bit 0 (KVM_FEATURE_POLL_CONTROL, v5.3+): the guest
  // clears it to turn host halt polling off (kvm_arch_no_poll()).
  void set_poll_control(bool on) { halt_.set_poll_control(on); }

  // --- for the exit and hypercall handlers ------------------------------------
  // The exiting instruction (WRMSR: MSR and value; VMCALL: number and argument).

 private:
  friend class KvmHalt;
  friend class PleWindow;
  friend class DirectedYield;
  friend class VcpuRunLoop;

  int vm_id_;
  KvmSignals& kvm_signals_;
  TscScaling tsc_;
  KvmLapic lapic_;
  GuestVcpu* guest_ = nullptr;
  VmVcpuList* vm_vcpus_ = nullptr;

  bool preempted_ = false;  // vcpu->preempted
  bool ready_ = false;      // vcpu->ready (v5.3+): preempted, or woken from a halt
  Tsc hv_deadline_tsc_ = kHvDeadlineNone;

  KvmHalt halt_;
  PleWindow ple_;
  DirectedYield dy_;
  StealTime steal_;
  LoadedVmcs vmcs_;
  HypercallStats hc_stats_;
  VcpuStats stats_;
};

inline Vcpu& VcpuRunLoop::vcpu() { return static_cast<Vcpu&>(*this); }

}  // namespace kvmsim
