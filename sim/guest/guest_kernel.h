// A guest Linux kernel on one vCPU: tasks and a run queue, hrtimers on the
// TSC-deadline clockevent (lapic_next_deadline() -> WRMSR 0x6e0), the timer
// interrupt (hrtimer_interrupt() waking sleepers), context switches and the
// idle loop (idle=poll). Its costs are host cycles of guest work.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/core/dist.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

class GuestKernel;

struct GuestCosts {
  Sampler irq_entry;           // IDT entry, irq_enter, local_apic_timer_interrupt
  Sampler hrtimer_interrupt;   // hrtimer_interrupt() bookkeeping per interrupt
  Sampler hrtimer_wakeup;      // hrtimer_wakeup() -> try_to_wake_up() per expired sleeper
  Sampler clockevent_program;  // tick_program_event() .. lapic_next_deadline() before WRMSR
  Sampler irq_exit;            // irq_exit() + iret
  Sampler context_switch;      // __schedule() + context switch
  Sampler tick;                // tick_sched_timer(): update_process_times(), scheduler_tick()
  Sampler nohz_stop;           // tick_nohz_idle_stop_tick() when it stops the tick
  Sampler nohz_restart;        // tick_nohz_idle_exit() -> tick_nohz_restart_sched_tick()
  Sampler watchdog;            // watchdog_timer_fn(): softlockup check
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
};

// A guest hrtimer (expiry in guest TSC cycles; the guest's clocksource).
class GuestHrtimer {
 public:
  virtual ~GuestHrtimer() = default;
  // Runs in the guest timer interrupt; returns extra guest cycles it cost.
  virtual Tsc fn(GuestKernel& k, Tsc now) = 0;
  std::uint64_t expires = 0;
  bool queued = false;
};

// A guest task: a state machine the kernel steps while it is current.
class GuestTask {
 public:
  explicit GuestTask(std::string comm) : comm_(std::move(comm)) {}
  virtual ~GuestTask() = default;
  // Next step of this task (it is current and the kernel has nothing queued).
  virtual GuestStep run(GuestKernel& k, Tsc now) = 0;
  [[nodiscard]] const std::string& comm() const { return comm_; }

 private:
  std::string comm_;
};

class GuestKernel : public GuestVcpu {
 public:
  GuestKernel(Vcpu& vcpu, GuestCosts costs, std::uint64_t guest_tsc_khz, GuestConfig cfg = {});

  // GuestVcpu
  GuestStep step(Tsc now) override;
  void suspend(Tsc remaining) override;
  [[nodiscard]] bool interruptible() const override { return !in_irq_; }
  void deliver_interrupt(std::uint8_t vector, Tsc now) override;

  // Services for tasks.
  void add_task(GuestTask* t);  // becomes runnable
  // hrtimer_start(); queues a clockevent reprogram when it is the earliest.
  void hrtimer_start(GuestHrtimer* t, std::uint64_t expires_guest_tsc);
  // The current task sleeps: schedule() to the next runnable (or idle).
  void block_current();
  // try_to_wake_up(): the task becomes runnable and preempts idle.
  void wake_up(GuestTask* t);
  // Queue a step the kernel runs before returning to the current task.
  void push_kernel_step(const GuestStep& s) { kq_.push_back(s); }

  [[nodiscard]] std::uint64_t guest_tsc(Tsc host_now) const { return vcpu_.guest_tsc(host_now); }
  [[nodiscard]] std::uint64_t guest_ns(Tsc host_now) const;  // guest clock, ns
  [[nodiscard]] std::uint64_t ns_to_guest_tsc_ceil(std::uint64_t ns) const;
  [[nodiscard]] Tsc guest_cycles_to_host(std::uint64_t guest_cycles) const;
  Vcpu& vcpu() { return vcpu_; }
  Rng& rng() { return rng_; }
  const GuestCosts& costs() const { return costs_; }

 private:
  enum class Irq : std::uint8_t { None, Entry, Handler, Exit };
  GuestStep irq_step(Tsc now);
  void program_clockevent();
  GuestTask* pick_next();
  GuestStep idle_step(Tsc now);
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
  std::uint64_t tick_phase_ = 0;  // guest TSC of a tick boundary (boot-time phase)
  bool tick_running_ = false;
  bool tick_started_ = false;
  bool in_hrtirq_ = false;  // hrtimer_interrupt(): no reprogramming from callbacks
  std::uint64_t guest_tsc_khz_;
  Rng rng_;

  GuestTask* current_ = nullptr;  // nullptr = idle task
  std::deque<GuestTask*> runqueue_;
  bool need_resched_ = false;
  std::deque<GuestStep> kq_;  // kernel work before the task continues
  bool current_blocked_ = false;
  GuestStep last_;    // the step in flight
  GuestStep resume_;  // the task-level step a VM exit cut short
  bool has_resume_ = false;
  GuestStep irq_resume_;  // the same inside an interrupt handler
  bool has_irq_resume_ = false;

  bool in_irq_ = false;
  Irq irq_state_ = Irq::None;
  std::uint8_t irq_vector_ = 0;  // the vector being handled
  std::deque<GuestStep> irq_q_;

  std::vector<GuestHrtimer*> timers_;
  std::uint64_t programmed_ = 0;  // TSC deadline written to the LAPIC (0 = none)
};

}  // namespace kvmsim
