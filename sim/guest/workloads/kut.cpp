#include "sim/guest/workloads/kut.h"

namespace kvmsim {

KutGuest::KutGuest(Vcpu& vcpu, KutCosts costs, std::function<void()> on_done)
    : vcpu_(vcpu),
      model_signals_(vcpu.ctx().signals.get<ModelSignals>()),
      costs_(std::move(costs)),
      rng_(vcpu.ctx().stream("kut.vcpu" + std::to_string(vcpu.id()))),
      on_done_(std::move(on_done)) {}

// The handler runs before anything else once delivered; a step a VM exit cut
// short continues first. A main-loop spin ends as soon as the handler set its
// flag.
GuestStep KutGuest::step(Tsc now) {
  // The IRET completed (an exit that cut it short and re-entered delivered
  // the vector, clearing the flag): the window exit comes before the main
  // program resumes.
  if (window_after_iret_ && !in_isr_) {
    window_after_iret_ = false;
    return last_ = GuestStep::exit_with(ExitReason::INTERRUPT_WINDOW, 0, 0);
  }
  if (in_isr_) {
    if (has_isr_resume_) {
      has_isr_resume_ = false;
      return last_ = isr_resume_;
    }
    return last_ = isr_step(isr_n_++, now);
  }
  if (has_main_resume_) {
    has_main_resume_ = false;
    if (!(main_resume_.kind == GuestStep::Kind::Idle && spinning_done_))
      return last_ = main_resume_;
  }
  spinning_done_ = false;
  if (finished_) return last_ = GuestStep::idle(Stage::GuestIdle);
  return last_ = main_step(now);
}

void KutGuest::suspend(Tsc remaining) {
  if (remaining == 0) return;
  (in_isr_ ? isr_resume_ : main_resume_) = last_.remainder(remaining);
  (in_isr_ ? has_isr_resume_ : has_main_resume_) = true;
}

void KutGuest::deliver_interrupt(std::uint8_t vector, Tsc /*now*/) {
  in_isr_ = true;
  window_after_iret_ = false;  // injected: the window is not needed any more
  vector_ = vector;
  isr_n_ = 0;
}

// The guest arms its TSC deadline: observers (latency breakdown, views)
// learn the deadline in host TSC.
void KutGuest::arm_deadline(std::uint64_t guest_deadline) {
  model_signals_.timer_armed(vcpu_.id(), vcpu_.pcpu().id(),
                             vcpu_.tsc().host_tsc_at(guest_deadline));
}

// IRET: back to the main program; RFLAGS.IF is set again. With APICv the
// handler's EOI was virtualized (vISR cleared, no exit) and a vector that
// became pending meanwhile is delivered at once; without APICv the EOI
// write exited, and such a vector waits for the interrupt window KVM armed
// at the last entry: the IRET is followed by an INTERRUPT_WINDOW exit.
GuestStep KutGuest::iret(Tsc now) {
  in_isr_ = false;
  if (!eoi_exits()) vcpu_.lapic().virtual_eoi();
  if (vcpu_.guest_irq_enabled(now)) window_after_iret_ = true;
  return GuestStep::run(Stage::GuestIrqExit, costs_.iret(rng_));
}

// --- x86/tscdeadline_latency.c ---------------------------------------------

TscdeadlineLatencyTest::TscdeadlineLatencyTest(Vcpu& vcpu, KutCosts costs,
                                               TscdeadlineLatencyConfig cfg,
                                               std::function<void()> on_done)
    : KutGuest(vcpu, std::move(costs), std::move(on_done)), cfg_(cfg) {
  table_.reserve(cfg_.size);
}

GuestStep TscdeadlineLatencyTest::main_step(Tsc now) {
  if (!started_) {
    // start_tsc_deadline_timer(): wrmsr(MSR_IA32_TSCDEADLINE, rdtsc() + delta)
    started_ = true;
    exptime_ = rdtsc(now) + cfg_.delta;
    arm_deadline(exptime_);
    return GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, exptime_);
  }
  // while (!hitmax && table_idx < size) [hlt];
  return cfg_.hlt ? GuestStep::hlt() : spin();
}

GuestStep TscdeadlineLatencyTest::isr_step(int n, Tsc now) {
  switch (n) {
    case 0:
      return GuestStep::run(Stage::GuestIrqEntry, costs_.irq_delivery(rng_));
    case 1: {
      // tsc_deadline_timer_isr(): now = rdtsc(); record now - exptime.
      isr_now_ = rdtsc(now);
      const auto latency = static_cast<std::int64_t>(isr_now_ - exptime_);
      rearm_ = true;
      if (!first_) {
        table_.push_back(latency);
        model_signals_.latency_sample(
            vcpu_.id(), vcpu_.pcpu().id(), vcpu_.tsc().host_tsc_at(exptime_), now,
            static_cast<std::int64_t>(
                vcpu_.ctx().clock.cycles_to_ns(static_cast<Tsc>(latency < 0 ? 0 : latency))));
        if (cfg_.breakmax && static_cast<std::uint64_t>(latency) > cfg_.breakmax) {
          hitmax_ = true;
          rearm_ = false;
        }
        if (table_.size() >= cfg_.size) rearm_ = false;
      }
      first_ = false;
      return GuestStep::run(Stage::Guest, costs_.isr(rng_));
    }
    // Then apic_write(APIC_EOI, 0) once, after the re-arm if there is one
    // (the last handler, which does not re-arm, wrote its EOI twice: at step
    // 2 by falling through and again at step 3).
    case 2:
      if (rearm_) {
        exptime_ = isr_now_ + cfg_.delta;
        arm_deadline(exptime_);
        return GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, exptime_);
      }
      return eoi_then_iret(now);
    case 3:
      if (rearm_) return eoi_then_iret(now);
      [[fallthrough]];  // the EOI was step 2
    default:
      return finish_handler(now);
  }
}

// The handler's EOI write (an exit without APICv); with APICv it is
// virtualized in iret() and the handler returns at once.
GuestStep TscdeadlineLatencyTest::eoi_then_iret(Tsc now) {
  if (eoi_exits()) return GuestStep::wrmsr(MSR_X2APIC_EOI, 0);
  return finish_handler(now);
}

GuestStep TscdeadlineLatencyTest::finish_handler(Tsc now) {
  if (!rearm_ && !finished_) done();
  return iret(now);
}

// --- x86/vmexit.c: tscdeadline_immed, tscdeadline --------------------------

VmexitTimerTests::VmexitTimerTests(Vcpu& vcpu, KutCosts costs, std::vector<std::string> tests,
                                   std::uint64_t goal_cycles, std::function<void()> on_done)
    : KutGuest(vcpu, std::move(costs), std::move(on_done)),
      harness_(std::move(tests), goal_cycles) {}

VmexitHarness::BatchEnd VmexitHarness::batch_end(std::uint64_t t2) {
  if (t2 - t1_ < goal_) return BatchEnd::Again;
  VmexitResult res{tests_[test_], iterations_, (t2 - t1_) / iterations_, {}};
  if (stage_totals_) {
    // Segments still running (this guest step) are not in the totals:
    // close enough for a batch of 2^k iterations.
    for (std::size_t i = 0; i < res.stage_cycles.size(); ++i)
      res.stage_cycles[i] = static_cast<double>(stage_totals_->totals()[i] - batch_start_[i]) /
                            static_cast<double>(iterations_);
  }
  results_.push_back(res);
  if (++test_ == tests_.size()) return BatchEnd::Done;
  iterations_ = 32;
  return BatchEnd::NextTest;
}

bool VmexitTimerTests::known_test(const std::string& name) {
  return name == "tscdeadline" || name == "tscdeadline_immed";
}

GuestStep VmexitTimerTests::main_step(Tsc now) {
  const bool immed = harness_.test() == "tscdeadline_immed";
  switch (phase_) {
    case Phase::BatchStart:
      harness_.batch_start(rdtsc(now));  // do_test(): iterations *= 2; t1 = rdtsc();
      phase_ = Phase::Iter;
      [[fallthrough]];
    case Phase::Iter: {
      x_ = 0;
      phase_ = immed ? Phase::AfterWrmsr : Phase::Spin;
      const std::uint64_t t = rdtsc(now);
      const std::uint64_t deadline = immed ? t : t + 3000;
      arm_deadline(deadline);
      return GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, deadline);
    }
    case Phase::AfterWrmsr:  // the serializing nop after the write
      phase_ = Phase::IterEnd;
      return GuestStep::run(Stage::Guest, costs_.loop(rng_));
    case Phase::Spin:
      if (x_ == 0) return spin();  // while (!x);
      phase_ = Phase::IterEnd;
      return GuestStep::run(Stage::Guest, costs_.loop(rng_));
    case Phase::IterEnd: {
      if (harness_.next_iteration()) {
        phase_ = Phase::Iter;
        return main_step(now);
      }
      if (harness_.batch_end(rdtsc(now)) == VmexitHarness::BatchEnd::Done) {
        phase_ = Phase::Finished;
        done();
        return GuestStep::idle(Stage::GuestIdle);
      }
      phase_ = Phase::BatchStart;  // a bigger batch, or the next test
      return main_step(now);
    }
    case Phase::Finished:
      break;
  }
  return GuestStep::idle(Stage::GuestIdle);
}

GuestStep VmexitTimerTests::isr_step(int n, Tsc now) {
  switch (n) {
    case 0:
      return GuestStep::run(Stage::GuestIrqEntry, costs_.irq_delivery(rng_));
    case 1:
      ++x_;  // x++
      if (phase_ == Phase::Spin) spin_done();
      return GuestStep::run(Stage::Guest, costs_.isr(rng_));
    case 2:
      if (eoi_exits()) return GuestStep::wrmsr(MSR_X2APIC_EOI, 0);
      [[fallthrough]];
    default:
      return iret(now);
  }
}

}  // namespace kvmsim
