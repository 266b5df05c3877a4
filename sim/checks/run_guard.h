// The observer every run has (attached by run_simulation): the event-trajectory
// fingerprint, the invariant checks, and the stop request of a signal handler
// (request_stop(): the run ends at the next segment boundary, like one cut by
// sim.max_simulated_s, so every observer closes its output properly). One
// observer instead of three: each observer costs a virtual call per event.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>

#include "sim/checks/fingerprint.h"
#include "sim/checks/invariant_observer.h"
#include "sim/core/observer.h"

namespace kvmsim {

namespace detail {
extern volatile std::sig_atomic_t g_stop_requested;
}
// Async-signal-safe: only stores a flag.
inline void request_stop() { detail::g_stop_requested = 1; }
inline bool stop_requested() { return detail::g_stop_requested != 0; }

class RunGuard final : public Observer {
 public:
  // The model signals, the vCPU's and the LAPIC's tracepoints (not the
  // scheduler's, not kvm_pv_tlb_flush: their runs keep their fingerprints).
  void connect(SignalRegistry& signals) override;
  // The part of connect() no other core observer shares: the tracepoints
  // only the fingerprint records (CoreObservers calls the rest inline).
  void connect_tracepoints(SignalRegistry& signals);

  // On every segment: the common case inline and without a call, everything
  // else (the invariant's slow path, a stop request, the pace check every
  // 2^18 segments) in one out-of-line tail call, in the same order.
  void on_segment(int pcpu, Stage s, Tsc b, Tsc e) {
    fp_.on_segment(pcpu, s, b, e);
    const bool in_order = inv_.segment_in_order(pcpu, b, e);
    const bool pace_due = (++segments_ & kPaceStride) == 0;
    if (!in_order || stop_requested() || pace_due) segment_slow(pcpu, s, b, e, in_order, pace_due);
  }
  [[nodiscard]] bool has_vcpu(int v) const { return inv_.has_vcpu(v); }
  void add_vcpu(int v) { inv_.add_vcpu(v); }
  void on_vmexit(int v, int pcpu, ExitReason r, Tsc t) {
    fp_.on_vmexit(v, pcpu, r, t);
    inv_.on_vmexit(v, pcpu, r, t);
  }
  void on_vmentry(int v, int pcpu, Tsc t) {
    fp_.on_vmentry(v, pcpu, t);
    inv_.on_vmentry(v, pcpu, t);
  }
  void on_timer_armed(int v, int pcpu, Tsc d) {
    fp_.on_timer_armed(v, pcpu, d);
    inv_.on_timer_armed(v, pcpu, d);
  }
  void on_latency_sample(int v, int pcpu, Tsc d, Tsc t, std::int64_t ns) {
    fp_.on_latency_sample(v, pcpu, d, t, ns);
    inv_.on_latency_sample(v, pcpu, d, t, ns);
    ++samples_;
  }
  void on_vcpu_block(int v, int pcpu, Tsc t) { fp_.on_vcpu_block(v, pcpu, t); }
  void on_vcpu_wakeup(int v, bool waited, std::int64_t ns, Tsc t) {
    fp_.on_vcpu_wakeup(v, waited, ns, t);
  }
  void on_hv_timer_state(int v, bool on, Tsc t) { fp_.on_hv_timer_state(v, on, t); }
  void on_wait_lapic_expire(int v, std::int64_t delta, Tsc t) {
    fp_.on_wait_lapic_expire(v, delta, t);
  }
  void on_apic_accept_irq(int v, std::uint8_t vec, Tsc t) { fp_.on_apic_accept_irq(v, vec, t); }
  void on_apic_accept_ipi(int /*sender*/, int target, std::uint8_t vec, Tsc t) {
    fp_.on_apic_accept_irq(target, vec, t);
  }
  void on_msr_write(int v, std::uint32_t msr, std::uint64_t value, Tsc t) {
    fp_.on_msr_write(v, msr, value, t);
  }

  [[nodiscard]] std::uint64_t fingerprint() const { return fp_.value(); }
  [[nodiscard]] std::uint64_t latency_samples() const { return samples_; }

  // The pace warning: `done` returns the share of the workload done so far
  // (0..1, negative when unknown). After 5 s of wall time, if the run would
  // take more than ten minutes at its pace so far, one warning on stderr
  // with the estimate (`what` names the workload).
  void set_pace_probe(std::string what, std::function<double()> done) {
    pace_what_ = std::move(what);
    pace_ = std::move(done);
  }

 private:
  static constexpr std::uint64_t kPaceStride = (1u << 18) - 1;  // segments between checks
  [[gnu::noinline]] void segment_slow(int pcpu, Stage s, Tsc b, Tsc e, bool in_order,
                                      bool pace_due) {
    if (!in_order) inv_.segment_slow(pcpu, s, b, e);
    if (stop_requested()) stop();
    if (pace_due && pace_) check_pace();
  }
  [[gnu::cold, gnu::noinline]] void stop();
  [[gnu::noinline]] void check_pace();
  std::uint64_t segments_ = 0, samples_ = 0;
  std::function<double()> pace_;
  std::string pace_what_;
  double wall0_ = -1;
  bool pace_warned_ = false;
  FingerprintObserver fp_;
  InvariantObserver inv_;
  bool stopped_ = false;
};

}  // namespace kvmsim
