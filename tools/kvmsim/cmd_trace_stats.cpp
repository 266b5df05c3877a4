// kvmsim trace-stats FILE [--json] [--raw-clock-hz HZ] [--kvm-stat [--drilldown]]
// Reads a trace-cmd report / ftrace `trace` / perf script text file and prints
// exit-reason counts and rates, exit-to-entry service times, event counts,
// hv-timer, halt-polling and timer-advance statistics, and the line numbers of
// lines it could not read. Exit code 0 once the file was read (malformed lines
// included), 2 when it cannot be opened, is a directory or binary, or has no
// event line at all. FILE "-" reads stdin. --kvm-stat prints the table
// kvm_stat shows instead (sim/trace/kvm_stat.h), --drilldown with the
// per-exit-reason rows of its 'x' key.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "sim/trace/kvm_stat.h"
#include "sim/trace/trace_stats.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {

namespace {

struct TraceStatsOptions {
  std::string file;
  bool json = false;
  bool kvm_stat = false;
  bool drilldown = false;
  std::string kvm_stat_reasons = "legacy";
  double raw_clock_hz = 1e9;
};

// Refuses what is not a text trace: a directory, a binary file (NUL bytes in
// its first 64 KiB), or a file in which not one line is an event.
int refuse(const std::string& file, const std::string& why) {
  std::cerr << "kvmsim: error: " << file << ": " << why << "\n";
  return kExitUsage;
}

int run_trace_stats(const TraceStatsOptions& o) {
  trace::TraceSummary s;
  if (o.file == "-") {
    s = trace::trace_stats(std::cin, o.raw_clock_hz);
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(o.file, ec))
      return refuse(o.file, "is a directory, not a trace file");
    std::ifstream in(o.file, std::ios::binary);
    if (!in) return refuse(o.file, std::string("cannot open trace file: ") + std::strerror(errno));
    std::string head(1 << 16, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find('\0') != std::string::npos)
      return refuse(o.file,
                    "binary data (a NUL byte): not trace-cmd report / ftrace text "
                    "(for a trace.dat, run `trace-cmd report` on it first)");
    in.clear();
    in.seekg(0);
    s = trace::trace_stats(in, o.raw_clock_hz);
    if (in.bad()) return refuse(o.file, std::string("read error: ") + std::strerror(errno));
  }
  if (s.events == 0 && s.malformed == 0)
    return refuse(o.file, "no trace event: the input is empty or only comments and blank lines");
  if (s.events == 0 && s.malformed > 0)
    return refuse(o.file, fmt::format("no trace event in {} lines ({} not understood, first "
                                      "at line {}: {})",
                                      s.lines, s.malformed, s.malformed_first.front().first,
                                      s.malformed_first.front().second));
  if (o.kvm_stat)
    std::cout << trace::kvm_stat_text(s, o.file, o.drilldown, o.kvm_stat_reasons == "2022");
  else if (o.json)
    // Exit-reason names come from the file: replace bytes that are not UTF-8.
    std::cout << trace::trace_stats_json(s, o.file).dump(
                     2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
  else
    std::cout << trace::trace_stats_text(s, o.file);
  std::cout << std::flush;
  return kExitOk;
}

}  // namespace

Command add_trace_stats_command(CLI::App& app) {
  auto opts = std::make_shared<TraceStatsOptions>();
  auto* sub = app.add_subcommand(
      "trace-stats", "Statistics of a text trace (trace-cmd report, ftrace, perf script)");
  sub->add_option("file", opts->file, "Trace text file ('-' for stdin)")->required();
  auto* json = sub->add_flag("--json", opts->json, "Print JSON instead of text");
  auto* kvm_stat = sub->add_flag("--kvm-stat", opts->kvm_stat,
                                 "Print the table kvm_stat shows (Event, Total, %Total, "
                                 "CurAvg/s over the trace's span)");
  kvm_stat->excludes(json);
  sub->add_flag("--drilldown", opts->drilldown,
                "With --kvm-stat: also the per-exit-reason rows (kvm_stat's 'x')")
      ->needs(kvm_stat);
  sub->add_option("--kvm-stat-reasons", opts->kvm_stat_reasons,
                  "With --drilldown: kvm_stat's exit-reason list, legacy (up to INVPCID, no "
                  "PREEMPTION_TIMER; default) or 2022 (every VMX reason up to NOTIFY)")
      ->check(CLI::IsMember({"legacy", "2022"}))
      ->needs(kvm_stat);
  sub->add_option("--raw-clock-hz", opts->raw_clock_hz,
                  "Counts per second of integer timestamps (default 1e9: a ns clock)")
      ->check(number_in(0, 1e12, "Hz", true));
  return {sub, [opts] { return run_trace_stats(*opts); }};
}

}  // namespace kvmsim::cli
