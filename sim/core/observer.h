// The model emits events; statistics, traces and checks observe them.
// Observers are attached to the Observers hub (sim/core/observers.h) before
// the run; the model calls the hub, which forwards to each observer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim {

// One per hook of ModelObserver that has an empty default.
enum class Hook : std::uint8_t {
  Segment,
  Vmexit,
  Vmentry,
  TimerArmed,
  LatencySample,
  VcpuPoll,
  VcpuBlock,
  VcpuWakeup,
  HaltPollNs,
  HvTimerState,
  WaitLapicExpire,
  ApicAcceptIrq,
  ApicIpi,
  MsrWrite,
  PvTlbFlush,
  Hypercall,
  SchedSwitch,
  SchedWakeup,
  SchedMigrate,
  Count
};
inline constexpr std::size_t kHookCount = static_cast<std::size_t>(Hook::Count);

namespace detail {
// Set by a default (empty) hook: the hub that called it prunes that hook's list.
inline bool g_hook_unused = false;
}  // namespace detail

class ModelObserver {
 public:
  virtual ~ModelObserver() = default;
  // A pCPU finished (or was interrupted in) a segment of `stage`.
  virtual void on_segment(int /*pcpu*/, Stage /*stage*/, Tsc /*begin*/, Tsc /*end*/) {
    unused(Hook::Segment);
  }
  virtual void on_vmexit(int /*vcpu*/, int /*pcpu*/, ExitReason /*reason*/, Tsc /*t*/) {
    unused(Hook::Vmexit);
  }
  virtual void on_vmentry(int /*vcpu*/, int /*pcpu*/, Tsc /*t*/) { unused(Hook::Vmentry); }
  // A guest timer deadline (host TSC) that a latency measurement waits for.
  virtual void on_timer_armed(int /*vcpu*/, int /*pcpu*/, Tsc /*deadline*/) {
    unused(Hook::TimerArmed);
  }
  // cyclictest-like sample on a vCPU: the wake-up was measured at `t`.
  virtual void on_latency_sample(int /*vcpu*/, int /*pcpu*/, Tsc /*deadline*/, Tsc /*t*/,
                                 std::int64_t /*latency_ns*/) {
    unused(Hook::LatencySample);
  }
  // kvm_vcpu_halt() starts polling kvm_vcpu_check_block() (halt polling);
  // it ends with on_vcpu_wakeup (waited = false) or on_vcpu_block.
  virtual void on_vcpu_poll(int /*vcpu*/, int /*pcpu*/, Tsc /*t*/) { unused(Hook::VcpuPoll); }
  // The vCPU thread schedules out in kvm_vcpu_block() (sched_switch to idle).
  virtual void on_vcpu_block(int /*vcpu*/, int /*pcpu*/, Tsc /*t*/) { unused(Hook::VcpuBlock); }
  // kvm_vcpu_wakeup: the vCPU thread returns from kvm_vcpu_block() after
  // `ns` (waited = it slept, not polled).
  virtual void on_vcpu_wakeup(int /*vcpu*/, bool /*waited*/, std::int64_t /*ns*/, Tsc /*t*/) {
    unused(Hook::VcpuWakeup);
  }
  // kvm_halt_poll_ns: the vCPU's poll window grew or shrank (ns).
  virtual void on_halt_poll_ns(int /*vcpu*/, bool /*grow*/, std::uint32_t /*new_ns*/,
                               std::uint32_t /*old_ns*/, Tsc /*t*/) {
    unused(Hook::HaltPollNs);
  }
  virtual void on_hv_timer_state(int /*vcpu*/, bool /*hv_timer*/, Tsc /*t*/) {
    unused(Hook::HvTimerState);
  }
  // kvm_wait_lapic_expire: delta = guest TSC - deadline (< 0: early).
  virtual void on_wait_lapic_expire(int /*vcpu*/, std::int64_t /*delta*/, Tsc /*t*/) {
    unused(Hook::WaitLapicExpire);
  }
  // __apic_accept_irq(): a vector accepted into the (v)IRR.
  virtual void on_apic_accept_irq(int /*vcpu*/, std::uint8_t /*vector*/, Tsc /*t*/) {
    unused(Hook::ApicAcceptIrq);
  }
  // The same for an IPI: accepted into `target`'s LAPIC by `sender`'s thread.
  virtual void on_apic_accept_ipi(int /*sender*/, int target, std::uint8_t vector, Tsc t) {
    on_apic_accept_irq(target, vector, t);
  }
  // kvm_apic_ipi: kvm_apic_send_ipi() from `vcpu` (ICR low word, destination).
  virtual void on_apic_ipi(int /*vcpu*/, std::uint32_t /*icr_low*/, std::uint32_t /*dest_id*/,
                           Tsc /*t*/) {
    unused(Hook::ApicIpi);
  }
  virtual void on_msr_write(int /*vcpu*/, std::uint32_t /*msr*/, std::uint64_t /*value*/,
                            Tsc /*t*/) {
    unused(Hook::MsrWrite);
  }
  // kvm_hypercall: kvm_emulate_hypercall() on `vcpu` (nr, a0..a3).
  virtual void on_hypercall(int /*vcpu*/, std::uint64_t /*nr*/, std::uint64_t /*a0*/,
                            std::uint64_t /*a1*/, Tsc /*t*/) {
    unused(Hook::Hypercall);
  }
  // The host scheduler (sched_switch, sched_wakeup, sched_migrate_task);
  // pid 0 is the idle task (swapper/N), prio is 120 + nice.
  // record_steal_time() with KVM_FEATURE_PV_TLB_FLUSH: whether the guest had
  // set KVM_VCPU_FLUSH_TLB (trace kvm_pv_tlb_flush).
  virtual void on_pv_tlb_flush(int /*vcpu*/, bool /*need_flush_tlb*/, Tsc /*t*/) {
    unused(Hook::PvTlbFlush);
  }
  virtual void on_sched_switch(int /*pcpu*/, const std::string& /*prev_comm*/, int /*prev_pid*/,
                               int /*prev_prio*/, bool /*prev_runnable*/,
                               const std::string& /*next_comm*/, int /*next_pid*/,
                               int /*next_prio*/, Tsc /*t*/) {
    unused(Hook::SchedSwitch);
  }
  virtual void on_sched_wakeup(int /*waker_pcpu*/, const std::string& /*comm*/, int /*pid*/,
                               int /*prio*/, int /*target_pcpu*/, Tsc /*t*/) {
    unused(Hook::SchedWakeup);
  }
  virtual void on_sched_migrate(const std::string& /*comm*/, int /*pid*/, int /*prio*/,
                                int /*orig_pcpu*/, int /*dest_pcpu*/, Tsc /*t*/) {
    unused(Hook::SchedMigrate);
  }

  // Whether the default of `h` was reached (the observer does not use it).
  [[nodiscard]] bool hook_unused(Hook h) const {
    return (unused_ >> static_cast<unsigned>(h)) & 1U;
  }

 protected:
  // The empty defaults: an override that calls one of them (nothing does)
  // would lose that hook, so an observer overrides a hook fully or not at all.
  void unused(Hook h) {
    unused_ |= 1U << static_cast<unsigned>(h);
    detail::g_hook_unused = true;
  }

 private:
  std::uint32_t unused_ = 0;
  static_assert(kHookCount <= 32, "one bit per hook");
};

}  // namespace kvmsim
