// The model emits events; statistics, traces and checks observe them.
// Observers are attached to the Observers hub before the run; the model calls
// the hub, which forwards to each observer. With no observer attached a call
// costs one branch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim {

class ModelObserver {
 public:
  virtual ~ModelObserver() = default;
  // A pCPU finished (or was interrupted in) a segment of `stage`.
  virtual void on_segment(int /*pcpu*/, Stage /*stage*/, Tsc /*begin*/, Tsc /*end*/) {}
  virtual void on_vmexit(int /*vcpu*/, int /*pcpu*/, ExitReason /*reason*/, Tsc /*t*/) {}
  virtual void on_vmentry(int /*vcpu*/, int /*pcpu*/, Tsc /*t*/) {}
  // A guest timer deadline (host TSC) that a latency measurement waits for.
  virtual void on_timer_armed(int /*vcpu*/, int /*pcpu*/, Tsc /*deadline*/) {}
  // cyclictest-like sample on a vCPU: the wake-up was measured at `t`.
  virtual void on_latency_sample(int /*vcpu*/, int /*pcpu*/, Tsc /*deadline*/, Tsc /*t*/,
                                 std::int64_t /*latency_ns*/) {}
  // kvm_vcpu_halt() starts polling kvm_vcpu_check_block() (halt polling);
  // it ends with on_vcpu_wakeup (waited = false) or on_vcpu_block.
  virtual void on_vcpu_poll(int /*vcpu*/, int /*pcpu*/, Tsc /*t*/) {}
  // The vCPU thread schedules out in kvm_vcpu_block() (sched_switch to idle).
  virtual void on_vcpu_block(int /*vcpu*/, int /*pcpu*/, Tsc /*t*/) {}
  // kvm_vcpu_wakeup: the vCPU thread returns from kvm_vcpu_block() after
  // `ns` (waited = it slept, not polled).
  virtual void on_vcpu_wakeup(int /*vcpu*/, bool /*waited*/, std::int64_t /*ns*/, Tsc /*t*/) {}
  // kvm_halt_poll_ns: the vCPU's poll window grew or shrank (ns).
  virtual void on_halt_poll_ns(int /*vcpu*/, bool /*grow*/, std::uint32_t /*new_ns*/,
                               std::uint32_t /*old_ns*/, Tsc /*t*/) {}
  virtual void on_hv_timer_state(int /*vcpu*/, bool /*hv_timer*/, Tsc /*t*/) {}
  // kvm_wait_lapic_expire: delta = guest TSC - deadline (< 0: early).
  virtual void on_wait_lapic_expire(int /*vcpu*/, std::int64_t /*delta*/, Tsc /*t*/) {}
  // __apic_accept_irq(): a vector accepted into the (v)IRR.
  virtual void on_apic_accept_irq(int /*vcpu*/, std::uint8_t /*vector*/, Tsc /*t*/) {}
  // The same for an IPI: accepted into `target`'s LAPIC by `sender`'s thread.
  virtual void on_apic_accept_ipi(int /*sender*/, int target, std::uint8_t vector, Tsc t) {
    on_apic_accept_irq(target, vector, t);
  }
  // kvm_apic_ipi: kvm_apic_send_ipi() from `vcpu` (ICR low word, destination).
  virtual void on_apic_ipi(int /*vcpu*/, std::uint32_t /*icr_low*/, std::uint32_t /*dest_id*/,
                           Tsc /*t*/) {}
  virtual void on_msr_write(int /*vcpu*/, std::uint32_t /*msr*/, std::uint64_t /*value*/,
                            Tsc /*t*/) {}
  // The host scheduler (sched_switch, sched_wakeup, sched_migrate_task);
  // pid 0 is the idle task (swapper/N), prio is 120 + nice.
  // record_steal_time() with KVM_FEATURE_PV_TLB_FLUSH: whether the guest had
  // set KVM_VCPU_FLUSH_TLB (trace kvm_pv_tlb_flush).
  virtual void on_pv_tlb_flush(int /*vcpu*/, bool /*need_flush_tlb*/, Tsc /*t*/) {}
  virtual void on_sched_switch(int /*pcpu*/, const std::string& /*prev_comm*/, int /*prev_pid*/,
                               int /*prev_prio*/, bool /*prev_runnable*/,
                               const std::string& /*next_comm*/, int /*next_pid*/,
                               int /*next_prio*/, Tsc /*t*/) {}
  virtual void on_sched_wakeup(int /*waker_pcpu*/, const std::string& /*comm*/, int /*pid*/,
                               int /*prio*/, int /*target_pcpu*/, Tsc /*t*/) {}
  virtual void on_sched_migrate(const std::string& /*comm*/, int /*pid*/, int /*prio*/,
                                int /*orig_pcpu*/, int /*dest_pcpu*/, Tsc /*t*/) {}
};

class Observers {
 public:
  void add(ModelObserver* o) { list_.push_back(o); }
  [[nodiscard]] bool empty() const { return list_.empty(); }

  void segment(int pcpu, Stage s, Tsc b, Tsc e) const {
    for (auto* o : list_) o->on_segment(pcpu, s, b, e);
  }
  void vmexit(int vcpu, int pcpu, ExitReason r, Tsc t) const {
    for (auto* o : list_) o->on_vmexit(vcpu, pcpu, r, t);
  }
  void vmentry(int vcpu, int pcpu, Tsc t) const {
    for (auto* o : list_) o->on_vmentry(vcpu, pcpu, t);
  }
  void timer_armed(int vcpu, int pcpu, Tsc d) const {
    for (auto* o : list_) o->on_timer_armed(vcpu, pcpu, d);
  }
  void latency_sample(int vcpu, int pcpu, Tsc d, Tsc t, std::int64_t ns) const {
    for (auto* o : list_) o->on_latency_sample(vcpu, pcpu, d, t, ns);
  }
  void vcpu_poll(int vcpu, int pcpu, Tsc t) const {
    for (auto* o : list_) o->on_vcpu_poll(vcpu, pcpu, t);
  }
  void vcpu_block(int vcpu, int pcpu, Tsc t) const {
    for (auto* o : list_) o->on_vcpu_block(vcpu, pcpu, t);
  }
  void vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t) const {
    for (auto* o : list_) o->on_vcpu_wakeup(vcpu, waited, ns, t);
  }
  void halt_poll_ns(int vcpu, bool grow, std::uint32_t n, std::uint32_t o, Tsc t) const {
    for (auto* ob : list_) ob->on_halt_poll_ns(vcpu, grow, n, o, t);
  }
  void hv_timer_state(int vcpu, bool on, Tsc t) const {
    for (auto* o : list_) o->on_hv_timer_state(vcpu, on, t);
  }
  void wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t) const {
    for (auto* o : list_) o->on_wait_lapic_expire(vcpu, delta, t);
  }
  void apic_accept_irq(int vcpu, std::uint8_t vec, Tsc t) const {
    for (auto* o : list_) o->on_apic_accept_irq(vcpu, vec, t);
  }
  void apic_accept_ipi(int sender, int target, std::uint8_t vec, Tsc t) const {
    for (auto* o : list_) o->on_apic_accept_ipi(sender, target, vec, t);
  }
  void apic_ipi(int vcpu, std::uint32_t icr_low, std::uint32_t dest, Tsc t) const {
    for (auto* o : list_) o->on_apic_ipi(vcpu, icr_low, dest, t);
  }
  void msr_write(int vcpu, std::uint32_t msr, std::uint64_t v, Tsc t) const {
    for (auto* o : list_) o->on_msr_write(vcpu, msr, v, t);
  }
  void pv_tlb_flush(int vcpu, bool need, Tsc t) const {
    for (auto* o : list_) o->on_pv_tlb_flush(vcpu, need, t);
  }
  void sched_switch(int pcpu, const std::string& pc, int pp, int ppr, bool prun,
                    const std::string& nc, int np, int npr, Tsc t) const {
    for (auto* o : list_) o->on_sched_switch(pcpu, pc, pp, ppr, prun, nc, np, npr, t);
  }
  void sched_wakeup(int waker, const std::string& c, int pid, int prio, int target, Tsc t) const {
    for (auto* o : list_) o->on_sched_wakeup(waker, c, pid, prio, target, t);
  }
  void sched_migrate(const std::string& c, int pid, int prio, int from, int to, Tsc t) const {
    for (auto* o : list_) o->on_sched_migrate(c, pid, prio, from, to, t);
  }

 private:
  std::vector<ModelObserver*> list_;
};

}  // namespace kvmsim
