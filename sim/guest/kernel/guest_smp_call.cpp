// smp_call_function*() and their handler (kernel/smp.c of v4.17-v5.7) on
// x2APIC in physical mode (arch/x86/kernel/apic/x2apic_phys.c).
#include "sim/guest/kernel/guest_smp_call.h"

#include <stdexcept>
#include <string>

#include "sim/guest/kernel/guest_kernel.h"
#include "sim/guest/kernel/guest_smp.h"

namespace kvmsim {

GuestSmpCalls::~GuestSmpCalls() = default;

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
class GuestSmpCalls::CrossCall : public KernelWork {
 public:
  CrossCall(SmpCall call, GuestKernel& k) : call_(std::move(call)) {
    for (const int c : call_.cpus) {
      if (c == k.cpu()) {
        run_local_ = call_.run_local;
        continue;
      }
      if (c < 0 || c >= k.smp()->nr_cpus())
        throw std::logic_error("smp_call_function: no CPU " + std::to_string(c));
      targets_.push_back(c);
    }
    single_ = call_.single || targets_.size() == 1;
    if (single_ && call_.wait) stack_csd_ = std::make_unique<Csd>();  // csd_stack
  }

  std::optional<GuestStep> next(GuestKernel& k, Tsc now) override {
    GuestSmpStats& st = k.smp()->stats();
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
        return GuestStep::run(Stage::Guest, k.costs().smp_call_function(k.rng()));
      }
      c->owner = &k;
      c->func = call_.func;
      c->sync = call_.wait;
      c->locked = true;
      csds_.push_back(c);
      auto& q = k.smp()->cpu(cpu).smp_calls_.call_single_queue_;
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
          MSR_X2APIC_ICR,
          GuestSmp::icr(cpu, single_ ? CALL_FUNCTION_SINGLE_VECTOR : CALL_FUNCTION_VECTOR));
    }
    // kvm_smp_send_call_func_ipi() (v5.2, smp_ops.send_call_func_ipi; the
    // single-target send is not hooked): after the IPIs, the first target
    // whose steal-time area says PREEMPTED (vcpu_is_preempted()) gets the
    // rest of this vCPU's time slice: KVM_HC_SCHED_YIELD with its APIC ID.
    if (k.cfg_.pv_sched_yield && !single_ && !yield_checked_ && !ipi_cpus_.empty()) {
      yield_checked_ = true;
      for (const int cpu : ipi_cpus_) {
        if (k.cfg_.vcpu_is_preempted &&
            (k.smp()->cpu(cpu).vcpu().steal_time_preempted() & KVM_VCPU_PREEMPTED)) {
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
        return GuestStep::run(Stage::Guest, k.costs().cacheline_transfer(k.rng()));
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
      auto& own = k.smp_calls_.csd_data_;
      if (!own) own = std::make_unique<Csd>();
      return own.get();
    }
    auto& cfd = k.smp_calls_.cfd_csd_;
    if (cfd.empty()) {
      cfd.resize(static_cast<std::size_t>(k.smp()->nr_cpus()));
      for (auto& c : cfd) c = std::make_unique<Csd>();
    }
    return cfd[static_cast<std::size_t>(cpu)].get();
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
class GuestSmpCalls::FlushCallQueue : public KernelWork {
 public:
  explicit FlushCallQueue(const std::deque<Csd*>& list) {
    for (Csd* c : list) entries_.push_back({c, c->func, c->sync});
  }
  std::optional<GuestStep> next(GuestKernel& k, Tsc now) override {
    while (idx_ < entries_.size()) {
      Entry& e = entries_[idx_];
      if (!func_done_) {
        if (!e.sync) unlock(e.csd);
        func_done_ = true;
        ++k.smp()->stats().csd_run;
        Tsc c = k.costs().call_function_handler(k.rng());
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

void GuestSmpCalls::call(SmpCall call) {
  if (k_.irq_.active()) throw std::logic_error("smp_call_function from interrupt context");
  if (!k_.smp()) throw std::logic_error("smp_call_function: the guest has no SMP view");
  ++k_.smp()->stats().smp_calls;
  k_.queue_work(std::make_unique<CrossCall>(std::move(call), k_));
}

void GuestSmpCalls::flush_queue() {
  std::deque<Csd*> list;
  list.swap(call_single_queue_);  // llist_del_all()
  if (!list.empty()) k_.queue_work(std::make_unique<FlushCallQueue>(std::move(list)));
}

}  // namespace kvmsim
