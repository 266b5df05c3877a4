// Guest kernel and workloads.
#include "sim/model_params.h"
#include "sim/workload.h"

namespace kvmsim {

// One declaration per parameter, one per row: kept compact by hand.
// clang-format off
void declare_guest_params(ParamRegistry& r) {
  r.declare({"guest.kernel", ParamType::String, "6.6", "version", {}, {}, {},
             "Guest kernel version of the Linux guest (e.g. 4.9, 5.4, 6.6): sets the defaults of "
             "the guest-side version switches."});
  r.declare({"guest.idle", ParamType::String, "hlt", "", {}, {}, {"poll", "hlt"},
             "Guest idle loop: hlt (a stock guest's default_idle: HLT exit and the vCPU "
             "thread blocks; the tick stops in idle) or poll (idle=poll, as real-time guests "
             "boot: spins, the tick keeps running)."});
  r.declare({"guest.idle_poll_stops_tick", ParamType::Bool, "false", "bool", {}, {}, {},
             "idle=poll enters through tick_nohz_idle_enter(): the tick stops in idle when no "
             "timer is due before the next tick and restarts on idle exit, one more clockevent "
             "write before the woken task runs (guests before v4.17)."});
  r.declare({"guest.tick_timer_softirq", ParamType::Bool, "false", "bool", {}, {}, {},
             "update_process_times() -> run_local_timers() raises TIMER_SOFTIRQ on every tick, "
             "timers due or not (guests before the v4.8 timer-wheel rework); false = only when a "
             "wheel timer is due. The softirq runs at irq_exit() (cost.guest.timer_softirq)."});
  r.declare({"guest.pv_spinlock", ParamType::Bool, "true", "bool", {}, {}, {},
             "The guest's queued spinlocks are paravirtual (kvm_spinlock_init(), "
             "sim/guest/kernel/spinlock.h): waiters halt after SPIN_THRESHOLD loops and the "
             "unlock kicks them with KVM_HC_KICK_CPU; false = native qspinlock (nopvspin, or a "
             "guest without CONFIG_PARAVIRT_SPINLOCKS). Only workloads with guest spinlocks use "
             "it (ebizzy.lru_lock)."});
  r.declare({"guest.vcpu_is_preempted", ParamType::Bool, "true", "bool", {}, {}, {},
             "The guest's vcpu_is_preempted() is __kvm_vcpu_is_preempted() (the steal-time "
             "`preempted` byte): rwsem spin-on-owner stops spinning on a preempted owner, "
             "pv_wait_early() and PV sched yield see preempted vCPUs; false = the native "
             "`false`."});
  r.declare({"guest.virt_spin_lock", ParamType::Bool, "true", "bool", {}, {}, {},
             "Without PV spinlocks (guest.pv_spinlock false) the guest's slow path is "
             "virt_spin_lock(), a test-and-set loop (v4.16: on in every guest with "
             "X86_FEATURE_HYPERVISOR); false = the fair queued (MCS) lock of bare metal."});
  r.declare({"guest.pv_spinlock_wait_early_preempted", ParamType::Bool, "false", "bool", {}, {},
             {},
             "pv_wait_early() also halts a queued waiter whose predecessor's vCPU is preempted "
             "(vcpu_is_preempted()), not only one whose predecessor halted: v4.11 "
             "(75437bb304b2) to v5.3; reverted by 89340d0935c9 (2019) after ebizzy -M under "
             "over-commit lost 7-8x with it."});
  r.declare({"guest.zap_page_range_flush_vma", ParamType::Bool, "false", "bool", {}, {}, {},
             "zap_page_range() (madvise(MADV_DONTNEED)) flushes each VMA's range with "
             "flush_tlb_range() before tlb_finish_mmu() flushes again: two remote flushes per "
             "call (4647706ebeee, v4.14 to v4.18; reverted by 50c150f26261 in v4.19)."});
  r.declare({"guest.pv_spinlock_loop_cycles", ParamType::Int, "15", "cycles", 1, 100000, {},
             "Host cycles of one turn of the PV qspinlock's spin loops (a load and cpu_relax(): "
             "PAUSE is ~10 cycles up to Broadwell, ~140 from Skylake per Intel's optimization "
             "manual); SPIN_THRESHOLD (32768) turns make the spin before a waiter halts "
             "(estimate for the pre-Skylake hosts of T4; a Skylake host needs ~150)."});
  r.declare({"guest.clockevent_shutdown", ParamType::String, "lvtt_tmict", "", {}, {},
             {"none", "lvtt_tmict", "lvtt_deadline0"},
             "lapic_timer_shutdown() when the guest's last timer goes: none (the stale TSC "
             "deadline stays armed), lvtt_tmict (mask LVTT, zero TMICT: two x2APIC MSR writes) or "
             "lvtt_deadline0 (also WRMSR TSC_DEADLINE=0); the next timer first unmasks LVTT."});
  r.declare({"guest.hz", ParamType::Int, "0", "Hz", 0, 10000, {},
             "Guest CONFIG_HZ periodic tick (a guest hrtimer on the TSC-deadline clockevent); "
             "0 = none (nohz_full vCPU running one task, as RT guests do)."});
  r.declare({"guest.nohz", ParamType::Bool, "true", "bool", {}, {}, {},
             "CONFIG_NO_HZ_IDLE in effect: the idle loop stops the tick before HLT; false = "
             "nohz=off (the guest.hz tick keeps waking the idle vCPU)."});
  r.declare({"guest.haltpoll_ns", ParamType::Int, "0", "ns", 0, 1e9, {},
             "cpuidle-haltpoll loaded with this guest_halt_poll_ns (the kernel's default 200000); "
             "0 = not loaded. The idle loop polls need_resched before HLT (guest.idle=hlt only), "
             "and the guest disables host polling through MSR_KVM_POLL_CONTROL when "
             "kvm.poll_control is on."});
  r.declare({"guest.haltpoll_grow", ParamType::Int, "2", "factor", 0, 1000, {},
             "guest_halt_poll_grow: poll_limit_ns multiplier after a halt that ended within "
             "guest.haltpoll_ns."});
  r.declare({"guest.haltpoll_grow_start", ParamType::Int, "50000", "ns", 0, 1e9, {},
             "guest_halt_poll_grow_start: the first non-zero poll_limit_ns."});
  r.declare({"guest.haltpoll_shrink", ParamType::Int, "2", "divisor", 0, 1000, {},
             "guest_halt_poll_shrink: poll_limit_ns divisor after a halt longer than "
             "guest.haltpoll_ns (0 = reset to 0)."});
  {
    // The registered workloads (sim/guest/*_workload.cpp) are the choices.
    const auto& reg = WorkloadRegistry::instance();
    std::string doc = "Guest workload:";
    for (const auto& [name, info] : reg.all()) doc += " " + name + " (" + info.doc + ");";
    doc.back() = '.';
    r.declare({"workload.type", ParamType::String, "cyclictest", "", {}, {}, reg.names(), doc});
  }
  r.declare({"tscdeadline_latency.delta", ParamType::Int, "200000", "cycles", 1000, 1e12, {},
             "tscdeadline_latency argv[1]: guest TSC cycles from one interrupt to the next deadline."});
  r.declare({"tscdeadline_latency.size", ParamType::Int, "10000", "count", 1, 1e9, {},
             "tscdeadline_latency argv[2]: samples to record (TABLE_SIZE is 10000 in the test)."});
  r.declare({"tscdeadline_latency.breakmax", ParamType::Int, "0", "cycles", 0, 1e12, {},
             "tscdeadline_latency argv[3]: stop at the first latency above this (0 = never)."});
  r.declare({"tscdeadline_latency.hlt", ParamType::Bool, "false", "bool", {}, {}, {},
             "The main loop executes HLT between interrupts (the test today) instead of "
             "busy-waiting (the variant of the 2016-2019 measurements)."});
  r.declare({"vmexit.tests", ParamType::String, "tscdeadline_immed,tscdeadline", "", {}, {}, {},
             "x86/vmexit tests to run in order, comma-separated: timer tests (tscdeadline, "
             "tscdeadline_immed; 1 vCPU) or IPI tests (ipi, ipi_halt; 2+ vCPUs, the sender is "
             "vCPU 0, the target vCPU 1)."});
  r.declare({"vmexit.goal_cycles", ParamType::Int, "1073741824", "cycles", 1000, 1e13, {},
             "vmexit.c GOAL: iterations double (from 64) until one batch takes this many cycles."});
  r.declare({"cost.kut.irq_delivery", ParamType::Dist, "300cyc", "time", {}, {}, {},
             "kvm-unit-tests: IDT vectoring and the handler stub up to the handler's rdtsc."});
  r.declare({"cost.kut.isr", ParamType::Dist, "100cyc", "time", {}, {}, {},
             "kvm-unit-tests: handler body between rdtsc and its WRMSR / EOI."});
  r.declare({"cost.kut.iret", ParamType::Dist, "150cyc", "time", {}, {}, {},
             "kvm-unit-tests: EOI (virtualized with APICv), stub epilogue and IRET."});
  r.declare({"cost.kut.loop", ParamType::Dist, "50cyc", "time", {}, {}, {},
             "kvm-unit-tests: loop body around the measured instructions (rdtsc, nop, branch)."});
  r.declare({"cost.kut.cacheline_transfer", ParamType::Dist, "150cyc", "time", {}, {}, {},
             "kvm-unit-tests: a spinning CPU sees another CPU's store (ipi_done) once the line "
             "moves over."});
  r.declare({"cost.kut.on_cpu", ParamType::Dist, "80cyc", "time", {}, {}, {},
             "kvm-unit-tests on_cpu(): spin_lock, atomic_inc(active_cpus), the ipi_* stores, "
             "up to the ICR WRMSR; the unlock and return after the spin."});
  r.declare({"cyclictest.loops", ParamType::Int, "600000", "count", 1, 1e10, {},
             "cyclictest -l: measurement loops."});
  r.declare({"cyclictest.interval_us", ParamType::Int, "1000", "us", 10, 1e7, {},
             "cyclictest -i: wake-up interval."});
  r.declare({"cyclictest.vcpu", ParamType::Int, "1", "vcpu", 0, 255, {},
             "cyclictest -a: the vCPU the measurement thread runs on (VM 0)."});
  r.declare({"cyclictest.histogram_us", ParamType::Int, "100", "us", 1, 100000, {},
             "cyclictest -h: histogram buckets (1 us each; 1 ns each with cyclictest.nsecs); "
             "larger values overflow."});
  r.declare({"cyclictest.nsecs", ParamType::Bool, "false", "bool", {}, {}, {},
             "cyclictest -N: latencies in ns instead of whole us (rt-tests: calcdiff_ns(), not "
             "truncated); min/avg/max and the histogram's buckets are then in ns, as cyclictest "
             "prints them, and the metrics are cyclictest.{min,avg,max,p50,p99}_ns."});
  r.declare({"cost.guest.irq_entry", ParamType::Dist, "400ns", "time", {}, {}, {},
             "Guest interrupt entry up to local_apic_timer_interrupt()."});
  r.declare({"cost.guest.hrtimer_interrupt", ParamType::Dist, "500ns", "time", {}, {}, {},
             "Guest hrtimer_interrupt() bookkeeping per interrupt."});
  r.declare({"cost.guest.hrtimer_wakeup", ParamType::Dist, "500ns", "time", {}, {}, {},
             "hrtimer_wakeup() -> try_to_wake_up() of the sleeping task."});
  r.declare({"cost.guest.clockevent_program", ParamType::Dist, "150ns", "time", {}, {}, {},
             "tick_program_event() .. lapic_next_deadline() before the WRMSR."});
  r.declare({"cost.guest.irq_exit", ParamType::Dist, "300ns", "time", {}, {}, {},
             "Guest irq_exit() and return from the interrupt."});
  r.declare({"cost.guest.context_switch", ParamType::Dist, "800ns", "time", {}, {}, {},
             "Guest __schedule() and context switch."});
  r.declare({"guest.sched_latency_ns", ParamType::Int, "6000000", "ns", 100000, 1e9, {},
             "Guest CFS sysctl_sched_latency, unscaled (v4.x default 6 ms), multiplied at boot "
             "by 1 + ilog2(min(vm.vcpus, 8)); SCHED_NORMAL tasks sharing a vCPU (ebizzy threads) "
             "get this period in slices."});
  r.declare({"guest.sched_min_granularity_ns", ParamType::Int, "750000", "ns", 10000, 1e9, {},
             "Guest CFS sysctl_sched_min_granularity, unscaled (0.75 ms): the shortest slice, "
             "and the period grows as nr x this above latency / this tasks."});
  r.declare({"guest.sched_wakeup_granularity_ns", ParamType::Int, "1000000", "ns", 0, 1e9, {},
             "Guest CFS sysctl_sched_wakeup_granularity, unscaled (1 ms): a woken SCHED_NORMAL "
             "task preempts a running one only when its vruntime lags by more than this."});
  r.declare({"guest.sched_steal_accounting", ParamType::Bool, "true", "bool", {}, {}, {},
             "The guest's rq->clock_task leaves out steal time (CONFIG_PARAVIRT_TIME_ACCOUNTING "
             "with KVM steal time): a task's slice counts only time its vCPU ran; false = no-steal-acc "
             "or no steal time."});
  r.declare({"guest.watchdog_s", ParamType::Int, "4", "s", 0, 3600, {},
             "Softlockup watchdog hrtimer period (watchdog_thresh 10 s -> 4 s); 0 = nowatchdog (RT guests)."});
  r.declare({"cost.guest.watchdog", ParamType::Dist, "1us", "time", {}, {}, {},
             "Guest watchdog_timer_fn(): touch the softlockup stamp, wake the watchdog."});
  r.declare({"guest.clocksource_watchdog_ms", ParamType::Int, "0", "ms", 0, 60000, {},
             "clocksource_watchdog() timer period (WATCHDOG_INTERVAL: 500 ms) while the guest "
             "TSC is CLOCK_SOURCE_MUST_VERIFY under kvm-clock (4.x guests); 0 = not running."});
  r.declare({"cost.guest.clocksource_watchdog", ParamType::Dist, "1us", "time", {}, {}, {},
             "Guest clocksource_watchdog(): read the watched clocksource and the watchdog, "
             "compare, re-arm. Estimate."});
  r.declare({"cost.guest.timer_softirq", ParamType::Dist, "400ns", "time", {}, {}, {},
             "irq_exit() -> invoke_softirq() -> __do_softirq() running TIMER_SOFTIRQ with no "
             "timer callback due: softirq accounting, run_timer_softirq() (v4.x: "
             "hrtimer_run_pending(), __run_timers() lock and wheel-index catch-up), "
             "rcu_bh_qs(). Estimate (no sourced figure); a due timer's own work is its cost."});
  r.declare({"cost.guest.tick", ParamType::Dist, "1us", "time", {}, {}, {},
             "Guest tick_sched_timer(): update_process_times(), scheduler_tick()."});
  r.declare({"cost.guest.nohz_stop", ParamType::Dist, "500ns", "time", {}, {}, {},
             "tick_nohz_idle_stop_tick() when it stops the tick (before the clockevent write)."});
  r.declare({"cost.guest.nohz_restart", ParamType::Dist, "400ns", "time", {}, {}, {},
             "tick_nohz_idle_exit() restarting the tick (before the clockevent write)."});
  // Guest SMP (sim/guest/kernel/guest_smp.cpp). The defaults are estimates (no
  // guest-side measurement behind them yet): a few hundred cycles of kernel
  // code each at ~2-3 GHz, in line with the other cost.guest.* values.
  r.declare({"cost.guest.ttwu_remote", ParamType::Dist, "400ns", "time", {}, {}, {},
             "try_to_wake_up() of a task placed on another vCPU (v4.x, shared LLC): "
             "select_task_rq(), the remote rq lock, ttwu_do_activate(), check_preempt_curr(), "
             "resched_curr() up to the x2APIC ICR write (estimate)."});
  r.declare({"cost.guest.resched_ipi_handler", ParamType::Dist, "150ns", "time", {}, {}, {},
             "smp_reschedule_interrupt() -> scheduler_ipi() body between the guest irq entry "
             "and irq_exit() (estimate)."});
  r.declare({"cost.guest.smp_call_function", ParamType::Dist, "100ns", "time", {}, {}, {},
             "smp_call_function_many_cond() / generic_exec_single() per target on the "
             "initiator: csd_lock(), csd->func/info stores, llist_add() to the target's "
             "call_single_queue (the ICR writes are separate exits) (estimate)."});
  r.declare({"cost.guest.call_function_handler", ParamType::Dist, "200ns", "time", {}, {}, {},
             "flush_smp_call_function_queue() per csd in the CALL_FUNCTION(_SINGLE) handler: "
             "llist_del_all(), load func/info, csd_unlock(); the function's own work is the "
             "caller's (estimate)."});
  r.declare({"cost.guest.cacheline_transfer", ParamType::Dist, "60ns", "time", {}, {}, {},
             "A spinning vCPU (csd_lock_wait(), the idle=poll loop) sees another vCPU's store "
             "once the line moves over (estimate; cost.kut.cacheline_transfer is 150 cycles)."});
  // Remote TLB flush (sim/guest/kernel/tlb_flush.cpp), v4.16-v4.17.
  r.declare({"guest.pv_tlb_flush", ParamType::Bool, "false", "bool", {}, {}, {},
             "The guest's flush_tlb_others is kvm_flush_tlb_others() (v4.16+), which leaves "
             "vCPUs whose steal-time area says PREEMPTED to the host (KVM_VCPU_FLUSH_TLB, "
             "flushed in record_steal_time() before their next entry); false = native IPIs to "
             "every target and a wait for all (a guest without the series)."});
  r.declare({"guest.pv_sched_yield", ParamType::Bool, "false", "bool", {}, {}, {},
             "The guest's kvm_smp_send_call_func_ipi() (v5.3+) follows a CALL_FUNCTION "
             "IPI-many with KVM_HC_SCHED_YIELD to the first target whose steal-time area says "
             "PREEMPTED (vcpu_is_preempted())."});
  // Guest rw_semaphore (sim/guest/rwsem.*, v4.16 rwsem-xadd.c): mm->mmap_sem.
  r.declare({"cost.guest.rwsem_slowpath", ParamType::Dist, "150ns", "time", {}, {}, {},
             "rwsem_down_read_failed() / rwsem_down_write_failed() before schedule(), or "
             "rwsem_wake() -> __rwsem_mark_wake() on the releaser: the wait_lock and the "
             "wait_list (estimate); drawn only on contention."});
  r.declare({"guest.rwsem_spin_recheck_ns", ParamType::Int, "2000", "ns", 1, 1e6, {},
             "Model granularity of a writer's optimistic spin (rwsem_spin_on_owner()): the "
             "spinner re-reads sem->owner and the owner's steal-time `preempted` byte after "
             "each stretch of this length (the kernel re-reads them every loop iteration)."});
  r.declare({"cost.guest.flush_tlb_local", ParamType::Dist, "200ns", "time", {}, {}, {},
             "flush_tlb_mm_range() on the initiator: inc_mm_tlb_gen() and the local flush "
             "(a range above tlb_single_page_flush_ceiling, 33 pages, is a full flush) "
             "(estimate)."});
  r.declare({"cost.guest.flush_tlb_func", ParamType::Dist, "300ns", "time", {}, {}, {},
             "flush_tlb_func_remote() -> flush_tlb_func_common() on a target, in the "
             "CALL_FUNCTION handler: the full flush and the tlb_gen update (estimate)."});
  r.declare({"cost.guest.pv_flush_tlb_check", ParamType::Dist, "30ns", "time", {}, {}, {},
             "kvm_flush_tlb_others() per target: READ_ONCE of its steal-time `preempted` "
             "(another vCPU's line) and, if PREEMPTED, the cmpxchg (estimate)."});
  r.declare({"cost.cyclictest.nanosleep_enter", ParamType::Dist, "1us", "time", {}, {}, {},
             "cyclictest loop bookkeeping, clock_nanosleep() entry, hrtimer_start()."});
  r.declare({"cost.cyclictest.nanosleep_return", ParamType::Dist, "1us", "time", {}, {}, {},
             "Return from clock_nanosleep() to user and clock_gettime() (vDSO)."});
}

// clang-format on

// The guest kernels' defaults of the guest-side version switches (guest.kernel).
void declare_guest_eras(ParamRegistry& r) {
  r.set_eras("guest.idle_poll_stops_tick", "guest.kernel",
             {{"3.10", "true",
               "cpu_idle_loop() calls tick_nohz_idle_enter()/exit() around every idle loop, "
               "poll included (v4.9)"},
              {"4.17", "false",
               "v4.17 idle-loop rework (Rafael Wysocki 2018): the polling loop keeps the tick"}});
  r.set_eras("guest.tick_timer_softirq", "guest.kernel",
             {{"3.10", "true", "run_local_timers(): raise_softirq(TIMER_SOFTIRQ) on every tick"},
              {"4.8", "false",
               "v4.8 timer-wheel rework (Thomas Gleixner 2016): raised only when the wheel "
               "base's clk shows a timer due"}});
  r.set_eras("guest.pv_spinlock_wait_early_preempted", "guest.kernel",
             {{"3.10", "false", "pv_wait_early(): only a halted predecessor"},
              {"4.11", "true", "75437bb304b2 locking/pvqspinlock: Don't wait if vCPU is preempted"},
              {"5.4", "false",
               "89340d0935c9 reverts it (2019-09; also in that autumn's stable releases)"}});
  r.set_eras("guest.zap_page_range_flush_vma", "guest.kernel",
             {{"3.10", "false", "zap_page_range(): tlb_finish_mmu() flushes once"},
              {"4.14", "true",
               "4647706ebeee mm: always flush VMA ranges affected by zap_page_range (2017-09)"},
              {"4.19", "false",
               "50c150f26261 reverts it (2018-08): 99baac21e458's mmu_gather flush covers it"}});
  r.set_eras(
      "guest.clockevent_shutdown", "guest.kernel",
      {{"3.10", "none", "no set_state_oneshot_stopped for the LAPIC clockevent"},
       {"4.11", "lvtt_tmict", "v4.11: lapic_timer_shutdown() as the oneshot-stopped state"},
       {"6.12", "lvtt_deadline0", "v6.12: lapic_timer_shutdown() also zeroes TSC_DEADLINE"}});
}

}  // namespace kvmsim
