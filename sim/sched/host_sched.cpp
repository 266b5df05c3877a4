#include "sim/sched/host_sched.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include "sim/core/params.h"

namespace kvmsim {

namespace {

std::string cpu_text(int cpu) { return "cpu " + std::to_string(cpu); }

}  // namespace

HostScheduler::HostScheduler(const Topology& topology, const CfsTunables& tunables)
    : topo_(topology), tunables_(tunables) {
  const int n = topo_.cpus();
  rqs_.reserve(static_cast<std::size_t>(n));
  std::vector<int> machine;
  for (int c = 0; c < n; ++c) {
    rqs_.emplace_back(&tunables_);
    machine.push_back(c);
  }
  need_resched_.assign(static_cast<std::size_t>(n), false);
  nr_tasks_.assign(static_cast<std::size_t>(n), 0);
  // Scheduling domains, smallest first; a level spanning the same pCPUs as
  // its child is dropped (sd_degenerate()).
  for (int c = 0; c < n; ++c) {
    smt_.push_back(topo_.smt_span(c));
    llc_.push_back(topo_.llc_span(c));
    std::vector<std::vector<int>> levels;
    for (const auto* span : {&smt_.back(), &llc_.back(), &machine})
      if (span->size() > 1 && (levels.empty() || levels.back() != *span)) levels.push_back(*span);
    domains_.push_back(std::move(levels));
    next_balance_.emplace_back(domains_.back().size(), Tsc{0});
    std::vector<Tsc> min_interval;  // sd->min_interval = sd_weight ms
    for (const auto& span : domains_.back()) min_interval.push_back(span.size());
    balance_interval_.push_back(std::move(min_interval));
  }
}

GroupLayout GroupLayout::from(const ParamSet& p) {
  GroupLayout g;
  const bool autogroup = p.s("host.sched_autogroup") == "per_session";
  g.vms = p.s("vm.cgroup");
  if (g.vms != "none")
    g.vm_shares = static_cast<std::uint64_t>(p.i("vm.cpu_shares"));
  else if (autogroup)
    g.vms = "per_vm";  // each QEMU's session: an autogroup of nice 0
  g.hogs_own = p.s("host.hog.cgroup") == "own" || (autogroup && p.i("host.hog.count") > 0);
  return g;
}

CfsTunables HostScheduler::tunables_from(const ParamSet& p, const TscClock& clock, int ncpus) {
  auto ns = [&](const char* key) { return static_cast<std::uint64_t>(p.i(key)); };
  CfsTunables t = CfsTunables::from_ns(
      clock, ns("host.sched_latency_ns"), ns("host.sched_min_granularity_ns"),
      ns("host.sched_wakeup_granularity_ns"), ns("host.sched_migration_cost_ns"),
      parse_tunable_scaling(p.s("host.sched_tunable_scaling")), ncpus);
  t.load_balance = p.b("host.sched_load_balance");
  t.wakeup_preemption = p.b("host.sched_feat_wakeup_preemption");
  t.groups = GroupLayout::from(p).any();
  t.nice0 = t.groups ? kNice0Load << 10 : kNice0Load;  // scale_load(NICE_0_LOAD)
  return t;
}

TaskGroup* HostScheduler::create_group(std::string name, std::uint64_t shares) {
  if (!tunables_.groups)
    throw std::logic_error("create_group: the scheduler was built without group scheduling");
  auto g = std::make_unique<TaskGroup>();
  g->id = static_cast<int>(groups_.size());
  g->name = std::move(name);
  g->shares = std::max<std::uint64_t>(shares, fair::kMinShares) * (tunables_.nice0 / kNice0Load);
  const int n = cpus();
  for (int c = 0; c < n; ++c) {
    g->rq.push_back(std::make_unique<CfsRq>(&tunables_));
    g->rq.back()->set_group_load_sum(&g->load_sum);
    // init_tg_cfs_entry(): NICE_0_LOAD until the first update_cfs_group().
    auto ge = std::make_unique<SchedEntity>(-(1 + g->id * n + c));
    ge->weight = tunables_.nice0;
    ge->scaled = true;
    ge->fresh = false;
    ge->cpu = c;
    ge->my_q = g->rq.back().get();
    ge->cfs_rq = &rqs_[static_cast<std::size_t>(c)];
    g->se.push_back(std::move(ge));
  }
  groups_.push_back(std::move(g));
  return groups_.back().get();
}

void HostScheduler::attach(SchedEntity& se, TaskGroup* tg) const {
  // Moving a task that ran (task_move_group_fair()) is not modelled.
  if (!se.fresh || se.on_rq)
    throw std::logic_error("attach: entity " + std::to_string(se.id) + " has been enqueued");
  if (tg != nullptr && !tunables_.groups)
    throw std::logic_error("attach: the scheduler was built without group scheduling");
  se.tg = tg;
}

unsigned HostScheduler::nr_running(int cpu) const {
  return tunables_.groups ? nr_tasks_.at(static_cast<std::size_t>(cpu)) : rq(cpu).nr_running();
}

std::uint64_t HostScheduler::task_h_load(const SchedEntity& se) {
  if (se.parent == nullptr) return se.weight;
  const std::uint64_t q = se.cfs_rq->load();
  return q == 0 ? se.weight
                : static_cast<std::uint64_t>(static_cast<u128>(se.weight) * se.parent->weight / q);
}

SchedEntity* HostScheduler::curr(int cpu) const {
  SchedEntity* c = rq(cpu).curr();
  while (c != nullptr && c->my_q != nullptr) c = c->my_q->curr();
  return c;
}

CfsRq& HostScheduler::queue_of(const SchedEntity& se, int cpu) {
  const auto c = static_cast<std::size_t>(cpu);
  return se.tg != nullptr ? *se.tg->rq.at(c) : rqs_.at(c);
}

const CfsRq& HostScheduler::queue_of(const SchedEntity& se, int cpu) const {
  const auto c = static_cast<std::size_t>(cpu);
  return se.tg != nullptr ? *se.tg->rq.at(c) : rqs_.at(c);
}

bool HostScheduler::is_curr(const SchedEntity& se) const {
  return se.cpu >= 0 && queue_of(se, se.cpu).curr() == &se;
}

std::vector<SchedEntity*> HostScheduler::queued_tasks(int cpu) const {
  if (!tunables_.groups) return rq(cpu).queued();
  std::vector<SchedEntity*> out;
  const auto add = [&out](const CfsRq& q) {
    const auto tasks = q.queued();
    out.insert(out.end(), tasks.begin(), tasks.end());
  };
  for (SchedEntity* e : rq(cpu).queued()) {
    if (e->my_q == nullptr) {
      out.push_back(e);
    } else {
      add(*e->my_q);
    }
  }
  if (const SchedEntity* c = rq(cpu).curr(); c != nullptr && c->my_q != nullptr) add(*c->my_q);
  return out;
}

// clear_buddies(cfs_rq, se) with groups: each kind `se` holds on its queue
// is cleared there and, walking up, on the parent's queue where the parent
// holds that kind.
void HostScheduler::clear_buddies_up(SchedEntity& se) {
  const unsigned kinds = se.cfs_rq->buddy_kinds(se);
  se.cfs_rq->clear_buddy_kinds(kinds);
  if (se.parent != nullptr)
    se.parent->cfs_rq->clear_buddy_kinds(kinds & se.parent->cfs_rq->buddy_kinds(*se.parent));
}

// update_cfs_group(): the group's entity on its pCPU gets its share of the
// group's weight from the group's load there and everywhere.
void HostScheduler::update_cfs_group(SchedEntity& ge, Tsc now) {
  const TaskGroup& g = *groups_.at(static_cast<std::size_t>((-ge.id - 1) / cpus()));
  const std::uint64_t w = fair::calc_group_shares(g.shares, ge.my_q->load(), g.load_sum);
  rq_mut(ge.cpu).reweight_entity(ge, static_cast<std::uint32_t>(w), now);
}

int HostScheduler::select_task_rq(const SchedEntity& se, int prev_cpu, int waker_cpu) const {
  const int n = cpus();
  if (prev_cpu >= n || waker_cpu >= n) throw std::out_of_range("select_task_rq: cpu out of range");
  // Still current where it last ran (dequeued, schedule() pending): stay.
  if (se.cpu >= 0 && !se.on_rq && is_curr(se)) return se.cpu;
  if (prev_cpu < 0) return find_idlest_cpu(se);
  // wake_affine_idle(): an idle waker pCPU sharing the cache with prev pulls
  // the wakee unless prev is idle as well.
  int target = prev_cpu;
  if (waker_cpu >= 0 && waker_cpu != prev_cpu && se.allowed.test(waker_cpu) &&
      topo_.shares_llc(waker_cpu, prev_cpu) && idle(waker_cpu))
    target = idle(prev_cpu) ? prev_cpu : waker_cpu;
  const int cpu = select_idle_sibling(se, prev_cpu, target);
  return se.allowed.test(cpu) ? cpu : select_fallback_rq(se, prev_cpu);
}

// find_idlest_cpu() for a new task (SD_BALANCE_FORK): down from the machine,
// the least loaded socket, then core, then pCPU, among those with an allowed
// pCPU. Load is the sum of weights (no PELT, no imbalance_pct bias towards
// the local group); ties go to the lower number.
int HostScheduler::find_idlest_cpu(const SchedEntity& se) const {
  auto key = [&](const std::vector<int>& group) {
    std::uint64_t load = 0;
    unsigned nr = 0;
    for (int c : group) {
      load += rq(c).load();
      nr += nr_running(c);
    }
    return std::make_pair(load, nr);
  };
  auto allowed_in = [&](const std::vector<int>& group) {
    return std::any_of(group.begin(), group.end(), [&](int c) { return se.allowed.test(c); });
  };
  // Each level's groups, named by their first pCPU.
  auto idlest = [&](const std::vector<int>& span, const std::vector<std::vector<int>>& groups) {
    const std::vector<int>* best = nullptr;
    for (int c : span) {
      const auto& g = groups[static_cast<std::size_t>(c)];
      if (g.front() != c || !allowed_in(g)) continue;
      if (best == nullptr || key(g) < key(*best)) best = &g;
    }
    return best;
  };
  std::vector<int> machine(static_cast<std::size_t>(cpus()));
  for (int c = 0; c < cpus(); ++c) machine[static_cast<std::size_t>(c)] = c;
  const std::vector<int>* socket = idlest(machine, llc_);
  if (socket == nullptr) return select_fallback_rq(se, -1);  // throws: no allowed pCPU
  const std::vector<int>* core = idlest(*socket, smt_);
  int best = -1;
  for (int c : *core)
    if (se.allowed.test(c) && (best < 0 || key({c}) < key({best}))) best = c;
  return best;
}

// select_idle_sibling() of v5.x: target, prev, then select_idle_core() and
// select_idle_cpu() over target's LLC in for_each_cpu_wrap() order. (Its
// select_idle_smt() step comes after a full LLC scan and finds nothing new
// without the SIS_PROP limit, so it is not modelled.)
int HostScheduler::select_idle_sibling(const SchedEntity& se, int prev, int target) const {
  auto usable = [&](int c) { return se.allowed.test(c) && idle(c); };
  if (usable(target)) return target;
  if (prev != target && topo_.shares_llc(prev, target) && usable(prev)) return prev;
  std::vector<int> order = llc_[static_cast<std::size_t>(target)];
  std::rotate(order.begin(), std::find(order.begin(), order.end(), target), order.end());
  if (topo_.threads_per_core() > 1) {  // select_idle_core(): a core with every thread idle
    for (int c : order) {
      if (!se.allowed.test(c)) continue;
      const auto& core = smt_[static_cast<std::size_t>(c)];
      if (std::all_of(core.begin(), core.end(), [&](int t) { return idle(t); })) return c;
    }
  }
  for (int c : order)  // select_idle_cpu()
    if (usable(c)) return c;
  return target;
}

// select_fallback_rq(): an allowed pCPU on prev's socket, else any allowed one.
int HostScheduler::select_fallback_rq(const SchedEntity& se, int prev) const {
  if (prev >= 0)
    for (int c = 0; c < cpus(); ++c)
      if (topo_.socket_of(c) == topo_.socket_of(prev) && se.allowed.test(c)) return c;
  for (int c = 0; c < cpus(); ++c)
    if (se.allowed.test(c)) return c;
  throw std::logic_error("entity " + std::to_string(se.id) + " is allowed on no pCPU");
}

void HostScheduler::enqueue(int cpu, SchedEntity& se, Tsc now, unsigned flags) {
  CfsRq& dst = rq_mut(cpu);
  if (!se.allowed.test(cpu))
    throw std::logic_error("enqueue: entity " + std::to_string(se.id) + " not allowed on " +
                           cpu_text(cpu));
  if (se.on_rq) throw std::logic_error("enqueue: entity " + std::to_string(se.id) + " is queued");
  const bool moved = se.cpu >= 0 && se.cpu != cpu;
  if (moved && is_curr(se))
    throw std::logic_error("enqueue: entity " + std::to_string(se.id) + " is still current on " +
                           cpu_text(se.cpu) + "; call pick_next there first");
  // Make the enqueue_entity() renormalisation right whatever the entity went
  // through: relative vruntime arrives as ENQUEUE_MIGRATED; a waking task
  // that changes queue is made relative first (migrate_task_rq_fair); a
  // non-wake-up enqueue of a sleeper is made relative to its old queue.
  unsigned f = flags & kEnqueueWakeup;
  if (!se.fresh) {
    const bool wakeup = (flags & kEnqueueWakeup) != 0;
    if (!se.vruntime_relative && (moved || !wakeup)) {
      se.vruntime -= queue_of(se, se.cpu).min_vruntime();
      se.vruntime_relative = true;
    }
    if (se.vruntime_relative && wakeup) f |= kEnqueueMigrated;
  }
  if (moved) {
    ++counters_.migrations;
    ++se.nr_migrations;
    if (on_migrate) on_migrate(se, se.cpu, cpu, now);
  }
  if (tunables_.groups) {
    enqueue_task(cpu, se, now, f);
  } else {
    dst.enqueue_entity(se, now, f);
    se.cpu = cpu;
  }
  if ((flags & kEnqueueWakeup) != 0) ++counters_.wakeups;
}

// enqueue_task_fair() with groups: the task on its group's queue, then the
// group's entity on the root (as a wake-up: sleeper placement) if it was not
// queued, reweighted either way.
void HostScheduler::enqueue_task(int cpu, SchedEntity& se, Tsc now, unsigned flags) {
  if (!se.scaled) {  // scale_load()
    se.weight *= tunables_.nice0 / kNice0Load;
    se.scaled = true;
  }
  CfsRq& q = queue_of(se, cpu);
  se.cfs_rq = &q;
  se.parent = se.tg != nullptr ? se.tg->se.at(static_cast<std::size_t>(cpu)).get() : nullptr;
  q.enqueue_entity(se, now, flags);
  se.cpu = cpu;
  if (se.parent != nullptr) {
    SchedEntity& ge = *se.parent;
    update_cfs_group(ge, now);
    if (!ge.on_rq) rq_mut(cpu).enqueue_entity(ge, now, kEnqueueWakeup);
  }
  ++nr_tasks_[static_cast<std::size_t>(cpu)];
}

// dequeue_task_fair() with groups: the group's entity leaves the root when
// its queue empties; otherwise a sleeping task makes it the root's next
// buddy ("bias pick_next to pick a task from this cfs_rq") and it is
// reweighted.
void HostScheduler::dequeue_task(int cpu, SchedEntity& se, Tsc now, unsigned flags) {
  if (!tunables_.groups) {
    rq_mut(cpu).dequeue_entity(se, now, flags);
    return;
  }
  CfsRq& q = *se.cfs_rq;
  clear_buddies_up(se);  // dequeue_entity()'s clear_buddies()
  q.dequeue_entity(se, now, flags);
  if (se.parent != nullptr) {
    SchedEntity& ge = *se.parent;
    if (q.nr_running() == 0) {
      rq_mut(cpu).dequeue_entity(ge, now, kDequeueSleep);
    } else {
      if ((flags & kDequeueSleep) != 0) rq_mut(cpu).set_next_buddy(ge);
      update_cfs_group(ge, now);
    }
  }
  --nr_tasks_[static_cast<std::size_t>(cpu)];
}

void HostScheduler::dequeue(int cpu, SchedEntity& se, Tsc now, unsigned flags) {
  if (!se.on_rq || se.cpu != cpu)
    throw std::logic_error("dequeue: entity " + std::to_string(se.id) + " not on " + cpu_text(cpu));
  dequeue_task(cpu, se, now, flags);
  if (is_curr(se)) need_resched_[static_cast<std::size_t>(cpu)] = true;
}

SchedEntity* HostScheduler::pick_next(int cpu, Tsc now) {
  if (tunables_.groups) return pick_next_groups(cpu, now);
  CfsRq& r = rq_mut(cpu);
  SchedEntity* prev = r.curr();
  const bool yielded = prev != nullptr && prev->on_rq && r.skip_buddy() == prev;
  r.put_prev_entity(now);
  SchedEntity* next = r.pick_next_entity();
  if (const SchedEntity* buddy = r.next_buddy(); buddy != nullptr && buddy != r.first())
    ++(next == buddy ? counters_.next_buddy_picks : counters_.next_buddy_refused);
  if (next == nullptr && idle_balance(cpu, now) != nullptr) next = r.pick_next_entity();
  if (yielded) ++(next == prev ? counters_.yield_repicks : counters_.yield_switches);
  if (next != nullptr) r.set_next_entity(*next, now);
  need_resched_[static_cast<std::size_t>(cpu)] = false;
  if (next != prev) ++counters_.context_switches;
  return next;
}

// pick_next_task_fair() with groups (v4.16): down from the root, each level's
// current entity ranked with its queue (pick_next_entity(cfs_rq, curr)) and
// the picked one cleared of its buddies; then, if the task changes, the
// levels below where the old and new paths meet are put back and set (the
// is_same_group() walk), so a group's entity keeps its root slice while its
// tasks switch. A re-pick of the running task changes nothing.
SchedEntity* HostScheduler::pick_next_groups(int cpu, Tsc now) {
  SchedEntity* prev = curr(cpu);
  const bool yielded = prev != nullptr && prev->on_rq && prev->cfs_rq->skip_buddy() == prev;
  SchedEntity* next = pick_path(cpu, now);
  if (next == nullptr) {  // the old path goes before idle_balance() looks for work
    put_path(cpu, now);
    if (idle_balance(cpu, now) != nullptr) {
      next = pick_path(cpu, now);
      set_path(*next, now);
    }
  } else if (next != prev && prev != nullptr && prev->cfs_rq == next->cfs_rq) {
    next->cfs_rq->put_prev_entity(now);
    next->cfs_rq->set_next_entity(*next, now);
  } else if (next != prev) {
    put_path(cpu, now);
    set_path(*next, now);
  }
  if (yielded) ++(next == prev ? counters_.yield_repicks : counters_.yield_switches);
  if (next != prev) ++counters_.context_switches;
  need_resched_[static_cast<std::size_t>(cpu)] = false;
  return next;
}

SchedEntity* HostScheduler::pick_path(int cpu, Tsc now) {
  CfsRq* q = &rq_mut(cpu);
  for (;;) {
    SchedEntity* c = q->curr();
    if (c != nullptr && c->on_rq) {
      q->update_curr(now);
    } else {
      c = nullptr;
    }
    const SchedEntity* buddy = q->next_buddy();
    SchedEntity* se = q->pick_next_entity(c);
    if (se == nullptr) return nullptr;
    if (q == &rq_mut(cpu) && buddy != nullptr) {  // counted at the root
      const SchedEntity* f = q->first();
      const SchedEntity* left = c != nullptr && (f == nullptr || c->vruntime < f->vruntime) ? c : f;
      if (buddy != left)
        ++(se == buddy ? counters_.next_buddy_picks : counters_.next_buddy_refused);
    }
    clear_buddies_up(*se);
    if (se->my_q == nullptr) return se;
    q = se->my_q;
  }
}

// put_prev_task_fair(): every level of the running path, bottom up.
void HostScheduler::put_path(int cpu, Tsc now) {
  CfsRq& root = rq_mut(cpu);
  if (SchedEntity* c = root.curr(); c != nullptr && c->my_q != nullptr)
    c->my_q->put_prev_entity(now);
  root.put_prev_entity(now);
}

// set_next_entity() on every level of `next`'s path, top down.
void HostScheduler::set_path(SchedEntity& next, Tsc now) {
  if (next.parent != nullptr) next.parent->cfs_rq->set_next_entity(*next.parent, now);
  next.cfs_rq->set_next_entity(next, now);
}

bool HostScheduler::tick(int cpu, Tsc now) {
  const auto i = static_cast<std::size_t>(cpu);
  if (tunables_.groups) {  // task_tick_fair(): entity_tick() on every level, bottom up
    bool preempt = false;
    if (SchedEntity* t = curr(cpu); t != nullptr) {
      preempt = t->cfs_rq->entity_tick(now);
      if (t->parent != nullptr) {
        if (t->parent->on_rq) update_cfs_group(*t->parent, now);
        preempt = rq_mut(cpu).entity_tick(now) || preempt;
      }
    }
    if (preempt && !need_resched_.at(i)) {
      ++counters_.tick_preemptions;
      need_resched_[i] = true;
    }
    return need_resched_.at(i);
  }
  if (rq_mut(cpu).entity_tick(now) && !need_resched_.at(i)) {
    ++counters_.tick_preemptions;
    need_resched_[i] = true;
  }
  return need_resched_.at(i);
}

bool HostScheduler::wakeup_preempts(int cpu, const SchedEntity& woken, Tsc now) {
  if (!woken.on_rq || woken.cpu != cpu)
    throw std::logic_error("wakeup_preempts: entity " + std::to_string(woken.id) + " not on " +
                           cpu_text(cpu));
  const auto i = static_cast<std::size_t>(cpu);
  if (need_resched_.at(i)) return true;  // check_preempt_wakeup(): already rescheduling
  if (tunables_.groups) return wakeup_preempts_groups(cpu, woken, now);
  CfsRq& r = rq_mut(cpu);
  const bool busy = r.curr() != nullptr && r.curr()->on_rq;
  if (!r.check_preempt_wakeup(woken, now)) return false;
  need_resched_[i] = true;
  if (busy) ++counters_.wakeup_preemptions;
  return true;
}

// check_preempt_wakeup() with groups: the woken task and the current one are
// compared on the level where their ancestors meet (find_matching_se());
// a preempting wake-up makes the woken side the next buddy from there up,
// and the current task the last buddy when both are tasks of one queue of
// at least sched_nr_latency.
bool HostScheduler::wakeup_preempts_groups(int cpu, const SchedEntity& woken, Tsc now) {
  const auto i = static_cast<std::size_t>(cpu);
  SchedEntity* ct = curr(cpu);
  if (ct == nullptr || !ct->on_rq) {  // idle, or its task just blocked
    need_resched_[i] = true;
    return true;
  }
  if (ct == &woken || !tunables_.wakeup_preemption) return false;
  const bool scale = ct->cfs_rq->nr_running() >= tunables_.nr_latency;
  SchedEntity* se = ct;
  const SchedEntity* pse = &woken;
  if (se->cfs_rq != pse->cfs_rq) {
    if (se->parent != nullptr) se = se->parent;
    if (pse->parent != nullptr) pse = pse->parent;
  }
  if (se == pse) return false;
  CfsRq& q = *se->cfs_rq;
  q.update_curr(now);
  if (q.wakeup_preempt_entity(*se, *pse) != 1) return false;
  q.set_next_buddy(*pse);
  if (pse->parent != nullptr) pse->parent->cfs_rq->set_next_buddy(*pse->parent);
  if (scale && se->my_q == nullptr && se->on_rq) {
    q.set_last_buddy(*se);
    if (se->parent != nullptr) se->parent->cfs_rq->set_last_buddy(*se->parent);
  }
  need_resched_[i] = true;
  ++counters_.wakeup_preemptions;
  return true;
}

int HostScheduler::yield_to(int cpu, const SchedEntity& target, Tsc now) {
  if (target.cpu < 0) return kYieldToFailed;  // never ran: no task_rq()
  // "If we're the only runnable task on the rq and target rq also has only
  // one task, there's absolutely no point in yielding."
  if (nr_running(cpu) == 1 && nr_running(target.cpu) == 1) return kYieldToEsrch;
  if (is_curr(target) || !target.on_rq) return kYieldToFailed;  // task_running(), p->state
  // yield_to_task_fair(): set_next_buddy() on every level.
  queue_of(target, target.cpu).set_next_buddy(target);
  if (target.parent != nullptr) target.parent->cfs_rq->set_next_buddy(*target.parent);
  yield(cpu, now);
  if (target.cpu != cpu) need_resched_[static_cast<std::size_t>(target.cpu)] = true;
  return kYieldToDone;
}

void HostScheduler::yield(int cpu, Tsc now) {
  if (tunables_.groups) {  // yield_task_fair(): the skip buddy on every level
    SchedEntity* c = curr(cpu);
    if (c != nullptr && nr_running(cpu) > 1) {
      clear_buddies_up(*c);
      c->cfs_rq->update_curr(now);
      c->cfs_rq->set_skip_buddy(*c);
      if (c->parent != nullptr) c->parent->cfs_rq->set_skip_buddy(*c->parent);
    }
    need_resched_[static_cast<std::size_t>(cpu)] = true;
    return;
  }
  rq_mut(cpu).yield(now);
  need_resched_[static_cast<std::size_t>(cpu)] = true;  // sys_sched_yield() calls schedule()
}

// can_migrate_task() on one source queue, least recently run first (the
// tail of rq->cfs_tasks): allowed on dst, not running, not cache hot
// (task_hot(): ran within sched_migration_cost; never-run entities are cold).
SchedEntity* HostScheduler::detachable(int src, int dst_cpu, Tsc now) const {
  SchedEntity* best = nullptr;
  const Tsc cost = tunables_.migration_cost;
  for (SchedEntity* e : queued_tasks(src)) {
    if (!e->allowed.test(dst_cpu)) continue;
    const bool hot = cost > 0 && e->pcount > 0 && now < e->exec_start + cost;
    if (hot) continue;
    if (best == nullptr || std::tie(e->exec_start, e->id) < std::tie(best->exec_start, best->id))
      best = e;
  }
  return best;
}

SchedEntity* HostScheduler::idle_balance(int cpu, Tsc now) {
  if (!rq(cpu).idle()) return nullptr;
  for (const auto& span : domains_.at(static_cast<std::size_t>(cpu))) {
    // find_busiest_queue(): heaviest first; a queue whose tasks are all
    // pinned or hot is skipped for the next (LBF_ALL_PINNED redo).
    std::vector<int> sources;
    for (int c : span)
      if (c != cpu && nr_running(c) >= 2) sources.push_back(c);
    std::sort(sources.begin(), sources.end(), [&](int a, int b) {
      return std::make_tuple(rq(b).load(), nr_running(b), a) <
             std::make_tuple(rq(a).load(), nr_running(a), b);
    });
    for (int src : sources) {
      SchedEntity* e = detachable(src, cpu, now);
      if (e == nullptr) continue;
      // detach_task() / attach_task(): moved as a non-wake-up, relative vruntime.
      dequeue_task(src, *e, now, kDequeueNone);
      enqueue(cpu, *e, now, kEnqueueNone);
      ++counters_.idle_balance_pulls;
      return e;
    }
  }
  return nullptr;
}

std::vector<std::pair<int, SchedEntity*>> HostScheduler::nohz_idle_balance(int busy_cpu, Tsc now) {
  std::vector<std::pair<int, SchedEntity*>> pulled;
  if (nr_running(busy_cpu) < 2) return pulled;
  for (int c = 0; c < cpus(); ++c)
    if (c != busy_cpu && idle(c))
      if (SchedEntity* e = idle_balance(c, now); e != nullptr) pulled.emplace_back(c, e);
  return pulled;
}

std::vector<SchedEntity*> HostScheduler::rebalance_domains(int cpu, Tsc now) {
  std::vector<SchedEntity*> pulled;
  if (!tunables_.load_balance || tunables_.ms == 0) return pulled;
  const auto c = static_cast<std::size_t>(cpu);
  const auto& levels = domains_.at(c);
  for (std::size_t l = 0; l < levels.size(); ++l) {
    if (now < next_balance_[c][l]) continue;
    ++counters_.load_balance_runs;
    const LoadBalance r = load_balance(cpu, l, now, pulled);
    // sd->balance_interval: back to sd->min_interval (sd_weight ms) after an
    // imbalance, doubled while balanced up to sd->max_interval (2 x
    // sd_weight), or up to MAX_PINNED_INTERVAL (512 ms) while all pinned.
    Tsc& bi = balance_interval_[c][l];
    const auto min_interval = static_cast<Tsc>(levels[l].size());
    if (r.unbalanced && !r.all_pinned)
      bi = min_interval;
    else if ((r.all_pinned && bi < 512) || bi < 2 * min_interval)
      bi *= 2;
    // get_sd_balance_interval() with the pCPU's state after the pull: x
    // busy_factor (32) when busy, clamped to [1 ms, max_load_balance_interval].
    const Tsc interval = std::clamp<Tsc>(bi * (idle(cpu) ? 1 : 32), 1,
                                         std::max<Tsc>(1, static_cast<Tsc>(cpus()) * 100));
    next_balance_[c][l] = now + interval * tunables_.ms;
  }
  return pulled;
}

// load_balance() of one domain level for `cpu` (v4.16 kernel/sched/fair.c,
// equal-capacity pCPUs: avg_load = load * SCHED_CAPACITY_SCALE / capacity
// reduces to load per pCPU, kept here in units of weight x 1024 / pCPUs).
HostScheduler::LoadBalance HostScheduler::load_balance(int cpu, std::size_t level, Tsc now,
                                                       std::vector<SchedEntity*>& pulled) {
  LoadBalance r;
  const auto& span = domains_[static_cast<std::size_t>(cpu)][level];
  // Every pCPU balances every level: should_we_balance() (only the local
  // group's first idle pCPU, else its first, with LBF_DST_PINNED moving the
  // pull to a sibling the task may run on) is not modelled.
  struct Group {
    std::vector<int> cpus;
    std::uint64_t load = 0;
    unsigned nr = 0;
    std::uint64_t avg = 0;  // load * 1024 / pCPUs
  };
  std::vector<Group> groups;
  std::vector<bool> seen(static_cast<std::size_t>(cpus()), false);
  for (int c : span) {
    if (seen[static_cast<std::size_t>(c)]) continue;
    Group g;
    g.cpus = level == 0 ? std::vector<int>{c} : domains_[static_cast<std::size_t>(c)][level - 1];
    for (int x : g.cpus) {
      seen[static_cast<std::size_t>(x)] = true;
      g.load += rq(x).load();
      g.nr += nr_running(x);
    }
    g.avg = g.load * kNice0Load / g.cpus.size();
    groups.push_back(std::move(g));
  }
  const Group* local = nullptr;
  const Group* busiest = nullptr;
  std::uint64_t total = 0;
  for (const auto& g : groups) {
    total += g.load;
    if (std::find(g.cpus.begin(), g.cpus.end(), cpu) != g.cpus.end()) {
      local = &g;
      continue;
    }
    // update_sd_pick_busiest(): an overloaded group (more tasks than pCPUs)
    // first, then the highest avg_load.
    const bool over = g.nr > g.cpus.size();
    const bool best_over = (busiest != nullptr) && busiest->nr > busiest->cpus.size();
    if (g.nr == 0) continue;
    if (!busiest || (over && !best_over) || (over == best_over && g.avg > busiest->avg))
      busiest = &g;
  }
  if (local == nullptr || busiest == nullptr) return r;
  const std::uint64_t sds_avg = total * kNice0Load / span.size();
  // find_busiest_group(): the balanced cases.
  if (local->avg >= busiest->avg || local->avg >= sds_avg) return r;
  const std::uint64_t pct = level == 0 && topo_.threads_per_core() > 1    ? 110
                            : span == llc_[static_cast<std::size_t>(cpu)] ? 117
                                                                          : 125;
  if (!idle(cpu) && 100 * busiest->avg <= pct * local->avg) return r;
  // calculate_imbalance() (in load units: weight).
  const std::uint64_t lpt = busiest->load / busiest->nr;  // load_per_task
  std::uint64_t imbalance = 0;
  if (busiest->avg > sds_avg) {
    std::uint64_t max_pull = busiest->avg - sds_avg;
    // load_above_capacity: "if there aren't any idle cpus, avoid creating some".
    if (busiest->nr > busiest->cpus.size() && local->nr > local->cpus.size()) {
      const std::uint64_t above = (busiest->nr - busiest->cpus.size()) * tunables_.nice0 *
                                  kNice0Load / busiest->cpus.size();
      max_pull = std::min(max_pull, above);
    }
    imbalance =
        std::min(max_pull * busiest->cpus.size(), (sds_avg - local->avg) * local->cpus.size()) /
        kNice0Load;
  }
  if (imbalance < lpt) {
    // fix_small_imbalance(): move one task if that leaves the busiest group
    // no lighter than the local one (imbn 2 for equal loads per task).
    const std::uint64_t local_lpt = local->nr ? local->load / local->nr : 0;
    const std::uint64_t imbn = lpt > local_lpt ? 1 : 2;
    const std::uint64_t scaled = lpt * kNice0Load / busiest->cpus.size();
    imbalance = busiest->avg + scaled >= local->avg + scaled * imbn ? lpt : 0;
  }
  if (imbalance == 0) return r;
  // find_busiest_queue(): the heaviest queue of the group with a task to move.
  int src = -1;
  for (int c : busiest->cpus)
    if (nr_running(c) >= 2 && (src < 0 || rq(c).load() > rq(src).load())) src = c;
  if (src < 0) return r;
  r.unbalanced = true;
  // detach_tasks(): least recently run first; not running, allowed here, not
  // cache hot; a task whose half load exceeds what is left is skipped.
  auto left = static_cast<std::int64_t>(imbalance);
  std::vector<SchedEntity*> cands = queued_tasks(src);
  std::sort(cands.begin(), cands.end(), [](const SchedEntity* a, const SchedEntity* b) {
    return std::tie(a->exec_start, a->id) < std::tie(b->exec_start, b->id);
  });
  const Tsc cost = tunables_.migration_cost;
  r.all_pinned = true;
  for (SchedEntity* e : cands) {
    if (left <= 0) break;
    if (!e->allowed.test(cpu)) continue;
    r.all_pinned = false;
    if (cost > 0 && e->pcount > 0 && now < e->exec_start + cost) continue;  // task_hot()
    const auto h_load = static_cast<std::int64_t>(task_h_load(*e));
    if (h_load / 2 > left) continue;
    dequeue_task(src, *e, now, kDequeueNone);
    enqueue(cpu, *e, now, kEnqueueNone);
    ++counters_.load_balance_pulls;
    pulled.push_back(e);
    left -= h_load;
    ++r.moved;
  }
  return r;
}

// With groups the earliest of the levels' (each level's check_preempt_tick()).
Tsc HostScheduler::slice_left(int cpu, Tsc now) const {
  if (!tunables_.groups) return rq(cpu).slice_left(now);
  const SchedEntity* t = curr(cpu);
  if (t == nullptr) return kTscNever;
  Tsc left = t->cfs_rq->slice_left(now);
  if (t->parent != nullptr) left = std::min(left, rq(cpu).slice_left(now));
  return left;
}

void HostScheduler::update_curr(int cpu, Tsc now) {
  if (tunables_.groups)
    if (SchedEntity* t = curr(cpu); t != nullptr && t->parent != nullptr)
      t->cfs_rq->update_curr(now);
  rq_mut(cpu).update_curr(now);
}

}  // namespace kvmsim
