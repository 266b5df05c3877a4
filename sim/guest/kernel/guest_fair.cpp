// CFS for the guest's Normal tasks (kernel/sched/fair.c, v4.16): vruntime,
// slices, tick and wake-up preemption, on this vCPU's run queue.
#include "sim/guest/kernel/guest_fair.h"

#include "sim/guest/kernel/guest_kernel.h"

#include <algorithm>

#include "sim/guest/kernel/guest_smp.h"

namespace kvmsim {

// rq->clock_task: the guest clock less the steal time the host last wrote to
// the steal-time area (update_rq_clock_task() with paravirt steal accounting).
std::uint64_t GuestFair::clock_task_ns(Tsc now) const {
  const std::uint64_t ns = rq_.guest_ns(now);
  if (!rq_.cfg_.fair.steal_accounting) return ns;
  const auto steal =
      static_cast<std::uint64_t>(static_cast<u128>(rq_.vcpu_.steal_time().stats().steal_cycles) *
                                 1000000u / rq_.guest_tsc_khz_);
  return steal < ns ? ns - steal : 0;
}

unsigned GuestFair::factor() const {
  const int n = std::min(rq_.smp_ ? rq_.smp_->nr_cpus() : 1, 8);
  unsigned log = 0;
  while ((2 << log) <= n) ++log;
  return 1 + log;
}

unsigned GuestFair::nr_running() const {
  unsigned n = curr() != nullptr ? 1 : 0;
  for (auto* t : rq_.runqueue_) n += t->fair() ? 1 : 0;
  return n;
}

GuestTask* GuestFair::curr() const {
  return rq_.current_ != nullptr && !rq_.current_blocked_ && rq_.current_->fair() ? rq_.current_
                                                                                  : nullptr;
}

GuestTask* GuestFair::leftmost() const {
  GuestTask* left = nullptr;
  for (auto* t : rq_.runqueue_)
    if (t->fair() && (left == nullptr || t->vruntime_ < left->vruntime_)) left = t;
  return left;
}

// sched_slice() for a nice-0 entity: __sched_period(nr) / nr, the period
// being the latency up to sched_nr_latency tasks and nr x min_granularity above.
std::uint64_t GuestFair::sched_slice_ns(unsigned nr) const {
  const std::uint64_t f = factor();
  const std::uint64_t latency = rq_.cfg_.fair.latency_ns * f;
  const std::uint64_t min_gran = rq_.cfg_.fair.min_granularity_ns * f;
  const std::uint64_t nr_latency =
      (rq_.cfg_.fair.latency_ns + rq_.cfg_.fair.min_granularity_ns - 1) /
      rq_.cfg_.fair.min_granularity_ns;
  if (nr == 0) nr = 1;
  const std::uint64_t period = nr > nr_latency ? nr * min_gran : latency;
  return period / nr;
}

// update_curr(): the running Normal task's runtime since exec_start goes
// into sum_exec_runtime and (nice 0) one-for-one into its vruntime.
void GuestFair::update_curr(Tsc now) {
  if (!rq_.current_ || !rq_.current_->fair()) return;
  const std::uint64_t t = clock_task_ns(now);
  if (t <= rq_.current_->exec_start_) return;
  const std::uint64_t d = t - rq_.current_->exec_start_;
  rq_.current_->exec_start_ = t;
  rq_.current_->sum_exec_ += d;
  rq_.current_->vruntime_ += static_cast<std::int64_t>(d);
  update_min_vruntime();
}

// update_min_vruntime(): monotonic, the smaller of curr's and the leftmost's.
void GuestFair::update_min_vruntime() {
  const GuestTask* cur = curr();
  const GuestTask* left = leftmost();
  if (cur == nullptr && left == nullptr) return;
  std::int64_t v = cur != nullptr ? cur->vruntime_ : left->vruntime_;
  if (left != nullptr) v = std::min(v, left->vruntime_);
  min_vruntime_ = std::max(min_vruntime_, v);
}

// place_entity(): a new task starts a virtual slice after min_vruntime
// (START_DEBIT); a waking sleeper gets at most half a latency of credit
// (GENTLE_FAIR_SLEEPERS), never more than it had.
void GuestFair::place_entity(GuestTask* t, bool initial) {
  std::int64_t v = min_vruntime_;
  if (initial) {
    t->vruntime_ = v + static_cast<std::int64_t>(sched_slice_ns(nr_running() + 1));
    return;
  }
  v -= static_cast<std::int64_t>(rq_.cfg_.fair.latency_ns * factor() / 2);
  t->vruntime_ = std::max(t->vruntime_, v);
}

// set_next_entity(): the slice is counted from here.
void GuestFair::set_next_entity(GuestTask* t, Tsc now) {
  t->exec_start_ = clock_task_ns(now);
  t->prev_sum_exec_ = t->sum_exec_;
}

// check_preempt_tick() (v4.16): resched when curr ran its ideal slice, or
// (after min_granularity) when it is ahead of the leftmost by a slice.
void GuestFair::task_tick(Tsc now) {
  if (curr() == nullptr) return;
  update_curr(now);
  const unsigned nr = nr_running();
  if (nr < 2 || rq_.need_resched_) return;
  const std::uint64_t ideal = sched_slice_ns(nr);
  const std::uint64_t delta_exec = rq_.current_->sum_exec_ - rq_.current_->prev_sum_exec_;
  bool resched = delta_exec > ideal;
  if (!resched && delta_exec >= rq_.cfg_.fair.min_granularity_ns * factor()) {
    const GuestTask* left = leftmost();
    resched = (left != nullptr) &&
              rq_.current_->vruntime_ - left->vruntime_ > static_cast<std::int64_t>(ideal);
  }
  if (resched) {
    rq_.need_resched_ = true;
    ++stats_.tick_preemptions;
  }
}

// check_preempt_curr() for a task just queued here: an RT wakee or any task
// on an idle CPU preempts; a Normal wakee preempts a Normal curr only when
// curr's vruntime is ahead by more than the wakeup granularity
// (wakeup_preempt_entity()); nothing preempts an RT curr.
void GuestFair::check_preempt_curr(GuestTask* woken, Tsc now) {
  if (!woken->fair() || rq_.current_ == nullptr || rq_.current_blocked_) {
    rq_.need_resched_ = true;
    return;
  }
  if (!rq_.current_->fair() || rq_.need_resched_) return;
  update_curr(now);
  const auto gran = static_cast<std::int64_t>(rq_.cfg_.fair.wakeup_granularity_ns * factor());
  if (rq_.current_->vruntime_ - woken->vruntime_ > gran) {
    rq_.need_resched_ = true;
    ++stats_.wakeup_preemptions;
  }
}

}  // namespace kvmsim
