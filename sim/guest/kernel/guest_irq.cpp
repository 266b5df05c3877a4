#include "sim/guest/kernel/guest_irq.h"

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

GuestIrq::GuestIrq(GuestKernel& k) : k_(k) {}
GuestIrq::~GuestIrq() = default;

void GuestIrq::enter(std::uint8_t vector) {
  active_ = true;
  vector_ = vector;
  state_ = State::Entry;
  ++stats_.interrupts;
}

void GuestIrq::suspend(const GuestStep& rest) {
  resume_ = rest;
  has_resume_ = true;
}

std::optional<GuestStep> GuestIrq::step(Tsc now) {
  if (has_resume_) {
    has_resume_ = false;
    return resume_;
  }
  if (!q_.empty()) {
    GuestStep s = q_.front();
    q_.pop_front();
    return s;
  }
  while (!work_.empty()) {
    if (auto s = work_.front()->next(k_, now)) return s;
    work_.pop_front();
    if (!q_.empty()) return step(now);
  }
  switch (state_) {
    case State::Entry:
      state_ = State::Handler;
      return GuestStep::run(Stage::GuestIrqEntry, k_.costs_.irq_entry(k_.rng_));
    case State::Handler:
      state_ = State::Exit;
      if (auto s = handler(now)) return s;
      return step(now);
    case State::Exit:
      state_ = State::None;
      if (softirq_pending_) {
        // invoke_softirq() -> __do_softirq(): run_timer_softirq().
        softirq_pending_ = false;
        ++stats_.timer_softirqs;
        return GuestStep::run(Stage::GuestIrqExit,
                              k_.costs_.irq_exit(k_.rng_) + k_.costs_.timer_softirq(k_.rng_));
      }
      return GuestStep::run(Stage::GuestIrqExit, k_.costs_.irq_exit(k_.rng_));
    case State::None:
      break;
  }
  active_ = false;
  return std::nullopt;
}

// The handler body: the LAPIC timer's hrtimer_interrupt() runs every expired
// timer and reprograms the next one; the SMP vectors have their own
// (GuestKernel::ipi_handler); another vector goes from entry straight to
// irq_exit().
std::optional<GuestStep> GuestIrq::handler(Tsc now) {
  if (vector_ != LOCAL_TIMER_VECTOR) return k_.ipi_handler(vector_);
  Tsc cost = k_.costs_.hrtimer_interrupt(k_.rng_);
  const std::uint64_t gnow = k_.guest_tsc(now);
  k_.idle_.timer_interrupt(gnow, k_.clockevent_.programmed());
  cost += k_.clockevent_.hrtimer_interrupt(gnow, now, cost);  // queues WRMSRs if a timer is left
  return GuestStep::run(Stage::GuestHrtimerInterrupt, cost);
}

}  // namespace kvmsim
