// The model emits events; statistics, traces and checks observe them.
// Observers are attached to the Observers hub before the run; the model calls
// the hub, which forwards to each observer. With no observer attached a call
// costs one branch. The hub keeps one list per hook: an observer that does
// not override a hook leaves that hook's list the first time the hub calls
// it there (the base class's empty default says so), so the hot hooks
// (on_segment: every model step) only call the observers that use them.
#pragma once

#include <algorithm>
#include <array>
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

class Observers {
 public:
  // `skip`: hooks (bits 1 << Hook) the observer is called for directly by
  // the model instead (SimContext::segment_guard / segment_breakdown).
  void add(ModelObserver* o, std::uint32_t skip = 0) {
    for (std::size_t h = 0; h < lists_.size(); ++h)
      if (!((skip >> h) & 1U)) lists_[h].push_back(o);
    ++count_;
  }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  // Observers still called for `h` (for tests).
  [[nodiscard]] std::size_t subscribers(Hook h) const { return list(h).size(); }

  void segment(int pcpu, Stage s, Tsc b, Tsc e) const {
    for (auto* o : list(Hook::Segment)) o->on_segment(pcpu, s, b, e);
    prune_if_unused(Hook::Segment);
  }
  void vmexit(int vcpu, int pcpu, ExitReason r, Tsc t) const {
    for (auto* o : list(Hook::Vmexit)) o->on_vmexit(vcpu, pcpu, r, t);
    prune_if_unused(Hook::Vmexit);
  }
  void vmentry(int vcpu, int pcpu, Tsc t) const {
    for (auto* o : list(Hook::Vmentry)) o->on_vmentry(vcpu, pcpu, t);
    prune_if_unused(Hook::Vmentry);
  }
  void timer_armed(int vcpu, int pcpu, Tsc d) const {
    for (auto* o : list(Hook::TimerArmed)) o->on_timer_armed(vcpu, pcpu, d);
    prune_if_unused(Hook::TimerArmed);
  }
  void latency_sample(int vcpu, int pcpu, Tsc d, Tsc t, std::int64_t ns) const {
    for (auto* o : list(Hook::LatencySample)) o->on_latency_sample(vcpu, pcpu, d, t, ns);
    prune_if_unused(Hook::LatencySample);
  }
  void vcpu_poll(int vcpu, int pcpu, Tsc t) const {
    for (auto* o : list(Hook::VcpuPoll)) o->on_vcpu_poll(vcpu, pcpu, t);
    prune_if_unused(Hook::VcpuPoll);
  }
  void vcpu_block(int vcpu, int pcpu, Tsc t) const {
    for (auto* o : list(Hook::VcpuBlock)) o->on_vcpu_block(vcpu, pcpu, t);
    prune_if_unused(Hook::VcpuBlock);
  }
  void vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t) const {
    for (auto* o : list(Hook::VcpuWakeup)) o->on_vcpu_wakeup(vcpu, waited, ns, t);
    prune_if_unused(Hook::VcpuWakeup);
  }
  void halt_poll_ns(int vcpu, bool grow, std::uint32_t n, std::uint32_t o, Tsc t) const {
    for (auto* ob : list(Hook::HaltPollNs)) ob->on_halt_poll_ns(vcpu, grow, n, o, t);
    prune_if_unused(Hook::HaltPollNs);
  }
  void hv_timer_state(int vcpu, bool on, Tsc t) const {
    for (auto* o : list(Hook::HvTimerState)) o->on_hv_timer_state(vcpu, on, t);
    prune_if_unused(Hook::HvTimerState);
  }
  void wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t) const {
    for (auto* o : list(Hook::WaitLapicExpire)) o->on_wait_lapic_expire(vcpu, delta, t);
    prune_if_unused(Hook::WaitLapicExpire);
  }
  void apic_accept_irq(int vcpu, std::uint8_t vec, Tsc t) const {
    for (auto* o : list(Hook::ApicAcceptIrq)) o->on_apic_accept_irq(vcpu, vec, t);
    prune_if_unused(Hook::ApicAcceptIrq);
  }
  void apic_accept_ipi(int sender, int target, std::uint8_t vec, Tsc t) const {
    for (auto* o : list(Hook::Count)) o->on_apic_accept_ipi(sender, target, vec, t);
  }
  void apic_ipi(int vcpu, std::uint32_t icr_low, std::uint32_t dest, Tsc t) const {
    for (auto* o : list(Hook::ApicIpi)) o->on_apic_ipi(vcpu, icr_low, dest, t);
    prune_if_unused(Hook::ApicIpi);
  }
  void msr_write(int vcpu, std::uint32_t msr, std::uint64_t v, Tsc t) const {
    for (auto* o : list(Hook::MsrWrite)) o->on_msr_write(vcpu, msr, v, t);
    prune_if_unused(Hook::MsrWrite);
  }
  void pv_tlb_flush(int vcpu, bool need, Tsc t) const {
    for (auto* o : list(Hook::PvTlbFlush)) o->on_pv_tlb_flush(vcpu, need, t);
    prune_if_unused(Hook::PvTlbFlush);
  }
  void sched_switch(int pcpu, const std::string& pc, int pp, int ppr, bool prun,
                    const std::string& nc, int np, int npr, Tsc t) const {
    for (auto* o : list(Hook::SchedSwitch))
      o->on_sched_switch(pcpu, pc, pp, ppr, prun, nc, np, npr, t);
    prune_if_unused(Hook::SchedSwitch);
  }
  void sched_wakeup(int waker, const std::string& c, int pid, int prio, int target, Tsc t) const {
    for (auto* o : list(Hook::SchedWakeup)) o->on_sched_wakeup(waker, c, pid, prio, target, t);
    prune_if_unused(Hook::SchedWakeup);
  }
  void sched_migrate(const std::string& c, int pid, int prio, int from, int to, Tsc t) const {
    for (auto* o : list(Hook::SchedMigrate)) o->on_sched_migrate(c, pid, prio, from, to, t);
    prune_if_unused(Hook::SchedMigrate);
  }

 private:
  // Hook::Count's list: every observer (on_apic_accept_ipi, whose default is
  // not empty).
  [[nodiscard]] const std::vector<ModelObserver*>& list(Hook h) const {
    return lists_[static_cast<std::size_t>(h)];
  }
  void prune_if_unused(Hook h) const {
    if (!detail::g_hook_unused) return;
    detail::g_hook_unused = false;
    auto& l = lists_[static_cast<std::size_t>(h)];
    l.erase(std::remove_if(l.begin(), l.end(),
                           [h](const ModelObserver* o) { return o->hook_unused(h); }),
            l.end());
  }
  mutable std::array<std::vector<ModelObserver*>, kHookCount + 1> lists_;
  std::size_t count_ = 0;
};

}  // namespace kvmsim
