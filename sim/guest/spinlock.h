// A guest spinlock as v4.16's native queued spinlock behaves
// (kernel/locking/qspinlock.c, queued_spin_lock_slowpath() without the PV
// hooks), for kernel sections of guest tasks that run with preemption off.
//  - A free lock with nobody queued is taken at once (the cmpxchg fast path).
//  - Otherwise the CPU queues (its MCS node) and spins with cpu_relax(): a
//    PAUSE loop in guest kernel mode, which Pause-Loop Exiting sees. The
//    queue is FIFO, and a CPU arriving while others are queued cannot take
//    the lock (queued_spin_trylock() needs the whole word to be 0). So the
//    lock goes to the queue head at unlock, and a preempted head stalls
//    it just as a preempted holder does (lock-waiter preemption).
// Not modelled: the PV qspinlock of a KVM guest with KVM_FEATURE_PV_UNHALT
// (pv_wait_node()/pv_wait_head_or_lock() halt after SPIN_THRESHOLD loops,
// pv_kick() via KVM_HC_KICK_CPU, the unfair trylock), and the pending bit.
// ebizzy uses one such lock per guest as a stand-in for the node-wide locks
// of its page faults and frees (pgdat->lru_lock, zone->lock); see
// ebizzy.lock_sections.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "sim/core/metrics.h"
#include "sim/core/time.h"

namespace kvmsim {

class GuestKernel;
class GuestTask;

struct SpinlockStats {
  std::uint64_t acquires = 0;
  std::uint64_t contended = 0;       // queued: the lock was held or CPUs waited
  std::uint64_t hold_preempted = 0;  // the holder's vCPU thread was off its pCPU while it held
  Tsc wait_cycles = 0;               // contended acquisitions: first try -> held
  Tsc wait_off_cpu_cycles = 0;       // of which the waiter's own vCPU thread was off its pCPU
  Tsc hold_cycles = 0;               // acquired -> released
  SpinlockStats& operator+=(const SpinlockStats& o);
};

class GuestSpinlock {
 public:
  // spin_lock() by task `t` on CPU `k`. true: held now. false: `t` is
  // queued; it spins (GuestStep::spin) and calls lock() again on each step
  // until true. Keeps `t`'s state in the lock (one acquisition at a time).
  bool lock(GuestKernel& k, const GuestTask* t, Tsc now);
  // spin_unlock() by the holder: the queue head gets the lock and its CPU
  // sees the store (it stops spinning when it next runs).
  void unlock(GuestKernel& k, Tsc now);
  [[nodiscard]] const SpinlockStats& stats() const { return stats_; }
  static void report_stats(const SpinlockStats& s, const TscClock& clk, Metrics& m,
                           const std::string& prefix);

 private:
  struct Waiter {
    const GuestTask* task;
    GuestKernel* cpu;
    Tsc since;
    Tsc run_delay0;
  };
  const GuestTask* owner_ = nullptr;
  GuestKernel* owner_cpu_ = nullptr;
  bool owner_running_ = false;  // the owner took it (it was handed over while it queued)
  Tsc held_since_ = 0;
  Tsc owner_run_delay0_ = 0;
  std::deque<Waiter> queue_;
  Waiter waiting_{};  // the head the lock was handed to, until it takes it
  SpinlockStats stats_;
};

}  // namespace kvmsim
