// kvmsim-bench: how fast the model runs, in the user's terms, against the raw SystemC
// kernel measured in the same run.
//
// SystemC can elaborate only once per process, so this is a driver that runs every
// measurement as a child process:
//   kvmsim-bench --raw N        (hidden) run the raw kernel loop, print one JSON line
//   kvmsim-bench [options]      for each of --repeat rounds: the raw loop, then the CLI
//                               on every scenario of the list (bench/scenarios.txt);
//                               print the median of each figure and, with --json, all
//   kvmsim-bench --scale [LIST] the cost-growth law: one workload at each vCPU count
//                               (bench/scale.h)
// Per scenario: events, events per second and their ratio to the raw loop's rate,
// simulated seconds per wall second ("x real time"; also per CPU second of the child,
// which a shared machine disturbs less), peak RSS of the child (wait4), and cycles per
// event from `perf stat` when the machine's perf counts cycles (otherwise the column says
// why not and CPU ns per event stands beside it).
// It always exits 0 once the measurements ran, targets met or not; it exits non-zero only
// when something could not run (missing binary or scenario, a child failing, bad options).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "bench/child_process.h"
#include "bench/raw_kernel.h"
#include "bench/scale.h"

namespace {

using json = nlohmann::json;
using namespace kvmsim::bench;  // child_process.h, scale.h

constexpr const char* kDefaultList = "bench/scenarios.txt";
constexpr std::uint64_t kDefaultRawEvents = 20'000'000;
constexpr unsigned kRawProcesses = 4;
constexpr unsigned kDefaultRepeat = 5;
// Issue 14's targets: the T1 pair at >= 1000x real time, the model >= 0.5x raw SystemC.
constexpr const char* kTargetGroup = "t1";
constexpr double kRatioTarget = 0.5;
constexpr double kRealTimeTarget = 1000.0;

struct Options {
  std::optional<std::uint64_t> raw_mode_events;  // hidden --raw N
  std::uint64_t raw_events = kDefaultRawEvents;
  unsigned repeat = kDefaultRepeat;
  std::vector<std::string> sets;  // --set key=value for every scenario
  std::vector<std::string> only;  // scenario names or groups
  std::string json_file;
  std::string list;
  std::string kvmsim;
  std::string vs;  // a second CLI (another build) timed in the same rounds
  // --vs-scenarios DIR: the --vs CLI runs DIR/<file> (its own tree's scenarios, which
  // may lack keys this tree's files use); empty: the same files as this CLI.
  std::string vs_scenarios;
  std::string out_dir;
  bool raw_only = false;
  bool no_perf = false;
  // --scale [LIST]: the cost-growth law (scale.h) instead of the scenario list.
  std::optional<std::string> scale;
  unsigned scale_vm_vcpus = kScaleDefaultVmVcpus;
  double timeout_s = kScaleDefaultTimeoutS;
  std::vector<std::string> list_mode_flags;   // given flags that --scale does not take
  std::vector<std::string> scale_mode_flags;  // given flags only --scale takes
};

struct Scenario {
  std::string name;
  std::string group;  // NAME up to the first '.'
  std::string file;
  std::vector<std::string> sets;
  std::string cli;  // empty: --kvmsim; else the --vs CLI
};

// One child run's figures.
struct Sample {
  double events = 0;
  double loop_wall_s = 0;        // sim.wall_s (raw: wall time around sc_start)
  double simulated_s = 0;        // sim.simulated_s
  double process_wall_s = 0;     // whole child: start-up, elaboration, loop, output
  double cpu_s = 0;              // user + sys of the child (wait4)
  double max_rss_kb = 0;         // peak RSS of the child (wait4)
  std::optional<double> cycles;  // perf stat -e cycles, whole child
};

class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

void PrintUsage(std::ostream& os) {
  os << "usage: kvmsim-bench [--repeat N] [--only NAME[,NAME...]] [--set key=value]...\n"
        "                    [--raw-events N] [--json FILE] [--list FILE] [--kvmsim PATH]\n"
        "                    [--vs PATH [--vs-scenarios DIR]]\n"
        "                    [--out DIR] [--raw-only] [--no-perf]\n"
        "       kvmsim-bench --scale [N,N,...] [--scale-vm-vcpus G] [--set key=value]...\n"
        "                    [--timeout S] [--json FILE] [--kvmsim PATH] [--out DIR]\n"
        "\n"
        "Times the raw SystemC kernel and the model on every scenario of the list, each\n"
        "run in its own child process, --repeat rounds (default "
     << kDefaultRepeat
     << "), and prints the median\n"
        "of each figure: events/s and the ratio to raw SystemC, x real time (simulated s\n"
        "per wall s and per CPU s), peak RSS, cycles per event (perf stat, if it counts\n"
        "cycles here).\n"
        "  --repeat N      rounds (raw loop + every scenario in turn), default "
     << kDefaultRepeat
     << "\n"
        "  --only NAMES    comma-separated scenario names or groups (e.g. t1,t3)\n"
        "  --set key=value passed to every scenario run (e.g. cyclictest.loops=60000)\n"
        "  --raw-events N  events of the raw loop (default "
     << kDefaultRawEvents
     << ")\n"
        "  --json FILE     also write medians and every sample as JSON\n"
        "  --list FILE     scenario list (default "
     << kDefaultList
     << ", looked up in the current\n"
        "                  directory, then beside the build directory)\n"
        "  --kvmsim PATH   the CLI (default: kvmsim beside this binary)\n"
        "  --vs PATH       also time a second CLI (e.g. a build of the base commit) on every\n"
        "                  scenario, in the same rounds; its rows are NAME@vs\n"
        "  --vs-scenarios DIR  the --vs CLI runs each list entry's file under DIR (the\n"
        "                  other build's source tree), not this tree's: for scenario\n"
        "                  files that use parameters the other build does not know\n"
        "  --out DIR       run directories (default: bench-out beside this binary)\n"
        "  --raw-only      measure the raw loop only\n"
        "  --no-perf       do not wrap the runs in perf stat\n"
        "\n"
        "--scale: the cost-growth law. Runs "
     << kScaleScenario
     << " (ebizzy -M) at each total\n"
        "vCPU count N (default "
     << kScaleDefaultVcpus
     << "; multiples of 8): N/G guests of G vCPUs,\n"
        "2x over-committed on N/2 pCPUs (2 sockets x N/8 cores x 2 threads), each a child\n"
        "process, once for sim.max_simulated_s=0.001 (start-up) and once for "
     << kScaleDefaultSimulatedS
     << " simulated s\n"
        "(--set sim.max_simulated_s=S changes it). Per point: events, wall s and CPU s per\n"
        "simulated s (also net of the start-up run), events per vCPU-second, CPU ns per\n"
        "event, peak RSS, start-up CPU s; then the exponent b of CPU s per simulated s =\n"
        "a * vCPUs^b (least squares on log-log) and the local exponent between consecutive\n"
        "points, with and without start-up. A point that fails or times out is an error.\n"
        "  --scale-vm-vcpus G  vCPUs per guest (default "
     << kScaleDefaultVmVcpus
     << ")\n"
        "  --timeout S         kill a run after S wall seconds, an error (default "
     << kScaleDefaultTimeoutS << ")\n";
}

std::uint64_t ParseCount(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || text[0] == '-' || value == 0) {
    throw UsageError(flag + " needs a positive integer, got '" + text + "'");
  }
  return value;
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Options ParseArgs(int argc, char** argv) {
  Options opt;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "--raw") {
      opt.raw_mode_events = ParseCount(a, value());
    } else if (a == "--scale") {
      // The list is optional: taken when the next word starts with a digit.
      const bool has_list = i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] >= '0' &&
                            args[i + 1][0] <= '9';
      opt.scale = has_list ? args[++i] : std::string(kScaleDefaultVcpus);
    } else if (a == "--scale-vm-vcpus") {
      const auto n = ParseCount(a, value());
      if (n > 256) throw UsageError("--scale-vm-vcpus: at most 256 (vm.vcpus)");
      opt.scale_vm_vcpus = static_cast<unsigned>(n);
      opt.scale_mode_flags.push_back(a);
    } else if (a == "--timeout") {
      opt.timeout_s = static_cast<double>(ParseCount(a, value()));
      opt.scale_mode_flags.push_back(a);
    } else if (a == "--raw-events") {
      opt.raw_events = ParseCount(a, value());
      opt.list_mode_flags.push_back(a);
    } else if (a == "--repeat") {
      const auto n = ParseCount(a, value());
      if (n > 100) throw UsageError("--repeat: at most 100");
      opt.repeat = static_cast<unsigned>(n);
      opt.list_mode_flags.push_back(a);
    } else if (a == "--only") {
      opt.only = SplitCommas(value());
      opt.list_mode_flags.push_back(a);
    } else if (a == "--set") {
      const std::string kv = value();
      if (kv.find('=') == std::string::npos || kv[0] == '=')
        throw UsageError("--set needs key=value, got '" + kv + "'");
      opt.sets.push_back(kv);
    } else if (a == "--json") {
      opt.json_file = value();
    } else if (a == "--list") {
      opt.list = value();
      opt.list_mode_flags.push_back(a);
    } else if (a == "--kvmsim") {
      opt.kvmsim = value();
    } else if (a == "--vs") {
      opt.vs = value();
      opt.list_mode_flags.push_back(a);
    } else if (a == "--vs-scenarios") {
      opt.vs_scenarios = value();
      opt.list_mode_flags.push_back(a);
    } else if (a == "--out") {
      opt.out_dir = value();
    } else if (a == "--raw-only") {
      opt.raw_only = true;
      opt.list_mode_flags.push_back(a);
    } else if (a == "--no-perf") {
      opt.no_perf = true;
    } else if (a == "-h" || a == "--help") {
      PrintUsage(std::cout);
      std::exit(0);
    } else {
      throw UsageError("unknown option '" + a + "'");
    }
  }
  if (opt.scale && !opt.list_mode_flags.empty())
    throw UsageError("--scale does not take " + opt.list_mode_flags.front() +
                     " (it runs each point once, on its own workload)");
  if (!opt.vs_scenarios.empty() && opt.vs.empty()) throw UsageError("--vs-scenarios needs --vs");
  if (!opt.scale && !opt.scale_mode_flags.empty())
    throw UsageError(opt.scale_mode_flags.front() + " needs --scale");
  return opt;
}

// ---- perf stat ----

// `perf stat -x, -e cycles -o FILE -- CMD` if this machine's perf counts cycles; the
// reason otherwise (no perf, or no hardware counters, as in most VMs and containers).
struct PerfStat {
  bool usable = false;
  std::string why_not;
};

std::optional<double> ReadPerfCycles(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    // CSV: value,unit,event,...
    if (line.empty() || line[0] == '#') continue;
    const auto c1 = line.find(',');
    if (c1 == std::string::npos) continue;
    const auto c2 = line.find(',', c1 + 1);
    const auto c3 = line.find(',', c2 + 1);
    if (c2 == std::string::npos) continue;
    const std::string event = line.substr(c2 + 1, c3 == std::string::npos ? c3 : c3 - c2 - 1);
    if (event.rfind("cycles", 0) != 0) continue;
    try {
      std::size_t used = 0;
      const double v = std::stod(line.substr(0, c1), &used);
      if (used == c1) return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;  // "<not supported>" / "<not counted>"
  }
  return std::nullopt;
}

PerfStat ProbePerf(const std::string& out_root) {
  PerfStat p;
  const std::string file = out_root + "/perf-probe.csv";
  ChildResult r;
  try {
    r = RunChild({"perf", "stat", "-x,", "-e", "cycles", "-o", file, "--", "true"}, true);
  } catch (const std::exception& e) {
    p.why_not = e.what();
    return p;
  }
  if (r.exit_code != 0) {
    p.why_not = r.exit_code == 127 ? "perf not installed" : "perf stat failed";
    return p;
  }
  if (!ReadPerfCycles(file)) {
    p.why_not = "perf stat: cycles <not supported> (no hardware counters here)";
    return p;
  }
  p.usable = true;
  return p;
}

// ---- raw mode (child) ----

int RawMode(std::uint64_t events) {
  const auto r = kvmsim::bench::RunRawKernel(events, kRawProcesses);
  const json j = {{"events", r.events},
                  {"wall_s", r.wall_s},
                  {"simulated_s", r.simulated_s},
                  {"processes", kRawProcesses}};
  std::cout << j.dump() << std::endl;
  return 0;
}

std::vector<std::string> Wrapped(const PerfStat& perf, const std::string& perf_file,
                                 std::vector<std::string> argv) {
  if (!perf.usable) return argv;
  std::vector<std::string> w = {"perf", "stat", "-x,", "-e", "cycles", "-o", perf_file, "--"};
  w.insert(w.end(), argv.begin(), argv.end());
  return w;
}

Sample MeasureRaw(const std::string& self, std::uint64_t events, const PerfStat& perf,
                  const std::string& out_root) {
  const std::string perf_file = out_root + "/raw.perf.csv";
  const std::vector<std::string> argv =
      Wrapped(perf, perf_file, {self, "--raw", std::to_string(events)});
  const ChildResult child = RunChild(argv, /*merge_stderr=*/false);
  if (child.exit_code != 0) {
    throw std::runtime_error("raw kernel child failed (exit " + std::to_string(child.exit_code) +
                             "): " + ShellQuote(argv) + "\n" + Tail(child.captured, 20));
  }
  // The JSON line is the last line starting with '{' (SystemC may print a banner first).
  std::istringstream lines(child.captured);
  std::string line;
  std::string json_line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] == '{') json_line = line;
  }
  if (json_line.empty()) {
    throw std::runtime_error("raw kernel child printed no JSON line:\n" + child.captured);
  }
  const json j = json::parse(json_line);
  Sample s;
  s.events = j.at("events").get<double>();
  s.loop_wall_s = j.at("wall_s").get<double>();
  s.simulated_s = j.value("simulated_s", 0.0);
  s.process_wall_s = child.wall_s;
  s.cpu_s = child.cpu_s;
  s.max_rss_kb = child.max_rss_kb;
  if (perf.usable) s.cycles = ReadPerfCycles(perf_file);
  return s;
}

// ---- scenario list ----

std::vector<Scenario> ReadList(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read scenario list " + path);
  std::vector<Scenario> out;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    Scenario s;
    if (!(words >> s.name)) continue;
    if (!(words >> s.file)) {
      throw std::runtime_error(path + ":" + std::to_string(lineno) + ": '" + s.name +
                               "' needs a scenario file");
    }
    for (std::string kv; words >> kv;) {
      if (kv.find('=') == std::string::npos || kv[0] == '=') {
        throw std::runtime_error(path + ":" + std::to_string(lineno) + ": '" + kv +
                                 "' is not key=value");
      }
      s.sets.push_back(kv);
    }
    s.group = s.name.substr(0, s.name.find('.'));
    for (const auto& other : out) {
      if (other.name == s.name)
        throw std::runtime_error(path + ":" + std::to_string(lineno) + ": '" + s.name +
                                 "' listed twice");
    }
    out.push_back(std::move(s));
  }
  return out;
}

// ---- model runs ----

std::optional<double> Metric(const json& metrics, const std::string& key) {
  if (!metrics.contains(key) || !metrics.at(key).is_number()) return std::nullopt;
  return metrics.at(key).get<double>();
}

Sample RunModel(const Options& opt, const std::string& kvmsim, const std::string& file,
                const Scenario& sc, const std::string& dir, const PerfStat& perf) {
  MakeDirs(dir);
  std::vector<std::string> cmd = {kvmsim, "run", file, "-q"};
  for (const auto& kv : sc.sets) cmd.insert(cmd.end(), {"--set", kv});
  for (const auto& kv : opt.sets) cmd.insert(cmd.end(), {"--set", kv});
  cmd.insert(cmd.end(), {"--out", dir});
  const std::string perf_file = dir + "/perf.csv";
  const auto argv = Wrapped(perf, perf_file, cmd);

  const ChildResult child = RunChild(argv, /*merge_stderr=*/true);
  {
    std::ofstream log(dir + "/bench.log");
    log << "$ " << ShellQuote(argv) << "\n" << child.captured;
  }
  if (child.exit_code != 0) {
    throw std::runtime_error(sc.name + ": kvmsim failed (exit " + std::to_string(child.exit_code) +
                             "); last output lines (full log: " + dir + "/bench.log):\n" +
                             Tail(child.captured, 20));
  }
  const std::string summary_path = dir + "/summary.json";
  std::ifstream in(summary_path);
  if (!in) throw std::runtime_error("kvmsim exited 0 but wrote no " + summary_path);
  json summary;
  try {
    in >> summary;
  } catch (const json::exception& e) {
    throw std::runtime_error(summary_path + ": not valid JSON: " + e.what());
  }
  if (!summary.contains("metrics") || !summary.at("metrics").is_object()) {
    throw std::runtime_error(summary_path + ": no \"metrics\" object");
  }
  const json& metrics = summary.at("metrics");
  const auto events = Metric(metrics, "sim.events");
  const auto wall = Metric(metrics, "sim.wall_s");
  const auto simulated = Metric(metrics, "sim.simulated_s");
  if (!events || !wall || !simulated) {
    throw std::runtime_error(summary_path +
                             ": metrics lacks sim.events, sim.wall_s or sim.simulated_s");
  }
  Sample s;
  s.events = *events;
  s.loop_wall_s = *wall;
  s.simulated_s = *simulated;
  s.process_wall_s = child.wall_s;
  s.cpu_s = child.cpu_s;
  s.max_rss_kb = child.max_rss_kb;
  if (perf.usable) s.cycles = ReadPerfCycles(perf_file);
  return s;
}

// ---- figures ----

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// The figures of one scenario (or group) in one round; `raw` is that round's raw loop.
json Figures(const Sample& s, const Sample& raw) {
  const double rate = Ratio(s.events, s.loop_wall_s);
  const double raw_rate = Ratio(raw.events, raw.loop_wall_s);
  json j = {{"events", s.events},
            {"loop_wall_s", s.loop_wall_s},
            {"process_wall_s", s.process_wall_s},
            {"cpu_s", s.cpu_s},
            {"simulated_s", s.simulated_s},
            {"events_per_s", rate},
            {"ratio_to_raw", Ratio(rate, raw_rate)},
            {"x_real_time", Ratio(s.simulated_s, s.loop_wall_s)},
            {"x_real_time_process", Ratio(s.simulated_s, s.process_wall_s)},
            {"x_real_time_cpu", Ratio(s.simulated_s, s.cpu_s)},
            {"cpu_ns_per_event", Ratio(s.cpu_s * 1e9, s.events)},
            {"max_rss_mb", s.max_rss_kb / 1024.0}};
  if (s.cycles) j["cycles_per_event"] = Ratio(*s.cycles, s.events);
  return j;
}

Sample Sum(const std::vector<const Sample*>& parts) {
  Sample t;
  bool cycles = true;
  for (const Sample* p : parts) {
    t.events += p->events;
    t.loop_wall_s += p->loop_wall_s;
    t.simulated_s += p->simulated_s;
    t.process_wall_s += p->process_wall_s;
    t.cpu_s += p->cpu_s;
    t.max_rss_kb = std::max(t.max_rss_kb, p->max_rss_kb);
    if (p->cycles) {
      t.cycles = t.cycles.value_or(0) + *p->cycles;
    } else {
      cycles = false;
    }
  }
  if (!cycles) t.cycles.reset();
  return t;
}

// Median over rounds of every numeric figure.
json MedianFigures(const std::vector<json>& rounds) {
  json m = json::object();
  if (rounds.empty()) return m;
  for (const auto& [key, value] : rounds.front().items()) {
    if (!value.is_number()) continue;
    std::vector<double> v;
    for (const auto& r : rounds)
      if (r.contains(key)) v.push_back(r.at(key).get<double>());
    m[key] = Median(v);
  }
  return m;
}

std::string Fixed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string Verdict(bool met) { return met ? "target met" : "target missed"; }

std::string FindBeside(const std::string& given, const char* fallback, const std::string& exe_dir) {
  if (!given.empty()) return given;
  if (IsFile(fallback)) return fallback;
  const std::string beside = exe_dir + "/../" + fallback;  // build/ in the repo root
  if (IsFile(beside)) return beside;
  return fallback;  // reported as missing below
}

// A scenario file named relative to the repo root: found from the current directory or
// beside the list's directory (bench/..).
std::string ResolveScenario(const std::string& file, const std::string& list_path) {
  if (file.empty() || file[0] == '/' || IsFile(file)) return file;
  const std::string beside = DirName(list_path) + "/../" + file;
  return IsFile(beside) ? beside : file;
}

bool Selected(const Options& opt, const Scenario& s) {
  if (opt.only.empty()) return true;
  return std::find(opt.only.begin(), opt.only.end(), s.name) != opt.only.end() ||
         std::find(opt.only.begin(), opt.only.end(), s.group) != opt.only.end();
}

void PrintRow(const std::string& label, const json& m, const json& raw) {
  const std::string cyc =
      m.contains("cycles_per_event") ? Fixed(m.at("cycles_per_event").get<double>(), 0) : "n/a";
  std::printf("%-16s %11.0f %8s %8s %6s %9s %9s %8s %7s %6s %7s\n", label.c_str(),
              m.at("events").get<double>(), Fixed(m.at("loop_wall_s").get<double>(), 3).c_str(),
              Fixed(m.at("events_per_s").get<double>() / 1e6, 2).c_str(),
              raw.is_null() ? "-" : Fixed(m.at("ratio_to_raw").get<double>(), 2).c_str(),
              raw.is_null() ? "-" : Fixed(m.at("x_real_time").get<double>(), 1).c_str(),
              raw.is_null() ? "-" : Fixed(m.at("x_real_time_cpu").get<double>(), 1).c_str(),
              Fixed(m.at("cpu_ns_per_event").get<double>(), 1).c_str(), cyc.c_str(),
              Fixed(m.at("max_rss_mb").get<double>(), 1).c_str(),
              Fixed(m.at("cpu_s").get<double>(), 3).c_str());
}

int DriverMode(const Options& opt) {
  const std::string self = SelfExe();
  const std::string exe_dir = DirName(self);
  const std::string kvmsim = opt.kvmsim.empty() ? exe_dir + "/kvmsim" : opt.kvmsim;
  const std::string list_path = FindBeside(opt.list, kDefaultList, exe_dir);
  const std::string out_root = opt.out_dir.empty() ? exe_dir + "/bench-out" : opt.out_dir;
  MakeDirs(out_root);

  std::vector<Scenario> scenarios;
  std::vector<std::string> files;
  if (!opt.raw_only) {
    std::string problems;
    if (!IsExecutable(kvmsim)) {
      problems += "  kvmsim CLI not found or not executable: " + kvmsim +
                  "\n    (build it: cmake --build build --target kvmsim; or pass --kvmsim PATH)\n";
    }
    if (!IsFile(list_path)) {
      problems += "  scenario list not found: " + list_path +
                  "\n    (run from the repo root, or pass --list FILE)\n";
    } else {
      for (auto& s : ReadList(list_path)) {
        if (!Selected(opt, s)) continue;
        const std::string file = ResolveScenario(s.file, list_path);
        if (!IsFile(file)) problems += "  " + s.name + ": scenario not found: " + s.file + "\n";
        files.push_back(file);
        scenarios.push_back(std::move(s));
      }
      if (scenarios.empty()) problems += "  no scenario of " + list_path + " selected\n";
      if (!opt.vs.empty()) {
        if (!IsExecutable(opt.vs))
          problems += "  --vs CLI not found or not executable: " + opt.vs + "\n";
        // Interleaved, so each pair runs under the same machine load.
        std::vector<Scenario> both;
        std::vector<std::string> both_files;
        for (std::size_t i = 0; i < scenarios.size(); ++i) {
          Scenario base = scenarios[i];
          base.name += "@vs";
          base.group += "@vs";
          base.cli = opt.vs;
          std::string base_file = files[i];
          if (!opt.vs_scenarios.empty() && !base.file.empty() && base.file[0] != '/') {
            base_file = opt.vs_scenarios + "/" + base.file;
            if (!IsFile(base_file))
              problems += "  " + base.name + ": scenario not found: " + base_file + "\n";
          }
          both.push_back(scenarios[i]);
          both.push_back(std::move(base));
          both_files.push_back(files[i]);
          both_files.push_back(base_file);
        }
        scenarios = std::move(both);
        files = std::move(both_files);
      }
    }
    if (!problems.empty()) {
      std::cerr << "kvmsim-bench: cannot run the model benchmark:\n"
                << problems << "  (--raw-only measures the raw SystemC loop alone)\n";
      return 2;
    }
  }
  const PerfStat perf = opt.no_perf ? PerfStat{false, "--no-perf"} : ProbePerf(out_root);

  std::cout << "kvmsim-bench: " << opt.repeat << " round(s) of: raw SystemC loop ("
            << opt.raw_events << " events, " << kRawProcesses << " SC_METHODs)";
  for (const auto& s : scenarios) std::cout << ", " << s.name;
  std::cout << "\n  cycles per event: "
            << (perf.usable ? "perf stat -e cycles (whole child process)" : perf.why_not)
            << std::endl;

  // rounds[i]: the raw loop and every scenario once, in list order.
  std::vector<Sample> raw_samples;
  std::vector<std::vector<Sample>> samples(scenarios.size());
  for (unsigned round = 0; round < opt.repeat; ++round) {
    std::cout << "  round " << round + 1 << "/" << opt.repeat << ": raw" << std::flush;
    raw_samples.push_back(MeasureRaw(self, opt.raw_events, perf, out_root));
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      std::cout << ", " << scenarios[i].name << std::flush;
      const std::string& cli = scenarios[i].cli.empty() ? kvmsim : scenarios[i].cli;
      samples[i].push_back(
          RunModel(opt, cli, files[i], scenarios[i], out_root + "/" + scenarios[i].name, perf));
    }
    std::cout << std::endl;
  }

  // Per-round figures (each against its round's raw loop), then medians.
  auto raw_rounds = std::vector<json>();
  for (const auto& r : raw_samples) raw_rounds.push_back(Figures(r, Sample{}));
  const json raw_median = MedianFigures(raw_rounds);

  std::vector<std::string> labels;
  std::vector<std::vector<json>> rounds;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    labels.push_back(scenarios[i].name);
    rounds.emplace_back();
    for (unsigned r = 0; r < opt.repeat; ++r)
      rounds.back().push_back(Figures(samples[i][r], raw_samples[r]));
  }
  // Groups of two or more runs (the T1 pair): summed per round.
  std::vector<std::string> groups;
  for (const auto& s : scenarios) {
    const auto n = std::count_if(scenarios.begin(), scenarios.end(),
                                 [&](const Scenario& o) { return o.group == s.group; });
    if (n >= 2 && std::find(groups.begin(), groups.end(), s.group) == groups.end())
      groups.push_back(s.group);
  }
  for (const auto& g : groups) {
    labels.push_back(g + " (sum)");
    rounds.emplace_back();
    for (unsigned r = 0; r < opt.repeat; ++r) {
      std::vector<const Sample*> parts;
      for (std::size_t i = 0; i < scenarios.size(); ++i)
        if (scenarios[i].group == g) parts.push_back(&samples[i][r]);
      rounds.back().push_back(Figures(Sum(parts), raw_samples[r]));
    }
  }

  std::printf(
      "\nmedian of %u round(s); x real time = simulated s per wall s of the simulation "
      "loop\n(xRT/cpu: per CPU s of the whole child, less disturbed on a shared "
      "machine)\n\n",
      opt.repeat);
  std::printf("%-16s %11s %8s %8s %6s %9s %9s %8s %7s %6s %7s\n", "run", "events", "loop s",
              "Mev/s", "ratio", "xRT", "xRT/cpu", "cpu ns/e", "cyc/e", "RSS MB", "cpu s");
  PrintRow("raw SystemC", raw_median, json());
  json out = {{"repeat", opt.repeat},
              {"raw", {{"median", raw_median}, {"rounds", raw_rounds}}},
              {"perf_stat", perf.usable ? json("cycles") : json(perf.why_not)},
              {"sets", opt.sets},
              {"scenarios", json::object()}};
  std::map<std::string, json> medians;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const json m = MedianFigures(rounds[i]);
    medians[labels[i]] = m;
    PrintRow(labels[i], m, raw_median);
    json entry = {{"median", m}, {"rounds", rounds[i]}};
    if (i < scenarios.size()) {
      entry["file"] = scenarios[i].file;
      entry["sets"] = scenarios[i].sets;
    }
    out["scenarios"][labels[i]] = entry;
  }

  // With --vs: this CLI against the other one, pair by pair within each round.
  if (!opt.vs.empty()) {
    std::printf("\nagainst --vs %s (median over rounds of this/vs, same round):\n", opt.vs.c_str());
    json vs = json::object();
    for (std::size_t i = 0; i + 1 < labels.size(); ++i) {
      const auto other = std::find(labels.begin(), labels.end(),
                                   labels[i].find(" (sum)") != std::string::npos
                                       ? labels[i].substr(0, labels[i].size() - 6) + "@vs (sum)"
                                       : labels[i] + "@vs");
      if (other == labels.end()) continue;
      const auto j = static_cast<std::size_t>(other - labels.begin());
      std::vector<double> cpu, wall;
      for (unsigned r = 0; r < opt.repeat; ++r) {
        cpu.push_back(
            Ratio(rounds[i][r].at("cpu_s").get<double>(), rounds[j][r].at("cpu_s").get<double>()));
        wall.push_back(Ratio(rounds[i][r].at("loop_wall_s").get<double>(),
                             rounds[j][r].at("loop_wall_s").get<double>()));
      }
      std::printf("  %-16s cpu s %.3f   loop wall s %.3f\n", labels[i].c_str(), Median(cpu),
                  Median(wall));
      vs[labels[i]] = {{"cpu_s_ratio", Median(cpu)}, {"loop_wall_s_ratio", Median(wall)}};
    }
    out["vs"] = {{"cli", opt.vs}, {"ratios", vs}};
  }

  // Issue 14's targets, on the T1 pair when it ran.
  const std::string target_label = std::string(kTargetGroup) + " (sum)";
  if (medians.count(target_label)) {
    const json& t = medians.at(target_label);
    double min_ratio = 1e300;
    for (std::size_t i = 0; i < scenarios.size(); ++i)
      if (scenarios[i].group == kTargetGroup)
        min_ratio =
            std::min(min_ratio, medians.at(scenarios[i].name).at("ratio_to_raw").get<double>());
    const double xrt = t.at("x_real_time").get<double>();
    const bool ratio_met = min_ratio >= kRatioTarget;
    const bool xrt_met = xrt >= kRealTimeTarget;
    std::printf("\nT1 pair: %.0fx real time (wall), target >= %.0fx: %s\n", xrt, kRealTimeTarget,
                Verdict(xrt_met).c_str());
    std::printf("T1 pair: %.0fx real time per CPU second of the children\n",
                t.at("x_real_time_cpu").get<double>());
    std::printf("T1 ratio model/raw (lower of the two runs) %.3f, target >= %.2f: %s\n", min_ratio,
                kRatioTarget, Verdict(ratio_met).c_str());
    out["targets"] = {{"group", kTargetGroup},     {"x_real_time_min", kRealTimeTarget},
                      {"x_real_time", xrt},        {"x_real_time_met", xrt_met},
                      {"ratio_min", kRatioTarget}, {"ratio", min_ratio},
                      {"ratio_met", ratio_met}};
  }
  std::fflush(stdout);

  if (!opt.json_file.empty()) {
    std::ofstream f(opt.json_file);
    if (!f || !(f << out.dump(2) << "\n")) {
      throw std::runtime_error("cannot write " + opt.json_file);
    }
    std::cout << "wrote " << opt.json_file << std::endl;
  }
  return 0;
}

int ScaleMode(const Options& opt) {
  ScaleOptions so;
  try {
    so.vcpus = ParseScaleList(*opt.scale);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const std::string exe_dir = DirName(SelfExe());
  so.vm_vcpus = opt.scale_vm_vcpus;
  so.sets = opt.sets;
  so.kvmsim = opt.kvmsim.empty() ? exe_dir + "/kvmsim" : opt.kvmsim;
  so.scenario = FindBeside("", kScaleScenario, exe_dir);
  so.out_root = opt.out_dir.empty() ? exe_dir + "/bench-out" : opt.out_dir;
  so.json_file = opt.json_file;
  so.timeout_s = opt.timeout_s;
  std::string problems;
  if (!IsExecutable(so.kvmsim))
    problems += "  kvmsim CLI not found or not executable: " + so.kvmsim +
                "\n    (build it: cmake --build build --target kvmsim; or pass --kvmsim PATH)\n";
  if (!IsFile(so.scenario))
    problems += "  scenario not found: " + so.scenario + "\n    (run from the repo root)\n";
  if (!problems.empty()) {
    std::cerr << "kvmsim-bench: cannot run --scale:\n" << problems;
    return 2;
  }
  MakeDirs(so.out_root);
  return RunScale(so);
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  try {
    const Options opt = ParseArgs(argc, argv);
    if (opt.raw_mode_events) return RawMode(*opt.raw_mode_events);
    if (opt.scale) return ScaleMode(opt);
    return DriverMode(opt);
  } catch (const UsageError& e) {
    std::cerr << "kvmsim-bench: " << e.what() << "\n";
    PrintUsage(std::cerr);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvmsim-bench: error: " << e.what() << "\n";
    return 1;
  }
}

// Our own main: silence the SystemC banner (in this driver and in every child, which
// inherit the environment), then enter SystemC the usual way. This main takes precedence
// over the one in libsystemc.
int main(int argc, char* argv[]) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", /*overwrite=*/0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
