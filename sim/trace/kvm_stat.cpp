#include "sim/trace/kvm_stat.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace kvmsim::trace {

const std::vector<std::string>& kvm_stat_vmx_exit_reasons(bool updated) {
  // Names as the kernel's VMX_EXIT_REASONS print them in kvm_exit.
  static const std::vector<std::string> legacy = {"EXCEPTION_NMI",
                                                  "EXTERNAL_INTERRUPT",
                                                  "TRIPLE_FAULT",
                                                  "PENDING_INTERRUPT",
                                                  "NMI_WINDOW",
                                                  "TASK_SWITCH",
                                                  "CPUID",
                                                  "HLT",
                                                  "INVLPG",
                                                  "RDPMC",
                                                  "RDTSC",
                                                  "VMCALL",
                                                  "VMCLEAR",
                                                  "VMLAUNCH",
                                                  "VMPTRLD",
                                                  "VMPTRST",
                                                  "VMREAD",
                                                  "VMRESUME",
                                                  "VMWRITE",
                                                  "VMOFF",
                                                  "VMON",
                                                  "CR_ACCESS",
                                                  "DR_ACCESS",
                                                  "IO_INSTRUCTION",
                                                  "MSR_READ",
                                                  "MSR_WRITE",
                                                  "INVALID_STATE",
                                                  "MWAIT_INSTRUCTION",
                                                  "MONITOR_INSTRUCTION",
                                                  "PAUSE_INSTRUCTION",
                                                  "MCE_DURING_VMENTRY",
                                                  "TPR_BELOW_THRESHOLD",
                                                  "APIC_ACCESS",
                                                  "EPT_VIOLATION",
                                                  "EPT_MISCONFIG",
                                                  "WBINVD",
                                                  "XSETBV",
                                                  "APIC_WRITE",
                                                  "INVPCID"};
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = legacy;
    // 7 was renamed INTERRUPT_WINDOW in the kernel (2019); the rest are new.
    std::replace(v.begin(), v.end(), std::string("PENDING_INTERRUPT"),
                 std::string("INTERRUPT_WINDOW"));
    for (const char* r :
         {"INIT_SIGNAL",      "SIPI_SIGNAL", "INVD",    "MSR_LOAD_FAIL", "MONITOR_TRAP_FLAG",
          "EOI_INDUCED",      "GDTR_IDTR",   "LDTR_TR", "INVEPT",        "RDTSCP",
          "PREEMPTION_TIMER", "INVVPID",     "RDRAND",  "VMFUNC",        "ENCLS",
          "RDSEED",           "PML_FULL",    "XSAVES",  "XRSTORS",       "UMWAIT",
          "TPAUSE",           "BUS_LOCK",    "NOTIFY"})
      v.emplace_back(r);
    return v;
  }();
  return updated ? all : legacy;
}

namespace {

// kvm_stat's default sort: (delta, total) descending. Ties (Python's sort
// is stable over dict order, which a trace does not have) go by name.
void sort_events(std::vector<KvmStatEvent>& v) {
  std::sort(v.begin(), v.end(), [](const KvmStatEvent& a, const KvmStatEvent& b) {
    return std::tie(b.delta, b.total, a.name) < std::tie(a.delta, a.total, b.name);
  });
}

std::string cur_text(double delta, double interval_s) {
  // int(round(delta / sleeptime)) if delta else 0 (Python rounds half to
  // even; std::nearbyint under the default rounding mode does the same).
  if (delta == 0) return "0";
  return fmt::format("{}", static_cast<long long>(std::nearbyint(delta / interval_s)));
}

std::string row(const std::string& name, std::uint64_t total, double pct, const std::string& cur) {
  return fmt::format(" {:<40} {:>10}{:>7.1f} {:>8}\n", name, total, pct, cur);
}

}  // namespace

std::string kvm_stat_format(std::vector<KvmStatEvent> events, double interval_s, bool drilldown) {
  std::string o =
      fmt::format(" {:<40} {:>10}{:>7} {:>8}\n", "Event", "Total", "%Total", "CurAvg/s");
  double total = 0;
  double tcur = 0;
  for (const auto& e : events) total += static_cast<double>(e.total);
  sort_events(events);
  bool any = false;
  for (auto& e : events) {
    if (e.total == 0 && e.delta == 0) break;
    any = true;
    tcur += e.delta;
    o += row(e.name, e.total, total > 0 ? 100.0 * static_cast<double>(e.total) / total : 0.0,
             cur_text(e.delta, interval_s));
    if (!drilldown) continue;
    sort_events(e.children);
    for (const auto& c : e.children) {
      if (c.total == 0 && c.delta == 0) continue;
      o += row("  " + c.name, c.total,
               e.total ? 100.0 * static_cast<double>(c.total) / static_cast<double>(e.total) : 0.0,
               cur_text(c.delta, interval_s));
    }
  }
  if (!any) return o + " No matching events reported yet\n";
  const std::string tcur_text =
      tcur != 0 ? fmt::format("{}", static_cast<long long>(std::nearbyint(tcur / interval_s))) : "";
  o += fmt::format(" {:<40} {:>10}        {:>8}\n", "Total", static_cast<std::uint64_t>(total),
                   tcur_text);
  return o;
}

std::vector<KvmStatEvent> kvm_stat_events(const TraceSummary& s, bool updated_reasons) {
  std::vector<KvmStatEvent> v;
  for (const auto& [name, n] : s.event_counts) {
    // kvm_stat opens the tracepoints of events/kvm/ only: kvm_*, not
    // kvmmmu_* (its own system), sched_*, irq_* ...
    if (name.rfind("kvm_", 0) != 0) continue;
    KvmStatEvent e{name, n, static_cast<double>(n), {}};
    if (name == "kvm_exit") {
      const auto& known = kvm_stat_vmx_exit_reasons(updated_reasons);
      for (const auto& [reason, r] : s.exits)
        if (std::find(known.begin(), known.end(), reason) != known.end())
          e.children.push_back({reason, r.count, static_cast<double>(r.count), {}});
    }
    v.push_back(std::move(e));
  }
  return v;
}

std::string kvm_stat_text(const TraceSummary& s, const std::string& source, bool drilldown,
                          bool updated_reasons) {
  const double span = s.span_s();
  if (!(span > 0))
    return fmt::format("kvm_stat view of {}: the trace has no time span, no rate to show\n",
                       source);
  std::string o = fmt::format(
      "kvm statistics - {} ({:.6f} s of trace; CurAvg/s = events / span)\n\n", source, span);
  o += kvm_stat_format(kvm_stat_events(s, updated_reasons), span, drilldown);
  if (drilldown) {
    // kvm_stat has no child event for these reasons: say what the rows miss.
    const auto& known = kvm_stat_vmx_exit_reasons(updated_reasons);
    std::string missing;
    for (const auto& [reason, r] : s.exits)
      if (std::find(known.begin(), known.end(), reason) == known.end())
        missing += fmt::format(" {} {}", reason, r.count);
    if (!missing.empty())
      o += "\n exit reasons kvm_stat has no child event for (counted in kvm_exit only):" + missing +
           "\n";
  }
  return o;
}

}  // namespace kvmsim::trace
