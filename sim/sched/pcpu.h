// A physical CPU. It runs its current host thread (a vCPU thread, a host
// task, or the idle task) as a sequence of segments (each tagged with a Stage
// and a cost in cycles) and takes host interrupts: from the local clockevent
// (host hrtimers, the tick), from IPIs sent by other pCPUs, from device
// noise, and (while a vCPU is in non-root mode) the VMX preemption timer.
//
// Everything that happens on the pCPU is driven by one process of the event
// kernel (sim/core/event_kernel.h; an SC_METHOD on SystemC's) and its one
// timed event, re-armed for the earliest of: end of the current segment,
// clockevent expiry, next noise interrupt, IPI arrival, preemption-timer zero
// (next_decision()). One activation runs the next decision points inline
// while they come strictly before every other pending activity
// (run-ahead, sim/core/run_ahead.h); now_tsc() is then the time this pCPU
// reached.
//
// How an interrupt is taken depends on the segment's kind:
//   Guest      -> the vCPU takes a VM exit (EXTERNAL_INTERRUPT), the thread
//                 runs the handler itself (vmx_handle_external_intr);
//   HostIrqOn  -> the handler nests: the segment is suspended and resumed;
//   HostUser   -> the same, and on the way back (irqentry_exit_to_user_mode)
//                 a pending reschedule preempts the thread;
//   HostIrqOff -> the interrupt stays pending until the thread re-enables
//                 interrupts (take_pending_irqs()).
//
// Which thread runs is the host scheduler's decision (sim/sched/host_sched.h,
// CFS); the pCPU carries it out: schedule() puts the previous thread back or
// lets it sleep, picks the next, calls the preempt notifiers (sched_out /
// sched_in, which KVM uses for vcpu_put / vcpu_load) and runs the context
// switch.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "sim/core/context.h"
#include "sim/core/dist.h"
#include "sim/core/model_signals.h"
#include "sim/core/stage.h"
#include "sim/sched/cfs.h"
#include "sim/sched/cpuidle.h"
#include "sim/sched/host_hrtimer.h"
#include "sim/sched/host_irq.h"
#include "sim/sched/sched_signals.h"

namespace kvmsim {

class Pcpu;
class Host;
class HostScheduler;

enum class SegKind : std::uint8_t { HostIrqOff, HostIrqOn, Guest, HostUser };

// A host task (vCPU thread, kthread, user process). Its SchedEntity is what
// the scheduler queues; the pCPU calls run() whenever the thread should start
// its next segment on it.
class HostThread {
 public:
  HostThread(std::string comm, int pid, int nice = 0, CpuMask allowed = CpuMask::all())
      : comm_(std::move(comm)), pid_(pid), se_(pid, nice, std::move(allowed)) {}
  virtual ~HostThread() = default;
  // The current segment ended (or the thread was just switched in): start the
  // next one with cpu.run_for()/run_until(), or sleep / yield the pCPU.
  virtual void run(Pcpu& cpu, Tsc now) = 0;
  // A host interrupt arrived while a Guest segment ran: take a VM exit.
  virtual void guest_interrupted(Pcpu& /*cpu*/, Tsc /*now*/) {}
  // The VMX preemption timer loaded by this thread reached zero.
  virtual void preemption_timer_expired(Pcpu& /*cpu*/, Tsc /*now*/) {}
  // Preempt notifiers (kernel/sched/core.c fire_sched_{out,in}_preempt_notifiers):
  // the thread leaves the pCPU (still runnable if `preempted`) / gets it.
  // They return the cycles their work adds to the context switch.
  virtual Tsc sched_out(Pcpu& /*cpu*/, Tsc /*now*/, bool /*preempted*/) { return 0; }
  virtual Tsc sched_in(Pcpu& /*cpu*/, Tsc /*now*/) { return 0; }
  // A HostUser segment was cut by preemption with `remaining` cycles left
  // (kTscNever: open-ended); run() is called again when it is switched back in.
  virtual void user_preempted(Tsc /*remaining*/) {}
  // need_resched was set on this thread's pCPU (resched_curr, a reschedule
  // IPI): a halt-polling vCPU stops polling (kvm_vcpu_can_poll()).
  virtual void resched_requested(Pcpu& /*cpu*/, Tsc /*now*/) {}
  // A posted-interrupt notification arrived while a Guest segment ran (no
  // VM exit); the Guest segment was ended at `now`.
  virtual void posted_interrupt(Pcpu& /*cpu*/, Tsc /*now*/) {}
  [[nodiscard]] const std::string& comm() const { return comm_; }
  [[nodiscard]] int pid() const { return pid_; }
  // The thread's mm (its process's address space; by default one process
  // per thread): switching to it loads its page tables. nullptr for kernel
  // threads, which run on the borrowed active_mm (lazy TLB).
  [[nodiscard]] virtual const void* mm() const { return this; }
  SchedEntity& se() { return se_; }
  [[nodiscard]] const SchedEntity& se() const { return se_; }

 private:
  std::string comm_;
  int pid_;
  SchedEntity se_;
};

// Host interrupt costs and noise of one pCPU (from the platform file).
struct PcpuCosts {
  Sampler irq_entry;          // cost.host.irq_entry
  Sampler irq_exit;           // cost.host.irq_exit
  Sampler hrtimer_interrupt;  // cost.host.hrtimer_interrupt (incl. clockevent reprogram)
  Sampler context_switch;     // cost.host.context_switch: __schedule() between two threads
  Sampler ipi_latency;        // cost.host.ipi_latency: ICR write to the target's interrupt
  Sampler reschedule_ipi;     // cost.host.reschedule_ipi: scheduler_ipi() handler
  Sampler posted_intr_ipi;    // cost.host.posted_intr_ipi: POSTED_INTR_VECTOR handler in root mode
  // Host noise: device interrupts / IPIs that land on this pCPU.
  double noise_irq_rate_hz = 0;
  Sampler noise_irq_duration;
  // Deferred work (softirqs, irq_work) raised at random and run at the next
  // irq_exit on this pCPU.
  double softirq_rate_hz = 0;
  Sampler softirq_duration;
  // Host cpuidle: C-states and the menu governor (sim/sched/cpuidle.h).
  CpuidleConfig cpuidle;
  bool nohz_idle = true;  // host.nohz_idle: the tick stops while the pCPU is idle
};

struct PcpuStats {
  Tsc busy_cycles = 0;  // time not in the idle task
  Tsc poll_cycles = 0;  // of that, halt polling (Stage::HaltPoll)
  // Time the core is not in C0: in a C-state or leaving one (host.cpuidle
  // menu); without cpuidle, the idle loop's wait (one state, no exit).
  Tsc not_c0_cycles = 0;
  CpuidleStats cpuidle;
};

class Pcpu : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Pcpu);
  Pcpu(const sc_core::sc_module_name& name, int id, SimContext& ctx, PcpuCosts costs, Host& host);

  [[nodiscard]] int id() const { return id_; }
  SimContext& ctx() { return ctx_; }
  Rng& rng() { return rng_; }
  Host& host() { return host_; }
  [[nodiscard]] HostThread* current() const { return curr_; }  // nullptr: the idle task
  // per_cpu(current_vmcs) of arch/x86/kvm/vmx.c: the VMCS this pCPU last made
  // current with VMPTRLD (nullptr: none, or VMCLEARed). Read and written by
  // the VMX code's vcpu_load / loaded_vmcs_clear (sim/vmx/loaded_vmcs.h).
  const void* current_vmcs = nullptr;

  // Segments, called by the current thread from run().
  void run_for(Stage stage, SegKind kind, Tsc cycles) {
    if (cold_refill_left_) cycles = run_cold(stage, cycles);
    run_until(stage, kind, now_tsc() + cycles);
  }
  // A wait that ends at a given time (a spin, a rdtsc() loop): not work, so
  // it does not pay a pending cold refill.
  void run_for_wait(Stage stage, SegKind kind, Tsc cycles) {
    run_until(stage, kind, now_tsc() + cycles);
  }
  void run_until(Stage stage, SegKind kind, Tsc end) {
    seg_stage_ = stage;
    seg_kind_ = kind;
    seg_begin_ = now_tsc();
    seg_end_ = end;
  }
  [[nodiscard]] Tsc segment_end() const { return seg_end_; }
  [[nodiscard]] SegKind segment_kind() const { return seg_kind_; }
  [[nodiscard]] Stage segment_stage() const { return seg_stage_; }

  // The VMX preemption timer while the current Guest segment runs.
  void arm_vmx_preemption_timer(Tsc fire) { vmx_timer_ = fire; }
  void disarm_vmx_preemption_timer() { vmx_timer_ = kTscNever; }

  HostHrtimerBase& hrtimers() { return hrtimers_; }
  // The pCPU's tick (tick_sched_timer) and its period, which NO_HZ_IDLE
  // stops and restarts around idle (host.nohz_idle).
  void set_tick(HostHrtimer* tick, Tsc period) {
    tick_ = tick;
    tick_period_ = period;
  }
  // After changing hrtimers or raising IRQs from outside dispatch().
  void reschedule();

  // --- scheduling, called by the current thread from run() ---------------
  // The thread blocks (TASK_INTERRUPTIBLE + schedule()): the next thread or
  // the idle task runs; the thread's run() is called after a wake-up.
  void sleep_current(Tsc now);
  // cond_resched() at a preemption point: if need_resched is set, put the
  // thread back and switch. True = switched away (return without starting a
  // segment; run() is called when it is picked again).
  bool preempt_point(Tsc now);
  [[nodiscard]] bool need_resched() const;
  // scheduler_tick() from the host tick on this pCPU.
  void scheduler_tick(Tsc now);

  // --- called by Host -------------------------------------------------------
  // A thread was enqueued here and should run (the idle loop ends at once,
  // or when the interrupt in progress returns). `from`: the waker's pCPU when
  // remote: it sends a reschedule IPI leaving at `ipi_at`; otherwise the
  // local need_resched is seen at the next preemption point.
  void resched_curr(Tsc now, Pcpu* from = nullptr, Tsc ipi_at = 0);

  // --- Host interrupts (host_irq.h) ------------------------------------------
  HostIrqs& irqs() { return irq_; }
  [[nodiscard]] const HostIrqs& irqs() const { return irq_; }
  // Send `kind` to `target`, leaving this pCPU at `sent` (the sender's
  // ICR write); it arrives after cost.host.ipi_latency.
  void send_ipi(Pcpu& target, HostIpi kind, Tsc sent) { irq_.send_ipi(target, kind, sent); }
  // A posted-interrupt notification is pending (it came in with interrupts
  // off); VM entry consumes it: the CPU processes it as posted, no exit.
  bool take_posted_intr_notification() { return irq_.take_posted_intr_notification(); }
  // scheduler_ipi() (RESCHEDULE_VECTOR): need_resched was set by the sender;
  // an idle loop ends, a polling vCPU stops polling.
  void scheduler_ipi(Tsc now);
  // End the current open-ended Guest segment now: a guest spin on this pCPU
  // sees a store from another CPU (kvm-unit-tests' while (!ipi_done);).
  void end_guest_spin();
  // The current segment (or the one a nested IRQ interrupted) ends no later
  // than `end` (a remote wake-up cuts a vCPU's schedule() short).
  void shorten_segment(Tsc end);

  // Interrupt state.
  [[nodiscard]] bool irq_pending() const { return irq_.pending(); }
  // Runs every pending host interrupt now (irq entry, handlers, irq_exit with
  // softirqs) and returns the cycles that took; handlers' effects apply now.
  Tsc take_pending_irqs(Tsc now) { return irq_.take_pending(now); }

  [[nodiscard]] const PcpuStats& stats() const { return stats_; }
  // Busy cycles up to `now`, including the segment in progress.
  [[nodiscard]] Tsc busy_cycles(Tsc now) const {
    return stats_.busy_cycles + (curr_ && now > busy_since_ ? now - busy_since_ : 0);
  }
  // C0 cycles up to `now` (MPERF's count: the core executes), including the
  // segment in progress.
  [[nodiscard]] Tsc c0_cycles(Tsc now) const;
  [[nodiscard]] const CpuidleConfig& cpuidle() const { return costs_.cpuidle; }

 private:
  friend class RunAhead;  // calls step() and next_decision()
  void dispatch();
  void step(Tsc now);
  [[nodiscard]] Tsc next_decision(Tsc now) const;
  void end_segment(Tsc now);
  void schedule(Tsc now);  // __schedule(): pick and switch (from dispatch or a thread)
  void switch_to(HostThread* next, Tsc now);
  void end_idle(Tsc now);  // the idle loop sees need_resched
  // Host cpuidle (sim/sched/cpuidle.h), all no-ops but the first without it.
  // cpu_idle_loop(): wait, or idle entry (`first`: the tick stop) + governor
  void enter_idle(Tsc now, bool first = true);
  void select_cstate(Tsc now);  // menu_select(), then MWAIT
  void exit_cstate(Tsc now);    // an interrupt / need_resched wakes the core
  void cstate_exited(Tsc now);  // back in C0: menu_update(), handle the IRQ or schedule
  [[nodiscard]] bool not_c0(Stage s) const;

  int id_;
  SimContext& ctx_;
  ModelSignals& model_signals_;
  SchedSignals& sched_signals_;
  PcpuCosts costs_;
  Host& host_;
  HostScheduler& sched_;
  Rng rng_;
  std::string idle_comm_;  // the idle task's comm, swapper/N (sched_switch)
  HostThread* curr_ = nullptr;
  bool switching_ = false;  // in the context-switch segment to curr_ (or to idle)
  Tsc busy_since_ = 0;
  HostHrtimerBase hrtimers_;
  HostHrtimer* tick_ = nullptr;
  Tsc tick_period_ = 0;
  Tsc last_tick_ = kTscNever;  // tick_sched->last_tick: the tick's next expiry when it stopped
  void tick_nohz_stop_sched_tick();
  void tick_nohz_restart_sched_tick(Tsc now);
  sc_core::sc_event wake_;
  int kproc_ = -1;  // this pCPU's process in ctx_.kernel
  Tsc scheduled_ = kTscNever;
  bool in_dispatch_ = false;

  Stage seg_stage_ = Stage::HostIdle;
  SegKind seg_kind_ = SegKind::HostIrqOn;
  Tsc seg_begin_ = 0;
  Tsc seg_end_ = kTscNever;
  Tsc vmx_timer_ = kTscNever;
  MenuGovernor menu_;
  int cstate_ = -1;  // state of the HostIdle segment (-1: idle loop software, C0)
  Tsc cstate_enter_ = 0;
  // After a tlb_flushed C-state: the refill still to pay (cost.host.cstate_refill),
  // and whether leave_mm() left the user mm (the next switch to one reloads CR3).
  Tsc cold_refill_left_ = 0;
  bool left_mm_ = false;
  const void* active_mm_ = nullptr;       // cpu_tlbstate.active_mm: the last user thread's mm
  Tsc run_cold(Stage stage, Tsc cycles);  // the work's cycles with its share of the refill

  // A nested host IRQ over a HostIrqOn / HostUser segment.
  bool in_nested_irq_ = false;
  Stage saved_stage_ = Stage::HostIdle;
  SegKind saved_kind_ = SegKind::HostIrqOn;
  Tsc saved_remaining_ = 0;

  HostIrqs irq_;
  PcpuStats stats_;
};

}  // namespace kvmsim
