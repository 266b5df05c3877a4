// What the host scheduler did when vCPU threads competed for pCPUs: the
// counters of /proc/schedstat and each vCPU thread's /proc/<pid>/schedstat
// (run time, run delay = steal).
#include <string>

#include <fmt/format.h>

#include "sim/core/advisory.h"
#include "sim/core/summary_section.h"

namespace kvmsim {
namespace {

SummarySection overcommit(const ParamSet& p, const Metrics& m) {
  SummarySection s{"host scheduler (vCPU threads competing for pCPUs)", {}};
  const double preempt = metric_or_zero(m, "vcpu.preemptions");
  const double wake = metric_or_zero(m, "host.sched.wakeup_preemptions");
  const double tick = metric_or_zero(m, "host.sched.tick_preemptions");
  if (preempt + wake + tick <= 0) return s;
  s.stats = {{"context_switches", metric_count(m, "host.sched.context_switches")},
             {"wakeup_preemptions", metric_count(m, "host.sched.wakeup_preemptions")},
             {"tick_preemptions", metric_count(m, "host.sched.tick_preemptions")},
             {"migrations", metric_count(m, "host.sched.migrations")},
             {"vcpu_preemptions", metric_count(m, "vcpu.preemptions")},
             {"steal_total", fmt::format("{:.3f}s", metric_or_zero(m, "vcpu.steal_s"))}};
  // Per vCPU thread (run/steal), for a readable number of them.
  const std::int64_t nvcpus = p.i("vm.count") * p.i("vm.vcpus");
  if (nvcpus <= 16)
    for (std::int64_t v = 0; v < nvcpus; ++v) {
      const std::string k = fmt::format("vcpu.{}.", v);
      s.stats.emplace_back(fmt::format("vcpu{}_run/steal", v),
                           fmt::format("{:.3f}/{:.3f}s", metric_or_zero(m, k + "run_s"),
                                       metric_or_zero(m, k + "steal_s")));
    }
  return s;
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_SUMMARY_SECTION(overcommit, 30, kvmsim::overcommit)
