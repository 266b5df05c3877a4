// Workloads: what the guests run. Each workload lives in its own files
// (sim/guest/workloads), declares its parameters, builds itself on the
// Machine it is given and reports its own metrics, and registers itself by
// name (OMNeT++'s Define_Module):
//
//   KVMSIM_REGISTER_WORKLOAD(my_workload, "doc sentence", declare_fn, make_fn);
//
// `workload.type` accepts exactly the registered names. Adding a workload adds
// files; nothing central changes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/histogram.h"
#include "sim/core/metrics.h"
#include "sim/core/params.h"

namespace kvmsim {

class Observer;
class Vcpu;
class Vm;
struct TscClock;

// What a workload sees of the simulated system (System implements it): the
// run's parameters and clock, the VMs and their vCPUs to install guests on,
// and the run's end. Workloads do not reach the host or the observers'
// plumbing beyond this.
class Machine {
 public:
  [[nodiscard]] virtual const ParamSet& params() const = 0;
  [[nodiscard]] virtual const TscClock& clock() const = 0;
  [[nodiscard]] virtual const std::vector<std::unique_ptr<Vm>>& vms() const = 0;
  [[nodiscard]] virtual const std::vector<Vcpu*>& vcpus() const = 0;  // VM-major
  [[nodiscard]] virtual int vcpus_per_vm() const = 0;
  // An observer of the model's signals for the workload's own numbers.
  virtual void add_observer(Observer* o) = 0;
  // The workload is done: the run ends at this simulated time.
  virtual void stop() = 0;

 protected:
  Machine() = default;
  ~Machine() = default;
  Machine(const Machine&) = default;
  Machine& operator=(const Machine&) = default;
};

class Workload : public MetricSource {
 public:
  // Installs the workload's guests (a Linux kernel with its tasks, or a bare
  // kvm-unit-tests program) on the machine's vCPUs. Calls m.stop() when done.
  virtual void build(Machine& m) = 0;
  // cyclictest -h output, for workloads that measure a latency histogram.
  [[nodiscard]] virtual const LatencyHistogram* histogram() const { return nullptr; }
  // Samples expected (a progress line counts latency samples), 0 = none.
  [[nodiscard]] virtual std::uint64_t progress_total() const { return 0; }
  // The vCPU (VM-major index) whose LAPIC reports lapic.timer_advance_ns.
  [[nodiscard]] virtual int measuring_vcpu() const { return 0; }
  // No end of its own: runs until sim.max_simulated_s, and a run that gets
  // there is complete (RunResult::completed); other workloads call Machine::stop().
  [[nodiscard]] virtual bool open_ended() const { return false; }
  // The share of the work done so far (0..1) for workloads that count it
  // another way than latency samples; negative = unknown (the pace warning).
  [[nodiscard]] virtual double done_fraction() const { return -1; }
  void report(Metrics& /*m*/, const TscClock& /*clk*/) const override {}
  // The run summary's lines for this workload's own numbers, from the
  // metrics it reported (as the tool it models prints them); "" = none.
  [[nodiscard]] virtual std::string headline(const Metrics& /*m*/) const { return {}; }
};

struct WorkloadInfo {
  std::string name;
  std::string doc;
  // Declares the workload's own parameters (may be empty).
  std::function<void(ParamRegistry&)> declare;
  // Reads and checks the parameters (ScenarioError naming the key).
  std::function<std::unique_ptr<Workload>(const ParamSet&)> make;
};

class WorkloadRegistry {
 public:
  static WorkloadRegistry& instance();
  bool add(WorkloadInfo info);  // logic_error on a duplicate name
  [[nodiscard]] const WorkloadInfo* find(const std::string& name) const;
  [[nodiscard]] std::vector<std::string> names() const;  // sorted
  [[nodiscard]] const std::map<std::string, WorkloadInfo>& all() const { return by_name_; }

 private:
  std::map<std::string, WorkloadInfo> by_name_;
};

}  // namespace kvmsim

#define KVMSIM_REGISTER_WORKLOAD(id, doc, declare_fn, make_fn)                     \
  namespace {                                                                      \
  [[maybe_unused]] const bool kvmsim_registered_workload_##id =                    \
      ::kvmsim::WorkloadRegistry::instance().add({#id, doc, declare_fn, make_fn}); \
  }
