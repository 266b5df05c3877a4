#include "sim/sched/host_kernel_timers.h"

#include <fmt/format.h>

#include "sim/sched/host.h"
#include "sim/sched/host_tick.h"
#include "sim/sched/pids.h"

namespace kvmsim {
namespace {

// A timer's phase against the run: the kernel armed it at the pCPU's boot.
Tsc boot_phase(const ParamSet& p, const std::string& name, Tsc period) {
  Rng r(static_cast<std::uint64_t>(p.i("sim.seed")), name);
  return static_cast<Tsc>(r.uniform() * static_cast<double>(period));
}

}  // namespace

std::vector<std::unique_ptr<HostTask>> make_kernel_timers(const ParamSet& p, Host& host) {
  std::vector<std::unique_ptr<HostTask>> threads;
  if (!p.b("host.kernel_timers")) return threads;
  const TscClock clk{static_cast<std::uint64_t>(p.i("platform.tsc_khz"))};
  const bool stopper = p.s("host.softlockup_kthread") == "stopper";
  // watchdog_timer_fn() every sample_period = 2 * watchdog_thresh / 5 s.
  const Tsc softlockup_period =
      clk.from_ns(static_cast<double>(p.i("host.watchdog_thresh")) * 2e9 / 5.0);
  const Tsc mce_period = clk.from_ns(static_cast<double>(p.i("host.mce_check_interval_s")) * 1e9);
  // WATCHDOG_INTERVAL (HZ / 2) on the next online CPU in turn.
  const int ncpus = host.topology().cpus();
  const Tsc cs_step = clk.from_ns(0.5e9);
  const Tsc cs_period = cs_step * static_cast<Tsc>(ncpus);
  const Tsc cs_start = boot_phase(p, "clocksource_watchdog.phase", cs_period);
  // b50db7095fe0 (v5.17) qualifies the TSC on platforms of at most 2
  // sockets; an era's false does not reach a larger one.
  const bool cs_watchdog =
      p.b("host.tsc_clocksource_watchdog") ||
      (!p.chosen("host.tsc_clocksource_watchdog") && p.i("platform.sockets") > 2);
  for (Pcpu* cpu : host.pcpus()) {
    const int c = cpu->id();
    const bool on_nohz_full = Host::is_nohz_full(p, c);
    if (softlockup_period > 0 && (!on_nohz_full || p.b("host.softlockup_on_nohz_full"))) {
      // The FIFO / stop-class kthread preempts at once; nice -20 does so
      // in the model's fair-class scheduler.
      threads.push_back(std::make_unique<HostKworker>(
          fmt::format(stopper ? "migration/{}" : "watchdog/{}", c), pids::kKthreadBase + c, -20,
          "watchdog_timer_fn", c, softlockup_period,
          boot_phase(p, fmt::format("pcpu{}.softlockup", c), softlockup_period),
          p.dist("cost.host.softlockup").bind(clk)));
      // Created at boot and asleep since: a wake-up is a sleeper's
      // (place_entity()), not a new task's START_DEBIT.
      threads.back()->se().fresh = false;
      host.add_thread(threads.back().get());
    }
    if (mce_period > 0)
      host.add_timer(c,
                     std::make_unique<PeriodicHostHrtimer>("mce_timer_fn", mce_period,
                                                           p.dist("cost.host.mce_poll").bind(clk)),
                     boot_phase(p, fmt::format("pcpu{}.mce", c), mce_period));
    if (cs_watchdog)
      host.add_timer(
          c,
          std::make_unique<PeriodicHostHrtimer>("clocksource_watchdog", cs_period,
                                                p.dist("cost.host.clocksource_watchdog").bind(clk)),
          (cs_start + cs_step * static_cast<Tsc>(c)) % cs_period);
  }
  return threads;
}

}  // namespace kvmsim
