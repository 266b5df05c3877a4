// The observers every run has: exit statistics (sim/vmx/exit_stats.h), the
// latency breakdown (sim/core/breakdown.h) and the run guard (fingerprint,
// invariants, a signal's stop request: sim/checks/run_guard.h). They hang on
// the hottest signals (a segment per model step), so they share one
// connection per signal and are called inline from it, in this order:
// exit statistics, breakdown, guard.
#pragma once

#include <cstdint>

#include "sim/checks/run_guard.h"
#include "sim/core/breakdown.h"
#include "sim/core/model_signals.h"
#include "sim/core/observer.h"
#include "sim/vmx/exit_stats.h"
#include "sim/vmx/kvm_signals.h"

namespace kvmsim {

class CoreObservers final : public Observer {
 public:
  ExitStats exit_stats;
  LatencyBreakdown breakdown;
  RunGuard guard;

  void connect(SignalRegistry& signals) override {
    auto& model = signals.get<ModelSignals>();
    model.segment.connect<&CoreObservers::on_segment>(this);
    model.timer_armed.connect<&CoreObservers::on_timer_armed>(this);
    model.latency_sample.connect<&CoreObservers::on_latency_sample>(this);
    auto& kvm = signals.get<KvmSignals>();
    kvm.kvm_exit.connect<&CoreObservers::on_vmexit>(this);
    kvm.kvm_entry.connect<&CoreObservers::on_vmentry>(this);
    guard.connect_tracepoints(signals);
  }

 private:
  void on_segment(int pcpu, Stage s, Tsc b, Tsc e) {
    breakdown.on_segment(pcpu, s, b, e);
    guard.on_segment(pcpu, s, b, e);
  }
  void on_timer_armed(int v, int pcpu, Tsc d) {
    breakdown.on_timer_armed(v, pcpu, d);
    guard.on_timer_armed(v, pcpu, d);
  }
  void on_latency_sample(int v, int pcpu, Tsc d, Tsc t, std::int64_t ns) {
    breakdown.on_latency_sample(v, pcpu, d, t, ns);
    guard.on_latency_sample(v, pcpu, d, t, ns);
  }
  // A vCPU's first exit or entry grows the per-vCPU tables out of line (a
  // tail call), so that the common path makes no call but a report's.
  void on_vmexit(int v, int pcpu, ExitReason r, Tsc t) {
    if (!exit_stats.has_slot(v) || !guard.has_vcpu(v)) return first_vmexit(v, pcpu, r, t);
    exit_stats.on_vmexit(v, pcpu, r, t);
    guard.on_vmexit(v, pcpu, r, t);
  }
  void on_vmentry(int v, int pcpu, Tsc t) {
    if (!exit_stats.has_slot(v) || !guard.has_vcpu(v)) return first_vmentry(v, pcpu, t);
    exit_stats.on_vmentry(v, pcpu, t);
    guard.on_vmentry(v, pcpu, t);
  }
  [[gnu::noinline]] void first_vmexit(int v, int pcpu, ExitReason r, Tsc t) {
    exit_stats.add_slot(v);
    guard.add_vcpu(v);
    exit_stats.on_vmexit(v, pcpu, r, t);
    guard.on_vmexit(v, pcpu, r, t);
  }
  [[gnu::noinline]] void first_vmentry(int v, int pcpu, Tsc t) {
    exit_stats.add_slot(v);
    guard.add_vcpu(v);
    exit_stats.on_vmentry(v, pcpu, t);
    guard.on_vmentry(v, pcpu, t);
  }
};

}  // namespace kvmsim
