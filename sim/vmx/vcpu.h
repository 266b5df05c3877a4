// A KVM vCPU thread on an Intel VMX host: the vcpu_run() / vcpu_enter_guest()
// loop of arch/x86/kvm/x86.c with vmx_vcpu_run() and the exit handlers of
// arch/x86/kvm/vmx/vmx.c, as a state machine of cost-bearing stages:
//
//   vcpu_enter_guest ─► vmx_vcpu_run ─► vmentry ─► guest ─► vmexit ─► [host irq] ─► handle_exit ─┐
//          ▲                  ▲                                     │ │ │                  └────
//          exit fastpath (REENTER_GUEST) ◄─┘                               │
//          └────────────────────────────────────────────────────────────────────────────────────────┘
//
// kvm_wait_lapic_expire() runs either at the end of vcpu_enter_guest (before
// v5.3) or inside vmx_vcpu_run right before the world switch (since).
// The guest's code (sim/guest) runs inside the "guest" stage; it ends in an
// exiting instruction, a host interrupt, or the VMX preemption timer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/dist.h"
#include "sim/lapic/lapic.h"
#include "sim/sched/pcpu.h"
#include "sim/vmx/exit_reason.h"
#include "sim/vmx/halt_poll.h"
#include "sim/vmx/preemption_timer.h"
#include "sim/vmx/tsc.h"

namespace kvmsim {

// struct kvm_steal_time's `preempted` byte (arch/x86/include/uapi/asm/kvm_para.h).
inline constexpr std::uint8_t KVM_VCPU_PREEMPTED = 1U << 0;
inline constexpr std::uint8_t KVM_VCPU_FLUSH_TLB = 1U << 1;

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

// KVM hypercall numbers used by the model (include/uapi/linux/kvm_para.h).
constexpr std::uint32_t KVM_HC_KICK_CPU = 5;
constexpr std::uint32_t KVM_HC_SCHED_YIELD = 11;

struct VcpuCosts {
  Sampler vmexit;            // hardware exit + vmx_vcpu_run() exit half
  Sampler vmx_vcpu_run;      // vmx_vcpu_run() software entry half up to the world switch
  Sampler vmentry;           // VMRESUME + hardware entry (+ whatever vmx_vcpu_run is not split out)
  Sampler vcpu_enter_guest;  // vcpu_enter_guest() from handled exit to vmx_vcpu_run()
  Sampler handle_exit;       // vmx_handle_exit() common dispatch
  Sampler handle_wrmsr;      // kvm_emulate_wrmsr() -> kvm_set_msr_common()
  Sampler handle_preemption_timer;    // handle_preemption_timer() (excluding lapic work)
  Sampler handle_external_interrupt;  // handle_external_interrupt() after the host IRQ ran
  Sampler exit_fastpath;              // vmx_exit_handlers_fastpath() + the REENTER_GUEST loop turn
  Sampler fastpath_wrmsr;             // handle_fastpath_set_msr_irqoff() before the LAPIC work
  Sampler handle_halt;                // kvm_emulate_halt(): skip the instruction, mark halted
  Sampler vcpu_block;          // vcpu_block() -> kvm_vcpu_halt(): prepare to wait, schedule() out
  Sampler vcpu_wakeup;         // idle exit, try_to_wake_up() of the vCPU thread, schedule() in
  Sampler vcpu_block_abort;    // schedule() of a task woken remotely before it was dequeued
  Sampler halt_poll_exit;      // a successful poll: leave the loop, stats, trace, back to vcpu_run
  Sampler pv_tlb_flush;        // record_steal_time() -> kvm_vcpu_flush_tlb(): vmx_flush_tlb()
  Sampler handle_pause;        // handle_pause(): grow_ple_window() + kvm_vcpu_on_spin() scan
  Sampler handle_kick_cpu;     // handle_vmcall() -> kvm_emulate_hypercall(KVM_HC_KICK_CPU)
  Sampler handle_sched_yield;  // ... (KVM_HC_SCHED_YIELD) -> kvm_sched_yield(), yield_to() apart
  double vcpu_enter_guest_exit_share = 0.5;  // of vcpu_enter_guest, before vmx_handle_exit()
};

// vmx_exit_handlers_fastpath() results (enum exit_fastpath_completion).
enum class ExitFastpath : std::uint8_t { None, ReenterGuest, ExitHandled };

// Halt polling in kvm_vcpu_halt() (virt/kvm/kvm_main.c): the module
// parameters halt_poll_ns (the window's maximum), halt_poll_ns_grow,
// halt_poll_ns_grow_start, halt_poll_ns_shrink and the era of the window
// rule (sim/vmx/halt_poll.h), and the 2016 proposal halt_poll_ns_timer
// (never merged: poll when the vCPU's own LAPIC timer fires within that
// many ns).
struct HaltPollConfig : HaltPollParams {
  std::uint32_t timer_ns = 0;
};

struct HaltPollStats {
  std::uint64_t attempted = 0, successful = 0, invalid = 0, grows = 0, shrinks = 0;
  Tsc success_cycles = 0, fail_cycles = 0, wait_cycles = 0;
  HaltPollStats& operator+=(const HaltPollStats& o) {
    attempted += o.attempted;
    successful += o.successful;
    invalid += o.invalid;
    grows += o.grows;
    shrinks += o.shrinks;
    success_cycles += o.success_cycles;
    fail_cycles += o.fail_cycles;
    wait_cycles += o.wait_cycles;
    return *this;
  }
};

struct VmxConfig {
  unsigned preemption_timer_rate = 5;  // IA32_VMX_MISC[4:0]
  bool exit_fastpath = false;          // kernels >= v5.6 handle some exits with IRQs off
  bool exit_fastpath_timer = true;     // ... the TSC-deadline WRMSR and preemption timer (v5.8+)
  // kvm_arch_vcpu_put() marks the steal-time area KVM_VCPU_PREEMPTED on every
  // put, a halted (blocked) vCPU included (v4.16..v5.18); later kernels only
  // when the vCPU was preempted while runnable (vcpu->preempted).
  bool preempted_on_block = true;
  // d73eb57b80b (v5.3, "KVM: Boost vCPUs that are delivering interrupts"):
  // kvm_vcpu_on_spin() takes vcpu->ready candidates, set when the thread is
  // preempted or woken from kvm_vcpu_block() (kvm_vcpu_wake_up()); the
  // kernel-mode test applies only to the preempted ones. false: v4.16's
  // vcpu->preempted candidates in kernel mode only.
  bool directed_yield_ready = false;
  // 266e85a5ec9 (v5.3): KVM_HC_KICK_CPU is followed by kvm_sched_yield() to
  // the kicked vCPU when it is vcpu->ready (the kicker gives up its pCPU).
  bool kick_cpu_yield = false;
  // The guest enabled KVM_FEATURE_PV_TLB_FLUSH (guest_pv_has()): the host
  // honours and traces KVM_VCPU_FLUSH_TLB in record_steal_time().
  bool pv_tlb_flush = false;
  // record_steal_time() clears `preempted` with an xchg on the guest's byte
  // (v5.6+, b043138246a4, the CVE-2019-3016 fix). false: v4.16-v5.5, which
  // read the whole struct into a host copy, xchg'd the copy and wrote it all
  // back at the end of the update: a KVM_VCPU_FLUSH_TLB another vCPU set in
  // between is overwritten (a lost flush).
  bool steal_time_atomic_preempted = true;
  // Pause-Loop Exiting (vmx.c module parameters ple_gap, ple_window,
  // ple_window_grow, ple_window_shrink, ple_window_max); ple_gap 0 = off.
  // The window is in TSC cycles of continuous spinning.
  std::uint32_t ple_gap = 0;
  std::uint32_t ple_window = 4096;
  std::uint32_t ple_window_grow = 2;
  std::uint32_t ple_window_shrink = 0;
  std::uint32_t ple_window_max = 0x3fffffff;
  HaltPollConfig halt_poll;
};

struct VcpuStats {
  std::uint64_t exits = 0, entries = 0, hv_timer_fallbacks = 0;
  std::uint64_t fastpath_reenter = 0, fastpath_exit_handled = 0;
  std::uint64_t halts = 0, blocks = 0;  // HLT exits; of those, how many slept
  Tsc blocked_cycles = 0;
  std::uint64_t preemptions = 0;            // scheduled out while runnable (vcpu->preempted)
  std::uint64_t kicks = 0;                  // kvm_vcpu_kick() calls that woke or IPI'd the vCPU
  std::uint64_t kicks_lost = 0;             // a kick of a blocked vCPU that did not wake it (a bug)
  Tsc steal_cycles = 0;                     // record_steal_time(): run delay reported to the guest
  std::uint64_t pv_tlb_flush_requests = 0;  // guest cmpxchg set KVM_VCPU_FLUSH_TLB
  std::uint64_t pv_tlb_flushes = 0;         // record_steal_time() flushed for the guest
  std::uint64_t pause_exits = 0;            // PAUSE_INSTRUCTION exits (PLE)
  std::uint64_t directed_yields = 0;        // kvm_vcpu_on_spin() yielded to a vCPU
  std::uint64_t directed_yields_remote = 0;     // ... queued on another pCPU (resched_curr IPI)
  std::uint64_t directed_yield_ipis_saved = 0;  // ... whose pCPU had need_resched already: no IPI
  std::uint64_t yield_to_failed = 0;            // yield_to() returned 0: the candidate was running
  std::uint64_t yield_to_esrch = 0;  // yield_to() returned -ESRCH: both queues had one task
  // Candidates kvm_vcpu_eligible_for_directed_yield() passed over (they were
  // inside kvm_vcpu_on_spin() themselves and their dy_eligible was false).
  std::uint64_t dy_ineligible = 0;
  // Directed yields to a vCPU that was woken from a halt (vcpu->ready, not
  // preempted): only with kvm.directed_yield_ready (d73eb57b80b).
  std::uint64_t directed_yields_woken = 0;
  // KVM_HC_KICK_CPU followed by a yield_to() the kicked vCPU
  // (kvm.kick_cpu_yield, 266e85a5ec9).
  std::uint64_t kick_yields = 0;
  // KVM_HC_SCHED_YIELD hypercalls (PV sched yield) and those that yielded.
  std::uint64_t sched_yield_calls = 0, sched_yields = 0;
  std::uint64_t ple_window_grows = 0;  // grow_ple_window() raised vmx->ple_window
  std::uint64_t pv_kicks = 0;          // KVM_HC_KICK_CPU hypercalls this vCPU made
  std::uint64_t pv_kick_wakeups = 0;   // ... that woke the target from a halt it slept in
  // Wake-ups of a thread halted with RFLAGS.IF clear by an interrupt it
  // cannot take: after an IPI kvm_vcpu_check_block() found nothing and the
  // thread slept again in the same kvm_vcpu_block(); after its own timer
  // kvm_vcpu_block() returned, the timer went to the IRR and a new one began.
  std::uint64_t spurious_wakeups = 0;
  std::uint32_t ple_window_peak = 0;   // the largest vmx->ple_window reached (max over vCPUs)
  VcpuStats& operator+=(const VcpuStats& o) {
    exits += o.exits;
    entries += o.entries;
    hv_timer_fallbacks += o.hv_timer_fallbacks;
    fastpath_reenter += o.fastpath_reenter;
    fastpath_exit_handled += o.fastpath_exit_handled;
    halts += o.halts;
    blocks += o.blocks;
    blocked_cycles += o.blocked_cycles;
    preemptions += o.preemptions;
    kicks += o.kicks;
    kicks_lost += o.kicks_lost;
    steal_cycles += o.steal_cycles;
    pv_tlb_flush_requests += o.pv_tlb_flush_requests;
    pv_tlb_flushes += o.pv_tlb_flushes;
    pause_exits += o.pause_exits;
    directed_yields += o.directed_yields;
    pv_kicks += o.pv_kicks;
    pv_kick_wakeups += o.pv_kick_wakeups;
    spurious_wakeups += o.spurious_wakeups;
    directed_yields_remote += o.directed_yields_remote;
    directed_yield_ipis_saved += o.directed_yield_ipis_saved;
    yield_to_failed += o.yield_to_failed;
    yield_to_esrch += o.yield_to_esrch;
    dy_ineligible += o.dy_ineligible;
    directed_yields_woken += o.directed_yields_woken;
    kick_yields += o.kick_yields;
    sched_yield_calls += o.sched_yield_calls;
    sched_yields += o.sched_yields;
    ple_window_grows += o.ple_window_grows;
    ple_window_peak = ple_window_peak > o.ple_window_peak ? ple_window_peak : o.ple_window_peak;
    return *this;
  }
};

class Vcpu;

// The vCPUs of one VM as kvm_vcpu_on_spin() walks them (kvm->vcpus,
// kvm->last_boosted_vcpu).
struct VmVcpuList {
  std::vector<Vcpu*> vcpus;
  int last_boosted_vcpu = 0;
};

class Vcpu : public HostThread {
 public:
  // `pcpu`: where the thread starts; `allowed`: its affinity (one pCPU when pinned).
  Vcpu(int vcpu_id, int vm_id, Pcpu& pcpu, CpuMask allowed, VcpuCosts costs, VmxConfig vmx,
       LapicConfig lapic_cfg, LapicCosts lapic_costs, TscScaling tsc);

  void set_guest(GuestVcpu* g) { guest_ = g; }
  void set_vm_vcpus(VmVcpuList* l) { vm_vcpus_ = l; }
  void start();  // the thread enters KVM_RUN

  // HostThread
  void run(Pcpu& cpu, Tsc now) override;
  void guest_interrupted(Pcpu& cpu, Tsc now) override;
  void preemption_timer_expired(Pcpu& cpu, Tsc now) override;
  // kvm_sched_out() / kvm_sched_in(): the preempt notifiers -> vcpu_put / vcpu_load.
  void sched_out(Pcpu& cpu, Tsc now, bool preempted) override;
  void sched_in(Pcpu& cpu, Tsc now) override;
  void posted_interrupt(Pcpu& cpu, Tsc now) override;
  void resched_requested(Pcpu& cpu, Tsc now) override;

  // vmx_set_hv_timer() / vmx_cancel_hv_timer(); false = -ERANGE.
  bool set_hv_timer(std::uint64_t guest_deadline_tsc, Tsc now, bool* expired);
  void cancel_hv_timer() { hv_deadline_tsc_ = kHvDeadlineNone; }
  // kvm_vcpu_kick() from `from_cpu` (the pCPU the caller runs on): wake a
  // blocked vCPU, or IPI its pCPU when it is in guest mode elsewhere.
  void kick(Tsc now, int from_cpu);
  void kick(Tsc now) { kick(now, pcpu_->id()); }

  // --- IPIs from other vCPUs (issue 8) -------------------------------------
  // kvm_vcpu_kick() from `sender`'s thread at `at`: wake a blocked vCPU
  // (reschedule IPI to its pCPU), or IPI one in guest mode; returns the
  // sender's cost.
  Tsc kick_from(Vcpu& sender, Tsc at);
  // vcpu->mode == IN_GUEST_MODE: from vcpu_enter_guest()'s IRQ-off entry
  // part until the exit is handled with interrupts on (incl. the fastpath).
  [[nodiscard]] bool in_guest_mode_for_ipi() const;
  void request_event() { event_request_ = true; }  // KVM_REQ_EVENT
  // The one way a vector reaches the guest: if it can take one, the LAPIC
  // acknowledges the highest deliverable vector (kvm_get_apic_interrupt ->
  // apic_set_isr) and the guest's handler starts. Called at entry, on a
  // posted-interrupt notification, and by a guest's IRET (RFLAGS.IF again).
  void deliver_pending_interrupt(Tsc now);
  // The guest wrote memory another vCPU's guest spins on.
  void guest_store_seen() {
    if (state_ != State::InGuest) return;
    if (ple_armed_ || spin_bounded_)  // the spin is a finite segment
      pcpu_->shorten_segment(now_tsc());
    else
      pcpu_->end_guest_spin();
  }

  [[nodiscard]] int id() const { return vcpu_id_; }
  [[nodiscard]] int vm_id() const { return vm_id_; }
  // kvm_pv_kick_cpu_op() from `sender`'s KVM_HC_KICK_CPU: APIC_DM_REMRD
  // delivery sets pv_unhalted and kicks this vCPU; returns the kick's cost.
  Tsc pv_kick(Vcpu& sender, Tsc at);
  Pcpu& pcpu() { return *pcpu_; }  // where the thread runs or last ran
  [[nodiscard]] const Pcpu& pcpu() const { return *pcpu_; }
  // The steal-time area's `preempted` byte (KVM_VCPU_PREEMPTED, KVM_VCPU_FLUSH_TLB).
  [[nodiscard]] std::uint8_t steal_time_preempted() const { return st_preempted_; }
  // The guest's try_cmpxchg(&st->preempted, state, state | KVM_VCPU_FLUSH_TLB)
  // in kvm_flush_tlb_others(), with `state` the value it read: true if the
  // byte still held it (the flag is now set; the host flushes before the
  // next entry), false if the host changed it meanwhile.
  bool steal_time_cmpxchg_flush(std::uint8_t state);
  // Guest TLB flushes the host did on this vCPU's behalf (KVM_VCPU_FLUSH_TLB).
  [[nodiscard]] std::uint64_t pv_tlb_flushes() const { return stats_.pv_tlb_flushes; }
  // The vCPU thread is current on its pCPU (not preempted, not blocked):
  // what the guest cannot see but a flush initiator waits on (statistics).
  [[nodiscard]] bool running_on_pcpu() const;
  KvmLapic& lapic() { return lapic_; }
  [[nodiscard]] const KvmLapic& lapic() const { return lapic_; }
  [[nodiscard]] const TscScaling& tsc() const { return tsc_; }
  [[nodiscard]] const VmxConfig& vmx() const { return vmx_; }
  [[nodiscard]] std::uint64_t guest_tsc(Tsc host) const { return tsc_.read_l1_tsc(host); }
  [[nodiscard]] Tsc hv_deadline_tsc() const { return hv_deadline_tsc_; }
  // What vmx_update_hv_timer() wrote for the current (or last) entry: whether
  // a deadline was loaded, and the 32-bit counter value (for the views).
  [[nodiscard]] bool preemption_timer_loaded() const { return preemption_timer_loaded_; }
  [[nodiscard]] std::uint32_t preemption_timer_value() const { return preemption_timer_value_; }
  [[nodiscard]] bool in_guest_mode() const { return state_ == State::InGuest; }
  // RFLAGS.IF and not inside a handler: an injected vector is taken at entry.
  [[nodiscard]] bool guest_interruptible() const {
    return guest_ != nullptr && guest_->interruptible();
  }
  [[nodiscard]] const VcpuStats& stats() const { return stats_; }
  [[nodiscard]] const HaltPollStats& halt_poll_stats() const { return hp_stats_; }
  [[nodiscard]] std::uint32_t halt_poll_ns() const { return halt_poll_ns_; }
  // MSR_KVM_POLL_CONTROL bit 0 (KVM_FEATURE_POLL_CONTROL, v5.3+): the guest
  // clears it to turn host halt polling off (kvm_arch_no_poll()).
  void set_poll_control(bool on) { poll_control_ = on; }
  Rng& rng() { return pcpu_->rng(); }
  SimContext& ctx() { return pcpu_->ctx(); }

 private:
  enum class State : std::uint8_t {
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

  void begin_vcpu_enter_guest(Tsc now);
  void after_vcpu_enter_guest(Tsc now);
  void begin_vmx_vcpu_run(Tsc now);
  void after_vmx_vcpu_run(Tsc now);
  void begin_vmentry(Tsc now);
  bool try_exit_fastpath(Tsc now);
  void after_fastpath(Tsc now);
  void after_handle_exit(Tsc now);
  void vcpu_block(Tsc now);
  void after_block(Tsc now);
  void end_block(Tsc now, Tsc sched_cost);
  void rewait_block(Tsc now);
  void restart_halt(Tsc now, bool waited);
  void send_icr_ipi(Tsc now);
  bool wait_lapic_expire_at(WaitLapicExpireSite site, State after, Tsc now);
  [[nodiscard]] bool vcpu_runnable() const;
  void enter_guest_mode(Tsc now);
  void guest_step(Tsc now);
  void vmexit(ExitReason reason, Tsc now);
  void handle_exit(Tsc now);
  Tsc run_exit_handler(Tsc now);

  Tsc record_steal_time(Tsc now);  // returns the cost of a flush it did
  [[nodiscard]] Tsc suspend_remaining(Pcpu& cpu, Tsc now);
  void kvm_vcpu_on_spin(Tsc now);
  struct YieldTo {
    int yielded = 0;         // yield_to()'s result (> 0: yielded)
    bool remote = false;     // the target queues on another pCPU
    bool ipi_saved = false;  // ... whose need_resched was set already: no IPI
  };
  YieldTo kvm_vcpu_yield_to(Vcpu& v, Tsc now);
  bool kvm_sched_yield(Vcpu& target, bool ready, Tsc now);
  [[nodiscard]] Vcpu& hypercall_target(const char* hypercall) const;
  void after_poll(Tsc now);
  void finish_halt(Tsc now, bool waited);  // window update, stats, kvm_vcpu_wakeup

  int vcpu_id_, vm_id_;
  Pcpu* pcpu_;
  VcpuCosts costs_;
  VmxConfig vmx_;
  TscScaling tsc_;
  KvmLapic lapic_;
  GuestVcpu* guest_ = nullptr;

  State state_ = State::EnterGuest;
  ExitReason exit_reason_ = ExitReason::EXTERNAL_INTERRUPT;
  GuestStep exit_step_;  // the exiting instruction, for its handler
  ExitFastpath fastpath_ = ExitFastpath::None;
  bool hv_timer_before_block_ = false;
  bool icr_send_pending_ = false;  // the ICR write's kvm_apic_send_ipi() ends the current stage
  bool event_request_ = false;     // KVM_REQ_EVENT (an IRR vector to inject, no APICv)
  bool block_kicked_ = false;      // a remote kick came during the Block stage
  bool rewaiting_ = false;         // the Block stage after a spurious wake-up (IF clear)
  bool halt_restart_ = false;      // vcpu_block() again after a timer ended kvm_vcpu_block()
  Tsc enter_guest_entry_side_ = kTscNever;  // vcpu_enter_guest's entry side, drawn early // a
                                            // remote wake-up of the blocked thread is on its way
  bool exiting_ = false;                    // EXITING_GUEST_MODE: a kick IPI is on its way
  Tsc block_start_ = 0;
  Tsc hv_deadline_tsc_ = kHvDeadlineNone;
  std::uint32_t preemption_timer_value_ = 0xffffffffU;
  bool preemption_timer_loaded_ = false;
  bool preempted_ = false;         // vcpu->preempted
  bool ready_ = false;             // vcpu->ready (v5.3+): preempted, or woken from a halt
  bool steal_update_ = false;      // KVM_REQ_STEAL_UPDATE pending
  std::uint8_t st_preempted_ = 0;  // steal_time.preempted, as the guest reads it
  bool st_writeback_ = false;
  VmVcpuList* vm_vcpus_ = nullptr;
  bool ple_armed_ = false;  // the guest spins; the segment ends at the PLE window
  Tsc ple_deadline_ = 0;
  // A bounded guest spin (a Run step with pause_loop: the PV qspinlock's
  // SPIN_THRESHOLD loops) ends here; kTscNever = open-ended or no spin.
  Tsc spin_end_ = kTscNever;
  bool spin_bounded_ = false;  // the segment in flight is such a spin
  [[nodiscard]] Tsc bounded_spin_left(Tsc now) const {
    return spin_end_ > now ? spin_end_ - now : 0;
  }
  Tsc ple_window_end(Tsc now);
  Tsc pause_loop_since_ = kTscNever;  // the guest's PAUSE loop began (no exit since)
  // vcpu->arch.pv.pv_unhalted: a KVM_HC_KICK_CPU arrived; the next (or
  // current) halt ends, IF or not. Cleared when the halt returns.
  bool pv_unhalted_ = false;
  std::uint32_t ple_window_cur_ = 0;  // vmx->ple_window (0: not set yet)
  // vcpu->spin_loop (CONFIG_HAVE_KVM_CPU_RELAX_INTERCEPT): in_spin_loop from
  // handle_pause() until this vCPU leaves kvm_vcpu_on_spin(), which for a
  // vCPU that yielded is when it runs again; dy_eligible toggles each time
  // another spinner considers it meanwhile.
  bool in_spin_loop_ = false;
  bool dy_eligible_ = false;
  // kvm_vcpu_eligible_for_directed_yield(): may toggle dy_eligible_.
  bool eligible_for_directed_yield();
  bool in_kernel_at_exit_ = true;   // the guest's CPL was 0 at the last exit       // pre-v5.6: the
                                    // host copy is written back after the entry stage
  Tsc steal_recorded_ = 0;          // run delay already reported to the guest
  std::uint32_t halt_poll_ns_ = 0;  // vcpu->halt_poll_ns: this vCPU's current window
  bool polled_ = false;             // this halt polled
  bool poll_control_ = true;        // MSR_KVM_POLL_CONTROL bit 0
  Tsc halt_start_ = 0, poll_start_ = 0, poll_end_ = 0;
  HaltPollStats hp_stats_;
  VcpuStats stats_;
};

}  // namespace kvmsim
