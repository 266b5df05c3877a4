// A guest spinlock as v4.16's queued spinlock behaves
// (kernel/locking/qspinlock.c, qspinlock_paravirt.h), for kernel sections
// of guest tasks that run with preemption (and usually interrupts) off.
//
// Without PV spinlocks, a KVM guest (X86_FEATURE_HYPERVISOR) takes
// virt_spin_lock() in the slow path (v4.16; guest.virt_spin_lock): a
// test-and-set loop, no queue, whoever sees the word free first wins.
//
// Native queued (bare metal, or guest.virt_spin_lock false):
//  - A free lock with nobody queued is taken at once (the cmpxchg fast path).
//  - Otherwise the CPU queues (its MCS node) and spins with cpu_relax(): a
//    PAUSE loop in guest kernel mode, which Pause-Loop Exiting sees. The
//    queue is FIFO, and a CPU arriving while others are queued cannot take
//    the lock (queued_spin_trylock() needs the whole word to be 0). So the
//    lock goes to the queue head at unlock, and a preempted head stalls
//    it just as a preempted holder does (lock-waiter preemption).
//
// Paravirtual (kvm_spinlock_init(): pv_lock_ops wait = kvm_wait, kick =
// kvm_kick_cpu), the same queue with halting waiters:
//  - pv_wait_node() (a queued CPU that is not the head) spins at most
//    SPIN_THRESHOLD loops, checking every PV_PREV_CHECK_MASK + 1 = 256 loops
//    pv_wait_early(): the CPU ahead of it in the queue is halted, or (v4.11
//    75437bb304b2 .. v5.3, reverted by 89340d0935c9) its vCPU is preempted
//    (vcpu_is_preempted(): steal-time PREEMPTED, which a v4.16 host sets on
//    every vcpu_put). Then pv_wait() -> kvm_wait(): HLT, with RFLAGS.IF as
//    the caller had it (spin_lock_irqsave(): clear, so only the kick ends
//    the halt; interrupts wait in the IRR).
//  - The queue head (pv_wait_head_or_lock()) spins SPIN_THRESHOLD loops for
//    the lock, then hashes the lock (_Q_SLOW_VAL) and halts (once: after
//    the kick the word is no longer _Q_SLOW_VAL, so it spins on); a head that is
//    halted is kicked by the unlock (__pv_queued_spin_unlock_slowpath() ->
//    pv_kick() -> KVM_HC_KICK_CPU), and a halted CPU that becomes head
//    (pv_kick_node(): vcpu_hashed) is kicked at the next unlock, not before.
//  - While the head is not actively spinning (the pending bit clear: halted,
//    or kicked and not running yet), a CPU entering the slow path does not
//    queue: pv_hybrid_queued_unfair_trylock() spins on the lock word and
//    takes the lock whenever it is free (lock stealing); it queues once
//    the head spins again (pending set) or the queue is gone.
// Not modelled: the pending-bit fast path for the first contender (it is
// the head here). The host side of a halted waiter's wake-ups by IPIs and
// timers it cannot take is in sim/vmx/vcpu.cpp (rewait_block, restart_halt).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "sim/core/metrics.h"
#include "sim/core/time.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

class GuestKernel;
class GuestTask;

struct SpinlockConfig {
  bool pv = false;                     // the PV qspinlock (halting waiters)
  bool virt_tas = false;               // !pv: virt_spin_lock()'s test-and-set
  bool wait_early_preempted = true;    // pv_wait_early() also on a preempted predecessor
  unsigned spin_threshold = 1U << 15;  // SPIN_THRESHOLD
  unsigned prev_check_loops = 256;     // PV_PREV_CHECK_MASK + 1
  Tsc loop_cycles = 15;                // one spin loop turn (load + cpu_relax()), host cycles
};

struct SpinlockStats {
  std::uint64_t acquires = 0;
  std::uint64_t contended = 0;       // queued: the lock was held or CPUs waited
  std::uint64_t hold_preempted = 0;  // the holder's vCPU thread was off its pCPU while it held
  std::uint64_t steals = 0;          // PV: taken while the queue head was halted
  std::uint64_t pv_wait_node = 0;    // PV: halts of a queued CPU behind the head
  std::uint64_t pv_wait_early = 0;   // ... of those, cut short by pv_wait_early()
  // ... of those, because the predecessor's vCPU was preempted while its
  // node was not halted: what vcpu_is_preempted() added (v4.11-v5.3). The
  // counter Wanpeng Li added for Waiman Long in the 2019 revert thread
  // (pv_vcpu_is_preempted) counts the same.
  std::uint64_t pv_wait_early_preempted = 0;
  std::uint64_t pv_wait_head = 0;  // PV: halts of the queue head
  std::uint64_t pv_kick = 0;       // PV: unlocks that kicked a halted head
  Tsc wait_cycles = 0;             // contended acquisitions: first try -> held
  Tsc wait_off_cpu_cycles = 0;     // of which the waiter's own vCPU thread was off its pCPU
  Tsc hold_cycles = 0;             // acquired -> released
  // Where a free lock's time goes (the lock is per guest, so these add up
  // to at most the run's length per lock):
  std::uint64_t handoffs = 0;  // unlocks that handed the lock to a spinning queue head
  Tsc handoff_cycles = 0;      // ... until the head's CPU saw it (its vCPU off its pCPU: longer)
  Tsc handoff_off_cpu_cycles = 0;   // ... of which the head's vCPU thread was off its pCPU
  Tsc free_halted_head_cycles = 0;  // PV: free, the queue head halted or kicked (open to steals)
  // The MCS queue itself: how often it drained (the last node left it) and
  // its length integrated over time (queue_len_avg = this / run length).
  // A queue that never drains keeps every newcomer behind a halted node once
  // one halted (pv_wait_early(): the cascade).
  std::uint64_t queue_drains = 0;
  Tsc queue_len_cycles = 0;  // sum over time of (nodes queued) x cycles
  Tsc last_drain = 0;        // when it last drained (0: never)
  SpinlockStats& operator+=(const SpinlockStats& o);
};

class GuestSpinlock {
 public:
  explicit GuestSpinlock(SpinlockConfig cfg = {}) : cfg_(cfg) {}
  // spin_lock() by task `t` on CPU `k`. nullopt: held now. Otherwise the
  // step `t` runs before it calls lock() again (a spin, or a HLT).
  std::optional<GuestStep> lock(GuestKernel& k, const GuestTask* t, Tsc now);
  // spin_unlock() by the holder: a spinning queue head gets the lock (its
  // CPU sees the store when it next runs). Returns the vCPU the unlocker
  // must kick with KVM_HC_KICK_CPU (a halted PV head), or -1.
  int unlock(GuestKernel& k, Tsc now);
  [[nodiscard]] const SpinlockStats& stats() const { return stats_; }
  [[nodiscard]] const SpinlockConfig& config() const { return cfg_; }
  // The statistics with queue_len_cycles integrated up to `now`.
  [[nodiscard]] SpinlockStats stats_at(Tsc now) const {
    SpinlockStats s = stats_;
    s.queue_len_cycles += static_cast<Tsc>(queue_.size()) * (now - queue_since_);
    return s;
  }
  // `run_cycles`: the run's length (for queue_len_avg; 0 leaves it out).
  static void report_stats(const SpinlockStats& s, const TscClock& clk, Metrics& m,
                           const std::string& prefix, Tsc run_cycles = 0);

 private:
  struct Waiter {
    const GuestTask* task;
    GuestKernel* cpu;
    Tsc since;
    Tsc run_delay0;
    bool halted = false;
    bool head = false;    // in pv_wait_head_or_lock()
    bool kicked = false;  // an unlock kicked this halt (the lock is unhashed)
    // This CPU halted as the head (or was hashed for it): pv_wait() only
    // halts while the lock word is _Q_SLOW_VAL, which the kick's unlock
    // cleared, so from now on the head just spins.
    bool head_halted = false;
    Tsc budget = 0;        // spin cycles left before pv_wait()
    Tsc issued = 0;        // the last spin step began
    Tsc issued_delay = 0;  // the vCPU thread's run delay then
  };
  // `t` on CPU `k` holds the lock from now; `w` is its wait (statistics),
  // nullptr when it never waited.
  void take(GuestKernel& k, const GuestTask* t, const Waiter* w, Tsc now);
  [[nodiscard]] Tsc spin_budget() const {  // SPIN_THRESHOLD loops
    return static_cast<Tsc>(cfg_.spin_threshold) * cfg_.loop_cycles;
  }
  // The pending bit: the queue head spins in pv_wait_head_or_lock().
  [[nodiscard]] bool pending() const {
    return !queue_.empty() && queue_.front().head && !queue_.front().halted;
  }
  void wake_stealers();  // the lock word changed: the unfair spinners look again
  // The queue's length is about to change at `now`: integrate it so far.
  void account_queue(Tsc now) {
    stats_.queue_len_cycles += static_cast<Tsc>(queue_.size()) * (now - queue_since_);
    queue_since_ = now;
  }
  // queue_.pop_front() with its accounting (length integral, drains).
  void pop_queue_front(Tsc now) {
    account_queue(now);
    queue_.pop_front();
    if (queue_.empty()) {
      ++stats_.queue_drains;
      stats_.last_drain = now;
    }
  }
  // Joins the MCS queue with the wait that began at w.since.
  std::optional<GuestStep> enqueue(GuestKernel& k, Waiter w, Tsc now);
  void new_head(Tsc now);
  GuestStep spin_step(Waiter& w, GuestKernel& k, Tsc now) const;
  // pv_wait_early()'s verdict on the node at `it`.
  enum class Early : std::uint8_t { No, PrevHalted, PrevPreempted };
  [[nodiscard]] Early wait_early(const std::deque<Waiter>::iterator& it) const;
  GuestStep halt(Waiter& w, Early early);  // pv_wait(): HLT

  SpinlockConfig cfg_;
  const GuestTask* owner_ = nullptr;
  GuestKernel* owner_cpu_ = nullptr;
  bool owner_running_ = false;  // the owner took it (it was handed over while it queued)
  Tsc held_since_ = 0;
  Tsc released_at_ = 0;            // the last unlock
  Tsc released_delay0_ = 0;        // the handed-over head's run delay at that unlock
  bool free_halted_head_ = false;  // since released_at_: free with a halted head
  Tsc owner_run_delay0_ = 0;
  std::deque<Waiter> queue_;
  // CPUs spinning outside the MCS queue: in virt_spin_lock()'s test-and-set
  // loop, or (PV) in pv_hybrid_queued_unfair_trylock()'s loop.
  std::deque<Waiter> stealers_;
  Waiter waiting_{};     // the head the lock was handed to, until it takes it
  Tsc queue_since_ = 0;  // the queue's length last changed
  SpinlockStats stats_;
};

}  // namespace kvmsim
