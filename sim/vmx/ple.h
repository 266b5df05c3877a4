// Pause-Loop Exiting (vmx.c): a guest PAUSE loop whose PAUSEs come closer
// than ple_gap and that lasts ple_window cycles exits with
// PAUSE_INSTRUCTION; handle_pause() grows the per-vCPU window
// (grow_ple_window()) and calls kvm_vcpu_on_spin() (directed_yield.h);
// vmx_sched_in() shrinks it again (shrink_ple_window()).
//
// The guest's spins reach the vCPU as GuestStep::pause_loop steps: an
// open-ended spin (Idle) or one bounded by the guest (Run: the PV
// qspinlock's SPIN_THRESHOLD loops). This class arms the window over them
// and tells the run loop where the guest segment ends.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/core/counters.h"
#include "sim/core/time.h"

namespace kvmsim {

class ParamSet;
class Vcpu;

// The vmx.c module parameters ple_gap, ple_window, ple_window_grow,
// ple_window_shrink, ple_window_max; ple_gap 0 = off. The window is in TSC
// cycles of continuous spinning.
struct PleConfig {
  std::uint32_t gap = 0;
  std::uint32_t window = 4096;
  std::uint32_t window_grow = 2;
  std::uint32_t window_shrink = 0;
  std::uint32_t window_max = 0x3fffffff;
  static PleConfig from(const ParamSet& p);
};

struct PleStats {
  std::uint64_t pause_exits = 0;       // PAUSE_INSTRUCTION exits
  std::uint64_t ple_window_grows = 0;  // grow_ple_window() raised vmx->ple_window
  std::uint32_t ple_window_peak = 0;   // the largest vmx->ple_window reached (max over vCPUs)
  using Fields = CounterFields<PleStats, &PleStats::pause_exits, &PleStats::ple_window_grows>;
  PleStats& operator+=(const PleStats& o) {
    sum_counters(*this, o);
    ple_window_peak = ple_window_peak > o.ple_window_peak ? ple_window_peak : o.ple_window_peak;
    return *this;
  }
};

class PleWindow {
 public:
  explicit PleWindow(const PleConfig& cfg) : cfg_(cfg) {}

  [[nodiscard]] bool enabled() const { return cfg_.gap != 0; }
  // A guest step begins: one PAUSE loop to the hardware is consecutive
  // pause_loop steps with no exit and no other guest work between them (a
  // waiter re-checking after a store, the next 256-loop chunk) keep the PLE
  // window running.
  void step_begins(bool pause_loop, bool exits) {
    spin_bounded_ = false;
    if (!pause_loop || exits) pause_loop_since_ = kTscNever;
  }
  // A spin of at most `cycles` (the PV qspinlock's SPIN_THRESHOLD loops):
  // another vCPU's store ends it early, and Pause-Loop Exiting cuts it at the
  // window as an open-ended spin. Returns the guest segment's length.
  Tsc bounded_spin(Tsc now, Tsc cycles);
  // An open-ended PAUSE loop with PLE on: the segment ends at the window.
  Tsc open_spin(Tsc now) {
    armed_ = true;
    deadline_ = window_end(now);
    return deadline_ - now;
  }
  // The guest segment ended at `now`: true if it was the window running out
  // (a PAUSE_INSTRUCTION exit; the spin goes on after it).
  bool window_ran_out(Tsc now) {
    if (!armed_) return false;
    armed_ = false;
    return now >= deadline_;
  }
  // What is left of the spin that the window cut (kTscNever: open-ended).
  Tsc take_spin_left(Tsc now) {
    const bool bounded = spin_bounded_;
    spin_bounded_ = false;
    return bounded ? bounded_spin_left(now) : kTscNever;
  }
  // What is left of the guest step a VM exit or a posted interrupt cuts
  // short (`seg_end`: the segment's end; a PLE-bounded spin is open-ended).
  Tsc suspend_remaining(Tsc seg_end, Tsc now) {
    const bool open = seg_end == kTscNever || armed_;
    armed_ = false;
    if (spin_bounded_) {  // a bounded spin keeps its own end, PLE window or not
      spin_bounded_ = false;
      return bounded_spin_left(now);
    }
    return open ? kTscNever : seg_end - now;
  }
  // The segment in flight is a finite spin (another CPU's store shortens it
  // rather than ending an open-ended one).
  [[nodiscard]] bool spin_is_finite() const { return armed_ || spin_bounded_; }
  // Every VM exit: the PLE count starts again after the entry.
  void vmexit() {
    armed_ = false;
    pause_loop_since_ = kTscNever;
  }
  // The window before and after one grow_ple_window() / shrink_ple_window()
  // call (what the kvm_ple_window tracepoint prints).
  struct Update {
    std::uint32_t old_window;
    std::uint32_t new_window;
  };
  // handle_pause() (v4.16): grow_ple_window(); the caller then runs
  // kvm_vcpu_on_spin(vcpu, true), and the guest's PAUSE loop resumes after.
  Update grow_ple_window();
  // vmx_sched_in() -> shrink_ple_window(), called only with PLE on (nullopt
  // otherwise): ple_window_shrink 0 (v4.16's default) resets the window to
  // ple_window.
  std::optional<Update> shrink_ple_window();

  [[nodiscard]] const PleStats& stats() const { return stats_; }

 private:
  // When the guest's PAUSE loop (begun now, or at pause_loop_since_ if it
  // goes on) has run ple_window cycles.
  Tsc window_end(Tsc now);
  [[nodiscard]] Tsc bounded_spin_left(Tsc now) const {
    return spin_end_ > now ? spin_end_ - now : 0;
  }

  const PleConfig& cfg_;  // the VM's (VmConfig)
  bool armed_ = false;    // the guest spins; the segment ends at the PLE window
  Tsc deadline_ = 0;
  // A bounded guest spin ends here; kTscNever = open-ended or no spin.
  Tsc spin_end_ = kTscNever;
  bool spin_bounded_ = false;         // the segment in flight is such a spin
  Tsc pause_loop_since_ = kTscNever;  // the guest's PAUSE loop began (no exit since)
  std::uint32_t window_cur_ = 0;      // vmx->ple_window (0: not set yet)
  PleStats stats_;
};

}  // namespace kvmsim
