// Interrupt context on one guest CPU (arch/x86/kernel/apic/apic.c:
// smp_apic_timer_interrupt(); kernel/softirq.c: irq_enter(), irq_exit()):
// entry, the handler body (the LAPIC timer's hrtimer_interrupt(), or an SMP
// vector's handler), and irq_exit() with the TIMER_SOFTIRQ a tick raised.
// Steps and kernel work queued from the handler run inside it, before
// irq_exit().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "sim/guest/kernel/guest_task.h"
#include "sim/guest/kernel/step_queue.h"

namespace kvmsim {

class GuestKernel;

class GuestIrq {
 public:
  explicit GuestIrq(GuestKernel& k);
  ~GuestIrq();
  GuestIrq(const GuestIrq&) = delete;
  GuestIrq& operator=(const GuestIrq&) = delete;

  // in_irq(): a handler runs on this CPU.
  [[nodiscard]] bool active() const { return active_; }
  // The vCPU took `vector`: the entry begins.
  void enter(std::uint8_t vector);
  // The handler's next step; nullopt once irq_exit() has run (the handler
  // returned and the interrupted context continues).
  std::optional<GuestStep> step(Tsc now);
  // A VM exit cut the handler's step in flight short; `rest` runs first.
  void suspend(const GuestStep& rest);
  // Steps and kernel work queued from interrupt context.
  StepQueue& steps() { return q_; }
  void queue_work(std::unique_ptr<KernelWork> w) { work_.push_back(std::move(w)); }
  // raise_softirq(TIMER_SOFTIRQ): runs at irq_exit().
  void raise_timer_softirq() { softirq_pending_ = true; }

  // What interrupt context ran (for tests and views; not a metric).
  struct Stats {
    std::uint64_t interrupts = 0;      // handlers entered
    std::uint64_t timer_softirqs = 0;  // run_timer_softirq() at irq_exit()
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  enum class State : std::uint8_t { None, Entry, Handler, Exit };
  std::optional<GuestStep> handler(Tsc now);

  GuestKernel& k_;
  bool active_ = false;
  State state_ = State::None;
  std::uint8_t vector_ = 0;  // the vector being handled
  StepQueue q_;
  std::deque<std::unique_ptr<KernelWork>> work_;
  GuestStep resume_;  // the step a VM exit cut short
  bool has_resume_ = false;
  bool softirq_pending_ = false;  // TIMER_SOFTIRQ raised: run at irq_exit()
  Stats stats_;
};

}  // namespace kvmsim
