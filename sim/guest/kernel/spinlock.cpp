#include "sim/guest/kernel/spinlock.h"

#include <algorithm>
#include <stdexcept>

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

SpinlockStats& SpinlockStats::operator+=(const SpinlockStats& o) {
  acquires += o.acquires;
  contended += o.contended;
  hold_preempted += o.hold_preempted;
  steals += o.steals;
  pv_wait_node += o.pv_wait_node;
  pv_wait_early += o.pv_wait_early;
  pv_wait_early_preempted += o.pv_wait_early_preempted;
  pv_wait_head += o.pv_wait_head;
  pv_kick += o.pv_kick;
  wait_cycles += o.wait_cycles;
  wait_off_cpu_cycles += o.wait_off_cpu_cycles;
  hold_cycles += o.hold_cycles;
  handoffs += o.handoffs;
  handoff_cycles += o.handoff_cycles;
  handoff_off_cpu_cycles += o.handoff_off_cpu_cycles;
  free_halted_head_cycles += o.free_halted_head_cycles;
  queue_drains += o.queue_drains;
  queue_len_cycles += o.queue_len_cycles;
  last_drain = std::max(last_drain, o.last_drain);
  return *this;
}

void GuestSpinlock::take(GuestKernel& k, const GuestTask* t, const Waiter* w, Tsc now) {
  if (free_halted_head_) {
    stats_.free_halted_head_cycles += now - released_at_;
    free_halted_head_ = false;
  }
  owner_ = t;
  owner_cpu_ = &k;
  if (w) {
    stats_.wait_cycles += now - w->since;
    stats_.wait_off_cpu_cycles += k.vcpu().se().run_delay_at(now) - w->run_delay0;
  }
  owner_running_ = true;
  held_since_ = now;
  owner_run_delay0_ = k.vcpu().se().run_delay_at(now);
  ++stats_.acquires;
}

void GuestSpinlock::wake_stealers() {
  for (const Waiter& x : stealers_) x.cpu->remote_store();
}

std::optional<GuestStep> GuestSpinlock::enqueue(GuestKernel& k, Waiter w, Tsc now) {
  w.head = queue_.empty();
  w.budget = spin_budget();
  account_queue(now);
  queue_.push_back(w);
  if (!cfg_.pv) return GuestStep::spin(Stage::Guest);
  if (w.head) {
    wake_stealers();  // pending set: they queue behind it
  } else if (const Early e = wait_early(std::prev(queue_.end())); e != Early::No) {
    // The loop counts down from SPIN_THRESHOLD, so pv_wait_early() looks
    // at the previous node on the very first turn.
    return halt(queue_.back(), e);
  }
  return spin_step(queue_.back(), k, now);
}

GuestSpinlock::Early GuestSpinlock::wait_early(const std::deque<Waiter>::iterator& it) const {
  if (it == queue_.begin() || it->head) return Early::No;
  // pv_wait_early(): READ_ONCE(prev->state) != vcpu_running, or (v4.11-
  // v5.3) vcpu_is_preempted(prev->cpu), evaluated in that order. The guest's
  // vcpu_is_preempted() (__kvm_vcpu_is_preempted()) reads the steal-time
  // `preempted` byte: set at vcpu_put (sched-out; in v4.16-v5.18 on every
  // sched-out, blocking included), cleared by record_steal_time() just
  // before the next entry.
  const Waiter& prev = *std::prev(it);
  if (prev.halted) return Early::PrevHalted;
  if (cfg_.wait_early_preempted &&
      (prev.cpu->vcpu().steal_time_preempted() & KVM_VCPU_PREEMPTED) != 0)
    return Early::PrevPreempted;
  return Early::No;
}

GuestStep GuestSpinlock::halt(Waiter& w, Early early) {
  w.halted = true;
  if (w.head) {
    w.head_halted = true;
    wake_stealers();  // the head clears pending before it halts
    ++stats_.pv_wait_head;
  } else {
    ++stats_.pv_wait_node;
    if (early != Early::No) ++stats_.pv_wait_early;
    if (early == Early::PrevPreempted) ++stats_.pv_wait_early_preempted;
  }
  // The CPU behind a halting node sees prev->state != vcpu_running at its
  // next check; no store wakes it earlier.
  return GuestStep::hlt();
}

// The CPU that took the lock passes the MCS queue on
// (arch_mcs_spin_unlock_contended(&next->locked)): a spinning next CPU
// leaves pv_wait_node() for pv_wait_head_or_lock() with a fresh
// SPIN_THRESHOLD; a halted one stays halted (pv_kick_node(): vcpu_hashed,
// kicked by the next unlock).
void GuestSpinlock::new_head(Tsc /*now*/) {
  if (queue_.empty()) return;
  Waiter& n = queue_.front();
  if (n.head) return;
  n.head = true;
  if (n.halted) {
    n.head_halted = true;  // pv_kick_node(): vcpu_hashed
  } else {
    n.budget = spin_budget();
    n.cpu->remote_store();
    wake_stealers();  // pending set
  }
}

// The next spin of a PV waiter: the head spins out its budget for the lock
// word; a CPU behind it spins in steps of PV_PREV_CHECK_MASK + 1 loops, the
// pv_wait_early() period. Both end early on the store that hands over.
GuestStep GuestSpinlock::spin_step(Waiter& w, GuestKernel& k, Tsc now) const {
  const Tsc chunk =
      w.head ? w.budget
             : std::min(w.budget, static_cast<Tsc>(cfg_.prev_check_loops) * cfg_.loop_cycles);
  w.issued = now;
  w.issued_delay = k.vcpu().se().run_delay_at(now);
  GuestStep s = GuestStep::run(Stage::Guest, std::max<Tsc>(chunk, 1));
  s.pause_loop = true;
  return s;
}

std::optional<GuestStep> GuestSpinlock::lock(GuestKernel& k, const GuestTask* t, Tsc now) {
  if (owner_ == t && !owner_running_) {  // handed over at unlock: this CPU sees it now
    stats_.handoff_cycles += now - released_at_;
    stats_.handoff_off_cpu_cycles += k.vcpu().se().run_delay_at(now) - released_delay0_;
    take(k, t, &waiting_, now);
    if (cfg_.pv) new_head(now);
    return std::nullopt;
  }
  if (owner_ == t) throw std::logic_error("spin_lock: the holder takes its lock again");
  const auto is_t = [t](const Waiter& w) { return w.task == t; };
  const Waiter fresh{t, &k, now, k.vcpu().se().run_delay_at(now)};
  if (cfg_.pv || cfg_.virt_tas) {
    auto st = std::find_if(stealers_.begin(), stealers_.end(), is_t);
    if (st != stealers_.end()) {
      // virt_spin_lock(): spin while the word is set, then cmpxchg it.
      // pv_hybrid_queued_unfair_trylock()'s loop: take a free lock; queue
      // once the head spins (pending) or nobody is queued; else spin on.
      const Waiter x = *st;
      if (owner_ == nullptr) {
        stealers_.erase(st);
        if (cfg_.pv) ++stats_.steals;
        take(k, t, &x, now);
        return std::nullopt;
      }
      if (!cfg_.pv || (!queue_.empty() && !pending())) return GuestStep::spin(Stage::Guest);
      stealers_.erase(st);
      return enqueue(k, x, now);
    }
  }
  if (!cfg_.pv && cfg_.virt_tas) {  // virt_spin_lock(): no queue
    if (owner_ == nullptr) {
      take(k, t, nullptr, now);
      return std::nullopt;
    }
    ++stats_.contended;
    stealers_.push_back(fresh);
    return GuestStep::spin(Stage::Guest);
  }
  auto it = std::find_if(queue_.begin(), queue_.end(), is_t);
  if (it == queue_.end()) {
    // queued_spin_lock(): the fast path on a free word; with PV, also a
    // free lock whose queue head is not spinning (lock stealing).
    if (owner_ == nullptr && (queue_.empty() || (cfg_.pv && !pending()))) {
      if (!queue_.empty()) ++stats_.steals;
      take(k, t, nullptr, now);
      return std::nullopt;
    }
    ++stats_.contended;
    if (cfg_.pv && !queue_.empty() && !pending()) {
      stealers_.push_back(fresh);
      return GuestStep::spin(Stage::Guest);
    }
    return enqueue(k, fresh, now);
  }
  if (!cfg_.pv) return GuestStep::spin(Stage::Guest);  // still queued: spin on
  Waiter& w = *it;
  if (w.halted) {
    // Back from kvm_wait() (kicked): spin again with a fresh threshold.
    w.halted = false;
    w.kicked = false;
    w.budget = spin_budget();
    if (w.head && owner_ != nullptr) wake_stealers();  // the head spins: pending set
  } else {
    const Tsc ran = (now - w.issued) - (k.vcpu().se().run_delay_at(now) - w.issued_delay);
    w.budget -= std::min(w.budget, ran);
  }
  if (w.head && owner_ == nullptr) {  // the head finds the lock free (after a kick)
    const Waiter me = w;
    pop_queue_front(now);
    take(k, t, &me, now);
    new_head(now);
    if (queue_.empty()) wake_stealers();  // no tail: they queue
    return std::nullopt;
  }
  if (w.head && w.head_halted) return GuestStep::spin(Stage::Guest);  // until handed over
  const Early early = wait_early(it);
  if (early != Early::No || w.budget == 0) return halt(w, early);
  return spin_step(w, k, now);
}

int GuestSpinlock::unlock(GuestKernel& k, Tsc now) {
  if (owner_ == nullptr || !owner_running_ || owner_cpu_ != &k)
    throw std::logic_error("spin_unlock: not held by this CPU");
  stats_.hold_cycles += now - held_since_;
  if (k.vcpu().se().run_delay_at(now) > owner_run_delay0_) ++stats_.hold_preempted;
  owner_ = nullptr;
  owner_cpu_ = nullptr;
  owner_running_ = false;
  released_at_ = now;
  if (!cfg_.pv && cfg_.virt_tas) {
    wake_stealers();  // the spinners see the free word; the first to look takes it
    return -1;
  }
  if (queue_.empty()) return -1;
  Waiter& head = queue_.front();
  if (cfg_.pv && head.halted) {
    // __pv_queued_spin_unlock_slowpath(): the lock is released and the
    // halted head kicked (once: the kick unhashes the lock, so a later
    // unlock before the head runs is a plain one); whoever runs first may
    // take the lock.
    wake_stealers();  // the word is free
    free_halted_head_ = true;
    if (head.kicked) return -1;
    head.kicked = true;
    ++stats_.pv_kick;
    return head.cpu->cpu();
  }
  waiting_ = head;
  pop_queue_front(now);
  ++stats_.handoffs;
  released_delay0_ = waiting_.cpu->vcpu().se().run_delay_at(now);
  owner_ = waiting_.task;
  owner_cpu_ = waiting_.cpu;
  waiting_.cpu->remote_store();
  if (cfg_.pv && queue_.empty()) wake_stealers();  // no tail: they queue
  return -1;
}

void GuestSpinlock::report_stats(const SpinlockStats& s, const TscClock& clk, Metrics& m,
                                 const std::string& prefix, Tsc run_cycles) {
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  m[prefix + "acquires"] = d(s.acquires);
  m[prefix + "contended"] = d(s.contended);
  m[prefix + "hold_preempted"] = d(s.hold_preempted);
  m[prefix + "steals"] = d(s.steals);
  m[prefix + "pv_wait_node"] = d(s.pv_wait_node);
  m[prefix + "pv_wait_early"] = d(s.pv_wait_early);
  m[prefix + "pv_wait_early_preempted"] = d(s.pv_wait_early_preempted);
  m[prefix + "pv_wait_head"] = d(s.pv_wait_head);
  m[prefix + "pv_kick"] = d(s.pv_kick);
  m[prefix + "wait_s"] = clk.to_s(static_cast<double>(s.wait_cycles));
  m[prefix + "wait_off_cpu_s"] = clk.to_s(static_cast<double>(s.wait_off_cpu_cycles));
  m[prefix + "hold_s"] = clk.to_s(static_cast<double>(s.hold_cycles));
  m[prefix + "handoffs"] = d(s.handoffs);
  m[prefix + "handoff_s"] = clk.to_s(static_cast<double>(s.handoff_cycles));
  m[prefix + "handoff_off_cpu_s"] = clk.to_s(static_cast<double>(s.handoff_off_cpu_cycles));
  m[prefix + "free_halted_head_s"] = clk.to_s(static_cast<double>(s.free_halted_head_cycles));
  m[prefix + "queue_drains"] = d(s.queue_drains);
  m[prefix + "last_drain_s"] = clk.to_s(static_cast<double>(s.last_drain));
  if (run_cycles > 0)
    m[prefix + "queue_len_avg"] =
        static_cast<double>(s.queue_len_cycles) / static_cast<double>(run_cycles);
}

}  // namespace kvmsim
