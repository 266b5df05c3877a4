// kvmsim trace-stats FILE [--json] [--raw-clock-hz HZ]
// Reads a trace-cmd report / ftrace `trace` / perf script text file and prints
// exit-reason counts and rates, exit-to-entry service times, event counts,
// hv-timer, halt-polling and timer-advance statistics, and the line numbers of
// lines it could not read. Exit code 0 once the file was read (malformed lines
// included), 2 when it cannot be opened. FILE "-" reads stdin.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "sim/trace/trace_stats.h"
#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {

namespace {

struct TraceStatsOptions {
  std::string file;
  bool json = false;
  double raw_clock_hz = 1e9;
};

int run_trace_stats(const TraceStatsOptions& o) {
  trace::TraceSummary s;
  if (o.file == "-") {
    s = trace::trace_stats(std::cin, o.raw_clock_hz);
  } else {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) {
      std::cerr << "kvmsim: error: cannot open trace file '" << o.file << "'\n";
      return 2;
    }
    s = trace::trace_stats(in, o.raw_clock_hz);
  }
  if (o.json)
    // Exit-reason names come from the file: replace bytes that are not UTF-8.
    std::cout << trace::trace_stats_json(s, o.file)
                     .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
  else
    std::cout << trace::trace_stats_text(s, o.file);
  std::cout << std::flush;
  return 0;
}

}  // namespace

Command add_trace_stats_command(CLI::App& app) {
  auto opts = std::make_shared<TraceStatsOptions>();
  auto* sub = app.add_subcommand(
      "trace-stats", "Statistics of a text trace (trace-cmd report, ftrace, perf script)");
  sub->add_option("file", opts->file, "Trace text file ('-' for stdin)")->required();
  sub->add_flag("--json", opts->json, "Print JSON instead of text");
  sub->add_option("--raw-clock-hz", opts->raw_clock_hz,
                  "Counts per second of integer timestamps (default 1e9: a ns clock)")
      ->check(CLI::PositiveNumber);
  return {sub, [opts] { return run_trace_stats(*opts); }};
}

}  // namespace kvmsim::cli
