// Guest SMP: the VM-wide view (GuestSmp), remote wake-ups with reschedule
// IPIs, and smp_call_function*() with their CALL_FUNCTION(_SINGLE) IPIs and
// handlers, as kernel/sched/core.c and kernel/smp.c of v4.17-v5.7 do them
// on x2APIC in physical mode (arch/x86/kernel/apic/x2apic_phys.c).
#include "sim/guest/kernel/guest_smp.h"

#include <stdexcept>

#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

GuestSmpStats& GuestSmpStats::operator+=(const GuestSmpStats& o) {
  resched_sent += o.resched_sent;
  resched_handled += o.resched_handled;
  call_single_sent += o.call_single_sent;
  call_single_handled += o.call_single_handled;
  call_many_sent += o.call_many_sent;
  call_many_handled += o.call_many_handled;
  smp_calls += o.smp_calls;
  csd_queued += o.csd_queued;
  csd_run += o.csd_run;
  csd_lock_waits += o.csd_lock_waits;
  remote_wakeups += o.remote_wakeups;
  wakeups_polling += o.wakeups_polling;
  pv_sched_yields += o.pv_sched_yields;
  return *this;
}

bool GuestSmp::idle_cpu(int n) const { return cpu(n).idle(); }

GuestKernel* GuestSmp::select_task_rq(const GuestTask& t, GuestKernel& waker) const {
  if (t.bound_cpu >= 0) return &cpu(t.bound_cpu);
  if (t.on_rq_ && t.cpu_) return t.cpu_;  // ttwu_runnable(): it stays where it is
  GuestKernel* prev = t.cpu_ ? t.cpu_ : &waker;
  // Woken on its own CPU (a timer, a local waker): it stays, as
  // select_task_rq_rt() keeps an RT task and wake_affine() picks this CPU.
  if (prev == &waker || idle_cpu(prev->cpu())) return prev;
  for (int i = 1; i < nr_cpus(); ++i) {
    const int c = (prev->cpu() + i) % nr_cpus();
    if (idle_cpu(c)) return &cpu(c);
  }
  return prev;
}

void GuestSmp::report_stats(const GuestSmpStats& s, Metrics& m) {
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  m["guest.ipi.reschedule.sent"] = d(s.resched_sent);
  m["guest.ipi.reschedule.handled"] = d(s.resched_handled);
  m["guest.ipi.call_function.sent"] = d(s.call_many_sent);
  m["guest.ipi.call_function.handled"] = d(s.call_many_handled);
  m["guest.ipi.call_function_single.sent"] = d(s.call_single_sent);
  m["guest.ipi.call_function_single.handled"] = d(s.call_single_handled);
  m["guest.ipi.sent"] = d(s.resched_sent + s.call_many_sent + s.call_single_sent);
  m["guest.ipi.handled"] = d(s.resched_handled + s.call_many_handled + s.call_single_handled);
  m["guest.smp_call.calls"] = d(s.smp_calls);
  m["guest.smp_call.csd_queued"] = d(s.csd_queued);
  m["guest.smp_call.csd_run"] = d(s.csd_run);
  m["guest.smp_call.csd_lock_waits"] = d(s.csd_lock_waits);
  m["guest.smp_call.pv_sched_yields"] = d(s.pv_sched_yields);
  m["guest.wakeups.remote"] = d(s.remote_wakeups);
  m["guest.wakeups.remote_polling"] = d(s.wakeups_polling);
}

void GuestSmp::report(Metrics& m, const TscClock& /*clk*/) const { report_stats(stats_, m); }

// --- GuestKernel's SMP part ---------------------------------------------------

GuestKernel::~GuestKernel() = default;

namespace {

std::uint64_t icr(int cpu, std::uint8_t vector) {
  // __x2apic_send_IPI_dest() -> __prepare_ICR(0, vector, APIC_DEST_PHYSICAL):
  // fixed delivery, physical destination, no shorthand; ICR2 = the APIC ID.
  return static_cast<std::uint64_t>(GuestSmp::apic_id(cpu)) << 32 | vector;
}

}  // namespace

// try_to_wake_up() of a task that goes to another CPU, on the waker: the
// wake-up's own cost, then the enqueue on the wakee's run queue and
// resched_curr() -> smp_send_reschedule() -> native_smp_send_reschedule()
// -> x2apic_send_IPI(cpu, RESCHEDULE_VECTOR): one ICR write.
class GuestKernel::RemoteWake : public KernelWork {
 public:
  explicit RemoteWake(GuestTask* t) : t_(t) {}
  std::optional<GuestStep> next(GuestKernel& k, Tsc /*now*/) override {
    switch (phase_++) {
      case 0:
        return GuestStep::run(Stage::GuestSyscall, k.costs_.ttwu_remote(k.rng_));
      case 1: {
        GuestKernel* target = k.smp_->select_task_rq(*t_, k);
        if (target == &k) {
          k.wake_up_local(t_);
          return std::nullopt;
        }
        ++k.smp_->stats().remote_wakeups;
        if (!target->ttwu_remote_enqueue(t_)) return std::nullopt;
        ++k.smp_->stats().resched_sent;
        return GuestStep::wrmsr(MSR_X2APIC_ICR, icr(target->cpu(), RESCHEDULE_VECTOR));
      }
      default:
        return std::nullopt;
    }
  }

 private:
  GuestTask* t_;
  int phase_ = 0;
};

void GuestKernel::queue_remote_wake(GuestTask* t) { queue_work(std::make_unique<RemoteWake>(t)); }

// smp_call_function_many_cond() (v4.17+, with cpumask_ipi) and
// generic_exec_single(), on the initiator with preemption off:
//   for each target: csd_lock(csd) (spin while a previous call still holds
//     it), csd->func = func, llist_add() to the target's call_single_queue;
//     a target whose queue was empty needs an IPI (cpumask_ipi);
//   arch_send_call_function_single_ipi(cpu) for one target, else
//     arch_send_call_function_ipi_mask(): x2APIC physical mode writes the
//     ICR once per target (__x2apic_send_IPI_mask);
//   SCF_RUN_LOCAL: func() here with interrupts off;
//   wait: csd_lock_wait() on every target's csd in turn.
class GuestKernel::CrossCall : public KernelWork {
 public:
  CrossCall(SmpCall call, GuestKernel& k) : call_(std::move(call)) {
    for (const int c : call_.cpus) {
      if (c == k.cpu()) {
        run_local_ = call_.run_local;
        continue;
      }
      if (c < 0 || c >= k.smp_->nr_cpus())
        throw std::logic_error("smp_call_function: no CPU " + std::to_string(c));
      targets_.push_back(c);
    }
    single_ = call_.single || targets_.size() == 1;
    if (single_ && call_.wait) stack_csd_ = std::make_unique<Csd>();  // csd_stack
  }

  std::optional<GuestStep> next(GuestKernel& k, Tsc now) override {
    GuestSmpStats& st = k.smp_->stats();
    while (idx_ < targets_.size()) {  // queue one csd per target
      const int cpu = targets_[idx_];
      Csd* c = csd_for(k, cpu);
      if (!setup_done_) {
        if (c->locked) {  // csd_lock(): csd_lock_wait() first
          if (!lock_wait_counted_) ++st.csd_lock_waits;
          lock_wait_counted_ = true;
          return GuestStep::spin(Stage::Guest);
        }
        setup_done_ = true;
        return GuestStep::run(Stage::Guest, k.costs_.smp_call_function(k.rng_));
      }
      c->owner = &k;
      c->func = call_.func;
      c->sync = call_.wait;
      c->locked = true;
      csds_.push_back(c);
      auto& q = k.smp_->cpu(cpu).call_single_queue_;
      if (q.empty()) ipi_cpus_.push_back(cpu);  // llist_add() returned true
      q.push_back(c);
      ++st.csd_queued;
      ++idx_;
      setup_done_ = lock_wait_counted_ = false;
    }
    if (sent_ < ipi_cpus_.size()) {
      const int cpu = ipi_cpus_[sent_++];
      ++(single_ ? st.call_single_sent : st.call_many_sent);
      return GuestStep::wrmsr(
          MSR_X2APIC_ICR, icr(cpu, single_ ? CALL_FUNCTION_SINGLE_VECTOR : CALL_FUNCTION_VECTOR));
    }
    // kvm_smp_send_call_func_ipi() (v5.2, smp_ops.send_call_func_ipi; the
    // single-target send is not hooked): after the IPIs, the first target
    // whose steal-time area says PREEMPTED (vcpu_is_preempted()) gets the
    // rest of this vCPU's time slice: KVM_HC_SCHED_YIELD with its APIC ID.
    if (k.cfg_.pv_sched_yield && !single_ && !yield_checked_ && !ipi_cpus_.empty()) {
      yield_checked_ = true;
      for (const int cpu : ipi_cpus_) {
        if (k.smp_->cpu(cpu).vcpu().steal_time_preempted() & KVM_VCPU_PREEMPTED) {
          ++st.pv_sched_yields;
          return GuestStep::vmcall(KVM_HC_SCHED_YIELD, GuestSmp::apic_id(cpu));
        }
      }
    }
    if (run_local_) {  // func(info) on this CPU, local_irq_save()
      run_local_ = false;
      local_ran_ = true;
      const Tsc c = call_.func.cost ? call_.func.cost(k, now) : 0;
      if (c) return GuestStep::run(Stage::Guest, c);
    }
    if (local_ran_) {
      local_ran_ = false;
      if (call_.func.ran) call_.func.ran(k, now);
    }
    if (call_.wait) {
      // csd_lock_wait() on each csd in turn (for_each_cpu in
      // smp_call_function_many()): those already passed stay unlocked.
      while (wait_idx_ < csds_.size() && !csds_[wait_idx_]->locked) ++wait_idx_;
      if (wait_idx_ < csds_.size()) return GuestStep::spin(Stage::Guest);
      if (!csds_.empty() && !seen_) {
        seen_ = true;  // the last csd_unlock() store reaches this CPU
        return GuestStep::run(Stage::Guest, k.costs_.cacheline_transfer(k.rng_));
      }
    }
    if (call_.done) {
      auto done = std::move(call_.done);
      call_.done = nullptr;
      done(k, now);
    }
    return std::nullopt;
  }

 private:
  Csd* csd_for(GuestKernel& k, int cpu) {
    if (single_) {
      if (stack_csd_) return stack_csd_.get();
      if (!k.csd_data_) k.csd_data_ = std::make_unique<Csd>();
      return k.csd_data_.get();
    }
    if (k.cfd_csd_.empty()) {
      k.cfd_csd_.resize(static_cast<std::size_t>(k.smp_->nr_cpus()));
      for (auto& c : k.cfd_csd_) c = std::make_unique<Csd>();
    }
    return k.cfd_csd_[static_cast<std::size_t>(cpu)].get();
  }

  SmpCall call_;
  std::vector<int> targets_, ipi_cpus_;
  std::vector<Csd*> csds_;
  std::unique_ptr<Csd> stack_csd_;
  std::size_t idx_ = 0, sent_ = 0, wait_idx_ = 0;
  bool single_ = false, run_local_ = false, local_ran_ = false;
  bool setup_done_ = false, lock_wait_counted_ = false, seen_ = false;
  bool yield_checked_ = false;
};

// The target's CALL_FUNCTION(_SINGLE)_VECTOR handler:
// generic_smp_call_function_single_interrupt() -> flush_smp_call_function_queue():
// llist_del_all() of this CPU's queue, then in order, for each csd: a
// synchronous one runs func and then csd_unlock(); an asynchronous one is
// unlocked first (func and info copied) so its owner may reuse it.
class GuestKernel::FlushCallQueue : public KernelWork {
 public:
  explicit FlushCallQueue(std::deque<Csd*> list) {
    for (Csd* c : list) entries_.push_back({c, c->func, c->sync});
  }
  std::optional<GuestStep> next(GuestKernel& k, Tsc now) override {
    while (idx_ < entries_.size()) {
      Entry& e = entries_[idx_];
      if (!func_done_) {
        if (!e.sync) unlock(e.csd);
        func_done_ = true;
        ++k.smp_->stats().csd_run;
        Tsc c = k.costs_.call_function_handler(k.rng_);
        if (e.func.cost) c += e.func.cost(k, now);
        return GuestStep::run(Stage::Guest, c);
      }
      if (e.func.ran) e.func.ran(k, now);
      if (e.sync) unlock(e.csd);
      func_done_ = false;
      ++idx_;
    }
    return std::nullopt;
  }

 private:
  struct Entry {
    Csd* csd;
    SmpCallFunc func;
    bool sync;
  };
  // csd_unlock(): smp_store_release(&csd->flags, 0), which the owner's
  // csd_lock_wait() (or csd_lock()) spins on.
  static void unlock(Csd* c) {
    c->locked = false;
    c->owner->remote_store();
  }
  std::vector<Entry> entries_;
  std::size_t idx_ = 0;
  bool func_done_ = false;
};

// The handler bodies of the SMP vectors (irq entry and irq_exit() are the
// common ones of irq_step()).
GuestStep GuestKernel::irq_handler_ipi(Tsc now) {
  if (!smp_) return irq_step(now);
  GuestSmpStats& st = smp_->stats();
  switch (irq_vector_) {
    case RESCHEDULE_VECTOR:
      // smp_reschedule_interrupt() -> scheduler_ipi(): the waker already set
      // need_resched; the reschedule happens on the way out (irq_exit,
      // then schedule() from the idle loop or the interrupted task).
      ++st.resched_handled;
      return GuestStep::run(Stage::Guest, costs_.resched_ipi_handler(rng_));
    case CALL_FUNCTION_VECTOR:
    case CALL_FUNCTION_SINGLE_VECTOR: {
      ++(irq_vector_ == CALL_FUNCTION_VECTOR ? st.call_many_handled : st.call_single_handled);
      std::deque<Csd*> list;
      list.swap(call_single_queue_);  // llist_del_all()
      if (!list.empty()) queue_work(std::make_unique<FlushCallQueue>(std::move(list)));
      return irq_step(now);
    }
    default:
      return irq_step(now);
  }
}

void GuestKernel::smp_call_function(SmpCall call) {
  if (in_irq_) throw std::logic_error("smp_call_function from interrupt context");
  if (!smp_) throw std::logic_error("smp_call_function: the guest has no SMP view");
  ++smp_->stats().smp_calls;
  queue_work(std::make_unique<CrossCall>(std::move(call), *this));
}

void GuestKernel::smp_call_function_single(int cpu, SmpCallFunc f, bool wait,
                                           std::function<void(GuestKernel&, Tsc)> done) {
  SmpCall c;
  c.cpus = {cpu};
  c.func = std::move(f);
  c.wait = wait;
  c.single = true;
  c.run_local = true;  // smp_call_function_single() to this CPU runs func here
  c.done = std::move(done);
  smp_call_function(std::move(c));
}

void GuestKernel::smp_call_function_many(std::vector<int> cpus, SmpCallFunc f, bool wait,
                                         std::function<void(GuestKernel&, Tsc)> done) {
  SmpCall c;
  c.cpus = std::move(cpus);
  c.func = std::move(f);
  c.wait = wait;
  c.done = std::move(done);
  smp_call_function(std::move(c));
}

}  // namespace kvmsim
