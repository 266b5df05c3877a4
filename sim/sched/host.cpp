#include "sim/sched/host.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace kvmsim {

PcpuCosts pcpu_costs(const ParamSet& p, const TscClock& clk) {
  const auto S = [&](const char* key) { return p.dist(key).bind(clk); };
  PcpuCosts pc;
  pc.irq_entry = S("cost.host.irq_entry");
  pc.irq_exit = S("cost.host.irq_exit");
  pc.hrtimer_interrupt = S("cost.host.hrtimer_interrupt");
  pc.context_switch = S("cost.host.context_switch");
  pc.ipi_latency = S("cost.host.ipi_latency");
  pc.reschedule_ipi = S("cost.host.reschedule_ipi");
  pc.posted_intr_ipi = S("cost.host.posted_intr_ipi");
  pc.noise_irq_rate_hz = p.d("noise.irq.rate_hz");
  pc.noise_irq_duration = S("noise.irq.duration");
  pc.softirq_rate_hz = p.d("noise.softirq.rate_hz");
  pc.softirq_duration = S("noise.softirq.duration");
  pc.cpuidle = cpuidle_config(p, clk);
  pc.nohz_idle = p.b("host.nohz_idle");
  return pc;
}

Host::Host(const ParamSet& p, SimContext& ctx)
    : ctx_(ctx),
      sched_signals_(ctx.signals.get<SchedSignals>()),
      topo_(static_cast<int>(p.i("platform.sockets")),
            static_cast<int>(p.i("platform.cores_per_socket")),
            static_cast<int>(p.i("platform.threads_per_core"))),
      sched_(std::make_unique<HostScheduler>(
          topo_, HostScheduler::tunables_from(p, ctx.clock, topo_.cpus()))),
      costs_(pcpu_costs(p, ctx.clock)),
      tick_hz_(static_cast<std::size_t>(topo_.cpus())),
      tick_cost_(p.dist("cost.host.tick").bind(ctx.clock)) {
  by_id_.resize(static_cast<std::size_t>(topo_.cpus()));
  for (int c = 0; c < topo_.cpus(); ++c) tick_hz_[static_cast<std::size_t>(c)] = tick_hz_of(p, c);
  sched_->on_migrate = [this](const SchedEntity& se, int from, int to, Tsc t) {
    if (const HostThread* th = thread_of(se))
      sched_signals_.sched_migrate_task(th->comm(), th->pid(), 120 + se.nice, from, to, t);
  };
}

Host::~Host() = default;

// The tick a pCPU runs: host.tick_hz when the scenario sets it, else by the
// pCPU's set-up. tick_nohz_full_cpu() pCPUs (nohz_full_cpus()) keep the
// 1 Hz residual tick of tick_sched_do_timer()/tick_nohz_stop_tick() while one
// task runs; a stock pCPU ticks at CONFIG_HZ whenever it is not idle.
std::int64_t Host::tick_hz_of(const ParamSet& p, int cpu) {
  const std::int64_t set = p.i("host.tick_hz");
  if (set >= 0) return set;
  return is_nohz_full(p, cpu) ? 1 : p.i("host.hz");
}

// isolcpus= alone keeps the tick (CONFIG_HZ while a thread runs); only
// nohz_full= makes a pCPU tick_nohz_full_cpu().
std::vector<std::int64_t> Host::nohz_full_cpus(const ParamSet& p) {
  if (p.s("host.isolation") != "nohz_full") return {};
  return p.ints("host.isolcpus");
}

bool Host::is_nohz_full(const ParamSet& p, int cpu) {
  const auto iso = nohz_full_cpus(p);
  return std::find(iso.begin(), iso.end(), cpu) != iso.end();
}

void Host::add_timer(int cpu, std::unique_ptr<HostHrtimer> t, Tsc first) {
  pcpu(cpu).hrtimers().start(t.get(), first);
  timers_.push_back(std::move(t));
}

Pcpu& Host::pcpu(int cpu) {
  auto& slot = by_id_.at(static_cast<std::size_t>(cpu));
  if (slot) return *slot;
  slot = std::make_unique<Pcpu>(fmt::format("pcpu{}", cpu).c_str(), cpu, ctx_, costs_, *this);
  order_.push_back(slot.get());
  if (const std::int64_t hz = tick_hz_[static_cast<std::size_t>(cpu)]; hz > 0) {
    const Tsc period = ctx_.clock.tsc_khz * 1000 / static_cast<Tsc>(hz);
    auto tick = std::make_unique<HostTick>(period, tick_cost_);
    // The tick's phase against the workload's timers is arbitrary on a real
    // host; a fixed phase would hit the same wake-up every time.
    Rng phase = ctx_.stream(fmt::format("pcpu{}.tick", cpu));
    slot->hrtimers().start(tick.get(),
                           static_cast<Tsc>(phase.uniform() * static_cast<double>(period)));
    slot->set_tick(tick.get(), period);
    timers_.push_back(std::move(tick));
  }
  return *slot;
}

void Host::add_thread(HostThread* t) {
  const auto [it, added] = threads_.emplace(t->se().id, t);
  if (!added)
    throw std::logic_error(fmt::format("host thread {}-{}: pid taken by {}", t->comm(), t->se().id,
                                       it->second->comm()));
  t->se().owner = t;  // thread_of() without a lookup: it runs at every pick
}

HostThread* Host::thread_of(const SchedEntity& se) {
  return static_cast<HostThread*>(se.owner);  // set by add_thread()
}

void Host::finalize() {
  std::vector<bool> need(static_cast<std::size_t>(topo_.cpus()), false);
  for (const auto& [id, t] : threads_)
    for (int c = 0; c < topo_.cpus(); ++c)
      if (t->se().allowed.test(c)) need[static_cast<std::size_t>(c)] = true;
  for (int c = 0; c < topo_.cpus(); ++c)
    if (need[static_cast<std::size_t>(c)]) pcpu(c);
}

void Host::start_thread(HostThread* t, int hint, Tsc now) {
  SchedEntity& se = t->se();
  int best = -1;
  if (hint >= 0 && se.allowed.test(hint) && by_id_[static_cast<std::size_t>(hint)] &&
      sched_->idle(hint))
    best = hint;
  for (int c = 0; best < 0 && c < topo_.cpus(); ++c) {
    if (!se.allowed.test(c) || !by_id_[static_cast<std::size_t>(c)]) continue;
    best = c;
    for (int d = c + 1; d < topo_.cpus(); ++d)
      if (se.allowed.test(d) && by_id_[static_cast<std::size_t>(d)] &&
          sched_->rq(d).load() < sched_->rq(best).load())
        best = d;
  }
  if (best < 0) throw std::logic_error("start_thread: no pCPU allowed for " + t->comm());
  sched_->enqueue(best, se, now, kEnqueueNone);
  check_preempt(best, se, now, nullptr, 0);
}

// check_preempt_curr() -> resched_curr(): nothing when the current task
// already has TIF_NEED_RESCHED (test_tsk_need_resched()), so no second
// reschedule IPI; else the local flag, or the IPI from `waker`.
void Host::check_preempt(int cpu, const SchedEntity& se, Tsc now, Pcpu* waker, Tsc ipi_at) {
  const bool pending = sched_->need_resched(cpu);
  if (sched_->wakeup_preempts(cpu, se, now) && !pending) pcpu(cpu).resched_curr(now, waker, ipi_at);
}

bool Host::wake_up(HostThread* t, int waker_cpu, Tsc now, Tsc ipi_at) {
  SchedEntity& se = t->se();
  if (se.on_rq) return false;  // TASK_RUNNING already
  // try_to_wake_up(): trace_sched_waking() once the task's state matched,
  // before select_task_rq() (task_cpu() is still the previous CPU).
  if (sched_signals_.sched_waking.connected()) {
    // task_cpu() of a thread never enqueued yet: where kthread_bind() (or
    // the fork) put it, its first allowed pCPU here.
    int task_cpu = se.cpu;
    for (int c = 0; task_cpu < 0 && c < topo_.cpus(); ++c)
      if (se.allowed.test(c)) task_cpu = c;
    sched_signals_.sched_waking(waker_cpu, t->comm(), t->pid(), 120 + se.nice, task_cpu, now);
  }
  const int cpu = sched_->select_task_rq(se, se.cpu, waker_cpu);
  sched_->enqueue(cpu, se, now, kEnqueueWakeup);
  if (sched_signals_.sched_wakeup.connected())
    sched_signals_.sched_wakeup(waker_cpu, t->comm(), t->pid(), 120 + se.nice, cpu, now);
  check_preempt(cpu, se, now, waker_cpu >= 0 ? &pcpu(waker_cpu) : nullptr, ipi_at);
  return true;
}

void Host::account_to(Tsc now) {
  for (auto* c : order_) sched_->update_curr(c->id(), now);
}

void Host::report(Metrics& m, const TscClock& clk) const {
  std::uint64_t irqs = 0;
  std::uint64_t noise = 0;
  std::uint64_t softirqs = 0;
  std::uint64_t resched = 0;
  std::uint64_t ipis = 0;
  const Tsc end = now_tsc();
  for (const auto* c : order_) {
    irqs += c->irqs().stats().irqs;
    noise += c->irqs().stats().noise_irqs;
    softirqs += c->irqs().stats().softirq_runs;
    resched += c->irqs().stats().resched_ipis;
    ipis += c->irqs().stats().ipis;
    m[fmt::format("host.cpu.{}.poll_s", c->id())] =
        clk.to_s(static_cast<double>(c->stats().poll_cycles));
    // Time not in the idle task (threads running, polling included).
    m[fmt::format("host.cpu.{}.busy_frac", c->id())] =
        end ? static_cast<double>(c->busy_cycles(end)) / static_cast<double>(end) : 0.0;
    // C0 residency as turbostat's %C0 (MPERF / TSC): the core executes. It
    // adds to busy_frac the idle task's own work (host interrupts on the idle
    // pCPU, idle entry and governor); C-state residency and the exit
    // latency are not C0. Without host.cpuidle the idle loop's wait is the
    // only non-C0 time.
    m[fmt::format("host.cpu.{}.c0_frac", c->id())] =
        end ? static_cast<double>(c->c0_cycles(end)) / static_cast<double>(end) : 0.0;
    if (c->cpuidle().enabled) {
      const auto& st = c->cpuidle().states;
      const CpuidleStats& cs = c->stats().cpuidle;
      for (std::size_t i = 0; i < st.size() && i < cs.usage.size(); ++i) {
        m[fmt::format("host.cpu.{}.cpuidle.{}.usage", c->id(), st[i].name)] =
            static_cast<double>(cs.usage[i]);
        m[fmt::format("host.cpu.{}.cpuidle.{}.time_s", c->id(), st[i].name)] =
            clk.to_s(static_cast<double>(cs.residency[i]));
      }
      m[fmt::format("host.cpu.{}.cpuidle.exit_s", c->id())] =
          clk.to_s(static_cast<double>(cs.exit_cycles));
      m[fmt::format("host.cpu.{}.cpuidle.refill_s", c->id())] =
          clk.to_s(static_cast<double>(cs.refill_cycles));
      m[fmt::format("host.cpu.{}.cpuidle.leave_mm", c->id())] = static_cast<double>(cs.leave_mm);
    }
  }
  m["host.irqs"] = static_cast<double>(irqs);
  m["host.noise_irqs"] = static_cast<double>(noise);
  m["host.softirq_runs"] = static_cast<double>(softirqs);
  m["host.resched_ipis"] = static_cast<double>(resched);
  m["host.ipis"] = static_cast<double>(ipis);  // reschedule + posted-interrupt notifications
  const SchedCounters& sc = sched_->counters();
  m["host.sched.context_switches"] = static_cast<double>(sc.context_switches);
  m["host.sched.migrations"] = static_cast<double>(sc.migrations);
  m["host.sched.wakeups"] = static_cast<double>(sc.wakeups);
  m["host.sched.wakeup_preemptions"] = static_cast<double>(sc.wakeup_preemptions);
  m["host.sched.tick_preemptions"] = static_cast<double>(sc.tick_preemptions);
  m["host.sched.idle_balance_pulls"] = static_cast<double>(sc.idle_balance_pulls);
  if (sched_->tunables().load_balance) {
    m["host.sched.load_balance_runs"] = static_cast<double>(sc.load_balance_runs);
    m["host.sched.load_balance_pulls"] = static_cast<double>(sc.load_balance_pulls);
  }
  if (sc.next_buddy_picks || sc.next_buddy_refused) {  // yield_to, wake-up preemption
    m["host.sched.next_buddy_picks"] = static_cast<double>(sc.next_buddy_picks);
    m["host.sched.next_buddy_refused"] = static_cast<double>(sc.next_buddy_refused);
  }
  if (sc.yield_switches || sc.yield_repicks) {  // schedule() after a yield (skip buddy)
    m["host.sched.yield_switches"] = static_cast<double>(sc.yield_switches);
    m["host.sched.yield_repicks"] = static_cast<double>(sc.yield_repicks);
  }
}

}  // namespace kvmsim
