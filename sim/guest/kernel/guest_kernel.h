// A guest Linux kernel on one vCPU: the per-CPU step loop (what runs next:
// interrupt context, kernel work, schedule(), the current task or the idle
// task), its run queue with the RT class and CFS (guest_fair.h), and
// try_to_wake_up(). Its subsystems are classes of their own: the hrtimers and
// TSC-deadline clockevent (guest_clockevent.h), the tick and watchdogs
// (guest_tick.h), the idle task (guest_idle.h), interrupt context
// (guest_irq.h) and cross calls (guest_smp_call.h). Its costs are host cycles
// of guest work.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/guest/kernel/guest_clockevent.h"
#include "sim/guest/kernel/guest_config.h"
#include "sim/guest/kernel/guest_fair.h"
#include "sim/guest/kernel/guest_idle.h"
#include "sim/guest/kernel/guest_irq.h"
#include "sim/guest/kernel/guest_smp_call.h"
#include "sim/guest/kernel/guest_task.h"
#include "sim/guest/kernel/guest_tick.h"
#include "sim/guest/kernel/step_queue.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

class GuestSmp;

class GuestKernel : public GuestVcpu {
 public:
  GuestKernel(Vcpu& vcpu, GuestCosts costs, std::uint64_t guest_tsc_khz, GuestConfig cfg = {});
  ~GuestKernel() override;
  GuestKernel(const GuestKernel&) = delete;
  GuestKernel& operator=(const GuestKernel&) = delete;

  // GuestVcpu
  GuestStep step(Tsc now) override;
  void suspend(Tsc remaining) override;
  [[nodiscard]] bool interruptible() const override { return !irq_.active() && !irqs_off_; }
  [[nodiscard]] bool irqs_disabled() const override { return irqs_off_ && !irq_.active(); }
  [[nodiscard]] bool in_kernel_mode() const override {
    return irq_.active() || last_.stage != Stage::GuestUser;
  }
  void deliver_interrupt(std::uint8_t vector, Tsc now) override;

  // Services for tasks.
  void add_task(GuestTask* t);  // becomes runnable
  // The task was created on this CPU and sleeps (it waits for a wake_up()).
  void attach_sleeping_task(GuestTask* t) { t->cpu_ = this; }
  // hrtimer_start(); queues a clockevent reprogram when it is the earliest.
  void hrtimer_start(GuestHrtimer* t, std::uint64_t expires_guest_tsc);
  // The current task sleeps: schedule() to the next runnable (or idle).
  void block_current();
  // try_to_wake_up(): the task becomes runnable and preempts idle. A task
  // placed on another vCPU (bound there, or its previous vCPU) is queued
  // there by kernel work that runs after the caller's current step, and
  // that vCPU gets a RESCHEDULE_VECTOR IPI unless its idle loop polls.
  void wake_up(GuestTask* t);

  // --- SMP (sim/guest/kernel/guest_smp.h) -----------------------------------------
  // Cross calls from task context: the csd setup, one ICR write per target
  // that needs an IPI and, with wait, the csd_lock_wait() spin run as
  // kernel work after the caller's current step; the task continues when
  // the call returns. Not from interrupt context (as the kernel WARNs).
  void smp_call_function(SmpCall call);
  void smp_call_function_single(int cpu, SmpCallFunc f, bool wait,
                                std::function<void(GuestKernel&, Tsc)> done = {});
  void smp_call_function_many(std::vector<int> cpus, SmpCallFunc f, bool wait,
                              std::function<void(GuestKernel&, Tsc)> done = {});
  void set_smp(std::shared_ptr<GuestSmp> smp, int cpu);
  [[nodiscard]] GuestSmp* smp() const { return smp_.get(); }
  [[nodiscard]] int cpu() const { return cpu_; }  // smp_processor_id()
  [[nodiscard]] bool idle() const { return current_ == nullptr && runqueue_.empty(); }
  // task_curr(): `t` is what this CPU runs now (the owner->on_cpu test of
  // optimistic spinning); need_resched() of this CPU.
  [[nodiscard]] bool task_curr(const GuestTask* t) const {
    return t != nullptr && current_ == t && !current_blocked_;
  }
  [[nodiscard]] bool need_resched() const { return need_resched_; }
  // Fair-class statistics of this CPU, for the metrics.
  using FairStats = GuestFairStats;
  [[nodiscard]] const FairStats& fair_stats() const { return fair_.stats(); }
  // Another CPU wrote memory this one may spin on (a csd_unlock(), the
  // need_resched of a polling idle loop): an open-ended spin in guest mode
  // ends now, and one a VM exit cut short is re-checked when it resumes.
  void remote_store();
  // Queue kernel work to run after the current step (interrupt context:
  // inside the handler).
  void queue_work(std::unique_ptr<KernelWork> w);
  // local_irq_save() / local_irq_restore() around a task's kernel section
  // (spin_lock_irqsave() and friends): interrupts wait in the IRR meanwhile.
  // The restore takes a vector that became pending (STI with a vector in
  // the vIRR: virtual-interrupt delivery with APICv; without it, the step
  // it returns, KVM's INTERRUPT_WINDOW exit); the task then returns
  // k.step(now).
  void local_irq_save() { irqs_off_ = true; }
  std::optional<GuestStep> local_irq_restore(Tsc now);
  // Queue a step the kernel runs before returning to the current task.
  void push_kernel_step(const GuestStep& s) { kq_.push_back(s); }

  [[nodiscard]] std::uint64_t guest_tsc(Tsc host_now) const { return vcpu_.guest_tsc(host_now); }
  [[nodiscard]] std::uint64_t guest_ns(Tsc host_now) const;  // guest clock, ns
  [[nodiscard]] std::uint64_t ns_to_guest_tsc_ceil(std::uint64_t ns) const;
  [[nodiscard]] Tsc guest_cycles_to_host(std::uint64_t guest_cycles) const;
  Vcpu& vcpu() { return vcpu_; }
  Rng& rng() { return rng_; }
  const GuestCosts& costs() const { return costs_; }
  [[nodiscard]] const GuestIdleStats& idle_stats() const { return idle_.stats(); }
  // The subsystems, for tests and views.
  [[nodiscard]] const GuestTick& tick() const { return tick_; }
  [[nodiscard]] const GuestClockevent& clockevent() const { return clockevent_; }
  [[nodiscard]] const GuestIrq& irq() const { return irq_; }
  [[nodiscard]] unsigned haltpoll_limit_ns() const { return idle_.haltpoll_limit_ns(); }
  // The idle loop is in the haltpoll governor's poll state (TIF_POLLING_NRFLAG set).
  [[nodiscard]] bool haltpoll_polling() const { return idle_.haltpoll_polling(); }

 private:
  friend class GuestFair;        // rq_of(cfs_rq)
  friend class GuestClockevent;  // its reprogram steps, costs and era switch
  friend class GuestTick;        // the tick's softirq and scheduler_tick()
  friend class GuestIdle;        // the tick, the guest clock and the idle costs
  friend class GuestSmpCalls;    // the era switch, the target CPUs' call queues
  friend class GuestIrq;         // the handler bodies' costs, timers and idle state
  // Where a step queued now runs: in the interrupt handler, or before the
  // task continues.
  StepQueue& context_steps() { return irq_.active() ? irq_.steps() : kq_; }
  GuestStep irq_return(Tsc now);  // after irq_exit()
  GuestTask* pick_next(Tsc now);
  void wake_up_local(GuestTask* t);
  void enqueue_woken(GuestTask* t);
  // The remote half of try_to_wake_up() (ttwu_do_activate + resched_curr):
  // true if this CPU needs a RESCHEDULE_VECTOR IPI.
  bool ttwu_remote_enqueue(GuestTask* t);
  // The handler body of an SMP vector (guest_smp.cpp); nullopt: none.
  std::optional<GuestStep> ipi_handler(std::uint8_t vector);
  class RemoteWake;
  void queue_remote_wake(GuestTask* t);

  Vcpu& vcpu_;
  GuestCosts costs_;
  GuestConfig cfg_;
  std::uint64_t guest_tsc_khz_;
  Rng rng_;
  GuestTick tick_{*this, cfg_, guest_tsc_khz_};  // the tick and the watchdogs

  GuestTask* current_ = nullptr;  // nullptr = idle task
  std::deque<GuestTask*> runqueue_;
  bool need_resched_ = false;
  GuestFair fair_{*this};  // the cfs_rq of this CPU (guest_fair.h)
  StepQueue kq_;           // kernel work before the task continues
  bool current_blocked_ = false;
  GuestStep last_;    // the step in flight
  GuestStep resume_;  // the task-level step a VM exit cut short
  bool has_resume_ = false;

  bool irqs_off_ = false;  // RFLAGS.IF clear in task context (local_irq_save)
  GuestIrq irq_{*this};    // interrupt context: entry, handler, irq_exit()

  // SMP state.
  std::shared_ptr<GuestSmp> smp_;
  int cpu_ = 0;
  std::deque<std::unique_ptr<KernelWork>> work_;
  bool spin_recheck_ = false;
  GuestSmpCalls smp_calls_{*this};  // kernel/smp.c: this CPU's csds and call queue

  GuestIdle idle_{*this, cfg_};  // the idle task and cpuidle-haltpoll

  GuestClockevent clockevent_{*this};  // the hrtimer queue and the TSC-deadline device
};

}  // namespace kvmsim
