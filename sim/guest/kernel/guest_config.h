// What a guest kernel costs and how it is configured: the cost.guest.*
// samplers (host cycles of guest work), the guest.* switches of its era, and
// the idle statistics its idle loop keeps.
#pragma once

#include <cstdint>

#include "sim/core/dist.h"
#include "sim/guest/kernel/haltpoll.h"

namespace kvmsim {

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
  // vcpu_is_preempted() reads the steal-time `preempted` byte
  // (guest.vcpu_is_preempted); false = the native `false`.
  bool vcpu_is_preempted = true;
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

}  // namespace kvmsim
