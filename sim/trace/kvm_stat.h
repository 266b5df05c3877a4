// The table `kvm_stat` (tools/kvm/kvm_stat/kvm_stat in the kernel tree) shows,
// computed from a trace instead of live perf counters.
//
// kvm_stat's default provider counts every tracepoint of the `kvm` trace
// system (events/kvm/*: all of them are named kvm_*), and, for kvm_exit, one
// child event per exit reason it knows, filtered with `exit_reason == N`.
// Its text UI (Tui.refresh_header / refresh_body) prints
//   ' %-40s %10s%7s %8s' % ('Event', 'Total', '%Total', 'CurAvg/s')
// then one row per event with ' %-40s %10d%7.1f %8s', sorted by the
// default key (the delta of the last interval, then the total; both
// descending), and a 'Total' row: the sum over parent events and the rounded
// sum of their deltas per second. %Total is against that sum; a child row
// (shown after pressing 'x', indented by two spaces under its parent) is
// against its parent's total. CurAvg/s is round(delta / interval).
//
// From a whole trace, "the last interval" is the trace's span: delta =
// total and CurAvg/s = total / span, i.e. the average rate of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace/trace_stats.h"

namespace kvmsim::trace {

struct KvmStatEvent {
  std::string name;                    // tracepoint, or exit reason for a child
  std::uint64_t total = 0;             // count
  double delta = 0;                    // count in the last interval
  std::vector<KvmStatEvent> children;  // kvm_exit's per-reason events
};

// The exit reasons kvm_stat creates child events for on VMX
// (VMX_EXIT_REASONS in kvm_stat). The list of the tree up to 2022 stops at
// INVPCID and has no PREEMPTION_TIMER (52) or EOI_INDUCED: exits of such
// reasons count in kvm_exit but have no row. `updated` is the list of the
// November 2022 patch "tools/kvm_stat: update exit reasons for
// vmx/svm/aarch64/userspace" (every VMX reason up to NOTIFY), for a
// kvm_stat that carries it.
const std::vector<std::string>& kvm_stat_vmx_exit_reasons(bool updated = false);

// kvm_stat's table for these events over `interval_s` seconds; children are
// printed when `drilldown` is set (kvm_stat's 'x'). Events with total and
// delta 0 are not printed (kvm_stat stops at the first one).
std::string kvm_stat_format(std::vector<KvmStatEvent> events, double interval_s, bool drilldown);

// The events of a trace as kvm_stat would have counted them: every kvm_*
// event, and per-reason children of kvm_exit for the reasons kvm_stat knows.
// delta = total (the interval is the trace's span).
std::vector<KvmStatEvent> kvm_stat_events(const TraceSummary& s, bool updated_reasons = false);

// kvm_stat_format(kvm_stat_events(s), s.span_s(), drilldown), with a header
// naming the source and the span; an error text when the trace has no span.
std::string kvm_stat_text(const TraceSummary& s, const std::string& source, bool drilldown,
                          bool updated_reasons = false);

}  // namespace kvmsim::trace
