#include "sim/vmx/directed_yield.h"

#include "sim/core/params.h"
#include "sim/sched/host.h"
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {

DirectedYieldConfig DirectedYieldConfig::from(const ParamSet& p, const TscClock& clk) {
  DirectedYieldConfig c;
  c.ready = p.b("kvm.directed_yield_ready");
  c.yield_to_cost = p.dist("cost.host.yield_to").bind(clk);
  return c;
}

// kvm_vcpu_on_spin(me, yield_to_kernel_mode = true) of v4.16: two passes
// over the VM's vCPUs starting after kvm->last_boosted_vcpu; a candidate is
// preempted (runnable, not running: vcpu->preempted), not me, was in guest
// kernel mode (kvm_arch_vcpu_in_kernel(): preempted_in_kernel, the CPL at
// the exit before it was put) and passes
// kvm_vcpu_eligible_for_directed_yield(); kvm_vcpu_yield_to() -> yield_to()
// makes it the next buddy of its run queue and yields this thread. A
// candidate yield_to() fails on (running by now: 0) is passed over; only
// -ESRCH (both queues have one runnable task) uses up one of the three
// tries. me->spin_loop.in_spin_loop is set for the scan; when me yielded it
// stays set until me runs again (sched_in), as me sits in yield_to()'s
// schedule() meanwhile.
Tsc DirectedYield::kvm_vcpu_on_spin(Tsc now) {
  VmVcpuList* vm = v_.vm_vcpus();
  if (!vm) return 0;
  Tsc cost = 0;
  in_spin_loop_ = true;  // kvm_vcpu_set_in_spin_loop(me, true)
  auto& list = vm->vcpus;
  const int n = static_cast<int>(list.size());
  const int last = vm->last_boosted_vcpu;
  int tries = 3;
  for (int pass = 0; pass < 2 && tries; ++pass) {
    for (int i = 0; i < n; ++i) {
      if (!pass && i <= last) {
        i = last;
        continue;
      }
      if (pass && i > last) break;
      Vcpu* v = list[static_cast<std::size_t>(i)];
      if (v == &v_) continue;
      if (cfg_.ready) {
        // v5.3: READ_ONCE(vcpu->ready); a woken vCPU is a candidate in any
        // mode, a preempted one only if it was preempted in kernel mode.
        if (!v->ready() || (v->preempted() && !v->in_kernel_at_exit())) continue;
      } else if (!v->preempted() || !v->in_kernel_at_exit()) {
        continue;
      }
      if (!v->directed_yield().eligible_for_directed_yield()) {
        ++stats_.dy_ineligible;
        continue;
      }
      const bool woken = !v->preempted();
      const YieldTo y = kvm_vcpu_yield_to(*v, now + cost);
      cost += y.cost;
      const int yielded = y.yielded;
      if (yielded > 0) {
        vm->last_boosted_vcpu = i;
        ++stats_.directed_yields;
        if (woken) ++stats_.directed_yields_woken;
        if (y.remote) ++stats_.directed_yields_remote;
        if (y.ipi_saved) ++stats_.directed_yield_ipis_saved;
        return cost;  // in_spin_loop stays set until this vCPU runs again
      }
      if (yielded == 0) {
        ++stats_.yield_to_failed;
        continue;
      }
      ++stats_.yield_to_esrch;
      if (--tries == 0) break;
    }
  }
  // No yield: kvm_vcpu_set_in_spin_loop(me, false); dy_eligible(me, false).
  in_spin_loop_ = false;
  dy_eligible_ = false;
  return cost;
}

// kvm_vcpu_yield_to() -> yield_to(task, preempt = 1): `target` becomes the
// next buddy of its run queue (a remote queue is rescheduled) and this
// thread yields its pCPU. Every call but -ESRCH (decided before the locks)
// pays double_rq_lock() and the rest (cost.host.yield_to); the effects are
// applied at its start.
DirectedYield::YieldTo DirectedYield::kvm_vcpu_yield_to(Vcpu& target, Tsc now) {
  Pcpu& me = v_.pcpu();
  HostScheduler& s = me.host().scheduler();
  YieldTo r;
  const int cpu = target.se().cpu;
  // resched_curr(p_rq) sends no IPI when the target pCPU's current task
  // already has TIF_NEED_RESCHED (test_tsk_need_resched(): an earlier
  // yield or wake-up is still on its way there).
  const bool resched_pending = cpu >= 0 && s.need_resched(cpu);
  r.yielded = s.yield_to(me.id(), target.se(), now);
  if (r.yielded != HostScheduler::kYieldToEsrch) r.cost = cfg_.yield_to_cost(v_.rng());
  if (r.yielded > 0 && cpu != me.id()) {
    r.remote = true;
    r.ipi_saved = resched_pending;
    if (!resched_pending) me.host().pcpu(cpu).resched_curr(now, &me, now);
  }
  return r;
}

// kvm_sched_yield(kvm, dest_id) (v5.2 x86.c): yield to the hypercall's
// target if it may use the pCPU: vcpu->ready (`ready`: d73eb57b80b on), else
// vcpu->preempted (v5.2).
DirectedYield::SchedYield DirectedYield::kvm_sched_yield(Vcpu& target, bool ready, Tsc now) {
  const bool candidate = ready ? target.ready() : target.preempted();
  if (&target == &v_ || !candidate) return {};
  const YieldTo y = kvm_vcpu_yield_to(target, now);
  return {y.yielded > 0, y.cost};
}

// kvm_vcpu_eligible_for_directed_yield() (v4.16 virt/kvm/kvm_main.c): a
// vCPU not in a spin loop is eligible; one that is (it yielded in its own
// kvm_vcpu_on_spin() and waits to run) is eligible every other time it is
// considered, so that spinners do not keep boosting each other.
bool DirectedYield::eligible_for_directed_yield() {
  const bool eligible = !in_spin_loop_ || dy_eligible_;
  if (in_spin_loop_) dy_eligible_ = !dy_eligible_;
  return eligible;
}

// Pause-Loop Exiting and directed yield, only in runs with PLE on and PAUSE loops.
static const RegisterVcpuMetrics dy_metrics([](const std::vector<Vcpu*>& vcpus, Metrics& m,
                                               const TscClock& /*clk*/) {
  const PleStats ple = sum_over(vcpus, [](const Vcpu& v) { return v.ple().stats(); });
  if (!ple.pause_exits) return;
  const DirectedYieldStats dy =
      sum_over(vcpus, [](const Vcpu& v) { return v.directed_yield().stats(); });
  m["vcpu.pause_exits"] = static_cast<double>(ple.pause_exits);
  m["vcpu.directed_yields"] = static_cast<double>(dy.directed_yields);
  m["vcpu.directed_yields_remote"] = static_cast<double>(dy.directed_yields_remote);
  m["vcpu.directed_yield_ipis_saved"] = static_cast<double>(dy.directed_yield_ipis_saved);
  m["vcpu.yield_to_failed"] = static_cast<double>(dy.yield_to_failed);
  m["vcpu.yield_to_esrch"] = static_cast<double>(dy.yield_to_esrch);
  m["vcpu.dy_ineligible"] = static_cast<double>(dy.dy_ineligible);
  m["vcpu.directed_yields_woken"] = static_cast<double>(dy.directed_yields_woken);
  m["vcpu.ple_window_grows"] = static_cast<double>(ple.ple_window_grows);
  m["vcpu.ple_window_peak"] = static_cast<double>(ple.ple_window_peak);
});

}  // namespace kvmsim
