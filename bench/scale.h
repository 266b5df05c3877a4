// kvmsim-bench --scale: the cost-growth law. One workload (ebizzy -M in a fleet of guests,
// scenarios/ebizzy_multi_vm.yaml) at a list of vCPU counts, each over-committed 2x on
// vCPUs/2 pCPUs, each point a child process of the kvmsim CLI; the figures per point, and
// the exponent b of cost = a * vCPUs^b fitted on log-log (CPU s per simulated s).
#pragma once

#include <string>
#include <vector>

namespace kvmsim::bench {

constexpr const char* kScaleScenario = "scenarios/ebizzy_multi_vm.yaml";
constexpr const char* kScaleDefaultVcpus = "8,32,128,512,2048";
constexpr const char* kScaleDefaultSimulatedS = "0.5";  // sim.max_simulated_s of every point
constexpr unsigned kScaleDefaultVmVcpus = 8;            // vCPUs per guest
constexpr double kScaleDefaultTimeoutS = 1800;          // per point

struct ScaleOptions {
  std::vector<unsigned> vcpus;  // total vCPUs per point, ascending
  unsigned vm_vcpus = kScaleDefaultVmVcpus;
  std::vector<std::string> sets;  // --set, after the scale's own (may set sim.max_simulated_s)
  std::string kvmsim;             // the CLI
  std::string scenario;           // the scenario file, resolved
  std::string out_root;           // run directories: OUT/scale/<vCPUs>[-startup]
  std::string json_file;
  double timeout_s = kScaleDefaultTimeoutS;
};

// Parses "8,32,128": positive integers, strictly ascending once sorted (no repeats).
std::vector<unsigned> ParseScaleList(const std::string& text);

// Least squares on (ln x, ln y): y = a * x^b. r2 is that of the log-log line.
struct PowerFit {
  double a = 0;
  double b = 0;
  double r2 = 0;
};
PowerFit FitPowerLaw(const std::vector<double>& x, const std::vector<double>& y);

// Runs every point and prints the table, the fit and the local exponents. Returns the exit
// code; throws std::runtime_error when a point cannot run, fails or times out.
int RunScale(const ScaleOptions& opt);

}  // namespace kvmsim::bench
