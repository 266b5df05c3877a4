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
        return GuestStep::wrmsr(MSR_X2APIC_ICR, GuestSmp::icr(target->cpu(), RESCHEDULE_VECTOR));
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

// The handler bodies of the SMP vectors (entry and irq_exit() are
// GuestIrq's); nullopt when there is no body to run.
std::optional<GuestStep> GuestKernel::ipi_handler(std::uint8_t vector) {
  if (!smp_) return std::nullopt;
  GuestSmpStats& st = smp_->stats();
  switch (vector) {
    case RESCHEDULE_VECTOR:
      // smp_reschedule_interrupt() -> scheduler_ipi(): the waker already set
      // need_resched; the reschedule happens on the way out (irq_exit,
      // then schedule() from the idle loop or the interrupted task).
      ++st.resched_handled;
      return GuestStep::run(Stage::Guest, costs_.resched_ipi_handler(rng_));
    case CALL_FUNCTION_VECTOR:
    case CALL_FUNCTION_SINGLE_VECTOR:
      ++(vector == CALL_FUNCTION_VECTOR ? st.call_many_handled : st.call_single_handled);
      smp_calls_.flush_queue();
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void GuestKernel::smp_call_function(SmpCall call) { smp_calls_.call(std::move(call)); }

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
