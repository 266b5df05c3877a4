// The vCPU as its LAPIC sees it: the side of struct kvm_vcpu that lapic.c
// uses (kvm_vcpu_kick(), requests, the vCPU's mode, kvm_read_l1_tsc()) and
// the vendor hooks it calls (kvm_x86_ops.set_hv_timer / cancel_hv_timer).
// Vcpu (sim/vmx/vcpu.h) implements it, so the LAPIC does not depend on VMX;
// the thread, its pCPU and its ID are plain data here, read inline.
#pragma once

#include <cstdint>
#include <string>

#include "sim/sched/pcpu.h"

namespace kvmsim {

class LapicVcpu : public HostThread {
 public:
  [[nodiscard]] int id() const { return vcpu_id_; }
  Pcpu& pcpu() { return *pcpu_; }  // where the thread runs or last ran
  [[nodiscard]] const Pcpu& pcpu() const { return *pcpu_; }
  Rng& rng() { return pcpu_->rng(); }
  SimContext& ctx() { return pcpu_->ctx(); }

  // kvm_read_l1_tsc(): the guest's TSC at host TSC `host`; its rate
  // (vcpu->arch.virtual_tsc_khz) and whether it is scaled at all.
  [[nodiscard]] virtual std::uint64_t guest_tsc(Tsc host) const = 0;
  [[nodiscard]] virtual std::uint64_t virtual_tsc_khz() const = 0;
  [[nodiscard]] virtual bool tsc_scaled() const = 0;
  // kvm_x86_ops.set_hv_timer (false = -ERANGE) / cancel_hv_timer.
  virtual bool set_hv_timer(std::uint64_t guest_deadline_tsc, Tsc now, bool* expired) = 0;
  virtual void cancel_hv_timer() = 0;
  // kvm_vcpu_kick() from the LAPIC timer on this vCPU's pCPU (apic_timer_fn).
  virtual void kick(Tsc now) = 0;
  // ... from the LAPIC timer on pCPU `from_cpu` (a posted-interrupt timer
  // fires on a housekeeping pCPU).
  virtual void kick(Tsc now, int from_cpu) = 0;
  // kvm_vcpu_kick() from `sender`'s thread at `at` (an IPI); the sender's cost.
  virtual Tsc kick_from(LapicVcpu& sender, Tsc at) = 0;
  // vcpu->mode == IN_GUEST_MODE.
  [[nodiscard]] virtual bool in_guest_mode_for_ipi() const = 0;
  virtual void request_event() = 0;  // KVM_REQ_EVENT
  // RFLAGS.IF and not inside a handler: an injected vector is taken at entry.
  [[nodiscard]] virtual bool guest_interruptible() const = 0;

 protected:
  LapicVcpu(std::string comm, int pid, CpuMask allowed, int vcpu_id, Pcpu& pcpu)
      : HostThread(std::move(comm), pid, 0, std::move(allowed)), vcpu_id_(vcpu_id), pcpu_(&pcpu) {}

  int vcpu_id_;
  Pcpu* pcpu_;
};

}  // namespace kvmsim
