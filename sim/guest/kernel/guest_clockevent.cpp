#include "sim/guest/kernel/guest_clockevent.h"

#include <algorithm>

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

namespace {
constexpr std::uint64_t kLvttTscDeadline = 2u << 17;
}  // namespace

void GuestClockevent::start(GuestHrtimer* t, std::uint64_t expires) {
  t->expires = expires;
  if (!t->queued) {
    timers_.push_back(t);
    t->queued = true;
  }
  program();
}

void GuestClockevent::cancel(GuestHrtimer* t) {
  if (!t->queued) return;
  timers_.erase(std::find(timers_.begin(), timers_.end(), t));
  t->queued = false;
  program();
}

Tsc GuestClockevent::hrtimer_interrupt(std::uint64_t gnow, Tsc now, Tsc spent) {
  programmed_ = kFired;  // the clockevent is unarmed, but not shut down
  in_hrtirq_ = true;
  Tsc cost = 0;
  // hrtimer_update_base(): one "now" per pass, which the callbacks see too
  // (hrtimer_forward_now() re-arms a periodic timer past it).
  std::uint64_t basenow = gnow;
  Tsc hnow = now;
  std::uint64_t deadline = 0;  // 0: no timer left
  bool hang = false;
  for (unsigned attempt = 1;; ++attempt) {
    for (;;) {
      auto it = std::min_element(timers_.begin(), timers_.end(),
                                 [](auto* a, auto* b) { return a->expires < b->expires; });
      if (it == timers_.end() || (*it)->expires > basenow) break;
      GuestHrtimer* t = *it;
      timers_.erase(it);
      t->queued = false;
      cost += t->fn(k_, hnow);
    }
    // tick_program_event(next, 0): clockevents_program_event() refuses an
    // expiry at or before ktime_get() with -ETIME, and hrtimer_interrupt()
    // runs the queues again with a fresh now ("goto retry"), so a timer that
    // fell due while the callbacks ran is served in this interrupt, with no
    // TSC-deadline write and no second injection.
    const std::uint64_t next = next_expiry();
    if (next == 0) break;
    const Tsc end = now + spent + cost;
    const std::uint64_t gend = k_.guest_tsc(end);
    if (next > gend) {
      deadline = next;
      break;
    }
    if (attempt == kHrtimerAttempts) {
      // The hang path: program the device as far past now as the interrupt
      // took (at most 100 ms) and, with hang_detected set, let nothing
      // reprogram it before that interrupt.
      ++stats_.hangs;
      const std::uint64_t limit = k_.guest_tsc_khz_ * 100;  // 100 ms
      deadline = gend + std::min(gend - gnow, limit);
      hang = true;
      break;
    }
    hnow = end;
    basenow = gend;
    ++stats_.retries;
  }
  in_hrtirq_ = false;
  hang_detected_ = hang;
  // The device fired (programmed_ is kFired), so this always writes: the next
  // expiry, the hang delay, or the shutdown when no timer is left. The WRMSR
  // steps are queued in the handler.
  write_deadline(deadline);
  return cost;
}

std::uint64_t GuestClockevent::next_expiry(const GuestHrtimer* except) const {
  std::uint64_t earliest = 0;
  for (auto* t : timers_)
    if (t != except && (earliest == 0 || t->expires < earliest)) earliest = t->expires;
  return earliest;
}

bool GuestClockevent::wheel_due_by(std::uint64_t limit) const {
  return std::any_of(timers_.begin(), timers_.end(),
                     [limit](auto* t) { return t->wheel && t->expires <= limit; });
}

// tick_program_event(): write the TSC deadline only when the earliest expiry
// changed (the kernel skips reprogramming a later event).
void GuestClockevent::program() {
  // hrtimer_reprogram() leaves the hang path's delay in the device.
  if (in_hrtirq_ || hang_detected_) return;
  const std::uint64_t earliest = next_expiry();
  if (earliest == programmed_) return;
  write_deadline(earliest);
}

// clockevents_program_event() -> lapic_next_deadline(), or the shutdown.
void GuestClockevent::write_deadline(std::uint64_t earliest) {
  programmed_ = earliest;
  auto& q = k_.context_steps();
  using S = GuestConfig::Shutdown;
  const S shutdown = k_.cfg_.clockevent_shutdown;
  if (earliest == 0) {
    // No timer left (the tick was stopped): clockevents_switch_state(
    // ONESHOT_STOPPED) -> lapic_timer_shutdown(), per guest era.
    if (shutdown == S::None) return;  // the stale deadline stays armed
    stopped_ = true;
    ++stats_.shutdowns;
    q.push_back(GuestStep::run(Stage::GuestSyscall, k_.costs_.clockevent_program(k_.rng_)));
    q.push_back(
        GuestStep::wrmsr(MSR_X2APIC_LVTT, APIC_LVT_MASKED | kLvttTscDeadline | LOCAL_TIMER_VECTOR));
    if (shutdown == S::LvttDeadline0) q.push_back(GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, 0));
    q.push_back(GuestStep::wrmsr(MSR_X2APIC_TMICT, 0));
    return;
  }
  q.push_back(GuestStep::run(Stage::GuestSyscall, k_.costs_.clockevent_program(k_.rng_)));
  if (stopped_) {
    // tick_program_event() on a stopped device: clockevents_switch_state(
    // ONESHOT) -> lapic_timer_set_oneshot() unmasks LVTT first.
    stopped_ = false;
    ++stats_.rearms;
    q.push_back(GuestStep::wrmsr(MSR_X2APIC_LVTT, kLvttTscDeadline | LOCAL_TIMER_VECTOR));
  }
  q.push_back(GuestStep::wrmsr(MSR_IA32_TSC_DEADLINE, earliest));
  ++stats_.programs;
}

}  // namespace kvmsim
