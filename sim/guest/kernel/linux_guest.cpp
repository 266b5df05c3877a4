#include "sim/guest/kernel/linux_guest.h"

#include <fmt/format.h>

#include "sim/guest/kernel/guest_smp.h"
#include "sim/vmx/vm.h"
#include "sim/workload.h"

namespace kvmsim {

GuestCosts guest_costs(const ParamSet& p, const TscClock& clk) {
  const auto S = [&](const char* key) { return p.dist(key).bind(clk); };
  GuestCosts gc;
  gc.irq_entry = S("cost.guest.irq_entry");
  gc.hrtimer_interrupt = S("cost.guest.hrtimer_interrupt");
  gc.hrtimer_wakeup = S("cost.guest.hrtimer_wakeup");
  gc.clockevent_program = S("cost.guest.clockevent_program");
  gc.irq_exit = S("cost.guest.irq_exit");
  gc.context_switch = S("cost.guest.context_switch");
  gc.tick = S("cost.guest.tick");
  gc.nohz_stop = S("cost.guest.nohz_stop");
  gc.nohz_restart = S("cost.guest.nohz_restart");
  gc.watchdog = S("cost.guest.watchdog");
  gc.clocksource_watchdog = S("cost.guest.clocksource_watchdog");
  gc.timer_softirq = S("cost.guest.timer_softirq");
  gc.ttwu_remote = S("cost.guest.ttwu_remote");
  gc.resched_ipi_handler = S("cost.guest.resched_ipi_handler");
  gc.smp_call_function = S("cost.guest.smp_call_function");
  gc.call_function_handler = S("cost.guest.call_function_handler");
  gc.cacheline_transfer = S("cost.guest.cacheline_transfer");
  return gc;
}

GuestConfig guest_config(const ParamSet& p) {
  GuestConfig g;
  g.hz = static_cast<unsigned>(p.i("guest.hz"));
  g.idle_hlt = p.s("guest.idle") == "hlt";
  g.watchdog_s = static_cast<unsigned>(p.i("guest.watchdog_s"));
  g.clocksource_watchdog_ms = static_cast<unsigned>(p.i("guest.clocksource_watchdog_ms"));
  g.nohz = p.b("guest.nohz");
  g.haltpoll.max_ns = static_cast<unsigned>(p.i("guest.haltpoll_ns"));
  g.haltpoll.grow = static_cast<unsigned>(p.i("guest.haltpoll_grow"));
  g.haltpoll.grow_start = static_cast<unsigned>(p.i("guest.haltpoll_grow_start"));
  g.haltpoll.shrink = static_cast<unsigned>(p.i("guest.haltpoll_shrink"));
  if (g.haltpoll.max_ns && !g.idle_hlt)
    throw ScenarioError(
        fmt::format("{}: key 'guest.haltpoll_ns': cpuidle-haltpoll needs "
                    "guest.idle=hlt (idle=poll bypasses cpuidle)",
                    p.origin("guest.haltpoll_ns")));
  g.idle_poll_stops_tick = p.b("guest.idle_poll_stops_tick");
  g.tick_timer_softirq = p.b("guest.tick_timer_softirq");
  // The host's offer is in the CPUID the rule of guest.pv_sched_yield read
  // (sim/guest/kernel/kvm_guest_init.cpp).
  g.pv_sched_yield = p.b("guest.pv_sched_yield");
  g.vcpu_is_preempted = p.b("guest.vcpu_is_preempted");
  g.fair.latency_ns = static_cast<std::uint64_t>(p.i("guest.sched_latency_ns"));
  g.fair.min_granularity_ns = static_cast<std::uint64_t>(p.i("guest.sched_min_granularity_ns"));
  g.fair.wakeup_granularity_ns =
      static_cast<std::uint64_t>(p.i("guest.sched_wakeup_granularity_ns"));
  g.fair.steal_accounting = p.b("guest.sched_steal_accounting");
  const std::string& sd = p.s("guest.clockevent_shutdown");
  g.clockevent_shutdown = sd == "none"             ? GuestConfig::Shutdown::None
                          : sd == "lvtt_deadline0" ? GuestConfig::Shutdown::LvttDeadline0
                                                   : GuestConfig::Shutdown::LvttTmict;
  return g;
}

int workload_vcpu(const ParamSet& p) {
  const auto v = p.i("cyclictest.vcpu");
  if (v >= p.i("vm.vcpus"))
    throw ScenarioError(
        fmt::format("{}: key 'cyclictest.vcpu': vCPU {} does not exist (vm.vcpus = {})",
                    p.origin("cyclictest.vcpu"), v, p.i("vm.vcpus")));
  return static_cast<int>(v);
}

std::vector<std::unique_ptr<GuestKernel>> boot_linux_guests(Machine& machine) {
  const GuestCosts gc = guest_costs(machine.params(), machine.clock());
  const GuestConfig cfg = guest_config(machine.params());
  std::vector<std::unique_ptr<GuestKernel>> guests;
  for (const auto& vm : machine.vms()) {
    // One SMP view per VM; guest CPU n is the VM's vCPU n.
    auto smp = std::make_shared<GuestSmp>();
    int cpu = 0;
    for (const auto& v : vm->vcpus()) {
      guests.push_back(std::make_unique<GuestKernel>(*v, gc, vm->guest_tsc_khz(), cfg));
      // arch_haltpoll_enable(): with cpuidle-haltpoll the guest writes 0 to
      // MSR_KVM_POLL_CONTROL at boot (if KVM_FEATURE_POLL_CONTROL is
      // offered), so kvm_arch_no_poll() turns host halt polling off.
      if (cfg.haltpoll.max_ns && machine.params().b("kvm.poll_control")) v->set_poll_control(false);
      guests.back()->set_smp(smp, cpu++);
      smp->add_cpu(guests.back().get());
      v->set_guest(guests.back().get());
    }
  }
  return guests;
}

void report_guest_idle(const std::vector<std::unique_ptr<GuestKernel>>& guests, Metrics& m) {
  GuestIdleStats s;
  for (const auto& g : guests) s += g->idle_stats();
  if (s.timer_wakeups) {
    m["timer_wakeup.count"] = static_cast<double>(s.timer_wakeups);
    m["timer_wakeup.avg_us"] =
        static_cast<double>(s.timer_wakeup_ns) / 1000.0 / static_cast<double>(s.timer_wakeups);
  }
  if (s.hlt) m["guest.idle.hlt"] = static_cast<double>(s.hlt);
  if (s.haltpoll.polls) {
    m["guest.haltpoll.polls"] = static_cast<double>(s.haltpoll.polls);
    m["guest.haltpoll.hits"] = static_cast<double>(s.haltpoll.poll_hits);
    m["guest.haltpoll.timeouts"] = static_cast<double>(s.haltpoll.poll_timeouts);
    m["guest.haltpoll.poll_s"] = static_cast<double>(s.haltpoll.poll_ns) / 1e9;
    m["guest.haltpoll.grow"] = static_cast<double>(s.haltpoll.grows);
    m["guest.haltpoll.shrink"] = static_cast<double>(s.haltpoll.shrinks);
  }
}

void report_guest_smp(const std::vector<std::unique_ptr<GuestKernel>>& guests, Metrics& m) {
  GuestSmpStats sum;
  const GuestSmp* last = nullptr;
  for (const auto& g : guests)
    if (g->smp() && g->smp() != last) {
      last = g->smp();
      sum += last->stats();
    }
  GuestSmp::report_stats(sum, m);
  // The guest CFS's preemptions of SCHED_NORMAL tasks (only where some ran).
  GuestKernel::FairStats f;
  for (const auto& g : guests) f += g->fair_stats();
  if (f.tick_preemptions + f.wakeup_preemptions + f.switches > 0) {
    m["guest.sched.tick_preemptions"] = static_cast<double>(f.tick_preemptions);
    m["guest.sched.wakeup_preemptions"] = static_cast<double>(f.wakeup_preemptions);
    m["guest.sched.fair_switches"] = static_cast<double>(f.switches);
  }
}

}  // namespace kvmsim
