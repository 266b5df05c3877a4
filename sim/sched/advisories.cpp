// Advisories of the host scheduler (sim/core/advisory.h): vCPU threads that
// share a pCPU nothing preempts on, and a latency tail that is a scheduler
// slice rather than the timer path under study.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/advisory.h"
#include "sim/sched/host.h"
#include "sim/sched/host_sched.h"

namespace kvmsim {
namespace {

// The pCPUs on which more vCPU threads may run than there are pCPUs for them
// (as System places them: vm.pinning, else vm.affinity, else host.isolcpus).
std::vector<int> shared_pcpus(const ParamSet& p) {
  const auto nvcpus = static_cast<std::size_t>(p.i("vm.count") * p.i("vm.vcpus"));
  std::vector<int> out;
  const auto& pin = p.ints("vm.pinning");
  const auto& aff = p.ints("vm.affinity");
  if (!pin.empty()) {
    std::map<int, int> per_cpu;
    for (std::size_t i = 0; i < std::min(nvcpus, pin.size()); ++i)
      ++per_cpu[static_cast<int>(pin[i])];
    for (const auto& [cpu, n] : per_cpu)
      if (n > 1) out.push_back(cpu);
  } else if (!aff.empty()) {
    std::vector<int> set;
    set.reserve(aff.size());
    for (auto c : aff) set.push_back(static_cast<int>(c));
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    if (nvcpus > set.size()) out = set;
  }
  return out;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ", ") + std::to_string(c);
  return s;
}

// check_preempt_tick() is the only preemption of a vCPU thread that does not
// sleep: on a pCPU ticking at 1 Hz (the nohz_full residual) a CPU-bound vCPU
// keeps it for up to a second.
void shared_pcpu_without_tick(const ParamSet& p, const Metrics& /*m*/, std::vector<Advisory>& out) {
  std::vector<int> slow;
  std::int64_t hz = 0;
  for (int c : shared_pcpus(p)) {
    const std::int64_t t = Host::tick_hz_of(p, c);
    if (t <= 1) {
      slow.push_back(c);
      hz = t;
    }
  }
  if (slow.empty()) return;
  out.push_back(
      {"host.tick_hz",
       fmt::format("vCPU threads share pCPU {} whose host tick is {}: CFS preempts a running "
                   "vCPU thread only at a wake-up or at the tick (check_preempt_tick()), so a "
                   "vCPU that does not halt keeps its pCPU {}; a stock pCPU ticks at CONFIG_HZ "
                   "(host.hz, with host.tick_hz -1, or not in host.isolcpus)",
                   cpu_list(slow), hz == 0 ? "off" : "1 Hz (the nohz_full residual)",
                   hz == 0 ? "until it halts" : "for up to 1 s")});
}

// A latency maximum of the order of a tick period or a CFS period, in a run
// whose vCPUs waited for their pCPUs: the tail is the host scheduler's.
void latency_max_is_a_slice(const ParamSet& p, const Metrics& m, std::vector<Advisory>& out) {
  if (metric_or_zero(m, "vcpu.steal_s") <= 0) return;
  double max_us = 0;
  std::string key;
  for (const char* k : {"cyclictest.max_us", "ipi_pingpong.max_us"})
    if (metric_or_zero(m, k) > max_us) {
      max_us = metric_or_zero(m, k);
      key = k;
    }
  if (key.empty()) return;
  const TscClock clk{static_cast<std::uint64_t>(p.i("platform.tsc_khz"))};
  const int ncpus = static_cast<int>(p.i("platform.sockets") * p.i("platform.cores_per_socket") *
                                     p.i("platform.threads_per_core"));
  const double period_us =
      clk.to_us(static_cast<double>(HostScheduler::tunables_from(p, clk, ncpus).latency));
  double tick_us = 0;
  for (int c : shared_pcpus(p))
    if (const std::int64_t hz = Host::tick_hz_of(p, c); hz > 0)
      tick_us = std::max(tick_us, 1e6 / static_cast<double>(hz));
  const double slice_us = std::min(period_us, tick_us > 0 ? tick_us : period_us);
  if (max_us < 0.5 * slice_us) return;
  out.push_back({key, fmt::format("the maximum latency {} = {:.0f} us is a scheduler slice "
                                  "(CFS period {:.0f} us{}): the wake-up waited for the vCPU "
                                  "thread holding its pCPU (vcpu.steal_s = {:.3f} s); the tail "
                                  "measures the host scheduler, not the path under study",
                                  key, max_us, period_us,
                                  tick_us > 0 ? fmt::format(", host tick {:.0f} us", tick_us) : "",
                                  metric_or_zero(m, "vcpu.steal_s"))});
}

// vm.pinning lists one pCPU per vCPU (VM-major); entries beyond vm.count x vm.vcpus place
// nothing. Not an error: lowering vm.vcpus on a scenario with a pinning list is common.
void pinning_entries_unused(const ParamSet& p, const Metrics& /*m*/, std::vector<Advisory>& out) {
  const auto nvcpus = static_cast<std::size_t>(p.i("vm.count") * p.i("vm.vcpus"));
  const auto& pin = p.ints("vm.pinning");
  if (pin.size() <= nvcpus) return;
  std::vector<int> unused;
  for (std::size_t i = nvcpus; i < pin.size(); ++i) unused.push_back(static_cast<int>(pin[i]));
  out.push_back(
      {"vm.pinning",
       fmt::format("{} pCPUs listed for {} vCPU{} (vm.count x vm.vcpus); the "
                   "last {} ({}) place no vCPU",
                   pin.size(), nvcpus, nvcpus == 1 ? "" : "s", unused.size(), cpu_list(unused))});
}

// Host settings that cannot act: the kernel timers' keys while
// host.kernel_timers is off, host.isolation with no pCPU to isolate.
void host_setting_inactive(const ParamSet& p, const Metrics& /*m*/, std::vector<Advisory>& out) {
  if (!p.b("host.kernel_timers")) {
    std::vector<std::string> keys;
    for (const char* k :
         {"host.watchdog_thresh", "host.softlockup_kthread", "host.softlockup_on_nohz_full",
          "host.mce_check_interval_s", "host.tsc_clocksource_watchdog", "cost.host.softlockup",
          "cost.host.mce_poll", "cost.host.clocksource_watchdog"})
      if (p.chosen(k)) keys.emplace_back(k);
    if (!keys.empty())
      out.push_back(
          {keys.front(), fmt::format("{} {} no effect: host.kernel_timers is false, so the host "
                                     "kernel's own per-CPU timers are not modelled (the platform's "
                                     "noise.* rates stand for them); set host.kernel_timers: true",
                                     fmt::join(keys, ", "), keys.size() == 1 ? "has" : "have")});
  }
  if (p.b("host.kernel_timers") && p.chosen("host.softlockup_on_nohz_full") &&
      Host::nohz_full_cpus(p).empty())
    out.push_back({"host.softlockup_on_nohz_full",
                   "host.softlockup_on_nohz_full has no effect: no pCPU is nohz_full "
                   "(host.isolcpus with host.isolation: nohz_full)"});
  if (p.chosen("host.isolation") && p.ints("host.isolcpus").empty())
    out.push_back({"host.isolation",
                   fmt::format("host.isolation = {} has no effect: host.isolcpus lists no pCPU, "
                               "so every pCPU is a stock one",
                               p.s("host.isolation"))});
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_ADVISORY(host_setting_inactive, kvmsim::host_setting_inactive)
KVMSIM_REGISTER_ADVISORY(pinning_entries_unused, kvmsim::pinning_entries_unused)
KVMSIM_REGISTER_ADVISORY(shared_pcpu_without_tick, kvmsim::shared_pcpu_without_tick)
KVMSIM_REGISTER_ADVISORY(latency_max_is_a_slice, kvmsim::latency_max_is_a_slice)
