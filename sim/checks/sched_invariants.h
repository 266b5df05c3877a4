// Invariants of the host scheduling model, checked as an observer
// (sim.check_invariants): a pCPU runs one thread at a time (every
// sched_switch leaves the thread it last switched in), a thread is current on
// at most one pCPU, and a vCPU enters guest mode only on the pCPU where it is
// current. Violations are counted and the first few described; the run
// reports them as invariants.violations.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/metrics.h"
#include "sim/core/observer.h"
#include "sim/sched/sched_signals.h"
#include "sim/vmx/kvm_signals.h"

namespace kvmsim {

class SchedInvariants : public Observer, public MetricSource {
 public:
  // vcpu_pid[i]: the pid of vCPU i's thread.
  explicit SchedInvariants(std::vector<int> vcpu_pid) : vcpu_pid_(std::move(vcpu_pid)) {}

  void connect(SignalRegistry& signals) override {
    signals.get<SchedSignals>().sched_switch.connect<&SchedInvariants::on_sched_switch>(this);
    signals.get<KvmSignals>().kvm_entry.connect<&SchedInvariants::on_vmentry>(this);
  }
  void on_sched_switch(int pcpu, const std::string& /*prev_comm*/, int prev_pid, int /*prev_prio*/,
                       bool /*prev_runnable*/, const std::string& /*next_comm*/, int next_pid,
                       int /*next_prio*/, Tsc t) {
    const int cur = running(pcpu);
    if (cur != prev_pid)
      fail(t, "pCPU " + std::to_string(pcpu) + " switched out pid " + std::to_string(prev_pid) +
                  " but was running pid " + std::to_string(cur));
    if (prev_pid) slot(on_cpu_, prev_pid) = -1;
    if (next_pid) {
      const int o = at(on_cpu_, next_pid, -1);
      if (o >= 0 && o != pcpu)
        fail(t, "pid " + std::to_string(next_pid) + " switched in on pCPU " + std::to_string(pcpu) +
                    " while current on pCPU " + std::to_string(o));
      slot(on_cpu_, next_pid) = pcpu;
    }
    slot(running_, pcpu) = next_pid;
  }
  // Every entry: the check inline, anything else (an unknown vCPU, the
  // report) out of line.
  void on_vmentry(int vcpu, int pcpu, Tsc t) {
    const auto i = static_cast<std::size_t>(vcpu);
    if (i >= vcpu_pid_.size() || running(pcpu) != vcpu_pid_[i]) entered_elsewhere(vcpu, pcpu, t);
  }
  [[gnu::cold, gnu::noinline]] void entered_elsewhere(int vcpu, int pcpu, Tsc t) {
    const int pid = vcpu_pid_.at(static_cast<std::size_t>(vcpu));
    if (running(pcpu) != pid)
      fail(t, "vCPU " + std::to_string(vcpu) + " entered guest mode on pCPU " +
                  std::to_string(pcpu) + " where it is not the current thread");
  }
  void report(Metrics& m, const TscClock& /*clk*/) const override {
    m["invariants.violations"] = static_cast<double>(violations_);
  }
  [[nodiscard]] std::uint64_t violations() const { return violations_; }
  [[nodiscard]] const std::vector<std::string>& messages() const { return messages_; }

 private:
  void fail(Tsc t, const std::string& what) {
    ++violations_;
    if (messages_.size() < 5) messages_.push_back("at TSC " + std::to_string(t) + ": " + what);
  }

  // Flat tables (cheap enough to check every run): index -> value.
  static int at(const std::vector<int>& v, int i, int none = 0) {
    return static_cast<std::size_t>(i) < v.size() ? v[static_cast<std::size_t>(i)] : none;
  }
  [[nodiscard]] int running(int pcpu) const { return std::max(at(running_, pcpu), 0); }
  static int& slot(std::vector<int>& v, int i) {
    if (static_cast<std::size_t>(i) >= v.size()) v.resize(static_cast<std::size_t>(i) + 1, -1);
    return v[static_cast<std::size_t>(i)];
  }

  std::vector<int> vcpu_pid_;
  std::vector<int> running_;  // pCPU -> pid (0 = idle; -1 = not seen: idle)
  std::vector<int> on_cpu_;   // pid -> pCPU it is current on (-1 = none)
  std::uint64_t violations_ = 0;
  std::vector<std::string> messages_;
};

}  // namespace kvmsim
