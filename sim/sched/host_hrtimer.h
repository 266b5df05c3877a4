// Host hrtimers on one pCPU (kernel/time/hrtimer.c, per-CPU hrtimer_cpu_base)
// and the clockevent that fires for the earliest of them. Callbacks run in
// hard-IRQ context from hrtimer_interrupt(); each returns what it cost.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace kvmsim {

class Pcpu;
class HostHrtimerBase;

class HostHrtimer {
 public:
  explicit HostHrtimer(std::string name) : name_(std::move(name)) {}
  virtual ~HostHrtimer() = default;
  // The timer function; returns its cost in cycles. May re-arm itself; as in
  // the kernel, expires() still holds the expiry that fired (hrtimer_forward).
  virtual Tsc fn(Pcpu& cpu, Tsc now) = 0;

  [[nodiscard]] Tsc expires() const { return expires_; }
  [[nodiscard]] bool queued() const { return queued_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  friend class HostHrtimerBase;
  std::string name_;
  Tsc expires_ = kTscNever;
  bool queued_ = false;
  HostHrtimerBase* base_ = nullptr;  // the pCPU's base it is queued on
};

class HostHrtimerBase {
 public:
  // hrtimer_start(HRTIMER_MODE_ABS_PINNED).
  // A timer queued on another pCPU's base moves here (the base of the CPU
  // that starts it, as the LAPIC timer follows its vCPU).
  void start(HostHrtimer* t, Tsc expires) {
    if (t->queued_ && t->base_ != this) t->base_->dequeue(t);
    if (!t->queued_) timers_.push_back(t);
    t->queued_ = true;
    t->base_ = this;
    t->expires_ = expires;
    update_next();
  }
  // hrtimer_cancel(), on whichever base holds the timer.
  static void cancel(HostHrtimer* t) {
    if (!t->queued_) return;
    t->expires_ = kTscNever;
    t->base_->dequeue(t);
  }
  // Where the clockevent device (host LAPIC in TSC-deadline mode) is armed.
  // Kept up to date by start() and dequeue() (the pCPU reads it on every
  // model step).
  [[nodiscard]] Tsc next_expiry() const { return next_; }
  // __hrtimer_run_queues(): run every expired timer, earliest first.
  Tsc run_expired(Pcpu& cpu, Tsc now) {
    Tsc cost = 0;
    for (;;) {
      HostHrtimer* first = nullptr;
      for (auto* t : timers_)
        if (t->expires_ <= now && (!first || t->expires_ < first->expires_)) first = t;
      if (!first) break;
      dequeue(first);  // __run_hrtimer(): dequeued, expiry kept for the callback
      cost += first->fn(cpu, now);
    }
    return cost;
  }

 private:
  void dequeue(HostHrtimer* t) {
    t->queued_ = false;
    timers_.erase(std::remove(timers_.begin(), timers_.end(), t), timers_.end());
    update_next();
  }
  void update_next() {
    Tsc m = kTscNever;
    for (const auto* t : timers_) m = std::min(m, t->expires_);
    next_ = m;
  }

  std::vector<HostHrtimer*> timers_;
  Tsc next_ = kTscNever;  // the earliest expiry queued here
};

}  // namespace kvmsim
