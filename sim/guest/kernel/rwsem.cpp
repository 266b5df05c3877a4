#include "sim/guest/kernel/rwsem.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

RwsemStats& RwsemStats::operator+=(const RwsemStats& o) {
  read_acquires += o.read_acquires;
  write_acquires += o.write_acquires;
  read_contended += o.read_contended;
  write_contended += o.write_contended;
  write_spins += o.write_spins;
  spin_acquires += o.spin_acquires;
  read_sleeps += o.read_sleeps;
  write_sleeps += o.write_sleeps;
  sleeps_owner_preempted += o.sleeps_owner_preempted;
  sleeps_reader_owned += o.sleeps_reader_owned;
  wakeups += o.wakeups;
  wait_cycles += o.wait_cycles;
  spin_cycles += o.spin_cycles;
  hold_write_cycles += o.hold_write_cycles;
  return *this;
}

GuestRwsem::GuestRwsem(Sampler slowpath, Tsc spin_recheck, bool vcpu_is_preempted)
    : slowpath_(std::move(slowpath)),
      spin_recheck_(std::max<Tsc>(spin_recheck, 1)),
      vcpu_is_preempted_(vcpu_is_preempted) {}

void GuestRwsem::acquired(RwsemWaiter& w, Tsc now) {
  if (w.spinning) {
    stats_.spin_cycles += now - w.spin_since;
    ++stats_.spin_acquires;
  }
  if (w.contended) stats_.wait_cycles += now - w.since;
  w = RwsemWaiter{};
}

// rwsem_down_{read,write}_failed(): queue on wait_list, then schedule().
GuestRwsem::Result GuestRwsem::sleep(GuestKernel& k, GuestTask* t, RwsemWaiter& w, bool write,
                                     Tsc now) {
  if (w.spinning) {
    stats_.spin_cycles += now - w.spin_since;
    w.spinning = false;
  }
  ++(write ? stats_.write_sleeps : stats_.read_sleeps);
  if (!w.queued) waiters_.push_back({t, &k, &w, write});
  w.queued = true;
  k.push_kernel_step(GuestStep::run(Stage::GuestSyscall, slowpath_(k.rng())));
  k.block_current();
  return Result::Sleep;
}

GuestRwsem::Result GuestRwsem::down_read(GuestKernel& k, GuestTask* t, RwsemWaiter& w, Tsc now) {
  // __down_read(): count + ACTIVE_READ_BIAS is negative with a writer
  // active or tasks queued.
  if (!writer_ && waiters_.empty()) {
    ++readers_;
    ++stats_.read_acquires;
    acquired(w, now);
    return Result::Acquired;
  }
  ++stats_.read_contended;
  w.contended = true;
  w.since = now;
  const Result r = sleep(k, t, w, false, now);
  // rwsem_down_read_failed(): with no active locker (only a woken writer
  // queued), wake the front of the queue.
  if (!writer_ && readers_ == 0) wake(k, now);
  return r;
}

GuestRwsem::Result GuestRwsem::down_write(GuestKernel& k, GuestTask* t, RwsemWaiter& w, Tsc now) {
  // __down_write() on a free lock (no holder, nobody queued), or
  // rwsem_try_write_lock_unqueued() from the spin once the owner left.
  if (!writer_ && readers_ == 0) {
    // Queued (woken) or not: nobody holds it, take it. A writer that was not
    // queued steals it from the waiters (rwsem_try_write_lock_unqueued()).
    if (w.queued) {
      const auto it = std::find_if(waiters_.begin(), waiters_.end(),
                                   [&w](const Waiter& x) { return x.w == &w; });
      if (it == waiters_.end()) throw std::logic_error("rwsem: queued writer not on wait_list");
      waiters_.erase(it);
    }
    writer_ = t;
    writer_cpu_ = &k;
    write_since_ = now;
    ++stats_.write_acquires;
    acquired(w, now);
    return Result::Acquired;
  }
  if (!w.contended) {
    ++stats_.write_contended;
    w.contended = true;
    w.since = now;
  }
  // A woken writer that lost the lock sleeps again (schedule() in the loop).
  if (w.queued) return sleep(k, t, w, true, now);
  // rwsem_can_spin_on_owner() / rwsem_spin_on_owner(): a writer owner that
  // is on its CPU (owner->on_cpu) and whose vCPU is not preempted (steal
  // time), while the spinner's own CPU has no need_resched.
  if (writer_) {
    const bool preempted = vcpu_is_preempted_ &&
                           (writer_cpu_->vcpu().steal_time_preempted() & KVM_VCPU_PREEMPTED) != 0;
    if (!preempted && writer_cpu_->task_curr(writer_) && !k.need_resched()) {
      if (!w.spinning) {
        w.spinning = true;
        w.spin_since = now;
        ++stats_.write_spins;
      }
      return Result::Spin;
    }
    ++stats_.sleeps_owner_preempted;
  } else {
    ++stats_.sleeps_reader_owned;  // RWSEM_READER_OWNED: not spinnable
  }
  return sleep(k, t, w, true, now);
}

bool GuestRwsem::woken(RwsemWaiter& w, Tsc now) {
  if (!w.granted) return false;
  acquired(w, now);
  return true;
}

void GuestRwsem::up_read(GuestKernel& k, Tsc now) {
  if (readers_ <= 0) throw std::logic_error("rwsem: up_read() without a reader");
  if (--readers_ == 0 && !waiters_.empty()) wake(k, now);
}

void GuestRwsem::up_write(GuestKernel& k, Tsc now) {
  if (!writer_) throw std::logic_error("rwsem: up_write() without a writer");
  stats_.hold_write_cycles += now - write_since_;
  writer_ = nullptr;
  writer_cpu_ = nullptr;
  if (!waiters_.empty()) wake(k, now);
}

// __rwsem_mark_wake(RWSEM_WAKE_ANY): the front writer is woken (it stays
// queued and retries), or the readers in front of the first queued writer
// get the lock and are woken.
void GuestRwsem::wake(GuestKernel& k, Tsc /*now*/) {
  if (waiters_.empty()) return;
  k.push_kernel_step(GuestStep::run(Stage::GuestSyscall, slowpath_(k.rng())));
  if (waiters_.front().write) {
    ++stats_.wakeups;
    k.wake_up(waiters_.front().task);
    return;
  }
  while (!waiters_.empty() && !waiters_.front().write) {
    const Waiter f = waiters_.front();
    waiters_.pop_front();
    ++readers_;
    ++stats_.read_acquires;
    f.w->granted = true;
    f.w->queued = false;
    ++stats_.wakeups;
    k.wake_up(f.task);
  }
}

void GuestRwsem::report_stats(const RwsemStats& s, const TscClock& clk, Metrics& m,
                              const std::string& prefix) {
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  m[prefix + "read_acquires"] = d(s.read_acquires);
  m[prefix + "write_acquires"] = d(s.write_acquires);
  m[prefix + "read_contended"] = d(s.read_contended);
  m[prefix + "write_contended"] = d(s.write_contended);
  m[prefix + "write_spins"] = d(s.write_spins);
  m[prefix + "spin_acquires"] = d(s.spin_acquires);
  m[prefix + "read_sleeps"] = d(s.read_sleeps);
  m[prefix + "write_sleeps"] = d(s.write_sleeps);
  m[prefix + "sleeps_owner_preempted"] = d(s.sleeps_owner_preempted);
  m[prefix + "sleeps_reader_owned"] = d(s.sleeps_reader_owned);
  m[prefix + "wakeups"] = d(s.wakeups);
  m[prefix + "wait_s"] = clk.to_s(static_cast<double>(s.wait_cycles));
  m[prefix + "spin_s"] = clk.to_s(static_cast<double>(s.spin_cycles));
  m[prefix + "hold_write_s"] = clk.to_s(static_cast<double>(s.hold_write_cycles));
}

}  // namespace kvmsim
