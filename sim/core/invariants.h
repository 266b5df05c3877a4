// Invariants checked in every run (cheap: a compare per event). A violation is
// a bug in the model, never a property of the input: it stops the run at once
// and run_simulation() throws InvariantError naming the simulated time and the
// component, so no result computed past it is ever reported.
//
// Model code reports with invariant_failed(); InvariantObserver checks what
// the event stream shows:
//   - simulated time never goes back (each pCPU's segments are in order and
//     never overlap: a pCPU runs one thread at a time);
//   - a vCPU is on one pCPU: its VM exit happens on the pCPU it entered on,
//     exits and entries alternate;
//   - every latency sample is for a deadline that was armed on that vCPU and
//     is delivered once.
// KvmLapic checks that an acknowledged vector is ended once (no EOI finds the
// ISR empty) and that an armed deadline is delivered once, held by one back
// end (hrtimer or preemption timer) at a time; Vcpu that the preemption-timer
// value fits in 32 bits.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/observer.h"

namespace kvmsim {

class InvariantError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Records the first violation (component, what, simulated TSC now) and stops
// the simulation at the end of the current delta cycle.
void invariant_failed(const std::string& component, const std::string& what);
// The first violation of this process, "" when none.
const std::string& invariant_violation();
// Fault injection for the tests that make an invariant fire through the real
// model: true when the environment variable KVMSIM_FAULT names `fault`
// (read once per process). Model code asks once, at construction.
bool fault_injected(const char* fault);

class InvariantObserver final : public ModelObserver {
 public:
  // The per-event checks are inline (they run on every event); what they
  // report is not.
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end) override {
    const auto i = static_cast<std::size_t>(pcpu);
    if (i >= pcpu_end_.size()) pcpu_end_.resize(i + 1, 0);
    if (end < begin || begin < pcpu_end_[i]) segment_out_of_order(pcpu, stage, begin, end);
    if (end > pcpu_end_[i]) pcpu_end_[i] = end;
  }
  void on_vmexit(int v, int pcpu, ExitReason reason, Tsc) override {
    auto& s = vcpu(v);
    if (s.in_guest_on != pcpu) exit_elsewhere(v, pcpu, reason);
    s.in_guest_on = -1;
  }
  void on_vmentry(int v, int pcpu, Tsc) override {
    auto& s = vcpu(v);
    if (s.in_guest_on >= 0) entry_in_guest(v, pcpu);
    s.in_guest_on = pcpu;
  }
  void on_timer_armed(int vcpu, int pcpu, Tsc deadline) override;
  void on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t, std::int64_t latency_ns) override;

 private:
  struct VcpuState {
    int in_guest_on = -1;   // pCPU the vCPU entered on, -1 in root mode
    std::deque<Tsc> armed;  // deadlines armed, not yet delivered (oldest first)
  };
  VcpuState& vcpu(int v) {
    const auto i = static_cast<std::size_t>(v);
    if (i >= vcpus_.size()) vcpus_.resize(i + 1);
    return vcpus_[i];
  }
  void segment_out_of_order(int pcpu, Stage stage, Tsc begin, Tsc end) const;
  void exit_elsewhere(int v, int pcpu, ExitReason reason) const;
  void entry_in_guest(int v, int pcpu) const;
  std::vector<Tsc> pcpu_end_;  // end of the last segment per pCPU
  std::vector<VcpuState> vcpus_;
};

}  // namespace kvmsim
