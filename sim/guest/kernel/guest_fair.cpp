// CFS for the guest's Normal tasks (kernel/sched/fair.c, v4.16): vruntime,
// slices, tick and wake-up preemption, on this vCPU's run queue.
#include "sim/guest/kernel/guest_fair.h"

#include "sim/guest/kernel/guest_kernel.h"

#include <algorithm>

#include "sim/guest/kernel/guest_smp.h"
#include "sim/sched/cfs.h"

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

// The tunables as update_sysctl() scales them for the guest's CPU count
// (SCHED_TUNABLESCALING_LOG), kept in guest ns; rebuilt when the count
// changes (CPUs join the VM's SMP view while the guests boot).
const CfsTunables& GuestFair::tunables() const {
  const int n = rq_.smp_ ? rq_.smp_->nr_cpus() : 1;
  if (n != tunables_cpus_) {
    const auto& f = rq_.cfg_.fair;
    tunables_ = CfsTunables::in_ns(f.latency_ns, f.min_granularity_ns, f.wakeup_granularity_ns,
                                   TunableScaling::Log, n);
    tunables_cpus_ = n;
  }
  return tunables_;
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

// sched_slice() for a nice-0 entity: __sched_period(nr) / nr (fair::sched_period).
std::uint64_t GuestFair::sched_slice_ns(unsigned nr) const {
  if (nr == 0) nr = 1;
  return fair::sched_period(tunables(), nr) / nr;
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

// place_entity(): START_DEBIT for a new task, sleeper credit on wake-up
// (fair::place_entity).
void GuestFair::place_entity(GuestTask* t, bool initial) {
  t->vruntime_ = fair::place_entity(tunables(), min_vruntime_, t->vruntime_,
                                    initial ? sched_slice_ns(nr_running() + 1) : 0, initial);
}

// set_next_entity(): the slice is counted from here.
void GuestFair::set_next_entity(GuestTask* t, Tsc now) {
  t->exec_start_ = clock_task_ns(now);
  t->prev_sum_exec_ = t->sum_exec_;
}

// check_preempt_tick() (v4.16, fair::check_preempt_tick): resched when curr
// ran its ideal slice, or (after min_granularity) when it is ahead of the
// leftmost by a slice.
void GuestFair::task_tick(Tsc now) {
  if (curr() == nullptr) return;
  update_curr(now);
  const unsigned nr = nr_running();
  if (nr < 2 || rq_.need_resched_) return;
  const GuestTask* left = leftmost();
  const std::int64_t lead = left != nullptr ? rq_.current_->vruntime_ - left->vruntime_ : 0;
  if (fair::check_preempt_tick(tunables(), rq_.current_->sum_exec_ - rq_.current_->prev_sum_exec_,
                               sched_slice_ns(nr), left != nullptr ? &lead : nullptr)) {
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
  if (fair::wakeup_preempt_entity(rq_.current_->vruntime_ - woken->vruntime_,
                                  tunables().wakeup_granularity) == 1) {
    rq_.need_resched_ = true;
    ++stats_.wakeup_preemptions;
  }
}

}  // namespace kvmsim
