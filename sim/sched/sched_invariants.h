// Invariants of the host scheduling model, checked as an observer
// (sim.check_invariants): a pCPU runs one thread at a time (every
// sched_switch leaves the thread it last switched in), a thread is current on
// at most one pCPU, and a vCPU enters guest mode only on the pCPU where it is
// current. Violations are counted and the first few described; the run
// reports them as invariants.violations.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/core/metrics.h"
#include "sim/core/observer.h"

namespace kvmsim {

class SchedInvariants : public ModelObserver, public MetricSource {
 public:
  // vcpu_pid[i]: the pid of vCPU i's thread.
  explicit SchedInvariants(std::vector<int> vcpu_pid) : vcpu_pid_(std::move(vcpu_pid)) {}

  void on_sched_switch(int pcpu, const std::string& /*prev_comm*/, int prev_pid, int /*prev_prio*/,
                       bool /*prev_runnable*/, const std::string& /*next_comm*/, int next_pid,
                       int /*next_prio*/, Tsc t) override {
    auto it = running_.find(pcpu);
    const int cur = it == running_.end() ? 0 : it->second;
    if (cur != prev_pid)
      fail(t, "pCPU " + std::to_string(pcpu) + " switched out pid " + std::to_string(prev_pid) +
                  " but was running pid " + std::to_string(cur));
    if (prev_pid) on_cpu_.erase(prev_pid);
    if (next_pid) {
      const auto o = on_cpu_.find(next_pid);
      if (o != on_cpu_.end() && o->second != pcpu)
        fail(t, "pid " + std::to_string(next_pid) + " switched in on pCPU " + std::to_string(pcpu) +
                    " while current on pCPU " + std::to_string(o->second));
      on_cpu_[next_pid] = pcpu;
    }
    running_[pcpu] = next_pid;
  }
  void on_vmentry(int vcpu, int pcpu, Tsc t) override {
    const int pid = vcpu_pid_.at(static_cast<std::size_t>(vcpu));
    const auto it = running_.find(pcpu);
    if (it == running_.end() || it->second != pid)
      fail(t, "vCPU " + std::to_string(vcpu) + " entered guest mode on pCPU " +
                  std::to_string(pcpu) + " where it is not the current thread");
  }
  void report(Metrics& m, const TscClock& /*clk*/) const override {
    m["invariants.violations"] = static_cast<double>(violations_);
  }
  [[nodiscard]] std::uint64_t violations() const { return violations_; }
  [[nodiscard]] const std::vector<std::string>& messages() const { return messages_; }

 private:
  void fail(Tsc t, std::string what) {
    ++violations_;
    if (messages_.size() < 5) messages_.push_back("at TSC " + std::to_string(t) + ": " + what);
  }

  std::vector<int> vcpu_pid_;
  std::map<int, int> running_;  // pCPU -> pid (0 = idle)
  std::map<int, int> on_cpu_;   // pid -> pCPU it is current on
  std::uint64_t violations_ = 0;
  std::vector<std::string> messages_;
};

}  // namespace kvmsim
