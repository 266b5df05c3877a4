// format_explanation(): kvmsim explain's text (no SystemC here, so unit
// tests can link it alone).
#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/views/explain.h"
#include "sim/views/stage_info.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim::views {

namespace {

std::string event_text(const ExplainItem& it) {
  switch (it.kind) {
    case ExplainItem::Kind::VmExit:
      return fmt::format("VM exit: {}", exit_reason_name(it.reason));
    case ExplainItem::Kind::VmEntry:
      return "VM entry: the guest runs again";
    case ExplainItem::Kind::MsrWrite:
      if (it.msr == MSR_IA32_TSC_DEADLINE)
        return fmt::format(
            "wrmsr IA32_TSC_DEADLINE = {:#x}: kvm_set_lapic_tscdeadline_msr() "
            "arms the LAPIC timer",
            static_cast<std::uint64_t>(it.value));
      if (it.msr == MSR_X2APIC_EOI) return "wrmsr x2APIC EOI (trapped without APICv)";
      if (it.msr == MSR_X2APIC_ICR)
        return fmt::format("wrmsr x2APIC ICR = {:#x}: kvm_x2apic_icr_write() sends an IPI",
                           static_cast<std::uint64_t>(it.value));
      return fmt::format("wrmsr {:#x} = {:#x}", it.msr, static_cast<std::uint64_t>(it.value));
    case ExplainItem::Kind::WaitLapicExpire:
      return fmt::format("kvm_wait_lapic_expire: guest TSC - deadline = {} cycles ({})", it.value,
                         it.value < 0 ? "early: spin until the deadline" : "late: no spin");
    case ExplainItem::Kind::HvTimerState:
      return it.value ? "kvm_hv_timer_state: the LAPIC timer uses the VMX preemption timer"
                      : "kvm_hv_timer_state: the LAPIC timer uses a host hrtimer";
    case ExplainItem::Kind::ApicAcceptIrq:
      return fmt::format("kvm_apic_accept_irq: vector {} accepted into the IRR", it.value);
    case ExplainItem::Kind::VcpuBlock:
      return "kvm_vcpu_block: the vCPU thread schedules out (the guest halted)";
    case ExplainItem::Kind::VcpuWakeup:
      return fmt::format("kvm_vcpu_wakeup: the vCPU thread runs again after {} ns", it.value);
    case ExplainItem::Kind::SchedSwitch:
      return fmt::format("sched_switch: {} {} -> {}", it.prev_comm,
                         it.value ? "(R: preempted, still runnable)" : "(S: sleeps)", it.comm);
    case ExplainItem::Kind::SchedWakeup:
      return fmt::format("sched_wakeup: {} becomes runnable", it.comm);
    case ExplainItem::Kind::Segment:
      break;
  }
  return {};
}

// Consecutive, back-to-back host_task segments (a host task's slices between ticks) as one
// row; `count` says how many were merged.
struct Row {
  ExplainItem item;
  int count = 1;
};

std::vector<Row> merge_host_task_runs(const std::vector<ExplainItem>& items) {
  std::vector<Row> rows;
  rows.reserve(items.size());
  for (const auto& it : items) {
    if (it.kind == ExplainItem::Kind::Segment && it.stage == Stage::HostTask && !rows.empty()) {
      Row& last = rows.back();
      if (last.item.kind == ExplainItem::Kind::Segment && last.item.stage == Stage::HostTask &&
          last.item.end == it.t) {
        last.item.end = it.end;
        ++last.count;
        continue;
      }
    }
    rows.push_back({it, 1});
  }
  return rows;
}

// When the host scheduler switched on the pCPU: which tasks held it after the deadline,
// and when the measuring vCPU's thread (the task current at the measurement) was off it.
template <class Rel>
std::string pcpu_story(const ExplainCapture& c, const Rel& rel, const std::string& measuring,
                       const std::vector<std::pair<std::string, std::int64_t>>& held,
                       std::int64_t total) {
  std::string out;
  auto o = std::back_inserter(out);
  const auto name = [&](const std::string& comm) {
    return comm.empty() ? std::string("(the task running when the timer was armed)") : comm;
  };
  if (total > 0) {
    fmt::format_to(o, "\nwho held pCPU {} after the deadline (host scheduler):\n", c.pcpu);
    for (const auto& [comm, ns] : held) {
      if (ns <= 0) continue;
      fmt::format_to(o, "  {:<34} {:>12} ns  {:>5.1f}%{}\n", name(comm), ns,
                     100.0 * static_cast<double>(ns) / static_cast<double>(total),
                     comm == measuring ? "  (the measuring vCPU thread)" : "");
    }
  }
  // The last time the measuring thread left the pCPU before the measurement, and its
  // return; a wake-up in between splits sleep from run-queue wait.
  const ExplainItem* out_sw = nullptr;
  const ExplainItem* in_sw = nullptr;
  const ExplainItem* woken = nullptr;
  int others = 0;
  for (const auto& it : c.items) {
    if (it.t > c.measured_at) break;
    if (it.kind == ExplainItem::Kind::SchedSwitch && it.prev_comm == measuring) {
      out_sw = &it;
      in_sw = nullptr;
      woken = nullptr;
      others = 0;
    } else if (out_sw && !in_sw && it.kind == ExplainItem::Kind::SchedSwitch) {
      if (it.comm == measuring) {
        in_sw = &it;
      } else {
        ++others;
      }
    } else if (out_sw && !in_sw && it.kind == ExplainItem::Kind::SchedWakeup &&
               it.comm == measuring) {
      woken = &it;
    }
  }
  if (!out_sw || !in_sw || measuring.empty()) return out;
  const std::int64_t off = rel(in_sw->t) - rel(out_sw->t);
  fmt::format_to(o, "\n{} was off pCPU {} from {:+} to {:+} ns: {} ns", measuring, c.pcpu,
                 rel(out_sw->t), rel(in_sw->t), off);
  if (out_sw->value) {
    fmt::format_to(o, ", preempted while runnable: all of it is steal time for the guest\n");
  } else if (woken) {
    fmt::format_to(o, "; it slept until its wake-up at {:+} ns, then waited {} ns for the pCPU\n",
                   rel(woken->t), rel(in_sw->t) - rel(woken->t));
  } else {
    fmt::format_to(o, "; it slept\n");
  }
  if (others > 0)
    fmt::format_to(o,
                   "the host scheduler switched between other tasks {} time{} before it picked "
                   "{} again\n",
                   others, others == 1 ? "" : "s", measuring);
  return out;
}

}  // namespace

std::string format_explanation(const ExplainCapture& c, const TscClock& clock) {
  std::string out;
  auto o = std::back_inserter(out);
  if (!c.captured) return "no latency sample was captured\n";
  // ns from the deadline, rounded; durations are differences of these, so
  // the rows after the deadline add up exactly to the total.
  auto rel = [&](Tsc t) -> std::int64_t {
    const double cyc = t >= c.deadline ? static_cast<double>(t - c.deadline)
                                       : -static_cast<double>(c.deadline - t);
    return static_cast<std::int64_t>(std::llround(clock.to_ns(cyc)));
  };
  const std::int64_t total = rel(c.measured_at);

  fmt::format_to(o, "latency sample #{} of vCPU {} on pCPU {} (host TSC {} kHz)\n", c.sample,
                 c.vcpu, c.pcpu, clock.tsc_khz);
  fmt::format_to(o, "times are ns from the timer deadline (host TSC {}); negative = before it\n",
                 c.deadline);
  fmt::format_to(o, "  armed    {:>+9}  the guest programs its timer deadline\n", rel(c.armed_at));
  fmt::format_to(o, "  measured {:>+9}  the workload measures {} ns\n\n", total, c.latency_ns);
  fmt::format_to(o, "{:>10} {:>7}  {:<24} {}\n", "start", "dur", "stage", "what it models");

  std::array<std::int64_t, kStageCount> by_stage{};
  std::int64_t sum_after = 0;
  int exits_after = 0;
  bool deadline_shown = false;
  auto show_deadline = [&] {
    if (deadline_shown) return;
    deadline_shown = true;
    fmt::format_to(o, "{:>10} {:>7}  ---------------- the deadline ----------------\n", "+0", "");
  };
  std::string merged_note;
  auto row = [&](Stage s, std::int64_t b, std::int64_t e, const char* note) {
    fmt::format_to(o, "{:>+10} {:>7}  {:<24} {}{}{}\n", b, e - b, stage_name(s),
                   stage_explanation(s), note, merged_note);
  };
  // Who held the pCPU after the deadline, by task (sched_switch's next comm); "" until
  // the first switch: the task that ran when the timer was armed.
  std::string current;
  std::vector<std::pair<std::string, std::int64_t>> held;
  auto hold = [&](std::int64_t ns) {
    auto h =
        std::find_if(held.begin(), held.end(), [&](const auto& x) { return x.first == current; });
    if (h == held.end()) {
      held.emplace_back(current, ns);
    } else {
      h->second += ns;
    }
  };
  bool any_switch = false;
  // Before or after the deadline is decided on the printed (rounded) ns, so
  // that what is shown at +0 counts after it.
  for (const Row& r : merge_host_task_runs(c.items)) {
    const ExplainItem& it = r.item;
    merged_note = r.count > 1 ? fmt::format(" ({} slices)", r.count) : "";
    if (it.kind != ExplainItem::Kind::Segment) {
      if (it.t > c.measured_at) continue;
      const std::int64_t t = rel(it.t);
      if (t >= 0) {
        show_deadline();
        if (it.kind == ExplainItem::Kind::VmExit) ++exits_after;
      }
      if (it.kind == ExplainItem::Kind::SchedSwitch) {
        current = it.comm;
        any_switch = true;
      }
      fmt::format_to(o, "{:>+10} {:>7}  >> {}\n", t, "", event_text(it));
      continue;
    }
    if (it.t >= c.measured_at && it.end > it.t) continue;  // after the measurement
    const std::int64_t b = rel(it.t);
    const std::int64_t e = rel(std::min(it.end, c.measured_at));
    if (e <= 0 && !(b == 0 && deadline_shown)) {
      row(it.stage, b, e, "");
      continue;
    }
    if (b < 0) {  // runs across the deadline: split it
      row(it.stage, b, 0, " (until the deadline)");
      show_deadline();
      row(it.stage, 0, e, " (from the deadline)");
      by_stage[static_cast<std::size_t>(it.stage)] += e;
      sum_after += e;
      hold(e);
      continue;
    }
    show_deadline();
    row(it.stage, b, e, "");
    by_stage[static_cast<std::size_t>(it.stage)] += e - b;
    sum_after += e - b;
    hold(e - b);
  }
  show_deadline();
  fmt::format_to(o,
                 "\ntotal {} ns from the deadline to the measurement ({} VM exit{} on the way)\n",
                 total, exits_after, exits_after == 1 ? "" : "s");
  fmt::format_to(o, "the workload measured {} ns\n", c.latency_ns);
  if (sum_after != total)
    fmt::format_to(o, "note: the segments after the deadline cover {} ns of the {} ns\n", sum_after,
                   total);
  if (any_switch) out += pcpu_story(c, rel, current, held, total);

  if (total > 0) {
    std::array<int, kStageCount> order{};
    for (int i = 0; i < kStageCount; ++i) order[static_cast<std::size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return by_stage[static_cast<std::size_t>(a)] > by_stage[static_cast<std::size_t>(b)];
    });
    fmt::format_to(o, "\nwhere the {} ns went:\n", total);
    for (const int i : order) {
      const std::int64_t v = by_stage[static_cast<std::size_t>(i)];
      if (v <= 0) continue;
      fmt::format_to(o, "  {:<24} {:>7} ns  {:>5.1f}%\n", stage_name(static_cast<Stage>(i)), v,
                     100.0 * static_cast<double>(v) / static_cast<double>(total));
    }
  }
  return out;
}

}  // namespace kvmsim::views
