// A guest rw_semaphore as Linux v4.16 implements it (kernel/locking/
// rwsem-xadd.c, include/linux/rwsem.h), for the tasks of the guest model;
// ebizzy's mm->mmap_sem is one.
//  - down_read(): the fast path succeeds unless a writer holds the lock or
//    tasks wait (RWSEM_WAITING_BIAS makes the count negative); otherwise
//    rwsem_down_read_failed() queues the reader and it sleeps. v4.16 readers
//    never spin (reader optimistic spinning came in v5.3).
//  - down_write(): the fast path succeeds on a free lock; otherwise
//    rwsem_down_write_failed() first tries rwsem_optimistic_spin():
//    rwsem_can_spin_on_owner() / rwsem_spin_on_owner() spin only while the
//    owner is a writer (a reader-owned lock, RWSEM_READER_OWNED, is not
//    spinnable), that writer is on a CPU (owner->on_cpu) and
//    vcpu_is_preempted(task_cpu(owner)) is false: the PV steal-time check
//    (__kvm_vcpu_is_preempted(), reads the `preempted` byte). When the spin
//    stops the writer queues and sleeps: its vCPU goes idle (HLT) and its
//    pCPU is free for other threads of the host.
//  - up_read() / up_write() -> rwsem_wake() -> __rwsem_mark_wake(
//    RWSEM_WAKE_ANY): the waiter at the front, a writer, or every reader
//    ahead of the first queued writer, is woken.
// Woken readers get the lock at the wake-up (__rwsem_mark_wake() adds their
// read bias); a woken writer stays queued and retries (rwsem_try_write_lock()
// in rwsem_down_write_failed()'s loop), and a spinning or newly arriving
// writer may take a free lock before it (rwsem_try_write_lock_unqueued():
// lock stealing); the loser sleeps again.
// In this model a task holding the lock never blocks (the holders run
// kernel work with preemption off, or user code that does not sleep), so a
// holder is on its CPU for as long as it holds: owner->on_cpu is true, and
// what stops a spin is its vCPU being preempted on the host.
#pragma once

#include <cstdint>
#include <deque>

#include "sim/core/dist.h"
#include "sim/core/metrics.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

class GuestKernel;
class GuestTask;

struct RwsemStats {
  std::uint64_t read_acquires = 0, write_acquires = 0;
  std::uint64_t read_contended = 0, write_contended = 0;  // the fast path failed
  std::uint64_t write_spins = 0;    // contended down_write()s that spun on the owner
  std::uint64_t spin_acquires = 0;  // ... and got the lock while spinning
  std::uint64_t read_sleeps = 0, write_sleeps = 0;  // queued and slept
  // Why a writer slept instead of (or after) spinning.
  // The owner was not spinnable: its vCPU preempted, it off its CPU, or need_resched here.
  std::uint64_t sleeps_owner_preempted = 0;
  std::uint64_t sleeps_reader_owned = 0;  // readers hold it (not spinnable)
  std::uint64_t wakeups = 0;              // waiters woken by rwsem_wake()
  Tsc wait_cycles = 0;                    // contended acquisition: first try -> held
  Tsc spin_cycles = 0;                    // of which spent spinning
  Tsc hold_write_cycles = 0;              // write lock held
  RwsemStats& operator+=(const RwsemStats& o);
};

// What a task keeps across the calls of one down_read()/down_write().
struct RwsemWaiter {
  bool contended = false;  // the fast path failed for this acquisition
  bool spinning = false;   // in rwsem_optimistic_spin()
  bool granted = false;    // a reader woken with the lock handed over
  bool queued = false;     // on wait_list (a writer stays there until it gets the lock)
  Tsc since = 0, spin_since = 0;
};

class GuestRwsem {
 public:
  enum class Result : std::uint8_t { Acquired, Spin, Sleep };
  // `slowpath`: rwsem_down_*_failed() / rwsem_wake() work (wait_lock, list);
  // `spin_recheck`: how long one stretch of the spin loop runs before the
  // spinner re-reads owner and `preempted` (model granularity: the loop
  // re-reads them every iteration).
  // `vcpu_is_preempted`: the guest's vcpu_is_preempted() reads steal time
  // (guest.vcpu_is_preempted); false = the native `false`, and a spinning
  // writer keeps spinning on a preempted owner.
  GuestRwsem(Sampler slowpath, Tsc spin_recheck, bool vcpu_is_preempted);

  // down_read() by `t`, current on `k`. Acquired: held now. Sleep: `t` is
  // queued and blocked (k.block_current()); see woken().
  Result down_read(GuestKernel& k, GuestTask* t, RwsemWaiter& w, Tsc now);
  // down_write(): Acquired, Sleep as above, or Spin: run spin_step() and
  // call again with the same `w`.
  Result down_write(GuestKernel& k, GuestTask* t, RwsemWaiter& w, Tsc now);
  // After a Sleep, when the task runs again: true = it holds the lock (a
  // reader); false = call down_*() again (a woken writer retries).
  bool woken(RwsemWaiter& w, Tsc now);
  void up_read(GuestKernel& k, Tsc now);
  void up_write(GuestKernel& k, Tsc now);
  // One stretch of rwsem_spin_on_owner()'s loop (cpu_relax()).
  [[nodiscard]] GuestStep spin_step() const { return GuestStep::run(Stage::Guest, spin_recheck_); }

  [[nodiscard]] const RwsemStats& stats() const { return stats_; }
  [[nodiscard]] int readers() const { return readers_; }
  [[nodiscard]] const GuestTask* writer() const { return writer_; }
  [[nodiscard]] std::size_t waiters() const { return waiters_.size(); }
  static void report_stats(const RwsemStats& s, const TscClock& clk, Metrics& m,
                           const std::string& prefix);

 private:
  struct Waiter {
    GuestTask* task;
    GuestKernel* cpu;
    RwsemWaiter* w;
    bool write;
  };
  void acquired(RwsemWaiter& w, Tsc now);
  Result sleep(GuestKernel& k, GuestTask* t, RwsemWaiter& w, bool write, Tsc now);
  void wake(GuestKernel& k, Tsc now);  // __rwsem_mark_wake(RWSEM_WAKE_ANY)

  Sampler slowpath_;
  Tsc spin_recheck_;
  bool vcpu_is_preempted_;
  GuestTask* writer_ = nullptr;  // sem->owner (a writer)
  GuestKernel* writer_cpu_ = nullptr;
  Tsc write_since_ = 0;
  int readers_ = 0;
  std::deque<Waiter> waiters_;  // sem->wait_list
  RwsemStats stats_;
};

}  // namespace kvmsim
