// What the event stream shows, checked in every run (cheap: a compare per
// event; RunGuard calls it):
//   - simulated time never goes back (each pCPU's segments are in order and
//     never overlap: a pCPU runs one thread at a time);
//   - a vCPU is on one pCPU: its VM exit happens on the pCPU it entered on,
//     exits and entries alternate;
//   - every latency sample is for a deadline that was armed on that vCPU and
//     is delivered once.
// A violation goes to invariant_failed() (sim/core/invariants.h).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/invariants.h"
#include "sim/core/ring_fifo.h"
#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim {

class InvariantObserver {
 public:
  // The per-event checks are inline (they run on every event); what they
  // report is not.
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end) {
    if (!segment_in_order(pcpu, begin, end)) segment_slow(pcpu, stage, begin, end);
  }
  // The common case of on_segment() with no call in it, so that a caller can
  // inline it without saving registers: true if `pcpu` is known and the
  // segment is in order (then recorded); false leaves it to segment_slow().
  bool segment_in_order(int pcpu, Tsc begin, Tsc end) {
    const auto i = static_cast<std::size_t>(pcpu);
    if (i >= pcpu_end_.size() || end < begin || begin < pcpu_end_[i]) return false;
    if (end > pcpu_end_[i]) pcpu_end_[i] = end;
    return true;
  }
  // The rest of on_segment(): a pCPU seen for the first time, or the report.
  [[gnu::noinline]] void segment_slow(int pcpu, Stage stage, Tsc begin, Tsc end) {
    const auto i = static_cast<std::size_t>(pcpu);
    if (i >= pcpu_end_.size()) pcpu_end_.resize(i + 1, 0);
    if (end < begin || begin < pcpu_end_[i]) segment_out_of_order(pcpu, stage, begin, end);
    if (end > pcpu_end_[i]) pcpu_end_[i] = end;
  }
  // The state is updated first and a report is the last thing done, so that
  // where these are inlined the report is a tail call.
  void on_vmexit(int v, int pcpu, ExitReason reason, Tsc) {
    auto& s = vcpu(v);
    const int was_on = s.in_guest_on;
    s.in_guest_on = -1;
    if (was_on != pcpu) exit_elsewhere(v, pcpu, reason, was_on);
  }
  void on_vmentry(int v, int pcpu, Tsc) {
    auto& s = vcpu(v);
    const int was_on = s.in_guest_on;
    s.in_guest_on = pcpu;
    if (was_on >= 0) entry_in_guest(v, pcpu, was_on);
  }
  // vcpu(v) without growing: whether v has a slot (callers that keep their
  // common path free of calls grow first, out of line, with add_vcpu()).
  [[nodiscard]] bool has_vcpu(int v) const { return static_cast<std::size_t>(v) < vcpus_.size(); }
  [[gnu::noinline]] void add_vcpu(int v) { vcpu(v); }
  void on_timer_armed(int vcpu, int pcpu, Tsc deadline);
  void on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t, std::int64_t latency_ns);

 private:
  struct VcpuState {
    int in_guest_on = -1;  // pCPU the vCPU entered on, -1 in root mode
    RingFifo<Tsc> armed;   // deadlines armed, not yet delivered (oldest first)
  };
  VcpuState& vcpu(int v) {
    const auto i = static_cast<std::size_t>(v);
    if (i >= vcpus_.size()) vcpus_.resize(i + 1);
    return vcpus_[i];
  }
  // The reports: cold and out of line, so that the inline checks above stay
  // small where they are inlined (every segment, exit and entry).
  [[gnu::cold, gnu::noinline]] void segment_out_of_order(int pcpu, Stage stage, Tsc begin,
                                                         Tsc end) const;
  [[gnu::cold, gnu::noinline]] static void exit_elsewhere(int v, int pcpu, ExitReason reason,
                                                          int entered_on);
  [[gnu::cold, gnu::noinline]] static void entry_in_guest(int v, int pcpu, int in_guest_on);
  std::vector<Tsc> pcpu_end_;  // end of the last segment per pCPU
  std::vector<VcpuState> vcpus_;
};

}  // namespace kvmsim
