#include "sim/guest/spinlock.h"

#include <stdexcept>

#include "sim/guest/guest_kernel.h"

namespace kvmsim {

SpinlockStats& SpinlockStats::operator+=(const SpinlockStats& o) {
  acquires += o.acquires;
  contended += o.contended;
  hold_preempted += o.hold_preempted;
  wait_cycles += o.wait_cycles;
  wait_off_cpu_cycles += o.wait_off_cpu_cycles;
  hold_cycles += o.hold_cycles;
  return *this;
}

// queued_spin_lock(): the fast path on a free word, else the slowpath's MCS
// queue; the queued CPU spins until the lock is handed to it.
bool GuestSpinlock::lock(GuestKernel& k, const GuestTask* t, Tsc now) {
  if (owner_ == nullptr && queue_.empty()) {
    owner_ = t;
    owner_cpu_ = &k;
    owner_running_ = true;
    held_since_ = now;
    owner_run_delay0_ = k.vcpu().se().run_delay_at(now);
    ++stats_.acquires;
    return true;
  }
  if (owner_ == t && !owner_running_) {  // handed over at unlock: this CPU sees it now
    const Waiter& w = waiting_;
    stats_.wait_cycles += now - w.since;
    stats_.wait_off_cpu_cycles += k.vcpu().se().run_delay_at(now) - w.run_delay0;
    owner_running_ = true;
    held_since_ = now;
    owner_run_delay0_ = k.vcpu().se().run_delay_at(now);
    ++stats_.acquires;
    return true;
  }
  if (owner_ == t) throw std::logic_error("spin_lock: the holder takes its lock again");
  for (const Waiter& w : queue_)
    if (w.task == t) return false;  // still queued: spin on
  ++stats_.contended;
  queue_.push_back({t, &k, now, k.vcpu().se().run_delay_at(now)});
  return false;
}

// queued_spin_unlock(): the next queued CPU gets the lock; its spin on the
// lock word ends when it next runs (remote_store()).
void GuestSpinlock::unlock(GuestKernel& k, Tsc now) {
  if (owner_ == nullptr || !owner_running_ || owner_cpu_ != &k)
    throw std::logic_error("spin_unlock: not held by this CPU");
  stats_.hold_cycles += now - held_since_;
  if (k.vcpu().se().run_delay_at(now) > owner_run_delay0_) ++stats_.hold_preempted;
  owner_ = nullptr;
  owner_cpu_ = nullptr;
  owner_running_ = false;
  if (queue_.empty()) return;
  waiting_ = queue_.front();
  queue_.pop_front();
  owner_ = waiting_.task;
  owner_cpu_ = waiting_.cpu;
  waiting_.cpu->remote_store();
}

void GuestSpinlock::report_stats(const SpinlockStats& s, const TscClock& clk, Metrics& m,
                                 const std::string& prefix) {
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  m[prefix + "acquires"] = d(s.acquires);
  m[prefix + "contended"] = d(s.contended);
  m[prefix + "hold_preempted"] = d(s.hold_preempted);
  m[prefix + "wait_s"] = clk.to_s(static_cast<double>(s.wait_cycles));
  m[prefix + "wait_off_cpu_s"] = clk.to_s(static_cast<double>(s.wait_off_cpu_cycles));
  m[prefix + "hold_s"] = clk.to_s(static_cast<double>(s.hold_cycles));
}

}  // namespace kvmsim
