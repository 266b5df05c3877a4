// The interface between the guest (sim/guest) and the vCPU that runs it in
// non-root mode: what the guest does next (GuestStep) and what KVM may ask of
// it (GuestVcpu).
#pragma once

#include <cstdint>

#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"
#include "sim/vmx/kvm_para.h"

namespace kvmsim {

// One step of guest execution, as the guest kernel model hands it to KVM.
// The small fields share the first 8 bytes and there is no padding: the
// struct is copied word by word on every guest step, and a word load that
// overlaps narrower stores of a padded field stalls (store forwarding).
struct GuestStep {
  enum class Kind : std::uint8_t { Run, Idle, Exit } kind = Kind::Run;
  Stage stage = Stage::Guest;
  ExitReason reason = ExitReason::MSR_WRITE;  // Exit: the exiting instruction
  // Idle: a spin-wait loop of PAUSE (cpu_relax()) in guest kernel mode, which
  // Pause-Loop Exiting turns into PAUSE_INSTRUCTION exits (kvm.ple_gap).
  bool pause_loop = false;
  std::uint32_t msr = 0;
  Tsc cycles = 0;  // Run: host cycles of guest work
  std::uint64_t value = 0;

  static GuestStep run(Stage s, Tsc c) {
    GuestStep g{Kind::Run, s};
    g.cycles = c;
    return g;
  }
  static GuestStep spin(Stage s) {
    GuestStep g{Kind::Idle, s};
    g.pause_loop = true;
    return g;
  }
  // What is left of this step after a VM exit cut it short with `remaining`
  // cycles to go (kTscNever: an open-ended spin/idle).
  [[nodiscard]] GuestStep remainder(Tsc remaining) const {
    GuestStep r = *this;
    r.kind = remaining == kTscNever ? Kind::Idle : Kind::Run;
    if (remaining != kTscNever) r.cycles = remaining;
    return r;
  }
  static GuestStep idle(Stage s = Stage::GuestIdle) { return {Kind::Idle, s}; }
  static GuestStep hlt() {
    GuestStep g{Kind::Exit, Stage::GuestIdle};
    g.reason = ExitReason::HLT;
    return g;
  }
  // VMCALL of KVM hypercall `nr` (include/uapi/linux/kvm_para.h) with one
  // argument (KVM_HC_KICK_CPU: the target's vCPU index in the VM, standing
  // in for its APIC ID).
  static GuestStep vmcall(std::uint32_t nr, std::uint64_t arg) {
    return exit_with(ExitReason::VMCALL, nr, arg);
  }
  static GuestStep wrmsr(std::uint32_t msr, std::uint64_t v) {
    return exit_with(ExitReason::MSR_WRITE, msr, v);
  }
  // An exiting instruction in guest kernel code with its two operands
  // (WRMSR: the MSR and value; VMCALL: the hypercall number and argument).
  static GuestStep exit_with(ExitReason r, std::uint32_t msr, std::uint64_t v) {
    GuestStep g{Kind::Exit, Stage::Guest};
    g.reason = r;
    g.msr = msr;
    g.value = v;
    return g;
  }
};
static_assert(sizeof(GuestStep) == 24, "GuestStep: no padding (see above)");

// What runs in non-root mode on a vCPU (implemented by sim/guest).
class GuestVcpu {
 public:
  virtual ~GuestVcpu() = default;
  // The next thing the guest does, from host TSC `now`.
  virtual GuestStep step(Tsc now) = 0;
  // A VM exit cut the current Run/Idle step short with `remaining` cycles left.
  virtual void suspend(Tsc remaining) = 0;
  // Can an interrupt be delivered now (RFLAGS.IF, not already in a handler)?
  [[nodiscard]] virtual bool interruptible() const = 0;
  // Interrupt delivery through the virtual APIC at VM entry.
  virtual void deliver_interrupt(std::uint8_t vector, Tsc now) = 0;
  // CPL 0 (kvm_arch_vcpu_in_kernel(): vmx_get_cpl() == 0) in the step in flight.
  [[nodiscard]] virtual bool in_kernel_mode() const { return true; }
  // RFLAGS.IF clear in task context (local_irq_save()): a HLT executed now
  // is not ended by an interrupt (kvm_arch_interrupt_allowed() is false in
  // kvm_vcpu_has_events()), only by a pv_unhalted kick.
  [[nodiscard]] virtual bool irqs_disabled() const { return false; }
};

}  // namespace kvmsim
