// What the guests' remote TLB flushes did (native IPIs or PV TLB flush):
// flush_tlb_mm_range() calls, their targets, the IPIs KVM_VCPU_FLUSH_TLB
// saved, and the initiators' wait in csd_lock_wait().
#include <fmt/format.h>

#include "sim/core/advisory.h"
#include "sim/core/summary_section.h"

namespace kvmsim {
namespace {

SummarySection tlb_flush(const ParamSet& p, const Metrics& m) {
  SummarySection s{fmt::format("remote TLB flushes ({})",
                               p.b("guest.pv_tlb_flush") ? "PV TLB flush" : "native IPIs"),
                   {}};
  if (metric_or_zero(m, "tlb.flushes") <= 0) return s;
  s.stats = {{"flushes", metric_count(m, "tlb.flushes")},
             {"ipi_flushes", metric_count(m, "tlb.ipi_flushes")},
             {"targets", metric_count(m, "tlb.targets")},
             {"ipi_targets", metric_count(m, "tlb.ipi_targets")},
             {"pv_targets(ipis_saved)", metric_count(m, "tlb.pv_targets")},
             {"wait_avg", fmt::format("{:.1f}us", metric_or_zero(m, "tlb.wait_avg_us"))},
             {"wait_max", fmt::format("{:.0f}us", metric_or_zero(m, "tlb.wait_max_us"))}};
  return s;
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_SUMMARY_SECTION(tlb_flush, 40, kvmsim::tlb_flush)
