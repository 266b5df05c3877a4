// kvmsim-bench --scale: the cost-growth law (see scale.h).
//
// Point N (total vCPUs): N / G guests of G vCPUs each (--scale-vm-vcpus, default 8), all
// vCPU threads floating over all N/2 pCPUs of a two-socket host (2 sockets x N/8 cores x 2
// threads), so the host is over-committed 2x at every size and the guests keep their shape:
// what grows is the fleet and the host under it. Every point runs twice: once for
// sim.max_simulated_s = 0.001 (start-up: elaboration, the first millisecond, the output),
// all of them first so that a size the model refuses fails before the long runs; then for
// the measured time. The law is fitted on the measured runs' CPU s per simulated s.
#include "bench/scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/child_process.h"

namespace kvmsim::bench {
namespace {

using json = nlohmann::json;

constexpr const char* kStartupSimulatedS = "0.001";  // the parameter's minimum
constexpr unsigned kSockets = 2;
constexpr unsigned kThreadsPerCore = 2;

// Keys the scale sets itself for every point; --set may not change them.
constexpr const char* kScaleKeys[] = {"vm.count",
                                      "vm.vcpus",
                                      "vm.affinity",
                                      "vm.pinning",
                                      "platform.sockets",
                                      "platform.cores_per_socket",
                                      "platform.threads_per_core"};

struct Point {
  unsigned vcpus = 0;
  unsigned pcpus = 0;
  unsigned vms = 0;
  std::vector<std::string> argv;  // the measured run; the start-up run appends one --set
  std::string dir;
};

struct RunFigures {
  double events = 0;
  double simulated_s = 0;
  double loop_wall_s = 0;  // sim.wall_s
  ChildResult child;
};

std::string Fixed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string Sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double MetricOf(const json& metrics, const std::string& key, const std::string& file) {
  if (!metrics.contains(key) || !metrics.at(key).is_number())
    throw std::runtime_error(file + ": metrics lacks " + key);
  return metrics.at(key).get<double>();
}

// Runs one point's kvmsim child into `dir`; throws with the tail of its output on failure
// or timeout.
RunFigures RunPoint(const Point& pt, std::vector<std::string> argv, const std::string& dir,
                    double timeout_s, const char* what) {
  MakeDirs(dir);
  argv.insert(argv.end(), {"--out", dir});
  const ChildResult child = RunChild(argv, /*merge_stderr=*/true, timeout_s);
  {
    std::ofstream log(dir + "/bench.log");
    log << "$ " << ShellQuote(argv) << "\n" << child.captured;
  }
  const std::string label = std::to_string(pt.vcpus) + " vCPUs (" + what + ")";
  if (child.timed_out) {
    throw std::runtime_error(label + ": timed out after " + Fixed(timeout_s, 0) +
                             " s and was killed (raise --timeout, or lower "
                             "sim.max_simulated_s); log: " +
                             dir + "/bench.log");
  }
  if (child.exit_code != 0) {
    throw std::runtime_error(label + ": kvmsim failed (exit " + std::to_string(child.exit_code) +
                             "); last output lines (full log: " + dir + "/bench.log):\n" +
                             Tail(child.captured, 20));
  }
  const std::string summary_path = dir + "/summary.json";
  std::ifstream in(summary_path);
  if (!in) throw std::runtime_error(label + ": kvmsim exited 0 but wrote no " + summary_path);
  json summary;
  try {
    in >> summary;
  } catch (const json::exception& e) {
    throw std::runtime_error(summary_path + ": not valid JSON: " + e.what());
  }
  if (!summary.contains("metrics") || !summary.at("metrics").is_object())
    throw std::runtime_error(summary_path + ": no \"metrics\" object");
  const json& m = summary.at("metrics");
  RunFigures f;
  f.events = MetricOf(m, "sim.events", summary_path);
  f.simulated_s = MetricOf(m, "sim.simulated_s", summary_path);
  f.loop_wall_s = MetricOf(m, "sim.wall_s", summary_path);
  f.child = child;
  return f;
}

std::string AffinityList(unsigned pcpus) {
  std::string s = "[";
  for (unsigned c = 0; c < pcpus; ++c) s += (c ? "," : "") + std::to_string(c);
  return s + "]";
}

// Local exponent between two points: the slope of ln(cost) over ln(vCPUs).
double LocalExponent(double x0, double y0, double x1, double y1) {
  return std::log(y1 / y0) / std::log(x1 / x0);
}

}  // namespace

std::vector<unsigned> ParseScaleList(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(item, &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || item[0] == '-' || v == 0 || v > 1u << 20)
      throw std::invalid_argument(
          "--scale needs comma-separated vCPU counts (e.g. 8,32,128), got '" + text + "'");
    out.push_back(static_cast<unsigned>(v));
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw std::invalid_argument("--scale lists a vCPU count twice: '" + text + "'");
  if (out.size() < 2)
    throw std::invalid_argument("--scale needs at least two vCPU counts to fit a law, got '" +
                                text + "'");
  return out;
}

PowerFit FitPowerLaw(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size();
  if (n < 2 || y.size() != n) throw std::invalid_argument("FitPowerLaw: needs two points or more");
  double mx = 0;
  double my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(x[i] > 0) || !(y[i] > 0))
      throw std::invalid_argument("FitPowerLaw: values must be positive");
    mx += std::log(x[i]);
    my += std::log(y[i]);
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxx = 0;
  double sxy = 0;
  double syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = std::log(x[i]) - mx;
    const double dy = std::log(y[i]) - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx <= 0) throw std::invalid_argument("FitPowerLaw: x values must differ");
  PowerFit f;
  f.b = sxy / sxx;
  f.a = std::exp(my - f.b * mx);
  f.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  return f;
}

int RunScale(const ScaleOptions& opt) {
  // Every size must map onto whole guests and a whole two-socket, 2-thread host.
  std::string problems;
  for (const unsigned n : opt.vcpus) {
    if (n % opt.vm_vcpus != 0)
      problems += "  " + std::to_string(n) + " vCPUs are not a whole number of " +
                  std::to_string(opt.vm_vcpus) + "-vCPU guests (--scale-vm-vcpus)\n";
    if (n % (2 * kSockets * kThreadsPerCore) != 0)
      problems += "  " + std::to_string(n) +
                  " vCPUs: not a multiple of 8 (the N/2 pCPUs are 2 sockets x whole cores x 2 "
                  "threads)\n";
  }
  for (const auto& kv : opt.sets) {
    const std::string key = kv.substr(0, kv.find('='));
    for (const char* k : kScaleKeys)
      if (key == k)
        problems += "  --set " + kv + ": --scale sets " + key +
                    " itself at every point (vm.count, vm.vcpus, vm.affinity and the host's "
                    "topology)\n";
  }
  if (!problems.empty()) throw std::runtime_error("cannot run --scale:\n" + problems);

  std::vector<Point> points;
  for (const unsigned n : opt.vcpus) {
    Point pt;
    pt.vcpus = n;
    pt.pcpus = n / 2;
    pt.vms = n / opt.vm_vcpus;
    pt.dir = opt.out_root + "/scale/" + std::to_string(n);
    pt.argv = {opt.kvmsim, "run", opt.scenario, "-q"};
    const std::vector<std::string> own = {
        std::string("sim.max_simulated_s=") + kScaleDefaultSimulatedS,
        "vm.count=" + std::to_string(pt.vms),
        "vm.vcpus=" + std::to_string(opt.vm_vcpus),
        "vm.affinity=" + AffinityList(pt.pcpus),
        "platform.sockets=" + std::to_string(kSockets),
        "platform.cores_per_socket=" + std::to_string(pt.pcpus / (kSockets * kThreadsPerCore)),
        "platform.threads_per_core=" + std::to_string(kThreadsPerCore)};
    for (const auto& kv : own) pt.argv.insert(pt.argv.end(), {"--set", kv});
    for (const auto& kv : opt.sets) pt.argv.insert(pt.argv.end(), {"--set", kv});
    points.push_back(std::move(pt));
  }

  std::cout << "kvmsim-bench --scale: " << opt.scenario << ", guests of " << opt.vm_vcpus
            << " vCPUs, 2x over-committed on vCPUs/2 pCPUs (2 sockets x 2 threads)\n"
            << "  default sim.max_simulated_s=" << kScaleDefaultSimulatedS;
  for (const auto& kv : opt.sets) std::cout << " --set " << kv;
  std::cout << "\n  timeout per run " << Fixed(opt.timeout_s, 0) << " s; run directories "
            << opt.out_root
            << "/scale/\n  start-up runs (sim.max_simulated_s=" << kStartupSimulatedS
            << "):" << std::flush;

  // Start-up runs first: a size the model refuses fails before any long run.
  std::vector<RunFigures> startup;
  for (const auto& pt : points) {
    std::cout << " " << pt.vcpus << std::flush;
    auto argv = pt.argv;
    argv.insert(argv.end(), {"--set", std::string("sim.max_simulated_s=") + kStartupSimulatedS});
    try {
      startup.push_back(RunPoint(pt, argv, pt.dir + "-startup", opt.timeout_s, "start-up run"));
    } catch (const std::exception&) {
      std::cout << std::endl;  // end the progress line before the error
      throw;
    }
  }
  std::cout << " ok\n\n";

  std::printf("%6s %6s %5s %6s %12s %11s %11s %11s %11s %9s %8s %9s\n", "vCPUs", "pCPUs", "VMs",
              "sim s", "events", "wall s/sim", "CPU s/sim", "net CPU/sim", "ev/vCPU-s", "CPU ns/ev",
              "RSS MB", "start CPU");
  std::fflush(stdout);
  json rows = json::array();
  std::vector<double> xs;
  std::vector<double> ys;
  std::vector<double> net_ys;  // start-up subtracted; empty once one is not positive
  bool net_ok = true;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& pt = points[i];
    const RunFigures f = RunPoint(pt, pt.argv, pt.dir, opt.timeout_s, "measured run");
    if (!(f.simulated_s > 0))
      throw std::runtime_error(std::to_string(pt.vcpus) + " vCPUs: simulated 0 s");
    if (!(f.child.cpu_s > 0))
      throw std::runtime_error(std::to_string(pt.vcpus) +
                               " vCPUs: CPU time measured as 0 s (raise sim.max_simulated_s)");
    const double wall_per_sim = f.child.wall_s / f.simulated_s;
    const double cpu_per_sim = f.child.cpu_s / f.simulated_s;
    const double ev_per_vcpu_s = f.events / (pt.vcpus * f.simulated_s);
    const double rss_mb = f.child.max_rss_kb / 1024.0;
    const double cpu_ns_per_event = f.child.cpu_s * 1e9 / std::max(f.events, 1.0);
    // The run's CPU s less its start-up run's, per simulated s beyond the start-up's: the
    // cost of simulating without the fixed cost of starting (which weighs on small sizes).
    const double net_sim = f.simulated_s - startup[i].simulated_s;
    const double net_cpu = f.child.cpu_s - startup[i].child.cpu_s;
    const bool net_positive = net_sim > 0 && net_cpu > 0;
    const double net_per_sim = net_positive ? net_cpu / net_sim : 0.0;
    net_ok = net_ok && net_positive;
    if (net_positive) net_ys.push_back(net_per_sim);
    std::printf("%6u %6u %5u %6s %12.0f %11s %11s %11s %11.0f %9.0f %8s %9s\n", pt.vcpus, pt.pcpus,
                pt.vms, Fixed(f.simulated_s, 3).c_str(), f.events, Fixed(wall_per_sim, 3).c_str(),
                Fixed(cpu_per_sim, 3).c_str(), net_positive ? Fixed(net_per_sim, 3).c_str() : "-",
                ev_per_vcpu_s, cpu_ns_per_event, Fixed(rss_mb, 1).c_str(),
                Fixed(startup[i].child.cpu_s, 3).c_str());
    std::fflush(stdout);
    xs.push_back(pt.vcpus);
    ys.push_back(cpu_per_sim);
    rows.push_back({{"vcpus", pt.vcpus},
                    {"pcpus", pt.pcpus},
                    {"vms", pt.vms},
                    {"vm_vcpus", opt.vm_vcpus},
                    {"simulated_s", f.simulated_s},
                    {"events", f.events},
                    {"process_wall_s", f.child.wall_s},
                    {"loop_wall_s", f.loop_wall_s},
                    {"cpu_s", f.child.cpu_s},
                    {"wall_s_per_simulated_s", wall_per_sim},
                    {"cpu_s_per_simulated_s", cpu_per_sim},
                    {"net_cpu_s_per_simulated_s", net_positive ? json(net_per_sim) : json()},
                    {"events_per_vcpu_s", ev_per_vcpu_s},
                    {"cpu_ns_per_event", cpu_ns_per_event},
                    {"max_rss_mb", rss_mb},
                    {"startup_cpu_s", startup[i].child.cpu_s},
                    {"startup_wall_s", startup[i].child.wall_s},
                    {"startup_max_rss_mb", startup[i].child.max_rss_kb / 1024.0},
                    {"dir", pt.dir},
                    {"command", ShellQuote(pt.argv) + " --out " + pt.dir}});
  }

  const PowerFit fit = FitPowerLaw(xs, ys);
  std::printf(
      "\ncost law (least squares on log-log, %zu points): CPU s per simulated s = %s x "
      "vCPUs^b\n  fitted exponent b = %s (r^2 %s)\n",
      xs.size(), Sci(fit.a).c_str(), Fixed(fit.b, 3).c_str(), Fixed(fit.r2, 3).c_str());
  std::printf("  local exponents (where the law bends):");
  json local = json::array();
  for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
    const double b = LocalExponent(xs[i], ys[i], xs[i + 1], ys[i + 1]);
    std::printf(" %.0f->%.0f %s%s", xs[i], xs[i + 1], Fixed(b, 2).c_str(),
                i + 2 < xs.size() ? "," : "\n");
    local.push_back({{"from_vcpus", xs[i]}, {"to_vcpus", xs[i + 1]}, {"exponent", b}});
  }
  json net_fit;  // null when a run's CPU s did not exceed its start-up run's
  if (net_ok) {
    const PowerFit nf = FitPowerLaw(xs, net_ys);
    net_fit = {{"y", "net_cpu_s_per_simulated_s"},
               {"x", "vcpus"},
               {"a", nf.a},
               {"exponent", nf.b},
               {"r2", nf.r2}};
    std::printf("  without start-up (net CPU/sim): b = %s (r^2 %s); local:", Fixed(nf.b, 3).c_str(),
                Fixed(nf.r2, 3).c_str());
    for (std::size_t i = 0; i + 1 < xs.size(); ++i)
      std::printf(" %.0f->%.0f %s%s", xs[i], xs[i + 1],
                  Fixed(LocalExponent(xs[i], net_ys[i], xs[i + 1], net_ys[i + 1]), 2).c_str(),
                  i + 2 < xs.size() ? "," : "\n");
  } else {
    std::printf(
        "  without start-up: n/a (a run's CPU s did not exceed its start-up run's; raise "
        "sim.max_simulated_s)\n");
  }
  std::fflush(stdout);

  if (!opt.json_file.empty()) {
    const json out = {{"mode", "scale"},
                      {"scenario", opt.scenario},
                      {"vm_vcpus", opt.vm_vcpus},
                      {"overcommit", 2},
                      {"topology", {{"sockets", kSockets}, {"threads_per_core", kThreadsPerCore}}},
                      {"default_simulated_s", std::stod(kScaleDefaultSimulatedS)},
                      {"startup_simulated_s", std::stod(kStartupSimulatedS)},
                      {"sets", opt.sets},
                      {"timeout_s", opt.timeout_s},
                      {"points", rows},
                      {"fit",
                       {{"y", "cpu_s_per_simulated_s"},
                        {"x", "vcpus"},
                        {"a", fit.a},
                        {"exponent", fit.b},
                        {"r2", fit.r2}}},
                      {"local_exponents", local},
                      {"net_fit", net_fit}};
    std::ofstream f(opt.json_file);
    if (!f || !(f << out.dump(2) << "\n"))
      throw std::runtime_error("cannot write " + opt.json_file);
    std::cout << "wrote " << opt.json_file << std::endl;
  }
  return 0;
}

}  // namespace kvmsim::bench
