#include "sim/trace/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

namespace kvmsim::trace {

void DurationStats::add(double us) {
  if (n == 0 || us < min_us) min_us = us;
  if (n == 0 || us > max_us) max_us = us;
  ++n;
  sum_us += us;
  std::size_t k = 0;
  double hi = 1.0;
  while (k < kBuckets - 1 && us >= hi) {
    hi *= 2.0;
    ++k;
  }
  ++buckets[k];
}

double DurationStats::bucket_lo_us(std::size_t b) {
  return b == 0 ? 0.0 : std::ldexp(1.0, static_cast<int>(b) - 1);
}

double DurationStats::bucket_hi_us(std::size_t b) {
  return b + 1 >= kBuckets ? std::numeric_limits<double>::infinity()
                           : std::ldexp(1.0, static_cast<int>(b));
}

double TraceSummary::span_s() const {
  if (!has_time) return 0.0;
  const auto d = static_cast<double>(last_ts - first_ts);
  return raw_clock ? d / raw_ticks_per_s : d / 1e9;
}

double TraceSummary::rate(std::uint64_t count) const {
  const double span = span_s();
  return span > 0 ? static_cast<double>(count) / span : -1.0;
}

double TraceSummary::lapic_delta_mean() const {
  const std::uint64_t n = lapic_early + lapic_late;
  return n ? lapic_delta_sum / static_cast<double>(n) : 0.0;
}

TraceStats::TraceStats(double raw_ticks_per_s) {
  s_.raw_ticks_per_s = raw_ticks_per_s > 0 ? raw_ticks_per_s : 1e9;
}

namespace {

// The vCPU thread an event belongs to: pid, else cpu, else one shared key.
std::int64_t thread_key(const TraceRecord& r) {
  if (r.pid >= 0) return r.pid;
  if (r.cpu >= 0) return -2 - static_cast<std::int64_t>(r.cpu);
  return -1;
}

void note_line(std::vector<std::pair<std::size_t, std::string>>& first, const TraceRecord& r) {
  if (first.size() < TraceStats::kListedLines) first.emplace_back(r.line_no, r.error);
}

}  // namespace

void TraceStats::add(const TraceRecord& r) {
  ++s_.lines;
  switch (r.kind) {
    case LineKind::Blank:
      ++s_.blank;
      return;
    case LineKind::Comment:
      ++s_.comments;
      return;
    case LineKind::Header:
      ++s_.headers;
      return;
    case LineKind::Continuation:
      ++s_.continuation;
      return;
    case LineKind::Malformed:
      ++s_.malformed;
      note_line(s_.malformed_first, r);
      return;
    case LineKind::Event:
      break;
  }
  ++s_.events;
  ++s_.event_counts[r.event];
  if (!s_.has_time) {
    s_.has_time = true;
    s_.raw_clock = r.raw_clock;
    s_.first_ts = s_.last_ts = r.ts;
  } else {
    if (r.raw_clock != s_.raw_clock) s_.mixed_clock = true;
    s_.first_ts = std::min(s_.first_ts, r.ts);
    s_.last_ts = std::max(s_.last_ts, r.ts);
  }
  if (!r.known_event) {
    ++s_.other_events;
    return;
  }
  ++s_.known_events;
  if (r.bad_payload()) {
    ++s_.bad_payload;
    note_line(s_.bad_payload_first, r);
    return;
  }
  on_event(r);
}

void TraceStats::on_event(const TraceRecord& r) {
  std::visit(
      [this, &r](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, KvmExit>) {
          ++s_.exits[e.reason].count;
          auto [it, inserted] = open_.try_emplace(thread_key(r));
          if (!inserted) ++s_.exits_unpaired;
          it->second.reason = e.reason;
          it->second.ts = r.ts;
        } else if constexpr (std::is_same_v<T, KvmEntry>) {
          const auto it = open_.find(thread_key(r));
          if (it == open_.end()) {
            ++s_.entries_without_exit;
            return;
          }
          const std::int64_t d = r.ts - it->second.ts;
          if (d < 0) {  // out of order: not a service time
            ++s_.exits_unpaired;
          } else {
            const double us = r.raw_clock ? static_cast<double>(d) / s_.raw_ticks_per_s * 1e6
                                          : static_cast<double>(d) / 1e3;
            s_.exits[it->second.reason].service.add(us);
            s_.service_all.add(us);
            ++s_.exits_paired;
          }
          open_.erase(it);
        } else if constexpr (std::is_same_v<T, KvmHvTimerState>) {
          auto& c = s_.hv_timer[e.vcpu_id];
          ++(e.hv_timer != 0 ? c.to_1 : c.to_0);
        } else if constexpr (std::is_same_v<T, KvmHaltPollNs>) {
          auto& v = s_.halt_poll_by_vcpu[e.vcpu];
          ++(e.grow ? s_.halt_poll.grow : s_.halt_poll.shrink);
          ++(e.grow ? v.grow : v.shrink);
          ++s_.halt_poll_values[e.new_ns];
        } else if constexpr (std::is_same_v<T, KvmWaitLapicExpire>) {
          const bool first = s_.lapic_early + s_.lapic_late == 0;
          ++(e.early() ? s_.lapic_early : s_.lapic_late);
          s_.lapic_delta_sum += static_cast<double>(e.delta);
          s_.lapic_delta_min = first ? e.delta : std::min(s_.lapic_delta_min, e.delta);
          s_.lapic_delta_max = first ? e.delta : std::max(s_.lapic_delta_max, e.delta);
        } else if constexpr (std::is_same_v<T, KvmVcpuWakeup>) {
          ++(e.waited ? s_.wakeup_wait : s_.wakeup_poll);
          if (!e.valid) ++s_.wakeup_invalid;
          s_.wakeup_ns_sum += static_cast<double>(e.ns);
        } else if constexpr (std::is_same_v<T, KvmMsr>) {
          ++s_.msrs[{e.write, e.msr}];
        } else if constexpr (std::is_same_v<T, KvmApicAcceptIrq>) {
          ++s_.apic_irq_vectors[e.vec];
        } else if constexpr (std::is_same_v<T, KvmPvTlbFlush>) {
          ++(e.need_flush_tlb ? s_.pv_tlb_flush_true : s_.pv_tlb_flush_false);
        }
        // sched_switch / sched_wakeup: counted by name only.
      },
      r.data);
}

const TraceSummary& TraceStats::finish() {
  if (!finished_) {
    s_.exits_open_at_end += open_.size();
    open_.clear();
    finished_ = true;
  }
  return s_;
}

TraceSummary trace_stats(std::istream& in, double raw_ticks_per_s) {
  TraceStats st(raw_ticks_per_s);
  parse_trace(in, [&st](const TraceRecord& r) { st.add(r); });
  return st.finish();
}

// ---- text -------------------------------------------------------------------

namespace {

std::string rate_text(double r) {
  if (r < 0) return "-";
  return r >= 100 ? fmt::format("{:.1f}", r) : fmt::format("{:.4f}", r);
}

std::string duration_text(double s) {
  if (s >= 1.0) return fmt::format("{:.6f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

std::string ts_text(const TraceSummary& s, std::int64_t ts) {
  if (s.raw_clock) return fmt::format("{}", ts);
  return fmt::format("{}.{:06}", ts / 1000000000, (ts % 1000000000) / 1000);
}

std::string bucket_text(std::size_t b) {
  if (b + 1 >= DurationStats::kBuckets) return fmt::format(">={}", DurationStats::bucket_lo_us(b));
  return fmt::format("[{},{})", DurationStats::bucket_lo_us(b), DurationStats::bucket_hi_us(b));
}

std::string histogram_text(const DurationStats& d) {
  std::string out;
  for (std::size_t b = 0; b < DurationStats::kBuckets; ++b) {
    if (d.buckets[b] == 0) continue;
    out += fmt::format(" {}:{}", bucket_text(b), d.buckets[b]);
  }
  return out;
}

std::string lines_list(const std::vector<std::pair<std::size_t, std::string>>& first,
                       std::uint64_t total) {
  std::string out;
  for (const auto& [line, why] : first) out += fmt::format("{}{}", out.empty() ? "" : ", ", line);
  if (total > first.size()) out += fmt::format(", ... ({} more)", total - first.size());
  return out;
}

}  // namespace

std::string trace_stats_text(const TraceSummary& s, const std::string& source) {
  std::string o = fmt::format("trace-stats: {}\n", source);
  o += fmt::format(
      "lines: {} total; {} events ({} of the known tracepoints, {} other); {} comments, {} "
      "headers, {} blank, {} stack lines; {} malformed\n",
      s.lines, s.events, s.known_events, s.other_events, s.comments, s.headers, s.blank,
      s.continuation, s.malformed);
  if (s.has_time) {
    o += fmt::format("time: {} .. {}{}, span {}{}\n", ts_text(s, s.first_ts), ts_text(s, s.last_ts),
                     s.raw_clock ? " (raw counts)" : " s", duration_text(s.span_s()),
                     s.raw_clock ? fmt::format(" at {:g} counts/s", s.raw_ticks_per_s) : "");
    if (s.mixed_clock)
      o += "warning: both seconds and raw-count timestamps; rates are not meaningful\n";
  }

  if (!s.event_counts.empty()) {
    o += fmt::format("\nevents{:>30} {:>12}\n", "count", "per s");
    for (const auto& [name, n] : s.event_counts)
      o += fmt::format("  {:<28} {:>6} {:>12}\n", name, n, rate_text(s.rate(n)));
  }

  if (!s.exits.empty()) {
    std::uint64_t total = 0;
    for (const auto& [reason, e] : s.exits) total += e.count;
    o += "\nexit reasons (service time: kvm_exit to the next kvm_entry of the same thread)\n";
    o += fmt::format("  {:<22} {:>7} {:>7} {:>12} {:>7} {:>10} {:>10} {:>10}\n", "reason", "count",
                     "%", "per s", "paired", "min us", "avg us", "max us");
    // Most frequent first, as perf kvm stat does.
    std::vector<const std::pair<const std::string, ExitReasonSummary>*> order;
    for (const auto& kv : s.exits) order.push_back(&kv);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
      return a->second.count > b->second.count;
    });
    for (const auto* kv : order) {
      const auto& reason = kv->first;
      const auto& e = kv->second;
      const auto& d = e.service;
      o += fmt::format("  {:<22} {:>7} {:>6.2f}% {:>12} {:>7}", reason, e.count,
                       100.0 * static_cast<double>(e.count) / static_cast<double>(total),
                       rate_text(s.rate(e.count)), d.n);
      if (d.n)
        o += fmt::format(" {:>10.3f} {:>10.3f} {:>10.3f}\n", d.min_us, d.avg_us(), d.max_us);
      else
        o += fmt::format(" {:>10} {:>10} {:>10}\n", "-", "-", "-");
    }
    o += fmt::format("  {:<22} {:>7} {:>6.2f}% {:>12} {:>7}", "total", total, 100.0,
                     rate_text(s.rate(total)), s.service_all.n);
    if (s.service_all.n)
      o += fmt::format(" {:>10.3f} {:>10.3f} {:>10.3f}\n", s.service_all.min_us,
                       s.service_all.avg_us(), s.service_all.max_us);
    else
      o += "\n";
    o += fmt::format(
        "  pairing: {} paired, {} exits followed by another exit, {} exits open at the end, {} "
        "entries without an exit\n",
        s.exits_paired, s.exits_unpaired, s.exits_open_at_end, s.entries_without_exit);
    o += "  service time histogram (us, [lo,hi):count)\n";
    for (const auto* kv : order)
      if (kv->second.service.n)
        o += fmt::format("    {:<22}{}\n", kv->first, histogram_text(kv->second.service));
  }

  if (!s.hv_timer.empty()) {
    o += "\nkvm_hv_timer_state\n";
    for (const auto& [vcpu, c] : s.hv_timer)
      o += fmt::format("  vcpu_id {}: to 1 (hv timer) {}, to 0 (sw timer) {}\n", vcpu, c.to_1,
                       c.to_0);
  }

  if (s.halt_poll.grow + s.halt_poll.shrink > 0) {
    o += fmt::format("\nkvm_halt_poll_ns: {} grow, {} shrink\n", s.halt_poll.grow,
                     s.halt_poll.shrink);
    for (const auto& [vcpu, c] : s.halt_poll_by_vcpu)
      o += fmt::format("  vcpu {}: {} grow, {} shrink\n", vcpu, c.grow, c.shrink);
    o += "  new halt_poll_ns values (ns: times):";
    for (const auto& [v, n] : s.halt_poll_values) o += fmt::format(" {}:{}", v, n);
    o += "\n";
  }

  if (s.lapic_early + s.lapic_late > 0) {
    o += fmt::format(
        "\nkvm_wait_lapic_expire: {} early, {} late, delta mean {:.1f} min {} max {} (guest TSC "
        "cycles)\n",
        s.lapic_early, s.lapic_late, s.lapic_delta_mean(), s.lapic_delta_min, s.lapic_delta_max);
  }

  if (s.wakeup_poll + s.wakeup_wait > 0) {
    o += fmt::format(
        "\nkvm_vcpu_wakeup: {} poll, {} wait, {} polling invalid, mean time {:.0f} ns\n",
        s.wakeup_poll, s.wakeup_wait, s.wakeup_invalid,
        s.wakeup_ns_sum / static_cast<double>(s.wakeup_poll + s.wakeup_wait));
  }

  if (!s.msrs.empty()) {
    o += "\nkvm_msr\n";
    for (const auto& [k, n] : s.msrs)
      o += fmt::format("  msr_{:<5} {:>8x}: {}\n", k.first ? "write" : "read", k.second, n);
  }

  if (!s.apic_irq_vectors.empty()) {
    o += "\nkvm_apic_accept_irq vectors:";
    for (const auto& [vec, n] : s.apic_irq_vectors) o += fmt::format(" {}:{}", vec, n);
    o += "\n";
  }

  if (s.pv_tlb_flush_true + s.pv_tlb_flush_false > 0)
    o += fmt::format("\nkvm_pv_tlb_flush: need_flush_tlb true {}, false {}\n", s.pv_tlb_flush_true,
                     s.pv_tlb_flush_false);

  o += fmt::format("\nmalformed lines: {}", s.malformed);
  if (s.malformed) o += fmt::format(" (line {})", lines_list(s.malformed_first, s.malformed));
  o += "\n";
  for (const auto& [line, why] : s.malformed_first) o += fmt::format("  line {}: {}\n", line, why);
  if (s.bad_payload) {
    o += fmt::format("unreadable payloads of known tracepoints: {} (line {})\n", s.bad_payload,
                     lines_list(s.bad_payload_first, s.bad_payload));
    for (const auto& [line, why] : s.bad_payload_first)
      o += fmt::format("  line {}: {}\n", line, why);
  }
  return o;
}

// ---- JSON -------------------------------------------------------------------
// {
//   "source": str,
//   "lines": {"total", "blank", "comments", "headers", "continuation", "events",
//             "known_events", "other_events", "malformed", "bad_payload"},
//   "malformed":   {"count", "first": [{"line", "why"}]}   (at most 10 listed)
//   "bad_payload": {"count", "first": [{"line", "why"}]}
//   "time": {"clock": "seconds"|"raw"|"mixed"|"none", "first_ts", "last_ts" (ns or counts),
//            "span_s"},
//   "events": {name: {"count", "per_s" (null when the span is 0)}},
//   "exits": {"total", "paired", "unpaired", "open_at_end", "entries_without_exit",
//             "service_us": D, "reasons": {reason: {"count", "per_s", "service_us": D}}},
//       D = {"n", "min", "avg", "max", "histogram": [{"lo_us", "hi_us" (null: open), "count"}]}
//   "hv_timer_state": {vcpu_id: {"to_0", "to_1"}},
//   "halt_poll_ns": {"grow", "shrink", "per_vcpu": {vcpu: {"grow", "shrink"}},
//                    "values": {new_ns: times}},
//   "wait_lapic_expire": {"early", "late", "mean_delta", "min_delta", "max_delta"},
//   "vcpu_wakeup": {"poll", "wait", "invalid", "mean_ns"},
//   "msr": {"msr_write 6e0": count, ...},
//   "apic_accept_irq": {vector: count},
//   "pv_tlb_flush": {"true", "false"}
// }

namespace {

nlohmann::ordered_json rate_json(double r) {
  return r < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r);
}

nlohmann::ordered_json duration_json(const DurationStats& d) {
  nlohmann::ordered_json j;
  j["n"] = d.n;
  j["min"] = d.min_us;
  j["avg"] = d.avg_us();
  j["max"] = d.max_us;
  j["histogram"] = nlohmann::ordered_json::array();
  for (std::size_t b = 0; b < DurationStats::kBuckets; ++b) {
    if (d.buckets[b] == 0) continue;
    const double hi = DurationStats::bucket_hi_us(b);
    j["histogram"].push_back(
        {{"lo_us", DurationStats::bucket_lo_us(b)},
         {"hi_us", std::isinf(hi) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(hi)},
         {"count", d.buckets[b]}});
  }
  return j;
}

nlohmann::ordered_json lines_json(const std::vector<std::pair<std::size_t, std::string>>& first,
                                  std::uint64_t total) {
  nlohmann::ordered_json j;
  j["count"] = total;
  j["first"] = nlohmann::ordered_json::array();
  for (const auto& [line, why] : first) j["first"].push_back({{"line", line}, {"why", why}});
  return j;
}

}  // namespace

nlohmann::ordered_json trace_stats_json(const TraceSummary& s, const std::string& source) {
  using J = nlohmann::ordered_json;
  J j;
  j["source"] = source;
  j["lines"] = {{"total", s.lines},
                {"blank", s.blank},
                {"comments", s.comments},
                {"headers", s.headers},
                {"continuation", s.continuation},
                {"events", s.events},
                {"known_events", s.known_events},
                {"other_events", s.other_events},
                {"malformed", s.malformed},
                {"bad_payload", s.bad_payload}};
  j["malformed"] = lines_json(s.malformed_first, s.malformed);
  j["bad_payload"] = lines_json(s.bad_payload_first, s.bad_payload);
  j["time"] = {{"clock", !s.has_time     ? "none"
                         : s.mixed_clock ? "mixed"
                         : s.raw_clock   ? "raw"
                                         : "seconds"},
               {"first_ts", s.first_ts},
               {"last_ts", s.last_ts},
               {"span_s", s.span_s()}};
  j["events"] = J::object();
  for (const auto& [name, n] : s.event_counts)
    j["events"][name] = {{"count", n}, {"per_s", rate_json(s.rate(n))}};

  std::uint64_t total = 0;
  for (const auto& [reason, e] : s.exits) total += e.count;
  J ex;
  ex["total"] = total;
  ex["paired"] = s.exits_paired;
  ex["unpaired"] = s.exits_unpaired;
  ex["open_at_end"] = s.exits_open_at_end;
  ex["entries_without_exit"] = s.entries_without_exit;
  ex["service_us"] = duration_json(s.service_all);
  ex["reasons"] = J::object();
  for (const auto& [reason, e] : s.exits)
    ex["reasons"][reason] = {{"count", e.count},
                             {"per_s", rate_json(s.rate(e.count))},
                             {"service_us", duration_json(e.service)}};
  j["exits"] = ex;

  j["hv_timer_state"] = J::object();
  for (const auto& [vcpu, c] : s.hv_timer)
    j["hv_timer_state"][std::to_string(vcpu)] = {{"to_0", c.to_0}, {"to_1", c.to_1}};

  J hp;
  hp["grow"] = s.halt_poll.grow;
  hp["shrink"] = s.halt_poll.shrink;
  hp["per_vcpu"] = J::object();
  for (const auto& [vcpu, c] : s.halt_poll_by_vcpu)
    hp["per_vcpu"][std::to_string(vcpu)] = {{"grow", c.grow}, {"shrink", c.shrink}};
  hp["values"] = J::object();
  for (const auto& [v, n] : s.halt_poll_values) hp["values"][std::to_string(v)] = n;
  j["halt_poll_ns"] = hp;

  j["wait_lapic_expire"] = {{"early", s.lapic_early},
                            {"late", s.lapic_late},
                            {"mean_delta", s.lapic_delta_mean()},
                            {"min_delta", s.lapic_delta_min},
                            {"max_delta", s.lapic_delta_max}};
  const std::uint64_t wakeups = s.wakeup_poll + s.wakeup_wait;
  j["vcpu_wakeup"] = {{"poll", s.wakeup_poll},
                      {"wait", s.wakeup_wait},
                      {"invalid", s.wakeup_invalid},
                      {"mean_ns", wakeups ? s.wakeup_ns_sum / static_cast<double>(wakeups) : 0.0}};
  j["msr"] = J::object();
  for (const auto& [k, n] : s.msrs)
    j["msr"][fmt::format("msr_{} {:x}", k.first ? "write" : "read", k.second)] = n;
  j["apic_accept_irq"] = J::object();
  for (const auto& [vec, n] : s.apic_irq_vectors) j["apic_accept_irq"][std::to_string(vec)] = n;
  j["pv_tlb_flush"] = {{"true", s.pv_tlb_flush_true}, {"false", s.pv_tlb_flush_false}};
  return j;
}

}  // namespace kvmsim::trace
