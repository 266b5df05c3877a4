// The vcpu_run() / vcpu_enter_guest() loop of arch/x86/kvm/x86.c with
// vmx_vcpu_run() and vmx_handle_exit() of arch/x86/kvm/vmx/vmx.c, as a state
// machine of cost-bearing stages:
//
//   vcpu_enter_guest ─► vmx_vcpu_run ─► vmentry ─► guest ─► vmexit ─► [host irq] ─► handle_exit ─┐
//          ▲                  ▲                                  │                               │
//          │                  └── exit fastpath (REENTER_GUEST) ◄┘                               │
//          └─────────────────────────────────────────────────────────────────────────────────────┘
//
// Each stage is a segment on the vCPU's pCPU; when it ends, run() continues
// with the next. kvm_wait_lapic_expire() runs either at the end of
// vcpu_enter_guest (before v5.3) or inside vmx_vcpu_run right before the
// world switch (since). The guest's code (sim/guest) runs inside the "guest"
// stage; it ends in an exiting instruction, a host interrupt, or the VMX
// preemption timer. Halting (Poll, Block, Blocked, Wakeup, HaltRestart) is
// KvmHalt's (halt.h); it moves the loop through those states itself.
//
// VcpuRunLoop is the part of the vCPU thread that runs the loop; Vcpu
// (vcpu.h) derives from it as struct vcpu_vmx embeds struct kvm_vcpu, and
// the loop reaches the rest of the vCPU through vcpu() (KVM's to_vmx()).
#pragma once

#include <array>
#include <cstdint>

#include "sim/core/dist.h"
#include "sim/core/time.h"
#include "sim/lapic/lapic_vcpu.h"
#include "sim/vmx/exit_reason.h"
#include "sim/vmx/guest_step.h"

namespace kvmsim {

class ParamSet;
class Vcpu;
struct VmxConfig;
enum class WaitLapicExpireSite : std::uint8_t;

// The run loop's own costs; the exit handlers' are looked up by exit reason.
struct VcpuCosts {
  Sampler vmexit;            // hardware exit + vmx_vcpu_run() exit half
  Sampler vmx_vcpu_run;      // vmx_vcpu_run() software entry half up to the world switch
  Sampler vmentry;           // VMRESUME + hardware entry (+ whatever vmx_vcpu_run is not split out)
  Sampler vcpu_enter_guest;  // vcpu_enter_guest() from handled exit to vmx_vcpu_run()
  Sampler handle_exit;       // vmx_handle_exit() common dispatch
  Sampler exit_fastpath;     // vmx_exit_handlers_fastpath() + the REENTER_GUEST loop turn
  Sampler fastpath_wrmsr;    // handle_fastpath_set_msr_irqoff() before the LAPIC work
  double vcpu_enter_guest_exit_share = 0.5;  // of vcpu_enter_guest, before vmx_handle_exit()
  // Each registered exit handler's own cost (ExitHandler::cost_key).
  std::array<Sampler, kMaxExitReason> exit_handler;
  static VcpuCosts from(const ParamSet& p, const TscClock& clk);
};

// vmx_exit_handlers_fastpath() results (enum exit_fastpath_completion).
enum class ExitFastpath : std::uint8_t { None, ReenterGuest, ExitHandled };

// Where the vCPU thread is in the loop: the stage whose end run() handles.
enum class VcpuState : std::uint8_t {
  EnterGuest,  // vcpu_enter_guest() segment
  VcpuRun,     // vcpu_run(): kvm_inject_pending_timer_irqs() before vcpu_enter_guest()
  WaitEarly,   // kvm_wait_lapic_expire() at the pre-v5.3 site
  VmxVcpuRun,  // vmx_vcpu_run() software entry half
  WaitLate,    // kvm_wait_lapic_expire() right before the world switch
  VmEntry,
  InGuest,
  VmExit,
  Fastpath,  // vmx_exit_handlers_fastpath(), IRQs still off
  HostIrq,
  HandleExit,
  Poll,         // kvm_vcpu_halt(): halt polling
  Block,        // vcpu_block() before schedule()
  Blocked,      // the thread sleeps; the pCPU idles
  Wakeup,       // back from kvm_vcpu_block()
  Preempted,    // scheduled out at a preemption point of the vcpu_run loop
  HaltRestart,  // vcpu_run(): timer to the IRR, then vcpu_block() again (still halted)
};

class VcpuRunLoop : public LapicVcpu {
 public:
  // HostThread: the stage in `state()` ended at `now`: start the next one.
  void run(Pcpu& cpu, Tsc now) override;
  // Events that end the guest stage early: a host interrupt, the VMX
  // preemption timer, a posted-interrupt notification (no exit).
  void guest_interrupted(Pcpu& cpu, Tsc now) override;
  void preemption_timer_expired(Pcpu& cpu, Tsc now) override;
  void posted_interrupt(Pcpu& cpu, Tsc now) override;  // vcpu_kick.cpp

  [[nodiscard]] VcpuState state() const { return state_; }
  void set_state(VcpuState s) { state_ = s; }
  [[nodiscard]] bool in_guest_mode() const { return state_ == VcpuState::InGuest; }
  // vcpu->mode == IN_GUEST_MODE: from vcpu_enter_guest()'s IRQ-off entry
  // part until the exit is handled with interrupts on (incl. the fastpath).
  [[nodiscard]] bool in_guest_mode_for_ipi() const override;
  // kvm_vcpu_exiting_guest_mode() as kvm_arch_vcpu_should_kick() uses it:
  // IN_GUEST_MODE -> EXITING_GUEST_MODE; true when this kick must send the
  // IPI (false: not in guest mode, or a kick is already on its way).
  bool should_kick() {
    if (!in_guest_mode_for_ipi() || exiting_) return false;
    exiting_ = true;
    return true;
  }
  void request_event() override { event_request_ = true; }  // KVM_REQ_EVENT
  // Interrupt-window exiting armed at the last entry (no APICv: a vector
  // stayed pending because the guest could not take it, or a second one
  // waits behind the injected one).
  [[nodiscard]] bool irq_window_requested() const { return irq_window_; }
  // The handler in service ends with an EOI that exits (no APICv:
  // apic_sync_pv_eoi_to_guest() left PV EOI off at the last entry because
  // the IRR held another vector). Taken once, by the handler's end.
  bool take_eoi_exit() {
    const bool e = eoi_exit_;
    eoi_exit_ = false;
    return e;
  }
  // The CPL at the last exit (kvm_arch_vcpu_in_kernel()).
  [[nodiscard]] bool in_kernel_at_exit() const { return in_kernel_at_exit_; }

  // What vmx_update_hv_timer() wrote for the current (or last) entry.
  [[nodiscard]] bool preemption_timer_loaded() const { return preemption_timer_loaded_; }
  [[nodiscard]] std::uint32_t preemption_timer_value() const { return preemption_timer_value_; }

  // --- for the exit and hypercall handlers ------------------------------------
  [[nodiscard]] const GuestStep& exit_step() const { return exit_step_; }
  void defer_icr_send() { icr_send_pending_ = true; }
  Tsc take_enter_guest_exit_side();

 protected:
  // `costs` and `vmx` are the VM's and must outlive the vCPU.
  VcpuRunLoop(std::string comm, int pid, CpuMask allowed, int vcpu_id, Pcpu& pcpu,
              const VcpuCosts& costs, const VmxConfig& vmx)
      : LapicVcpu(std::move(comm), pid, std::move(allowed), vcpu_id, pcpu),
        vmx_(vmx),
        costs_(costs) {}

  const VmxConfig& vmx_;  // the VM's (VmConfig), shared by its vCPUs

 private:
  Vcpu& vcpu();  // to_vmx(): the vCPU this loop is part of (vcpu.h)
  void begin_vcpu_enter_guest(Tsc now);
  void after_vcpu_enter_guest(Tsc now);
  void begin_vmx_vcpu_run(Tsc now);
  void after_vmx_vcpu_run(Tsc now);
  void begin_vmentry(Tsc now);
  bool try_exit_fastpath(Tsc now);  // fastpath.cpp
  void after_fastpath(Tsc now);     // fastpath.cpp
  void after_handle_exit(Tsc now);
  void send_icr_ipi(Tsc now);  // vcpu_kick.cpp
  bool wait_lapic_expire_at(WaitLapicExpireSite site, VcpuState after, Tsc now);
  void enter_guest_mode(Tsc now);
  bool exits_at_entry(Tsc now, ExitReason* reason, Tsc* fire) const;
  void trace_late_injection(Tsc now);  // kvm_inj_virq of a vector chosen at the entry (no APICv)
  void guest_step(Tsc now);
  void vmexit(ExitReason reason, Tsc now);
  void handle_exit(Tsc now);
  Tsc run_exit_handler(Tsc now);
  [[nodiscard]] Tsc suspend_remaining(Pcpu& cpu, Tsc now);

  const VcpuCosts& costs_;

  VcpuState state_ = VcpuState::EnterGuest;
  ExitReason exit_reason_ = ExitReason::EXTERNAL_INTERRUPT;
  GuestStep exit_step_;  // the exiting instruction, for its handler
  ExitFastpath fastpath_ = ExitFastpath::None;
  bool icr_send_pending_ = false;  // the ICR write's kvm_apic_send_ipi() ends the current stage
  bool event_request_ = false;     // KVM_REQ_EVENT (an IRR vector to inject, no APICv)
  bool exiting_ = false;           // EXITING_GUEST_MODE: a kick IPI is on its way
  bool in_kernel_at_exit_ = true;  // the guest's CPL was 0 at the last exit
  bool irq_window_ = false;        // CPU_BASED_INTR_WINDOW_EXITING set at the last entry
  bool eoi_exit_ = false;          // PV EOI off for the handler injected at the last entry
  int inj_vector_ = -1;            // kvm_inj_virq traced, no entry has delivered it yet
  Tsc enter_guest_entry_side_ = kTscNever;  // vcpu_enter_guest's entry side, drawn early
  std::uint32_t preemption_timer_value_ = 0xffffffffU;
  bool preemption_timer_loaded_ = false;
};

}  // namespace kvmsim
