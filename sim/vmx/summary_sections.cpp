// What halt polling and the LAPIC timer's KVM side did in a run, under the
// names of KVM's per-vCPU stats (debugfs kvm/*/halt_*), summed over vCPUs.
#include <fmt/format.h>

#include "sim/core/advisory.h"
#include "sim/core/summary_section.h"

namespace kvmsim {
namespace {

std::string count(double v) { return fmt::format("{:.0f}", v); }

SummarySection halt_polling(const ParamSet& p, const Metrics& m) {
  SummarySection s{"halt polling (KVM's halt_* stats, all vCPUs)", {}};
  const double attempted = metric_or_zero(m, "halt_poll.attempted");
  if (attempted <= 0 && (p.i("kvm.halt_poll_ns") <= 0 || metric_or_zero(m, "vcpu.halts") <= 0))
    return s;
  const auto ns = [&](const char* k) { return count(metric_or_zero(m, k)); };
  s.stats = {{"halt_exits", count(metric_or_zero(m, "vcpu.halts"))},
             {"halt_attempted_poll", count(attempted)},
             {"halt_successful_poll", count(metric_or_zero(m, "halt_poll.successful"))},
             {"halt_poll_invalid", count(metric_or_zero(m, "halt_poll.invalid"))},
             {"halt_poll_success_ns", ns("halt_poll.success_ns")},
             {"halt_poll_fail_ns", ns("halt_poll.fail_ns")},
             {"halt_wait_ns", ns("halt_poll.wait_ns")},
             {"window_grow", count(metric_or_zero(m, "halt_poll.grow"))},
             {"window_shrink", count(metric_or_zero(m, "halt_poll.shrink"))}};
  return s;
}

SummarySection timer_path(const ParamSet& /*p*/, const Metrics& m) {
  SummarySection s{"LAPIC timer (KVM side)", {}};
  const double calls = metric_or_zero(m, "lapic.wait_lapic_expire.calls");
  const double fallbacks = metric_or_zero(m, "vmx.hv_timer_fallbacks");
  if (calls <= 0 && fallbacks <= 0) return s;
  s.stats = {
      {"timer_advance_ns", count(metric_or_zero(m, "lapic.timer_advance_ns"))},
      {"wait_lapic_expire", count(calls)},
      {"early", count(metric_or_zero(m, "lapic.wait_lapic_expire.early"))},
      {"late", count(metric_or_zero(m, "lapic.wait_lapic_expire.late"))},
      {"spin", fmt::format("{:.3f}ms", metric_or_zero(m, "lapic.wait_lapic_expire.spin_ns") / 1e6)},
      {"hv_timer_fallbacks", count(fallbacks)}};
  return s;
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_SUMMARY_SECTION(timer_path, 10, kvmsim::timer_path)
KVMSIM_REGISTER_SUMMARY_SECTION(halt_polling, 20, kvmsim::halt_polling)
