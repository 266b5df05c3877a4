// The teaching views through the CLI: `run --perfetto` (Chrome trace-event
// JSON), `run --vcd` (a VCD waveform through sc_trace) and `explain` (one
// timer interrupt, stage by stage). All of them only observe: the metrics
// stay the same with or without them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

const char* kCyclictest = "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=300";

nlohmann::json metrics_without_wall(const std::filesystem::path& dir) {
  auto m = read_json(dir / "summary.json").at("metrics");
  m.erase("sim.wall_s");
  return m;
}

// A minimal VCD reader: the header's $var declarations (with their $scope
// path, "vcpu1.mode"), then #time lines and value changes ("b1010 id",
// "1id"). Values are read as unsigned integers (x/z as 0).
struct Vcd {
  std::string timescale;
  std::map<std::string, std::string> id_of;  // full name -> identifier code
  std::map<std::string, int> width;          // full name -> bits
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> changes;  // by id
  std::uint64_t last_time = 0;
  int time_lines = 0;
  bool time_monotonic = true;

  [[nodiscard]] const std::vector<std::pair<std::uint64_t, std::uint64_t>>& of(
      const std::string& name) const {
    static const std::vector<std::pair<std::uint64_t, std::uint64_t>> none;
    const auto it = id_of.find(name);
    if (it == id_of.end()) return none;
    const auto c = changes.find(it->second);
    return c == changes.end() ? none : c->second;
  }
};

std::uint64_t vcd_bits(const std::string& s) {
  std::uint64_t v = 0;
  for (const char c : s) v = (v << 1) | (c == '1' ? 1U : 0U);
  return v;
}

Vcd parse_vcd(const std::string& text) {
  Vcd vcd;
  std::istringstream in(text);
  std::string tok;
  std::vector<std::string> scope;
  // Header: keyword blocks up to $enddefinitions.
  while (in >> tok) {
    if (tok == "$enddefinitions") {
      in >> tok;  // $end
      break;
    }
    if (tok == "$scope") {
      std::string kind, name;
      in >> kind >> name >> tok;
      scope.push_back(name);
    } else if (tok == "$upscope") {
      in >> tok;
      if (!scope.empty()) scope.pop_back();
    } else if (tok == "$var") {
      std::string kind, id, name;
      int w = 0;
      in >> kind >> w >> id >> name;
      while (in >> tok && tok != "$end") {
      }
      std::string full;
      // The outermost scope is SystemC's "SystemC" module.
      for (std::size_t i = 1; i < scope.size(); ++i) full += scope[i] + ".";
      full += name;
      vcd.id_of[full] = id;
      vcd.width[full] = w;
    } else if (tok == "$timescale") {
      while (in >> tok && tok != "$end") vcd.timescale += tok;
    } else if (tok[0] == '$') {  // $date, $version, $comment: skip to $end
      while (in >> tok && tok != "$end") {
      }
    }
  }
  // Value changes.
  std::uint64_t now = 0;
  while (in >> tok) {
    if (tok[0] == '#') {
      const std::uint64_t t = std::stoull(tok.substr(1));
      if (t < now) vcd.time_monotonic = false;
      now = t;
      ++vcd.time_lines;
      continue;
    }
    if (tok == "$dumpvars" || tok == "$end") continue;
    if (tok == "$comment") {
      while (in >> tok && tok != "$end") {
      }
      continue;
    }
    if (tok[0] == 'b' || tok[0] == 'B') {
      std::string id;
      in >> id;
      vcd.changes[id].emplace_back(now, vcd_bits(tok.substr(1)));
    } else {
      vcd.changes[tok.substr(1)].emplace_back(now, tok[0] == '1' ? 1U : 0U);
    }
  }
  vcd.last_time = now;
  return vcd;
}

}  // namespace

TEST_CASE("run --perfetto writes a Chrome trace: pCPU and vCPU tracks, exits, timer flows",
          "[cli][views]") {
  const auto off = out_dir("views-off");
  const auto on = out_dir("views-on");
  const auto trace = on / "trace.json";
  REQUIRE(run_cli(std::string("run ") + kCyclictest + " -q --out " + off.string()).exit_code == 0);
  const auto r = run_cli(std::string("run ") + kCyclictest + " -q --out " + on.string() +
                         " --perfetto " + trace.string() + " --vcd " + (on / "wave.vcd").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Views only observe.
  CHECK(metrics_without_wall(off) == metrics_without_wall(on));

  const auto doc = read_json(trace);
  REQUIRE(doc.contains("traceEvents"));
  const auto& events = doc.at("traceEvents");
  REQUIRE(events.is_array());
  REQUIRE(events.size() > 100);

  std::map<int, std::string> process;           // pid -> process_name
  std::map<int, std::set<std::string>> slices;  // pid -> names of its X events
  std::map<std::uint64_t, int> flow_starts, flow_ends;
  std::set<std::string> exit_reasons;
  double max_ts = 0;
  for (const auto& e : events) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    REQUIRE(e.contains("tid"));
    REQUIRE(e.contains("name"));
    const std::string ph = e.at("ph");
    const int pid = e.at("pid");
    if (ph == "M") {
      if (e.at("name") == "process_name") process[pid] = e.at("args").at("name");
      continue;
    }
    REQUIRE(e.contains("ts"));
    REQUIRE(e.at("ts").is_number());
    max_ts = std::max(max_ts, e.at("ts").get<double>());
    if (ph == "X") {
      REQUIRE(e.contains("dur"));
      CHECK(e.at("dur").get<double>() >= 0);
      slices[pid].insert(e.at("name").get<std::string>());
      if (pid < 1000) CHECK((e.at("cat") == "host" || e.at("cat") == "guest"));
    } else if (ph == "i") {
      if (e.at("name") == "kvm_exit")
        exit_reasons.insert(e.at("args").at("reason").get<std::string>());
    } else if (ph == "s") {
      ++flow_starts[e.at("id").get<std::uint64_t>()];
      CHECK(e.at("cat") == "timer");
    } else if (ph == "f") {
      ++flow_ends[e.at("id").get<std::uint64_t>()];
      CHECK(e.at("bp") == "e");
    }
  }
  // One process per pCPU and per vCPU (2 vCPUs on 2 pCPUs), each with its slices.
  int pcpus = 0, vcpus = 0;
  for (const auto& [pid, name] : process) {
    INFO(name);
    if (name.rfind("pCPU ", 0) == 0) {
      ++pcpus;
      CHECK_FALSE(slices[pid].empty());
    } else if (name.rfind("vCPU ", 0) == 0) {
      ++vcpus;
      CHECK(slices[pid].count("guest") == 1);
      CHECK(slices[pid].count("root") == 1);
    }
  }
  CHECK(pcpus == 2);
  CHECK(vcpus == 2);
  // Segments of the measuring pCPU include the whole exit path.
  bool has_exit_path = false;
  for (const auto& [pid, names] : slices)
    if (names.count("vmexit") && names.count("handle_exit") && names.count("vmentry") &&
        names.count("guest_user"))
      has_exit_path = true;
  CHECK(has_exit_path);
  CHECK(exit_reasons.count("MSR_WRITE") == 1);
  CHECK(exit_reasons.count("PREEMPTION_TIMER") == 1);
  // Each timer arming -> sample pair is one flow, start and finish with the same id.
  REQUIRE_FALSE(flow_starts.empty());
  CHECK(flow_starts.size() == flow_ends.size());
  for (const auto& [id, n] : flow_starts) {
    CHECK(n == 1);
    CHECK(flow_ends.count(id) == 1);
  }
  // The default limit: 50 simulated ms.
  CHECK(max_ts < 50000.0);
  CHECK(max_ts > 40000.0);
}

TEST_CASE("run --perfetto-limit-ms bounds the file", "[cli][views]") {
  const auto dir = out_dir("views-limit");
  const auto trace = dir / "t.json";
  const auto r = run_cli(std::string("run ") + kCyclictest + " -q --perfetto " + trace.string() +
                         " --perfetto-limit-ms 5");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = read_json(trace);
  double max_ts = 0;
  for (const auto& e : doc.at("traceEvents"))
    if (e.contains("ts")) max_ts = std::max(max_ts, e.at("ts").get<double>());
  CHECK(max_ts < 5000.0);
  CHECK(max_ts > 3000.0);
}

TEST_CASE("run --vcd writes a waveform of the vCPU modes and the preemption-timer countdown",
          "[cli][views]") {
  const auto dir = out_dir("views-vcd");
  const auto wave = dir / "wave";  // no .vcd suffix: the file keeps the given name
  const auto r = run_cli(std::string("run ") + kCyclictest + " -q --vcd " + wave.string() +
                         " --vcd-limit-ms 20");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(std::filesystem::exists(wave));
  CHECK_FALSE(std::filesystem::exists(dir / "wave.vcd"));
  const Vcd vcd = parse_vcd(read_text(wave));
  CHECK(vcd.timescale == "1ps");  // one host TSC cycle
  CHECK(vcd.time_monotonic);
  CHECK(vcd.time_lines > 100);
  for (const char* v : {"vcpu0", "vcpu1"}) {
    for (const char* sig :
         {"mode", "preemption_timer", "preemption_timer_armed", "hv_timer", "latency_ns"}) {
      INFO(std::string(v) + "." + sig);
      CHECK(vcd.id_of.count(std::string(v) + "." + sig) == 1);
    }
  }
  CHECK(vcd.width.at("vcpu1.preemption_timer") == 32);
  // The measuring vCPU goes in and out of guest mode.
  const auto& mode = vcd.of("vcpu1.mode");
  std::set<std::uint64_t> modes;
  for (const auto& c : mode) modes.insert(c.second);
  CHECK(mode.size() > 20);
  CHECK(modes.count(0) == 1);
  CHECK(modes.count(1) == 1);
  // The countdown: many values, down to 0 (the PREEMPTION_TIMER exit), and
  // decreasing while the vCPU is in guest mode (between two reloads).
  const auto& timer = vcd.of("vcpu1.preemption_timer");
  REQUIRE(timer.size() > 100);
  bool reaches_zero = false;
  int decreasing = 0, increasing = 0;
  for (std::size_t i = 1; i < timer.size(); ++i) {
    if (timer[i].second == 0) reaches_zero = true;
    (timer[i].second < timer[i - 1].second ? decreasing : increasing)++;
  }
  CHECK(reaches_zero);
  CHECK(decreasing > 10 * increasing);  // increases only at the reload on entry
  // --vcd-limit-ms 20 at 2.3 GHz: no change after it (the file may end with
  // the time it was closed at).
  std::uint64_t last_change = 0;
  for (const auto& [id, cs] : vcd.changes)
    for (const auto& c : cs) last_change = std::max(last_change, c.first);
  CHECK(last_change < 20ull * 2300000);
  CHECK(last_change > 15ull * 2300000);
  CHECK_FALSE(vcd.of("vcpu1.latency_ns").empty());
}

TEST_CASE("explain follows one timer interrupt, the stages add up to its latency", "[cli][views]") {
  struct Case {
    std::string args;
    const char* exit;  // an exit the path shows
  };
  for (const Case& c :
       {Case{std::string("explain ") + kCyclictest, "VM exit: PREEMPTION_TIMER"},
        Case{std::string("explain ") + kCyclictest + " --set kvm.enable_hv_timer=false --sample 50",
             "VM exit: EXTERNAL_INTERRUPT"},
        Case{"explain scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=300 "
             "--set kvm.hv_timer_advance=false",
             "VM exit: PREEMPTION_TIMER"}}) {
    INFO(c.args);
    const auto r = run_cli(c.args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::regex seg(R"(^\s*([+-]\d+)\s+(\d+)\s+([a-z_]+)\s)");
    const std::regex total_re(R"(^total (-?\d+) ns from the deadline)");
    const std::regex measured_re(R"(^the workload measured (-?\d+) ns)");
    std::istringstream in(r.output);
    std::string line;
    bool after = false, have_total = false, have_measured = false;
    long long sum = 0, total = 0, measured = 0;
    int rows_before = 0, rows_after = 0;
    std::smatch m;
    while (std::getline(in, line)) {
      if (line.find("the deadline ---") != std::string::npos) {
        after = true;
      } else if (std::regex_search(line, m, total_re)) {
        total = std::stoll(m[1]);
        have_total = true;
        after = false;
      } else if (std::regex_search(line, m, measured_re)) {
        measured = std::stoll(m[1]);
        have_measured = true;
      } else if (std::regex_search(line, m, seg)) {
        if (after) {
          sum += std::stoll(m[2]);
          ++rows_after;
        } else if (!have_total) {
          ++rows_before;
        }
      }
    }
    REQUIRE(have_total);
    REQUIRE(have_measured);
    CHECK(rows_before > 3);  // arming, the exit that programs the timer, the wait
    CHECK(rows_after > 3);
    CHECK(sum == total);
    CHECK(std::llabs(total - measured) <= 1000);
    CHECK(total > 0);
    CHECK(r.output.find(c.exit) != std::string::npos);
    CHECK(r.output.find("vmentry") != std::string::npos);
  }
}

TEST_CASE("explain refuses workloads without latency samples and samples beyond the run",
          "[cli][views]") {
  const auto a = run_cli("explain scenarios/vmexit_tscdeadline.yaml");
  INFO(a.output);
  CHECK(a.exit_code == 2);
  CHECK(a.output.find("takes none") != std::string::npos);
  const auto b = run_cli(std::string("explain ") + kCyclictest + " --sample 301");
  INFO(b.output);
  CHECK(b.exit_code == 2);
  CHECK(b.output.find("--sample 301") != std::string::npos);
  // The last sample: the workload itself stops the run.
  const auto c = run_cli(std::string("explain ") + kCyclictest + " --sample 300");
  INFO(c.output);
  CHECK(c.exit_code == 0);
  CHECK(c.output.find("latency sample #300") != std::string::npos);
}

TEST_CASE(
    "run --perfetto shows halt polling as the vCPU's polling mode, between its HLT exit and "
    "the wake-up",
    "[cli][views][halt]") {
  const auto dir = out_dir("views-poll");
  const std::string args =
      "scenarios/halt_poll_timer.yaml --set tscdeadline_latency.size=200 -q --perfetto ";
  auto count_polling = [&](const std::string& extra) {
    const auto trace = dir / "p.json";
    const auto r = run_cli("run " + args + trace.string() + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    int polling = 0, halted = 0;
    const auto doc = read_json(trace);
    for (const auto& e : doc.at("traceEvents")) {
      if (e.at("ph") != "X" || !e.contains("cat") || e.at("cat") != "vcpu") continue;
      if (e.at("name") == "polling") {
        ++polling;
        CHECK(e.at("args").at("exit_reason") == "HLT (halt polling)");
      }
      if (e.at("name") == "halted") ++halted;
    }
    return std::make_pair(polling, halted);
  };
  const auto off = count_polling("");
  CHECK(off.first == 0);
  CHECK(off.second > 150);  // every halt sleeps without polling
  // With a window the halts (each ~20000 cycles: shorter than the window once
  // it has grown) end while polling, so the vCPU is rarely halted.
  const auto on = count_polling(" --set kvm.halt_poll_ns=200000");
  CHECK(on.first > 150);
  CHECK(on.second < 10);
}

TEST_CASE(
    "explain on a pCPU shared with a host hog names who held the pCPU, the steal time and the "
    "overflow, and its rows still add up to the latency",
    "[cli][views]") {
  // One CPU hog on the measuring vCPU's pCPU 3: sample 1000 waits ~1 s behind it (the
  // isolated pCPU's residual 1 Hz tick, the run's own warning says so).
  const auto r = run_cli(std::string("explain ") + kCyclictest +
                         " --set cyclictest.loops=2000 --set host.hog.count=1"
                         " --set host.hog.affinity=[3] --sample 1000");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output,
             Catch::Contains(">> sched_switch: CPU 1/KVM (R: preempted, still runnable)"));
  CHECK_THAT(r.output, Catch::Contains("who held pCPU 3 after the deadline"));
  CHECK_THAT(r.output, Catch::Contains("(the measuring vCPU thread)"));
  CHECK_THAT(r.output, Catch::Contains("preempted while runnable: all of it is steal time"));
  CHECK_THAT(r.output, Catch::Contains("as a histogram overflow"));
  CHECK_THAT(r.output, Catch::Contains(" slices)"));  // the hog's tick-to-tick slices merged
  // The rows after the deadline, merged ones included, add up to the total.
  const std::regex seg(R"(^\s*([+-]\d+)\s+(\d+)\s+([a-z_]+)\s)");
  const std::regex total_re(R"(^total (-?\d+) ns from the deadline)");
  std::istringstream in(r.output);
  std::string line;
  bool after = false;
  long long sum = 0, total = -1;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("the deadline ---") != std::string::npos) after = true;
    if (after && std::regex_search(line, m, seg)) sum += std::stoll(m[2]);
    if (std::regex_search(line, m, total_re)) total = std::stoll(m[1]);
  }
  CHECK(total > 900'000'000);
  CHECK(sum == total);
  // The holder's share is the steal: the hog's line carries nearly all of it.
  const std::regex holder(R"(^  stress-ng\s+(\d+) ns)");
  std::istringstream in2(r.output);
  long long held = -1;
  while (std::getline(in2, line))
    if (std::regex_search(line, m, holder)) held = std::stoll(m[1]);
  CHECK(held > total - 100'000);
}
