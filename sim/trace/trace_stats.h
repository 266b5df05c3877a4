// Statistics over a parsed trace (trace_parse.h), as `kvmsim trace-stats`
// prints them: line accounting, event counts and rates, exit reasons with the
// exit-to-entry service time, and the timer / halt-polling tracepoints.
//
// Exit service time pairs each kvm_exit with the next kvm_entry of the same
// vCPU thread: keyed by pid, or by cpu when the line has no pid, or one key
// when it has neither. An exit followed by another exit on the same thread
// (lost events) and an exit still open at the end are counted, not paired.
//
// Rates are per second of the trace's span (first to last event timestamp).
// Integer timestamps (raw clocks) are converted with raw_ticks_per_s
// (default 1e9: the ns clocks). Memory is bounded by the number of distinct
// event names, exit reasons, threads and values, not by the trace length.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/trace/trace_parse.h"

namespace kvmsim::trace {

// min/avg/max and a log2 histogram of durations in µs. Bucket 0 is [0, 1) µs,
// bucket k (1..kBuckets-2) is [2^(k-1), 2^k) µs, the last is >= 2^(kBuckets-2) µs.
struct DurationStats {
  static constexpr std::size_t kBuckets = 22;  // the last one starts at 2^20 µs (~1 s)
  std::uint64_t n = 0;
  double min_us = 0, max_us = 0, sum_us = 0;
  std::array<std::uint64_t, kBuckets> buckets{};

  void add(double us);
  [[nodiscard]] double avg_us() const { return n ? sum_us / static_cast<double>(n) : 0.0; }
  static double bucket_lo_us(std::size_t b);
  static double bucket_hi_us(std::size_t b);  // +inf for the last
};

struct ExitReasonSummary {
  std::uint64_t count = 0;
  DurationStats service;  // exits of this reason that were paired with an entry
};

struct HvTimerCounts {
  std::uint64_t to_0 = 0, to_1 = 0;
};

struct HaltPollCounts {
  std::uint64_t grow = 0, shrink = 0;
};

struct TraceSummary {
  // Lines.
  std::uint64_t lines = 0, blank = 0, comments = 0, headers = 0, continuation = 0;
  std::uint64_t events = 0;        // framing understood
  std::uint64_t known_events = 0;  // of those, the tracepoints trace_format.h lists
  std::uint64_t other_events = 0;  // the rest (kvm_cr, kvmmmu_*, sched_stat_runtime, ...)
  std::uint64_t malformed = 0;     // framing not understood
  std::vector<std::pair<std::size_t, std::string>> malformed_first;  // line, why
  std::uint64_t bad_payload = 0;  // listed tracepoint, payload not understood
  std::vector<std::pair<std::size_t, std::string>> bad_payload_first;

  // Time.
  bool has_time = false;
  bool raw_clock = false;    // integer timestamps (counts, not seconds)
  bool mixed_clock = false;  // both kinds in one file (span then meaningless)
  std::int64_t first_ts = 0, last_ts = 0;
  double raw_ticks_per_s = 1e9;
  [[nodiscard]] double span_s() const;
  // count / span_s(); negative when the span is 0 (no rate).
  [[nodiscard]] double rate(std::uint64_t count) const;

  std::map<std::string, std::uint64_t> event_counts;  // every framed event, by name

  // kvm_exit / kvm_entry.
  std::map<std::string, ExitReasonSummary> exits;
  DurationStats service_all;
  std::uint64_t exits_paired = 0;
  std::uint64_t exits_unpaired = 0;  // followed by another exit on the same thread
  std::uint64_t exits_open_at_end = 0;
  std::uint64_t entries_without_exit = 0;  // e.g. the first entry of each thread

  std::map<unsigned, HvTimerCounts> hv_timer;  // by vcpu_id

  HaltPollCounts halt_poll;
  std::map<unsigned, HaltPollCounts> halt_poll_by_vcpu;
  std::map<unsigned, std::uint64_t> halt_poll_values;  // new halt_poll_ns value -> times seen

  std::uint64_t lapic_early = 0, lapic_late = 0;
  double lapic_delta_sum = 0;
  std::int64_t lapic_delta_min = 0, lapic_delta_max = 0;
  [[nodiscard]] double lapic_delta_mean() const;

  std::uint64_t wakeup_poll = 0, wakeup_wait = 0, wakeup_invalid = 0;
  double wakeup_ns_sum = 0;

  std::map<std::pair<bool, std::uint32_t>, std::uint64_t> msrs;  // (write, msr) -> count
  std::map<unsigned, std::uint64_t> apic_irq_vectors;            // vec -> count
  std::uint64_t pv_tlb_flush_true = 0, pv_tlb_flush_false = 0;
};

class TraceStats {
 public:
  static constexpr std::size_t kListedLines = 10;  // malformed lines listed by number

  explicit TraceStats(double raw_ticks_per_s = 1e9);

  void add(const TraceRecord& r);
  // Closes the pairing (exits still open). Call once, after the last add().
  const TraceSummary& finish();
  [[nodiscard]] const TraceSummary& summary() const { return s_; }

 private:
  struct Open {
    std::string reason;
    std::int64_t ts = 0;
  };
  void on_event(const TraceRecord& r);
  TraceSummary s_;
  std::map<std::int64_t, Open> open_;  // thread key -> pending exit
  bool finished_ = false;
};

// Parses the whole stream and returns the finished statistics.
TraceSummary trace_stats(std::istream& in, double raw_ticks_per_s = 1e9);

// Readable report; `source` names the input in the first line.
std::string trace_stats_text(const TraceSummary& s, const std::string& source);
// The same as JSON (keys documented in trace_stats.cpp). Names taken from the
// file (exit reasons, event names) are not checked for UTF-8: dump with
// error_handler_t::replace when the input is untrusted.
nlohmann::ordered_json trace_stats_json(const TraceSummary& s, const std::string& source);

}  // namespace kvmsim::trace
