// Guest kernel and workloads.
#include "sim/model_params.h"

namespace kvmsim {

void declare_guest_params(ParamRegistry& r) {
  r.declare({"guest.idle", ParamType::String, "poll", "", {}, {}, {"poll"},
             "Guest idle loop: poll (idle=poll, never HLTs)."});
  r.declare({"workload.type", ParamType::String, "cyclictest", "", {}, {}, {"cyclictest"},
             "Guest workload."});
  r.declare({"cyclictest.loops", ParamType::Int, "600000", "count", 1, 1e10, {},
             "cyclictest -l: measurement loops."});
  r.declare({"cyclictest.interval_us", ParamType::Int, "1000", "us", 10, 1e7, {},
             "cyclictest -i: wake-up interval."});
  r.declare({"cyclictest.vcpu", ParamType::Int, "1", "vcpu", 0, 255, {},
             "cyclictest -a: the vCPU the measurement thread runs on (VM 0)."});
  r.declare({"cyclictest.histogram_us", ParamType::Int, "100", "us", 1, 100000, {},
             "cyclictest -h: histogram buckets (1 us each); larger values overflow."});
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
  r.declare({"cost.cyclictest.nanosleep_enter", ParamType::Dist, "1us", "time", {}, {}, {},
             "cyclictest loop bookkeeping, clock_nanosleep() entry, hrtimer_start()."});
  r.declare({"cost.cyclictest.nanosleep_return", ParamType::Dist, "1us", "time", {}, {}, {},
             "Return from clock_nanosleep() to user and clock_gettime() (vDSO)."});
}

}  // namespace kvmsim
