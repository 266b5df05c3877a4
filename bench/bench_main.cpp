// kvmsim-bench: model events per wall second on T1 vs. a raw SystemC kernel loop.
//
// SystemC can elaborate only once per process, so this is a driver that runs every
// measurement as a child process:
//   kvmsim-bench --raw N        (hidden) run the raw kernel loop, print one JSON line
//   kvmsim-bench [options]      run `--raw`, then the CLI on T1 with hv timer on and off,
//                               read each run's summary.json and print a table
// It always exits 0 once the measurements ran, target met or not; it exits non-zero only
// when something could not run (missing binary or scenario, a child failing, bad options).
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "bench/raw_kernel.h"

namespace {

using json = nlohmann::json;

constexpr const char* kDefaultScenario = "scenarios/cyclictest_pinned.yaml";
constexpr std::uint64_t kDefaultRawEvents = 20'000'000;
constexpr unsigned kRawProcesses = 4;
constexpr double kRatioTarget = 0.5;
constexpr double kPairWallTarget = 5.0;

struct Options {
  std::optional<std::uint64_t> raw_mode_events;  // hidden --raw N
  std::uint64_t raw_events = kDefaultRawEvents;
  std::optional<std::uint64_t> loops;
  std::string json_file;
  std::string scenario;
  std::string kvmsim;
  std::string out_dir;
  bool raw_only = false;
};

struct ModelRun {
  std::string label;
  double events = 0;
  double loop_wall_s = 0;     // sim.wall_s: the simulation loop
  double simulated_s = 0;     // sim.simulated_s
  double process_wall_s = 0;  // whole CLI process: start-up, elaboration, loop, output
  double EventsPerSecond() const { return loop_wall_s > 0 ? events / loop_wall_s : 0.0; }
};

class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

void PrintUsage(std::ostream& os) {
  os << "usage: kvmsim-bench [--loops N] [--raw-events N] [--json FILE]\n"
        "                    [--scenario FILE] [--kvmsim PATH] [--out DIR] [--raw-only]\n"
        "\n"
        "Measures model events per wall second on T1 ("
     << kDefaultScenario
     << ", hv timer on\n"
        "and off) against a raw SystemC kernel loop, each in its own child process.\n"
        "  --loops N       pass --set cyclictest.loops=N (default: the scenario's value)\n"
        "  --raw-events N  events of the raw loop (default "
     << kDefaultRawEvents
     << ")\n"
        "  --json FILE     also write the figures as JSON\n"
        "  --scenario F    T1 scenario (default: "
     << kDefaultScenario
     << ", looked up in the\n"
        "                  current directory, then beside the build directory)\n"
        "  --kvmsim PATH   the CLI (default: kvmsim beside this binary)\n"
        "  --out DIR       run directories (default: bench-out beside this binary)\n"
        "  --raw-only      measure the raw loop only\n";
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
    } else if (a == "--raw-events") {
      opt.raw_events = ParseCount(a, value());
    } else if (a == "--loops") {
      opt.loops = ParseCount(a, value());
    } else if (a == "--json") {
      opt.json_file = value();
    } else if (a == "--scenario") {
      opt.scenario = value();
    } else if (a == "--kvmsim") {
      opt.kvmsim = value();
    } else if (a == "--out") {
      opt.out_dir = value();
    } else if (a == "--raw-only") {
      opt.raw_only = true;
    } else if (a == "-h" || a == "--help") {
      PrintUsage(std::cout);
      std::exit(0);
    } else {
      throw UsageError("unknown option '" + a + "'");
    }
  }
  return opt;
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsExecutable(const std::string& path) {
  return IsFile(path) && ::access(path.c_str(), X_OK) == 0;
}

std::string SelfExe() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    throw std::runtime_error(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

std::string DirName(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void MakeDirs(const std::string& path) {
  std::string partial;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("mkdir " + partial + ": " + std::strerror(errno));
    }
  }
}

std::string ShellQuote(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain =
        !a.empty() &&
        a.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/=+:") ==
            std::string::npos;
    s += plain ? a : "'" + a + "'";
  }
  return s;
}

struct ChildResult {
  int exit_code = -1;  // exit status, or 128+signal
  double wall_s = 0;
  std::string captured;  // stdout (and stderr when merged)
};

// Runs argv as a child. stdout (and, if merge_stderr, stderr) is captured; otherwise stderr
// is inherited.
ChildResult RunChild(const std::vector<std::string>& argv, bool merge_stderr) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  std::cout.flush();
  std::cerr.flush();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDOUT_FILENO);
    if (merge_stderr) ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr, "kvmsim-bench: exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  ChildResult result;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      result.captured.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

std::string Tail(const std::string& text, std::size_t lines) {
  std::size_t pos = text.size();
  for (std::size_t n = 0; n <= lines && pos > 0;) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
    if (pos + 1 < text.size()) ++n;
  }
  return text.substr(pos + 1);
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

kvmsim::bench::RawKernelResult MeasureRaw(const std::string& self, std::uint64_t events) {
  const std::vector<std::string> argv = {self, "--raw", std::to_string(events)};
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
  kvmsim::bench::RawKernelResult r;
  r.events = j.at("events").get<std::uint64_t>();
  r.wall_s = j.at("wall_s").get<double>();
  r.simulated_s = j.value("simulated_s", 0.0);
  return r;
}

// ---- model runs ----

// metrics["sim.events"], tolerating a nested {"sim": {"events": ...}} layout and
// {"value": x} wrappers.
std::optional<double> Metric(const json& metrics, const std::string& key) {
  const json* node = nullptr;
  if (metrics.contains(key)) {
    node = &metrics.at(key);
  } else {
    const auto dot = key.find('.');
    if (dot != std::string::npos && metrics.contains(key.substr(0, dot)) &&
        metrics.at(key.substr(0, dot)).is_object() &&
        metrics.at(key.substr(0, dot)).contains(key.substr(dot + 1))) {
      node = &metrics.at(key.substr(0, dot)).at(key.substr(dot + 1));
    }
  }
  if (node != nullptr && node->is_object() && node->contains("value")) node = &node->at("value");
  if (node == nullptr || !node->is_number()) return std::nullopt;
  return node->get<double>();
}

ModelRun RunModel(const Options& opt, const std::string& kvmsim, const std::string& scenario,
                  bool hv_timer, const std::string& out_root) {
  ModelRun run;
  run.label = hv_timer ? "model hv_timer=on" : "model hv_timer=off";
  const std::string dir = out_root + (hv_timer ? "/hv_on" : "/hv_off");
  MakeDirs(dir);
  std::vector<std::string> argv = {
      kvmsim, "run", scenario, "--set",
      std::string("kvm.enable_hv_timer=") + (hv_timer ? "true" : "false")};
  if (opt.loops) {
    argv.emplace_back("--set");
    argv.push_back("cyclictest.loops=" + std::to_string(*opt.loops));
  }
  argv.emplace_back("--out");
  argv.push_back(dir);

  std::cout << "  running: " << ShellQuote(argv) << std::endl;
  const ChildResult child = RunChild(argv, /*merge_stderr=*/true);
  {
    std::ofstream log(dir + "/bench.log");
    log << "$ " << ShellQuote(argv) << "\n" << child.captured;
  }
  if (child.exit_code != 0) {
    throw std::runtime_error("kvmsim failed (exit " + std::to_string(child.exit_code) +
                             "); last output lines (full log: " + dir + "/bench.log):\n" +
                             Tail(child.captured, 20));
  }
  run.process_wall_s = child.wall_s;

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
  if (!events || !wall) {
    throw std::runtime_error(summary_path +
                             ": metrics lacks numeric \"sim.events\" or \"sim.wall_s\"");
  }
  run.events = *events;
  run.loop_wall_s = *wall;
  run.simulated_s = Metric(metrics, "sim.simulated_s").value_or(0.0);
  return run;
}

std::string Fixed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string Rate(double events_per_s) { return Fixed(events_per_s / 1e6, 2) + " M/s"; }

std::string Verdict(bool met) { return met ? "target met" : "target missed"; }

std::string FindScenario(const Options& opt, const std::string& exe_dir) {
  if (!opt.scenario.empty()) return opt.scenario;
  if (IsFile(kDefaultScenario)) return kDefaultScenario;
  const std::string beside = exe_dir + "/../" + kDefaultScenario;  // build/ in the repo root
  if (IsFile(beside)) return beside;
  return kDefaultScenario;  // reported as missing below
}

int DriverMode(const Options& opt) {
  const std::string self = SelfExe();
  const std::string exe_dir = DirName(self);
  const std::string kvmsim = opt.kvmsim.empty() ? exe_dir + "/kvmsim" : opt.kvmsim;
  const std::string scenario = FindScenario(opt, exe_dir);
  const std::string out_root = opt.out_dir.empty() ? exe_dir + "/bench-out" : opt.out_dir;

  if (!opt.raw_only) {
    std::string problems;
    if (!IsExecutable(kvmsim)) {
      problems += "  kvmsim CLI not found or not executable: " + kvmsim +
                  "\n    (build it: cmake --build build --target kvmsim; or pass --kvmsim PATH)\n";
    }
    if (!IsFile(scenario)) {
      problems += "  T1 scenario not found: " + scenario +
                  "\n    (run from the repo root, or pass --scenario FILE)\n";
    }
    if (!problems.empty()) {
      std::cerr << "kvmsim-bench: cannot run the model benchmark:\n"
                << problems << "  (--raw-only measures the raw SystemC loop alone)\n";
      return 2;
    }
  }

  std::cout << "kvmsim-bench: raw SystemC loop, " << opt.raw_events << " events, " << kRawProcesses
            << " SC_METHODs" << std::endl;
  const auto raw = MeasureRaw(self, opt.raw_events);
  const double raw_rate = raw.wall_s > 0 ? static_cast<double>(raw.events) / raw.wall_s : 0.0;

  std::vector<ModelRun> runs;
  if (!opt.raw_only) {
    std::cout << "kvmsim-bench: T1 = " << scenario
              << (opt.loops ? ", cyclictest.loops=" + std::to_string(*opt.loops) : std::string())
              << std::endl;
    runs.push_back(RunModel(opt, kvmsim, scenario, /*hv_timer=*/true, out_root));
    runs.push_back(RunModel(opt, kvmsim, scenario, /*hv_timer=*/false, out_root));
  }

  // ---- table ----
  std::printf("\n%-20s %14s %11s %13s %12s %13s\n", "run", "events", "loop wall s", "events/s",
              "proc wall s", "simulated s");
  std::printf("%-20s %14llu %11s %13s %12s %13s\n", "raw SystemC loop",
              static_cast<unsigned long long>(raw.events), Fixed(raw.wall_s, 3).c_str(),
              Rate(raw_rate).c_str(), "-", Fixed(raw.simulated_s, 6).c_str());
  for (const auto& r : runs) {
    std::printf("%-20s %14.0f %11s %13s %12s %13s\n", r.label.c_str(), r.events,
                Fixed(r.loop_wall_s, 3).c_str(), Rate(r.EventsPerSecond()).c_str(),
                Fixed(r.process_wall_s, 3).c_str(), Fixed(r.simulated_s, 6).c_str());
  }

  json out = {{"raw",
               {{"events", raw.events},
                {"wall_s", raw.wall_s},
                {"events_per_s", raw_rate},
                {"simulated_s", raw.simulated_s},
                {"processes", kRawProcesses}}}};
  if (!runs.empty()) {
    std::printf("\n");
    double min_ratio = 0;
    double pair_wall = 0;
    bool first = true;
    for (const auto& r : runs) {
      const double ratio = raw_rate > 0 ? r.EventsPerSecond() / raw_rate : 0.0;
      min_ratio = first ? ratio : std::min(min_ratio, ratio);
      first = false;
      pair_wall += r.process_wall_s;
      std::printf("ratio model/raw, %-18s %6.3f\n", (r.label.substr(6) + ":").c_str(), ratio);
      const std::string key = r.label == "model hv_timer=on" ? "hv_on" : "hv_off";
      out[key] = {{"events", r.events},
                  {"loop_wall_s", r.loop_wall_s},
                  {"events_per_s", r.EventsPerSecond()},
                  {"ratio_to_raw", ratio},
                  {"process_wall_s", r.process_wall_s},
                  {"simulated_s", r.simulated_s}};
    }
    const bool ratio_met = min_ratio >= kRatioTarget;
    const bool wall_met = pair_wall < kPairWallTarget;
    std::printf("ratio model/raw (lower of the two) %.3f, target >= %.2f: %s\n", min_ratio,
                kRatioTarget, Verdict(ratio_met).c_str());
    std::printf("T1 pair wall time %.3f s (%.3f + %.3f), target < %.1f s: %s\n", pair_wall,
                runs[0].process_wall_s, runs[1].process_wall_s, kPairWallTarget,
                Verdict(wall_met).c_str());
    out["scenario"] = scenario;
    if (opt.loops) out["loops"] = *opt.loops;
    out["pair_wall_s"] = pair_wall;
    out["min_ratio"] = min_ratio;
    out["targets"] = {{"ratio_min", kRatioTarget},
                      {"ratio_met", ratio_met},
                      {"pair_wall_max_s", kPairWallTarget},
                      {"pair_wall_met", wall_met}};
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

}  // namespace

int sc_main(int argc, char* argv[]) {
  try {
    const Options opt = ParseArgs(argc, argv);
    if (opt.raw_mode_events) return RawMode(*opt.raw_mode_events);
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
