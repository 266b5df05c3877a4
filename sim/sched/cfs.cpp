#include "sim/sched/cfs.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace kvmsim {

namespace {

// sched_prio_to_weight[] (kernel/sched/core.c): 1024 at nice 0, ~1.25x per step.
constexpr std::array<std::uint32_t, 40> kPrioToWeight = {
    88761, 71755, 56483, 46273, 36291,  // -20
    29154, 23254, 18705, 14949, 11916,  // -15
    9548,  7620,  6100,  4904,  3906,   // -10
    3121,  2501,  1991,  1586,  1277,   //  -5
    1024,  820,   655,   526,   423,    //   0
    335,   272,   215,   172,   137,    //   5
    110,   87,    70,    56,    45,     //  10
    36,    29,    23,    18,    15,     //  15
};

// __calc_delta() without the inverse-weight fixed point: delta * mul / div
// (the kernel's 32-bit inverse of the load differs from this by rounding only).
Tsc calc_delta(Tsc delta, std::uint64_t mul, std::uint64_t div) {
  return static_cast<Tsc>(static_cast<u128>(delta) * mul / div);
}

}  // namespace

std::uint32_t nice_to_weight(int nice) {
  if (nice < -20 || nice > 19) throw std::out_of_range("nice " + std::to_string(nice));
  const int index = nice + 20;
  return kPrioToWeight[static_cast<std::size_t>(index)];
}

TunableScaling parse_tunable_scaling(const std::string& s) {
  if (s == "none") return TunableScaling::None;
  if (s == "log") return TunableScaling::Log;
  if (s == "linear") return TunableScaling::Linear;
  throw std::invalid_argument("sched_tunable_scaling: expected none, log or linear, got '" + s +
                              "'");
}

unsigned tunable_scaling_factor(TunableScaling scaling, int ncpus) {
  const unsigned cpus = static_cast<unsigned>(std::clamp(ncpus, 1, 8));
  switch (scaling) {
    case TunableScaling::None:
      return 1;
    case TunableScaling::Linear:
      return cpus;
    case TunableScaling::Log: {
      unsigned log2 = 0;
      while ((cpus >> (log2 + 1)) != 0) ++log2;
      return 1 + log2;
    }
  }
  return 1;
}

CfsTunables CfsTunables::in_ns(std::uint64_t latency_ns, std::uint64_t min_granularity_ns,
                               std::uint64_t wakeup_granularity_ns, TunableScaling scaling,
                               int ncpus) {
  if (min_granularity_ns == 0) throw std::invalid_argument("sched_min_granularity_ns is 0");
  const unsigned f = tunable_scaling_factor(scaling, ncpus);
  CfsTunables t;
  t.latency = latency_ns * f;
  t.min_granularity = min_granularity_ns * f;
  t.wakeup_granularity = wakeup_granularity_ns * f;
  t.ms = 1000000;
  // DIV_ROUND_UP(latency, min_granularity); scaling multiplies both alike.
  t.nr_latency = static_cast<unsigned>((latency_ns + min_granularity_ns - 1) / min_granularity_ns);
  return t;
}

CfsTunables CfsTunables::from_ns(const TscClock& clock, std::uint64_t latency_ns,
                                 std::uint64_t min_granularity_ns,
                                 std::uint64_t wakeup_granularity_ns,
                                 std::uint64_t migration_cost_ns, TunableScaling scaling,
                                 int ncpus) {
  // The scaled ns values, each converted to cycles.
  CfsTunables t = in_ns(latency_ns, min_granularity_ns, wakeup_granularity_ns, scaling, ncpus);
  t.latency = clock.ns_to_cycles(t.latency);
  t.min_granularity = clock.ns_to_cycles(t.min_granularity);
  t.wakeup_granularity = clock.ns_to_cycles(t.wakeup_granularity);
  t.migration_cost = clock.ns_to_cycles(migration_cost_ns);
  t.ms = clock.ns_to_cycles(t.ms);
  return t;
}

namespace fair {

Tsc sched_period(const CfsTunables& t, unsigned nr_running) {
  return nr_running > t.nr_latency ? nr_running * t.min_granularity : t.latency;
}

bool check_preempt_tick(const CfsTunables& t, Tsc ran, Tsc ideal, const std::int64_t* left_lead) {
  if (ran > ideal) return true;
  if (ran < t.min_granularity || left_lead == nullptr) return false;
  return *left_lead > 0 && static_cast<Tsc>(*left_lead) > ideal;
}

std::int64_t place_entity(const CfsTunables& t, std::int64_t min_vruntime, std::int64_t vruntime,
                          Tsc vslice, bool initial) {
  if (initial) return min_vruntime + static_cast<std::int64_t>(vslice);
  return std::max(vruntime, min_vruntime - static_cast<std::int64_t>(t.latency / 2));
}

int wakeup_preempt_entity(std::int64_t vdiff, Tsc gran) {
  if (vdiff <= 0) return -1;
  return static_cast<Tsc>(vdiff) > gran ? 1 : 0;
}

// The kernel: shares = tg_shares * load / tg_weight, clamp_t(long, shares,
// MIN_SHARES, tg_shares); with no load anywhere that is 0, so MIN_SHARES.
std::uint64_t calc_group_shares(std::uint64_t shares, std::uint64_t local_load,
                                std::uint64_t total_load) {
  if (total_load == 0) return std::min(kMinShares, shares);
  const u128 s = static_cast<u128>(shares) * local_load / total_load;
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(s), std::min(kMinShares, shares),
                                   shares);
}

}  // namespace fair

CpuMask CpuMask::only(int cpu) { return of({cpu}); }

CpuMask CpuMask::of(const std::vector<int>& cpus) {
  CpuMask m;
  m.all_ = false;
  for (int c : cpus) {
    if (c < 0) throw std::out_of_range("cpu " + std::to_string(c) + " in an affinity mask");
    if (static_cast<std::size_t>(c) >= m.bits_.size())
      m.bits_.resize(static_cast<std::size_t>(c) + 1);
    m.bits_[static_cast<std::size_t>(c)] = true;
  }
  return m;
}

bool CpuMask::test(int cpu) const {
  if (all_) return true;
  return cpu >= 0 && static_cast<std::size_t>(cpu) < bits_.size() &&
         bits_[static_cast<std::size_t>(cpu)];
}

SchedEntity::SchedEntity(int id_, int nice_, CpuMask allowed_)
    : id(id_), nice(nice_), weight(nice_to_weight(nice_)), allowed(std::move(allowed_)) {}

Tsc calc_delta_fair(Tsc delta, std::uint32_t weight) {
  return calc_delta_fair(delta, weight, kNice0Load);
}

Tsc calc_delta_fair(Tsc delta, std::uint32_t weight, std::uint32_t nice0) {
  return weight == nice0 ? delta : calc_delta(delta, nice0, weight);
}

// update_curr(). Charges only a current entity that is still runnable: one
// that has just been dequeued to sleep is waiting for pick_next, and the gap
// (which the kernel does not have: both happen in one __schedule()) is not run time.
void CfsRq::update_curr(Tsc now) {
  if (curr_ == nullptr || !curr_->on_rq || now <= curr_->exec_start) return;
  const Tsc delta = now - curr_->exec_start;
  curr_->exec_start = now;
  curr_->sum_exec_runtime += delta;
  curr_->vruntime += static_cast<std::int64_t>(calc_delta_fair(delta, curr_->weight, t_->nice0));
  update_min_vruntime();
}

// update_min_vruntime(): the smaller of curr and leftmost, never going back.
void CfsRq::update_min_vruntime() {
  std::int64_t v = min_vruntime_;
  const SchedEntity* c = (curr_ != nullptr && curr_->on_rq) ? curr_ : nullptr;
  if (c != nullptr) v = c->vruntime;
  if (!tree_.empty()) {
    const std::int64_t left = (*tree_.begin())->vruntime;
    v = c == nullptr ? left : std::min(v, left);
  }
  min_vruntime_ = std::max(min_vruntime_, v);
}

// place_entity(). A new entity starts one vslice after min_vruntime
// (START_DEBIT: the current period is already promised to the others); a
// waking one gets at most half a latency of credit (GENTLE_FAIR_SLEEPERS), and
// never moves back in vruntime by sleeping. Without a parent to fork from, a
// new entity takes the placed value as is (task_fork_fair starts from the parent's).
void CfsRq::place_entity(SchedEntity& se, bool initial) {
  se.vruntime =
      fair::place_entity(*t_, min_vruntime_, se.vruntime, initial ? sched_vslice(se) : 0, initial);
}

// enqueue_entity(). A waking entity that stayed on this queue keeps an
// absolute vruntime; anything else arrives relative and is renormalised to
// this queue's min_vruntime (before update_curr for curr, as the kernel does).
void CfsRq::enqueue_entity(SchedEntity& se, Tsc now, unsigned flags) {
  if (se.on_rq) throw std::logic_error("enqueue_entity: entity already on a run queue");
  const bool is_curr = curr_ == &se;
  if (se.fresh) {
    update_curr(now);
    place_entity(se, true);
    se.fresh = false;
  } else {
    const bool renorm = (flags & kEnqueueWakeup) == 0 || (flags & kEnqueueMigrated) != 0;
    if (renorm && is_curr) se.vruntime += min_vruntime_;
    update_curr(now);
    if (renorm && !is_curr) se.vruntime += min_vruntime_;
    if ((flags & kEnqueueWakeup) != 0) place_entity(se, false);
  }
  // The current entity woken again before pick_next: the gap since it was
  // dequeued was neither run time nor run delay.
  if (is_curr) se.exec_start = now;
  se.vruntime_relative = false;
  add_load(se.weight);  // account_entity_enqueue()
  ++nr_running_;
  se.on_rq = true;
  if (!is_curr) {
    tree_.insert(&se);
    se.waiting = true;  // sched_info_queued()
    se.last_queued = now;
  }
}

// dequeue_entity(). Leaving for another queue makes vruntime relative to this
// min_vruntime (done before min_vruntime moves); going to sleep keeps it absolute.
void CfsRq::dequeue_entity(SchedEntity& se, Tsc now, unsigned flags) {
  if (!se.on_rq) throw std::logic_error("dequeue_entity: entity not on a run queue");
  update_curr(now);
  clear_buddies(se);
  if (&se != curr_) tree_.erase(&se);
  se.on_rq = false;
  add_load(-static_cast<std::int64_t>(se.weight));
  --nr_running_;
  se.vruntime_relative = (flags & kDequeueSleep) == 0;
  if (se.vruntime_relative) se.vruntime -= min_vruntime_;
  update_min_vruntime();
  if (se.waiting) {  // sched_info_dequeued()
    se.run_delay += now - se.last_queued;
    se.waiting = false;
  }
}

void CfsRq::reweight_entity(SchedEntity& se, std::uint32_t w, Tsc now) {
  if (se.on_rq) {
    if (curr_ == &se) update_curr(now);
    add_load(static_cast<std::int64_t>(w) - se.weight);  // account_entity_dequeue() + _enqueue()
  }
  se.weight = w;  // update_load_set()
}

// clear_buddies(): `se` stops being any of the queue's buddies.
void CfsRq::clear_buddies(const SchedEntity& se) {
  if (skip_ == &se) skip_ = nullptr;
  if (next_ == &se) next_ = nullptr;
  if (last_ == &se) last_ = nullptr;
}

unsigned CfsRq::buddy_kinds(const SchedEntity& se) const {
  return (next_ == &se ? kBuddyNext : 0u) | (last_ == &se ? kBuddyLast : 0u) |
         (skip_ == &se ? kBuddySkip : 0u);
}

void CfsRq::clear_buddy_kinds(unsigned kinds) {
  if ((kinds & kBuddyNext) != 0) next_ = nullptr;
  if ((kinds & kBuddyLast) != 0) last_ = nullptr;
  if ((kinds & kBuddySkip) != 0) skip_ = nullptr;
}

// pick_next_entity() (v4.16) with the current entity already put back in the
// tree: the leftmost; the second instead if the leftmost is the skip buddy
// and the second is within wakeup_gran of it; then the last buddy, then the
// next buddy, each only if it is within wakeup_gran of the leftmost
// (wakeup_preempt_entity(buddy, left) < 1). Buddies are queued here (they
// are cleared when they leave the queue).
SchedEntity* CfsRq::pick_next_entity() const {
  if (tree_.empty()) return nullptr;
  auto it = tree_.begin();
  SchedEntity* left = *it;
  SchedEntity* se = left;
  if (skip_ == left) {
    auto next = std::next(it);
    if (next != tree_.end() && wakeup_preempt_entity(**next, *left) < 1) se = *next;
  }
  // "Prefer last buddy, try to return the CPU to a preempted task."
  if (last_ && last_->on_rq && last_ != curr_ && wakeup_preempt_entity(*last_, *left) < 1)
    se = const_cast<SchedEntity*>(last_);
  // "Someone really wants this to run. If it's not unfair, run it."
  if (next_ && next_->on_rq && next_ != curr_ && wakeup_preempt_entity(*next_, *left) < 1)
    se = const_cast<SchedEntity*>(next_);
  return se;
}

// v4.16's pick_next_entity(cfs_rq, curr): `curr` (runnable, out of the tree)
// competes as if queued; then the skip, last and next buddies as above.
SchedEntity* CfsRq::pick_next_entity(SchedEntity* curr) const {
  if (curr == nullptr) return pick_next_entity();
  // entity_before() is strict: on equal vruntime the queued entity wins.
  const auto before = [](const SchedEntity* a, const SchedEntity* b) {
    return a->vruntime < b->vruntime;
  };
  auto it = tree_.begin();
  SchedEntity* left = it == tree_.end() || before(curr, *it) ? curr : *it;
  SchedEntity* se = left;
  if (skip_ == left) {
    SchedEntity* second = nullptr;
    if (left == curr) {
      second = it == tree_.end() ? nullptr : *it;
    } else {
      auto n = std::next(it);
      second = n == tree_.end() ? nullptr : *n;
      if (second == nullptr || before(curr, second)) second = curr;
    }
    if (second != nullptr && wakeup_preempt_entity(*second, *left) < 1) se = second;
  }
  if (last_ && last_->on_rq && wakeup_preempt_entity(*last_, *left) < 1)
    se = const_cast<SchedEntity*>(last_);
  if (next_ && next_->on_rq && wakeup_preempt_entity(*next_, *left) < 1)
    se = const_cast<SchedEntity*>(next_);
  return se;
}

// set_next_entity(): the picked entity leaves the tree and starts a slice;
// pick_next_entity()'s clear_buddies(cfs_rq, se) for it.
void CfsRq::set_next_entity(SchedEntity& se, Tsc now) {
  if (se.on_rq) tree_.erase(&se);
  clear_buddies(se);
  curr_ = &se;
  se.exec_start = now;
  se.prev_sum_exec_runtime = se.sum_exec_runtime;
  if (se.waiting) {  // sched_info_arrive()
    se.run_delay += now - se.last_queued;
    se.waiting = false;
  }
  ++se.pcount;
}

// put_prev_entity(): a still runnable current entity goes back into the tree
// and starts waiting (sched_info_depart() re-queues a TASK_RUNNING task).
void CfsRq::put_prev_entity(Tsc now) {
  if (curr_ == nullptr) return;
  if (curr_->on_rq) {
    update_curr(now);
    tree_.insert(curr_);
    curr_->waiting = true;
    curr_->last_queued = now;
  }
  curr_ = nullptr;
}

// entity_tick(): account, and check the slice only when someone else waits.
// check_preempt_tick() clears the buddies of a current entity whose ideal
// slice is used up ("ensure it doesn't get re-elected due to buddy favours").
bool CfsRq::entity_tick(Tsc now) {
  if (curr_ == nullptr || !curr_->on_rq) return false;
  update_curr(now);
  if (nr_running_ <= 1 || !check_preempt_tick()) return false;
  if (curr_->sum_exec_runtime - curr_->prev_sum_exec_runtime > sched_slice(*curr_))
    clear_buddies(*curr_);
  return true;
}

// check_preempt_tick(): preempt once the ideal slice is used up; never before
// min_granularity; in between, if curr is ahead of the leftmost by more than a slice.
bool CfsRq::check_preempt_tick() const {
  if (curr_ == nullptr) return false;
  const SchedEntity* left = first();
  const std::int64_t lead = left != nullptr ? curr_->vruntime - left->vruntime : 0;
  return fair::check_preempt_tick(*t_, curr_->sum_exec_runtime - curr_->prev_sum_exec_runtime,
                                  sched_slice(*curr_), left != nullptr ? &lead : nullptr);
}

Tsc CfsRq::slice_left(Tsc now) const {
  if (curr_ == nullptr || !curr_->on_rq || nr_running_ <= 1) return kTscNever;
  const SchedEntity& c = *curr_;
  const Tsc unaccounted = now > c.exec_start ? now - c.exec_start : 0;
  const Tsc ran = c.sum_exec_runtime - c.prev_sum_exec_runtime + unaccounted;
  const Tsc ideal = sched_slice(c);
  // First rule: ran must exceed ideal.
  const Tsc d1 = ran > ideal ? 0 : ideal - ran + 1;
  // Second rule: ran >= min_granularity and curr's vruntime (advanced by one
  // update_curr over the unaccounted time plus d) ahead of the leftmost by > ideal.
  Tsc d2 = kTscNever;
  if (const SchedEntity* left = first(); left != nullptr) {
    const std::int64_t need =
        static_cast<std::int64_t>(ideal) - (c.vruntime - left->vruntime) + 1;  // vruntime to gain
    Tsc u = 0;  // execution whose calc_delta_fair() is >= need
    if (need > 0)
      u = static_cast<Tsc>((static_cast<u128>(need) * c.weight + t_->nice0 - 1) / t_->nice0);
    Tsc d = u > unaccounted ? u - unaccounted : 0;
    if (ran + d < t_->min_granularity) d = t_->min_granularity - ran;
    d2 = d;
  }
  return std::max<Tsc>(std::min(d1, d2), 1);
}

// check_preempt_wakeup(): an idle queue is always preempted
// (check_preempt_curr_idle); with sched_feat(WAKEUP_PREEMPTION) off a
// wake-up never preempts (the tick does); otherwise
// wakeup_preempt_entity() decides. A preempting wakee becomes the next
// buddy; the preempted curr becomes the last buddy when the queue has at
// least sched_nr_latency entities
// (LAST_BUDDY and `scale`, v4.16 kernel/sched/fair.c).
bool CfsRq::check_preempt_wakeup(const SchedEntity& woken, Tsc now) {
  if (curr_ == nullptr || !curr_->on_rq) return true;
  if (curr_ == &woken || !t_->wakeup_preemption) return false;
  const bool scale = nr_running_ >= t_->nr_latency;
  update_curr(now);
  if (wakeup_preempt_entity(*curr_, woken) != 1) return false;
  next_ = &woken;
  if (scale) last_ = curr_;
  return true;
}

int CfsRq::wakeup_preempt_entity(const SchedEntity& curr, const SchedEntity& se) const {
  return fair::wakeup_preempt_entity(curr.vruntime - se.vruntime, wakeup_gran(se));
}

// yield_task_fair(): nothing to yield to with one runnable entity;
// otherwise clear_buddies(curr), account it, and make it the skip buddy.
void CfsRq::yield(Tsc now) {
  if (nr_running_ <= 1 || curr_ == nullptr) return;
  clear_buddies(*curr_);
  update_curr(now);
  skip_ = curr_;
}

// __sched_period(): stretch the period once more than nr_latency are runnable.
Tsc CfsRq::sched_period(unsigned nr_running) const { return fair::sched_period(*t_, nr_running); }

// sched_slice(): the entity's weighted share of the period, counting it as
// runnable here if it is not yet (as for a new or waking entity).
// Under group scheduling the share is taken again at each level above, of
// the group's entity in its own queue.
Tsc CfsRq::sched_slice(const SchedEntity& se) const {
  const unsigned nr = nr_running_ + (se.on_rq ? 0 : 1);
  const std::uint64_t load = load_ + (se.on_rq ? 0 : se.weight);
  Tsc slice = calc_delta(sched_period(nr), se.weight, load);
  for (const SchedEntity* p = se.parent; p != nullptr; p = p->parent)
    slice = calc_delta(slice, p->weight, p->cfs_rq->load() + (p->on_rq ? 0 : p->weight));
  return slice;
}

Tsc CfsRq::sched_vslice(const SchedEntity& se) const {
  return calc_delta_fair(sched_slice(se), se.weight, t_->nice0);
}

// wakeup_gran(): the granularity in the woken entity's vruntime, so a heavier
// waker preempts more easily.
Tsc CfsRq::wakeup_gran(const SchedEntity& se) const {
  return calc_delta_fair(t_->wakeup_granularity, se.weight, t_->nice0);
}

}  // namespace kvmsim
