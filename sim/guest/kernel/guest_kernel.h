// A guest Linux kernel on one vCPU: tasks and a run queue, hrtimers on the
// TSC-deadline clockevent (lapic_next_deadline() -> WRMSR 0x6e0), the timer
// interrupt (hrtimer_interrupt() waking sleepers), context switches and the
// idle loop (idle=poll). Its costs are host cycles of guest work.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/dist.h"
#include "sim/guest/kernel/guest_fair.h"
#include "sim/guest/kernel/haltpoll.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

class GuestKernel;
class GuestSmp;

struct GuestCosts {
  Sampler irq_entry;             // IDT entry, irq_enter, local_apic_timer_interrupt
  Sampler hrtimer_interrupt;     // hrtimer_interrupt() bookkeeping per interrupt
  Sampler hrtimer_wakeup;        // hrtimer_wakeup() -> try_to_wake_up() per expired sleeper
  Sampler clockevent_program;    // tick_program_event() .. lapic_next_deadline() before WRMSR
  Sampler irq_exit;              // irq_exit() + iret
  Sampler context_switch;        // __schedule() + context switch
  Sampler tick;                  // tick_sched_timer(): update_process_times(), scheduler_tick()
  Sampler nohz_stop;             // tick_nohz_idle_stop_tick() when it stops the tick
  Sampler nohz_restart;          // tick_nohz_idle_exit() -> tick_nohz_restart_sched_tick()
  Sampler watchdog;              // watchdog_timer_fn(): softlockup check
  Sampler clocksource_watchdog;  // clocksource_watchdog(): read and compare two clocksources
  Sampler timer_softirq;         // irq_exit() -> __do_softirq() -> run_timer_softirq(), nothing due
  // SMP (sim/guest/kernel/guest_smp.h): the three cost.guest.* below are drawn only
  // by workloads that wake tasks across vCPUs or make cross calls.
  Sampler ttwu_remote;            // try_to_wake_up() onto another vCPU, up to the ICR write
  Sampler resched_ipi_handler;    // smp_reschedule_interrupt() -> scheduler_ipi()
  Sampler smp_call_function;      // smp_call_function_many_cond(): csd setup per target
  Sampler call_function_handler;  // flush_smp_call_function_queue() per csd, without func
  Sampler cacheline_transfer;     // a spinning vCPU sees another vCPU's store
};

struct GuestConfig {
  // CONFIG_HZ of the periodic tick; 0 = no tick on this vCPU (nohz_full with
  // one task, as RT guests run the measuring vCPU).
  unsigned hz = 0;
  // Idle loop: poll (idle=poll: spin, and the tick keeps running) or hlt
  // (default_idle: HLT exit, the vCPU blocks; NO_HZ_IDLE stops the tick when
  // the next timer is more than a tick away, and restarts it on idle exit).
  bool idle_hlt = false;
  // The softlockup watchdog's per-CPU hrtimer (watchdog_thresh * 2 / 5 = 4 s
  // by default); 0 = nowatchdog. It keeps a timer queued at all times, so
  // hrtimer_interrupt() always reprograms the clockevent for a next event.
  unsigned watchdog_s = 0;
  // kernel/time/clocksource.c's clocksource_watchdog() timer, every
  // WATCHDOG_INTERVAL (HZ >> 1 jiffies = 500 ms), not deferrable, while a
  // registered clocksource has CLOCK_SOURCE_MUST_VERIFY (the TSC of a 4.x
  // KVM guest: no X86_FEATURE_TSC_RELIABLE) and a watchdog (kvm-clock)
  // exists; 0 = not running. With one vCPU it stays on vCPU 0 (add_timer_on
  // moves it to the next online CPU each round).
  unsigned clocksource_watchdog_ms = 0;
  // CONFIG_NO_HZ_IDLE active (false: nohz=off, the tick runs in idle too).
  bool nohz = true;
  // cpuidle-haltpoll (sim/guest/kernel/haltpoll.h); max_ns 0 = not loaded.
  HaltpollConfig haltpoll;
  // Guests before v4.17 (guest.idle_poll_stops_tick): the idle=poll loop
  // also runs tick_nohz_idle_enter()/exit(), so it stops the tick in idle
  // when no timer is due before the next tick, and restarts it (one more
  // clockevent write) on idle exit, before the woken task runs.
  bool idle_poll_stops_tick = false;
  // Guests before v4.8 (guest.tick_timer_softirq): run_local_timers()
  // raises TIMER_SOFTIRQ on every tick, timers due or not; from the v4.8
  // timer-wheel rework only when a wheel timer is due.
  bool tick_timer_softirq = false;
  // KVM_FEATURE_PV_SCHED_YIELD (guest v5.2+ on a host that offers it):
  // kvm_smp_send_call_func_ipi() follows a CALL_FUNCTION IPI-many with
  // KVM_HC_SCHED_YIELD to the first target whose vCPU is preempted.
  bool pv_sched_yield = false;
  // lapic_timer_shutdown() when the last timer goes (guest.clockevent_shutdown):
  // nothing (before v4.11: no set_state_oneshot_stopped), mask LVTT and zero
  // TMICT (v4.11..v6.11), or also zero the TSC deadline (v6.12+). After a
  // shutdown, the next timer first re-arms LVTT (lapic_timer_set_oneshot()).
  enum class Shutdown : std::uint8_t { None, LvttTmict, LvttDeadline0 };
  Shutdown clockevent_shutdown = Shutdown::LvttTmict;
  // CFS tunables for Normal tasks, unscaled (kernel/sched/fair.c of v4.x:
  // sysctl_sched_latency 6 ms, min_granularity 0.75 ms, wakeup_granularity
  // 1 ms), multiplied at boot by 1 + ilog2(min(ncpus, 8))
  // (SCHED_TUNABLESCALING_LOG). steal_accounting: rq->clock_task leaves out
  // the steal time the host reports (CONFIG_PARAVIRT_TIME_ACCOUNTING with
  // KVM steal time), so a preempted vCPU's task does not use up its slice.
  struct Fair {
    std::uint64_t latency_ns = 6000000;
    std::uint64_t min_granularity_ns = 750000;
    std::uint64_t wakeup_granularity_ns = 1000000;
    bool steal_accounting = true;
  } fair;
};

// What the idle loop and its timers did, for the metrics.
struct GuestIdleStats {
  std::uint64_t timer_wakeups = 0;    // LAPIC timer interrupts that found the CPU idle
  std::uint64_t timer_wakeup_ns = 0;  // sum of deadline -> hrtimer_interrupt(), ns
  std::uint64_t hlt = 0;              // HLTs executed by the idle loop
  HaltpollStats haltpoll;             // cpuidle-haltpoll
  GuestIdleStats& operator+=(const GuestIdleStats& o) {
    timer_wakeups += o.timer_wakeups;
    timer_wakeup_ns += o.timer_wakeup_ns;
    hlt += o.hlt;
    haltpoll.polls += o.haltpoll.polls;
    haltpoll.poll_hits += o.haltpoll.poll_hits;
    haltpoll.poll_timeouts += o.haltpoll.poll_timeouts;
    haltpoll.poll_ns += o.haltpoll.poll_ns;
    haltpoll.grows += o.haltpoll.grows;
    haltpoll.shrinks += o.haltpoll.shrinks;
    return *this;
  }
};

// A guest hrtimer (expiry in guest TSC cycles; the guest's clocksource).
class GuestHrtimer {
 public:
  virtual ~GuestHrtimer() = default;
  // Runs in the guest timer interrupt; returns extra guest cycles it cost.
  virtual Tsc fn(GuestKernel& k, Tsc now) = 0;
  std::uint64_t expires = 0;
  bool queued = false;
  // A timer-wheel timer (add_timer(), run from TIMER_SOFTIRQ), not an
  // hrtimer: in high-res mode only these keep the idle tick running.
  bool wheel = false;
};

// A guest task: a state machine the kernel steps while it is current.
class GuestTask {
 public:
  explicit GuestTask(std::string comm) : comm_(std::move(comm)) {}
  virtual ~GuestTask() = default;
  // Next step of this task (it is current and the kernel has nothing queued).
  virtual GuestStep run(GuestKernel& k, Tsc now) = 0;
  [[nodiscard]] const std::string& comm() const { return comm_; }

  // sched_setaffinity() to one CPU (vCPU index in the VM); -1 = any CPU.
  int bound_cpu = -1;

  // Scheduling class. Fifo (SCHED_FIFO, the default: cyclictest's RT
  // threads and the single-task workloads) runs until it blocks and a
  // wake-up preempts at once. Normal (SCHED_NORMAL, CFS of v4.x) is
  // time-sliced at the tick, and a wake-up preempts only by more than the
  // wakeup granularity; the guest kernel is non-preemptible
  // (PREEMPT_NONE / VOLUNTARY), so a Normal task is switched out only on its
  // way back to user mode or when it sleeps.
  enum class Policy : std::uint8_t { Fifo, Normal };
  Policy policy = Policy::Fifo;
  [[nodiscard]] bool fair() const { return policy == Policy::Normal; }

 private:
  friend class GuestKernel;
  friend class GuestFair;
  friend class GuestSmp;
  std::string comm_;
  GuestKernel* cpu_ = nullptr;  // task_cpu(): the run queue it is on or last ran on
  bool on_rq_ = false;          // runnable: queued, or current and not blocked
  // struct sched_entity of a Normal task (nice 0), in ns of the guest's
  // rq->clock_task: vruntime, exec_start, sum_exec_runtime and
  // prev_sum_exec_runtime (the sum when it was last picked).
  std::int64_t vruntime_ = 0;
  std::uint64_t exec_start_ = 0, sum_exec_ = 0, prev_sum_exec_ = 0;
  // The user-mode step a preemption switched away from (it runs first when
  // the task is picked again).
  std::optional<GuestStep> pending_;
};

// The function an smp_call_function*() runs on every target, from the
// target's IPI handler (flush_smp_call_function_queue(): csd->func(info)).
struct SmpCallFunc {
  // Its work on `target` (host cycles), drawn when it starts; empty = none.
  std::function<Tsc(GuestKernel& target, Tsc now)> cost;
  // After the work, still in the handler: its effect (e.g. the TLB is flushed).
  std::function<void(GuestKernel& target, Tsc now)> ran;
};

// smp_call_function_many_cond() (kernel/smp.c), the primitive under
// smp_call_function_many / on_each_cpu_mask / on_each_cpu_cond_mask.
struct SmpCall {
  std::vector<int> cpus;  // target CPUs (vCPU index in the VM); the caller is skipped
  SmpCallFunc func;
  bool wait = true;        // csd_lock_wait() until every target ran func
  bool run_local = false;  // SCF_RUN_LOCAL (on_each_cpu_mask): also run func here, IRQs off
  bool single = false;     // smp_call_function_single(): its own csd, one target
  // On this CPU when the call returns (after the last target's csd_unlock()
  // with wait, after the IPIs without); empty = none.
  std::function<void(GuestKernel& self, Tsc now)> done;
};

// Kernel work of several steps (a remote wake-up, a cross call, a handler's
// csd list): run before the task continues, in the context that queued it.
class KernelWork {
 public:
  virtual ~KernelWork() = default;
  // The next step, or nullopt when done.
  virtual std::optional<GuestStep> next(GuestKernel& k, Tsc now) = 0;
};

class GuestKernel : public GuestVcpu {
 public:
  GuestKernel(Vcpu& vcpu, GuestCosts costs, std::uint64_t guest_tsc_khz, GuestConfig cfg = {});
  ~GuestKernel() override;
  GuestKernel(const GuestKernel&) = delete;
  GuestKernel& operator=(const GuestKernel&) = delete;

  // GuestVcpu
  GuestStep step(Tsc now) override;
  void suspend(Tsc remaining) override;
  [[nodiscard]] bool interruptible() const override { return !in_irq_ && !irqs_off_; }
  [[nodiscard]] bool irqs_disabled() const override { return irqs_off_ && !in_irq_; }
  [[nodiscard]] bool in_kernel_mode() const override {
    return in_irq_ || last_.stage != Stage::GuestUser;
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
  // the vIRR: virtual-interrupt delivery, or KVM's interrupt-window exit,
  // whose exit is not modelled); the task then returns k.step(now).
  void local_irq_save() { irqs_off_ = true; }
  void local_irq_restore(Tsc now);
  // Queue a step the kernel runs before returning to the current task.
  void push_kernel_step(const GuestStep& s) { kq_.push_back(s); }

  [[nodiscard]] std::uint64_t guest_tsc(Tsc host_now) const { return vcpu_.guest_tsc(host_now); }
  [[nodiscard]] std::uint64_t guest_ns(Tsc host_now) const;  // guest clock, ns
  [[nodiscard]] std::uint64_t ns_to_guest_tsc_ceil(std::uint64_t ns) const;
  [[nodiscard]] Tsc guest_cycles_to_host(std::uint64_t guest_cycles) const;
  Vcpu& vcpu() { return vcpu_; }
  Rng& rng() { return rng_; }
  const GuestCosts& costs() const { return costs_; }
  [[nodiscard]] const GuestIdleStats& idle_stats() const { return idle_stats_; }
  [[nodiscard]] unsigned haltpoll_limit_ns() const { return haltpoll_.limit_ns(); }
  // The idle loop is in the haltpoll governor's poll state (TIF_POLLING_NRFLAG set).
  [[nodiscard]] bool haltpoll_polling() const { return haltpoll_.polling(); }

 private:
  friend class GuestFair;  // rq_of(cfs_rq)
  enum class Irq : std::uint8_t { None, Entry, Handler, Exit };
  GuestStep irq_step(Tsc now);
  void program_clockevent();
  GuestTask* pick_next(Tsc now);
  GuestStep idle_step(Tsc now);
  GuestStep haltpoll_idle_step(Tsc now);
  // poll_idle() returns at `now`: an event (`hit`) or the limit.
  void haltpoll_done(Tsc now, bool hit) {
    haltpoll_.poll_done(guest_ns(now) - idle_enter_ns_, hit);
  }
  void wake_up_local(GuestTask* t);
  void enqueue_woken(GuestTask* t);
  // The remote half of try_to_wake_up() (ttwu_do_activate + resched_curr):
  // true if this CPU needs a RESCHEDULE_VECTOR IPI.
  bool ttwu_remote_enqueue(GuestTask* t);
  GuestStep irq_handler_ipi(Tsc now);
  class RemoteWake;
  class CrossCall;
  class FlushCallQueue;
  void queue_remote_wake(GuestTask* t);
  // struct __call_single_data: one queued request, locked (CSD_FLAG_LOCK)
  // from csd_lock() on the initiator until the target's csd_unlock().
  struct Csd {
    GuestKernel* owner = nullptr;  // the initiator (who may spin on `locked`)
    SmpCallFunc func;
    bool locked = false;
    bool sync = false;  // CSD_FLAG_SYNCHRONOUS: unlock after func, not before
  };
  void tick_start(Tsc now);  // arm the tick at the next period boundary
  void tick_stop();

  // A kernel's own periodic hrtimer (tick_sched_timer, watchdog_timer_fn):
  // its work, then hrtimer_forward() past now by whole periods.
  class PeriodicTimer : public GuestHrtimer {
   public:
    explicit PeriodicTimer(Sampler GuestCosts::*cost) : cost_(cost) {}
    Tsc fn(GuestKernel& k, Tsc now) override;
    std::uint64_t period = 0;  // guest TSC cycles

   private:
    Sampler GuestCosts::*cost_;
  };
  // A boot-time phase in [0, period) from its own random stream, so paired
  // runs see the same one.
  [[nodiscard]] std::uint64_t boot_phase(const char* timer, std::uint64_t period) const;

  Vcpu& vcpu_;
  GuestCosts costs_;
  GuestConfig cfg_;
  PeriodicTimer tick_{&GuestCosts::tick};
  PeriodicTimer watchdog_{&GuestCosts::watchdog};
  PeriodicTimer cs_watchdog_{&GuestCosts::clocksource_watchdog};
  std::uint64_t tick_phase_ = 0;  // guest TSC of a tick boundary (boot-time phase)
  bool tick_running_ = false;
  bool tick_started_ = false;
  bool in_hrtirq_ = false;  // hrtimer_interrupt(): no reprogramming from callbacks
  std::uint64_t guest_tsc_khz_;
  Rng rng_;

  GuestTask* current_ = nullptr;  // nullptr = idle task
  std::deque<GuestTask*> runqueue_;
  bool need_resched_ = false;
  GuestFair fair_{*this};     // the cfs_rq of this CPU (guest_fair.h)
  std::deque<GuestStep> kq_;  // kernel work before the task continues
  bool current_blocked_ = false;
  GuestStep last_;    // the step in flight
  GuestStep resume_;  // the task-level step a VM exit cut short
  bool has_resume_ = false;
  GuestStep irq_resume_;  // the same inside an interrupt handler
  bool has_irq_resume_ = false;

  bool in_irq_ = false;
  bool irqs_off_ = false;  // RFLAGS.IF clear in task context (local_irq_save)
  Irq irq_state_ = Irq::None;
  std::uint8_t irq_vector_ = 0;  // the vector being handled
  std::deque<GuestStep> irq_q_;

  // SMP state.
  std::shared_ptr<GuestSmp> smp_;
  int cpu_ = 0;
  std::deque<std::unique_ptr<KernelWork>> work_, irq_work_;
  bool spin_recheck_ = false;
  std::deque<Csd*> call_single_queue_;         // csds other CPUs queued for this one
  std::vector<std::unique_ptr<Csd>> cfd_csd_;  // this CPU's per-target csds (cfd_data)
  std::unique_ptr<Csd> csd_data_;              // smp_call_function_single(wait=0)'s csd

  // Idle state: HLT executed and no interrupt since; haltpoll's poll state.
  bool in_hlt_ = false;
  bool timer_from_idle_ = false;  // the timer interrupt being handled found the CPU idle
  bool irq_in_idle_ = false;      // an interrupt ended the HLT; the idle loop re-evaluates the tick
  bool softirq_pending_ = false;  // TIMER_SOFTIRQ raised: run at irq_exit()
  std::uint64_t idle_enter_ns_ = 0;  // guest ns when the HLT / poll began
  GuestIdleStats idle_stats_;
  GuestHaltpoll haltpoll_{cfg_.haltpoll, idle_stats_.haltpoll};

  std::vector<GuestHrtimer*> timers_;
  // TSC deadline written to the LAPIC (0 = none / shut down; kDeadlineFired:
  // it fired, and hrtimer_interrupt() reprograms or shuts the device down).
  static constexpr std::uint64_t kDeadlineFired = ~std::uint64_t{0};
  std::uint64_t programmed_ = 0;
  bool clockevent_stopped_ = false;  // lapic_timer_shutdown() masked LVTT
};

}  // namespace kvmsim
