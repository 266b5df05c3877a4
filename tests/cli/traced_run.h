// `kvmsim run ARGS --trace`, read back with the project's trace parser
// (sim/trace/trace_parse.h): every event line, and summary.json's metrics.
// For tests that check where and when tracepoints fire.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "sim/trace/trace_parse.h"
#include "tests/cli/cli_runner.h"

namespace kvmsim::test {

struct TracedEvent {
  std::string event;
  int pid = -1;  // the thread the event was traced on (a vCPU thread: one per vCPU)
  int cpu = -1;
  std::int64_t ts = 0;  // ns
  trace::TraceEventData data;
  std::string payload;  // the text, for events trace_format.h does not parse
};

struct TracedRun {
  std::vector<TracedEvent> events;
  nlohmann::json metrics;

  [[nodiscard]] std::size_t count(const std::string& event) const {
    std::size_t n = 0;
    for (const TracedEvent& e : events) n += e.event == event;
    return n;
  }
  [[nodiscard]] double metric(const std::string& key) const {
    return metrics.contains(key) ? metrics.at(key).get<double>() : 0.0;
  }
  template <class T, class Pred>
  [[nodiscard]] std::size_t count_if(Pred pred) const {
    std::size_t n = 0;
    for (const TracedEvent& e : events)
      if (const T* d = std::get_if<T>(&e.data)) n += pred(*d);
    return n;
  }
};

// Every line must parse; a run without events fails.
inline TracedRun traced_run(const std::string& name, const std::string& args) {
  const auto dir = out_dir("traced-" + name);
  const auto trace_file = dir / "trace.txt";
  const auto r =
      run_cli("run " + args + " -q --out " + dir.string() + " --trace " + trace_file.string());
  if (r.exit_code != 0) FAIL("kvmsim run " << args << " failed:\n" << r.output);
  TracedRun run;
  run.metrics = read_json(dir / "summary.json").at("metrics");
  std::ifstream in(trace_file);
  REQUIRE(in);
  std::size_t bad = 0;
  trace::parse_trace(in, [&](const trace::TraceRecord& rec) {
    if (rec.kind == trace::LineKind::Malformed || rec.bad_payload()) ++bad;
    if (rec.kind != trace::LineKind::Event) return;
    run.events.push_back({rec.event, rec.pid, rec.cpu, rec.ts, rec.data, rec.payload});
  });
  REQUIRE(bad == 0);
  REQUIRE(!run.events.empty());
  return run;
}

}  // namespace kvmsim::test
