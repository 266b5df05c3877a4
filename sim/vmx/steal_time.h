// Steal time and the PV TLB flush (arch/x86/kvm/x86.c): the guest's struct
// kvm_steal_time, which record_steal_time() updates before an entry with the
// run delay since the last report, and whose `preempted` byte the host sets
// when the vCPU is put (kvm_steal_time_set_preempted()) and clears before the
// next entry. With KVM_FEATURE_PV_TLB_FLUSH (v4.16, "KVM: X86: Add Paravirt
// TLB Shootdown") a guest that finds a target preempted sets
// KVM_VCPU_FLUSH_TLB there instead of sending it an IPI, and
// record_steal_time() flushes the target's TLB before it runs again.
#pragma once

#include <cstdint>

#include "sim/core/counters.h"
#include "sim/core/dist.h"
#include "sim/core/time.h"

namespace kvmsim {

class ParamSet;
class Vcpu;

struct StealTimeConfig {
  // kvm_arch_vcpu_put() marks the steal-time area KVM_VCPU_PREEMPTED on every
  // put, a halted (blocked) vCPU included (v4.16..v5.18); later kernels only
  // when the vCPU was preempted while runnable (vcpu->preempted).
  bool preempted_on_block = true;
  // The guest enabled KVM_FEATURE_PV_TLB_FLUSH (guest_pv_has()): the host
  // honours and traces KVM_VCPU_FLUSH_TLB in record_steal_time().
  bool pv_tlb_flush = false;
  // record_steal_time() clears `preempted` with an xchg on the guest's byte
  // (v5.6+, b043138246a4, the CVE-2019-3016 fix). false: v4.16-v5.5, which
  // read the whole struct into a host copy, xchg'd the copy and wrote it all
  // back at the end of the update: a KVM_VCPU_FLUSH_TLB another vCPU set in
  // between is overwritten (a lost flush).
  bool atomic_preempted = true;
  Sampler pv_tlb_flush_cost;  // record_steal_time() -> kvm_vcpu_flush_tlb(): vmx_flush_tlb()
  static StealTimeConfig from(const ParamSet& p, const TscClock& clk);
};

struct StealTimeStats {
  Tsc steal_cycles = 0;                     // run delay reported to the guest
  std::uint64_t pv_tlb_flush_requests = 0;  // guest cmpxchg set KVM_VCPU_FLUSH_TLB
  std::uint64_t pv_tlb_flushes = 0;         // record_steal_time() flushed for the guest
  using Fields =
      CounterFields<StealTimeStats, &StealTimeStats::steal_cycles,
                    &StealTimeStats::pv_tlb_flush_requests, &StealTimeStats::pv_tlb_flushes>;
};

class StealTime {
 public:
  StealTime(Vcpu& vcpu, const StealTimeConfig& cfg) : v_(vcpu), cfg_(cfg) {}

  // kvm_arch_vcpu_put() -> kvm_steal_time_set_preempted() (`preempted`:
  // scheduled out while runnable).
  void set_preempted(bool preempted);
  // kvm_arch_vcpu_load(): KVM_REQ_STEAL_UPDATE for the next entry.
  void request_update() { update_ = true; }
  [[nodiscard]] bool update_pending() const { return update_; }
  // record_steal_time() in vcpu_enter_guest(); returns the cost of a flush it did.
  Tsc record_steal_time(Tsc now);
  // Before v5.6, the end of record_steal_time(): kvm_write_guest_cached() of
  // the host copy (after the rest of vcpu_enter_guest()'s requests).
  void write_back() {
    if (writeback_) {
      writeback_ = false;
      preempted_ = 0;
    }
  }
  // The `preempted` byte as the guest reads it.
  [[nodiscard]] std::uint8_t preempted() const { return preempted_; }
  // The guest's try_cmpxchg(&st->preempted, state, state | KVM_VCPU_FLUSH_TLB)
  // in kvm_flush_tlb_others(), with `state` the value it read: true if the
  // byte still held it (the flag is now set; the host flushes before the
  // next entry), false if the host changed it meanwhile.
  bool cmpxchg_flush(std::uint8_t state);
  // Invariant at every entry (no flush is lost): a KVM_VCPU_FLUSH_TLB the
  // guest set was consumed by record_steal_time() before guest code runs.
  void check_entry() const;

  [[nodiscard]] const StealTimeStats& stats() const { return stats_; }

 private:
  Vcpu& v_;
  const StealTimeConfig& cfg_;  // the VM's (VmConfig)
  bool update_ = false;         // KVM_REQ_STEAL_UPDATE pending
  std::uint8_t preempted_ = 0;  // steal_time.preempted, as the guest reads it
  bool writeback_ = false;      // pre-v5.6: the host copy is written back after the entry stage
  Tsc recorded_ = 0;            // run delay already reported to the guest
  StealTimeStats stats_;
};

}  // namespace kvmsim
