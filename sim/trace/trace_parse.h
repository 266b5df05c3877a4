// A tolerant reader of ftrace text: `trace-cmd report` output, the raw
// tracefs `trace` file, and `perf script` output of tracepoints.
//
// Line framings understood (one regex-free scan per line):
//   <comm>-<pid> [<cpu>] [<flags>] <timestamp>: <event>: <payload>   ftrace, trace-cmd report
//   <comm> <pid>[/<tid>] [<cpu>] <timestamp>: <sys>:<event>: <payload>  perf script
//   <comm>-<pid> <cpu><flags> <timestamp>: <event>: <payload>       trace-cmd report -l
//   <timestamp>: <event>: <payload>                                  no task or cpu at all
// comm may contain spaces ("CPU 0/KVM"); the flags column (`d..2.`, `dNh.`)
// is optional; a `(<tgid>)` column before the cpu and a `(+<delta>)` column
// after the timestamp are skipped. Timestamps are seconds with a fraction
// (stored as ns) or a raw integer count (trace_clock=x86-tsc, counter, or ns
// clocks; stored as is, with raw_clock set). Event names lose a `kvm:`-style
// system prefix. Extra trailing payload fields are tolerated.
//
// Not events, and not errors: blank lines, `#` comments, trace-cmd headers
// (`cpus=N`, `version = N`, `CPU N is empty`, `CPU:N [EVENTS DROPPED]`) and
// stack-trace continuation lines (`=> func (addr)`). Anything else that does
// not fit the framing is Malformed, with the reason. Nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <string_view>

#include "sim/trace/trace_format.h"

namespace kvmsim::trace {

enum class LineKind {
  Blank,
  Comment,
  Header,        // cpus=N, version = N, CPU N is empty, CPU:N [... EVENTS DROPPED]
  Continuation,  // "=> function (address)" lines of a stack trace
  Event,         // framing understood (see `data` and `error` for the payload)
  Malformed,     // framing not understood; `error` says why
};

struct TraceRecord {
  LineKind kind = LineKind::Malformed;
  std::size_t line_no = 0;  // 1-based
  // Framing (Event only). pid and cpu are -1 when the line has none.
  std::string comm;
  int pid = -1;
  int cpu = -1;
  std::string flags;
  std::int64_t ts = 0;     // ns, or the raw count when raw_clock
  bool raw_clock = false;  // the timestamp was an integer count, not seconds
  std::string system;      // "kvm" in perf's "kvm:kvm_msr"; usually ""
  std::string event;       // "kvm_exit"
  std::string payload;     // text after "<event>:", trimmed
  // The payload, for the tracepoints trace_format.h lists; monostate for
  // other events and for a listed event whose payload could not be read.
  TraceEventData data;
  // True when `event` is one of the listed tracepoints.
  bool known_event = false;
  // Malformed: why. Event: non-empty when a listed event's payload was not
  // understood (the line's framing is still good).
  std::string error;

  [[nodiscard]] bool bad_payload() const { return kind == LineKind::Event && !error.empty(); }
};

// Parses one line (without its '\n'; a trailing '\r' is ignored).
TraceRecord parse_trace_line(std::string_view line, std::size_t line_no);

// Parses only a payload, by event name (no system prefix). Returns monostate
// and sets `error` when the event is listed but the payload does not fit, or
// monostate with empty `error` when the event is not listed.
TraceEventData parse_payload(std::string_view event, std::string_view payload, std::string& error);

// Whether `event` is one of the tracepoints trace_format.h lists.
bool is_known_event(std::string_view event);

// Reads `in` to the end, one line at a time (memory bounded by the longest
// line), and calls `sink` for every line. Returns the number of lines.
std::size_t parse_trace(std::istream& in, const std::function<void(const TraceRecord&)>& sink);

}  // namespace kvmsim::trace
