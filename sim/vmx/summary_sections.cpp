// What halt polling and the LAPIC timer's KVM side did in a run, under the
// names of KVM's per-vCPU stats (debugfs kvm/*/halt_*), summed over vCPUs.
#include <fmt/format.h>

#include "sim/core/advisory.h"
#include "sim/core/summary_section.h"

namespace kvmsim {
namespace {

SummarySection halt_polling(const ParamSet& p, const Metrics& m) {
  SummarySection s{"halt polling (KVM's halt_* stats, all vCPUs)", {}};
  const double attempted = metric_or_zero(m, "halt_poll.attempted");
  if (attempted <= 0 && (p.i("kvm.halt_poll_ns") <= 0 || metric_or_zero(m, "vcpu.halts") <= 0))
    return s;
  s.stats = {{"halt_exits", metric_count(m, "vcpu.halts")},
             {"halt_attempted_poll", metric_count(m, "halt_poll.attempted")},
             {"halt_successful_poll", metric_count(m, "halt_poll.successful")},
             {"halt_poll_invalid", metric_count(m, "halt_poll.invalid")},
             {"halt_poll_success_ns", metric_count(m, "halt_poll.success_ns")},
             {"halt_poll_fail_ns", metric_count(m, "halt_poll.fail_ns")},
             {"halt_wait_ns", metric_count(m, "halt_poll.wait_ns")},
             {"window_grow", metric_count(m, "halt_poll.grow")},
             {"window_shrink", metric_count(m, "halt_poll.shrink")}};
  return s;
}

SummarySection timer_path(const ParamSet& /*p*/, const Metrics& m) {
  SummarySection s{"LAPIC timer (KVM side)", {}};
  const double calls = metric_or_zero(m, "lapic.wait_lapic_expire.calls");
  const double fallbacks = metric_or_zero(m, "vmx.hv_timer_fallbacks");
  if (calls <= 0 && fallbacks <= 0) return s;
  s.stats = {
      {"timer_advance_ns", metric_count(m, "lapic.timer_advance_ns")},
      {"wait_lapic_expire", metric_count(m, "lapic.wait_lapic_expire.calls")},
      {"early", metric_count(m, "lapic.wait_lapic_expire.early")},
      {"late", metric_count(m, "lapic.wait_lapic_expire.late")},
      {"spin", fmt::format("{:.3f}ms", metric_or_zero(m, "lapic.wait_lapic_expire.spin_ns") / 1e6)},
      {"hv_timer_fallbacks", metric_count(m, "vmx.hv_timer_fallbacks")}};
  return s;
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_SUMMARY_SECTION(timer_path, 10, kvmsim::timer_path)
KVMSIM_REGISTER_SUMMARY_SECTION(halt_polling, 20, kvmsim::halt_polling)
