// kvm-unit-tests guests: bare-metal test programs with no kernel, one vCPU,
// an IDT and x2APIC, as x86/tscdeadline_latency.c and x86/vmexit.c run them.
//
// A KutGuest runs a main loop and, when the virtual APIC delivers the timer
// vector, an interrupt handler (interrupts are off inside it, as on x86).
// Each step is host cycles of guest work, a spin until the handler sets a
// flag, or an exiting instruction (WRMSR). Times the tests measure are read
// from the guest TSC (rdtsc), as the real tests do.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/breakdown.h"
#include "sim/core/dist.h"
#include "sim/core/model_signals.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

struct KutCosts {
  Sampler irq_delivery;  // IDT vectoring + handler stub up to its first rdtsc
  Sampler isr;           // handler body between rdtsc and the next WRMSR / EOI
  Sampler iret;          // EOI (virtualized with APICv) + stub epilogue + IRET
  Sampler loop;          // harness / loop body around the measured instructions
};

class KutGuest : public GuestVcpu {
 public:
  KutGuest(Vcpu& vcpu, KutCosts costs, std::function<void()> on_done);

  // GuestVcpu
  GuestStep step(Tsc now) final;
  void suspend(Tsc remaining) final;
  [[nodiscard]] bool interruptible() const final { return !in_isr_; }
  void deliver_interrupt(std::uint8_t vector, Tsc now) final;

 protected:
  // Next step of the main program / of the handler (step 0 is the entry).
  virtual GuestStep main_step(Tsc now) = 0;
  virtual GuestStep isr_step(int n, Tsc now) = 0;  // n = 0, 1, ...; return iret() to finish
  // Main loop: a `while (!x);` spin the handler ends by calling spin_done().
  static GuestStep spin() { return GuestStep::idle(Stage::Guest); }
  void spin_done() { spinning_done_ = true; }
  GuestStep iret(Tsc now);  // the handler's last step
  // The vector being handled (the IDT entry taken).
  [[nodiscard]] std::uint8_t vector() const { return vector_; }
  void arm_deadline(std::uint64_t guest_deadline);
  // apic_write(APIC_EOI): x2APIC MSR write, trapped unless APICv virtualizes it.
  [[nodiscard]] bool eoi_exits() const { return !vcpu_.lapic().config().apicv; }
  void done() {
    finished_ = true;
    if (on_done_) on_done_();
  }

  [[nodiscard]] std::uint64_t rdtsc(Tsc now) const { return vcpu_.guest_tsc(now); }
  Vcpu& vcpu_;
  ModelSignals& model_signals_;
  KutCosts costs_;
  Rng rng_;
  bool finished_ = false;

 private:
  std::function<void()> on_done_;
  bool in_isr_ = false;
  std::uint8_t vector_ = 0;
  int isr_n_ = 0;
  bool spinning_done_ = false;
  GuestStep last_;
  GuestStep main_resume_, isr_resume_;
  bool has_main_resume_ = false, has_isr_resume_ = false;
  // No APICv: a vector became pending while the handler ran (RFLAGS.IF
  // clear), so KVM armed the interrupt window; the IRET that sets IF again
  // exits with INTERRUPT_WINDOW and the next entry injects it.
  bool window_after_iret_ = false;
};

// x86/tscdeadline_latency.c: arm the TSC deadline `delta` cycles ahead; the
// handler records rdtsc() - deadline (from the 2nd interrupt on) and re-arms
// at rdtsc() + delta. The main loop either spins (the busy-wait variant the
// 2016-2019 measurements used) or executes HLT (the test as it is today).
struct TscdeadlineLatencyConfig {
  std::uint64_t delta = 200000;  // guest TSC cycles
  std::uint64_t size = 10000;    // samples (TABLE_SIZE)
  std::uint64_t breakmax = 0;    // stop at the first latency above this (0 = off)
  bool hlt = false;              // main loop HLTs (current test) instead of spinning
};

class TscdeadlineLatencyTest : public KutGuest {
 public:
  TscdeadlineLatencyTest(Vcpu& vcpu, KutCosts costs, TscdeadlineLatencyConfig cfg,
                         std::function<void()> on_done);
  [[nodiscard]] const std::vector<std::int64_t>& latencies() const { return table_; }
  [[nodiscard]] bool hit_max() const { return hitmax_; }

 protected:
  GuestStep main_step(Tsc now) override;
  GuestStep isr_step(int n, Tsc now) override;

 private:
  GuestStep eoi_then_iret(Tsc now);
  GuestStep finish_handler(Tsc now);
  TscdeadlineLatencyConfig cfg_;
  bool started_ = false;
  bool first_ = true;  // the first interrupt is not recorded
  bool hitmax_ = false;
  bool rearm_ = false;
  std::uint64_t exptime_ = 0;
  std::uint64_t isr_now_ = 0;
  std::vector<std::int64_t> table_;
};

// x86/vmexit.c timer tests under its harness: iterations start at 32 and
// double until one batch takes GOAL cycles; the result is that batch's
// cycles per iteration.
//   tscdeadline_immed: WRMSR(TSC_DEADLINE, rdtsc()); nop
//   tscdeadline:       x = 0; WRMSR(TSC_DEADLINE, rdtsc() + 3000); while (!x);
// Both handlers do x++ and EOI.
struct VmexitResult {
  std::string name;
  std::uint64_t iterations = 0;
  std::uint64_t cycles = 0;  // per iteration, integer as printed
  // Host cycles per iteration in each stage during the reported batch.
  std::array<double, kStageCount> stage_cycles{};
};

// vmexit.c's do_test() harness, shared by the timer and the ipi tests: a
// batch of `iterations` (32, doubled before each batch) is timed with rdtsc;
// the first batch that takes GOAL cycles gives the result, then the next test.
class VmexitHarness {
 public:
  VmexitHarness(std::vector<std::string> tests, std::uint64_t goal)
      : tests_(std::move(tests)), goal_(goal) {}
  // iterations *= 2; t1 = rdtsc(): `t` is the guest TSC.
  void batch_start(std::uint64_t t) {
    iterations_ *= 2;
    i_ = 0;
    t1_ = t;
    if (stage_totals_) batch_start_ = stage_totals_->totals();
  }
  // One more iteration in this batch?
  bool next_iteration() { return ++i_ < iterations_; }
  enum class BatchEnd : std::uint8_t { Again, NextTest, Done };
  // The batch ended at guest TSC `t2`: under GOAL, run a bigger one; else
  // record the result and move to the next test (Done after the last).
  BatchEnd batch_end(std::uint64_t t2);
  [[nodiscard]] const std::string& test() const {
    static const std::string kNone;
    return test_ < tests_.size() ? tests_[test_] : kNone;
  }
  [[nodiscard]] const std::vector<VmexitResult>& results() const { return results_; }
  void set_stage_totals(const StageTotals* t) { stage_totals_ = t; }

 private:
  std::vector<std::string> tests_;
  std::uint64_t goal_;
  std::size_t test_ = 0;
  std::uint64_t iterations_ = 32, i_ = 0, t1_ = 0;
  const StageTotals* stage_totals_ = nullptr;
  StageTotals::Totals batch_start_{};
  std::vector<VmexitResult> results_;
};

class VmexitTimerTests : public KutGuest {
 public:
  VmexitTimerTests(Vcpu& vcpu, KutCosts costs, std::vector<std::string> tests,
                   std::uint64_t goal_cycles, std::function<void()> on_done);
  [[nodiscard]] const std::vector<VmexitResult>& results() const { return harness_.results(); }
  static bool known_test(const std::string& name);
  // Where the time of each reported batch went (optional observer).
  void set_stage_totals(const StageTotals* t) { harness_.set_stage_totals(t); }

 protected:
  GuestStep main_step(Tsc now) override;
  GuestStep isr_step(int n, Tsc now) override;

 private:
  enum class Phase : std::uint8_t { BatchStart, Iter, AfterWrmsr, Spin, IterEnd, Finished };
  VmexitHarness harness_;
  Phase phase_ = Phase::BatchStart;
  int x_ = 0;
};

}  // namespace kvmsim
