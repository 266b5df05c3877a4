// Directed yield (virt/kvm/kvm_main.c, x86.c): a vCPU spinning on a lock
// (a PAUSE_INSTRUCTION exit, ple.h) gives its pCPU to a vCPU of the same VM
// that was preempted, so the lock holder can run: kvm_vcpu_on_spin() with
// kvm_vcpu_eligible_for_directed_yield() and kvm_vcpu_yield_to() ->
// yield_to(); and the hypercall side, kvm_sched_yield() (KVM_HC_SCHED_YIELD,
// and after KVM_HC_KICK_CPU since 266e85a5ec9).
#pragma once

#include <cstdint>

#include "sim/core/counters.h"
#include "sim/core/dist.h"
#include "sim/core/time.h"

namespace kvmsim {

class ParamSet;
class Vcpu;

struct DirectedYieldConfig {
  // d73eb57b80b (v5.3, "KVM: Boost vCPUs that are delivering interrupts"):
  // kvm_vcpu_on_spin() takes vcpu->ready candidates, set when the thread is
  // preempted or woken from kvm_vcpu_block() (kvm_vcpu_wake_up()); the
  // kernel-mode test applies only to the preempted ones. false: v4.16's
  // vcpu->preempted candidates in kernel mode only.
  bool ready = false;
  // yield_to() up to its schedule(): double_rq_lock() of both run queues,
  // yield_to_task_fair(), resched_curr() of a remote queue (cost.host.yield_to).
  Sampler yield_to_cost;
  static DirectedYieldConfig from(const ParamSet& p, const TscClock& clk);
};

struct DirectedYieldStats {
  std::uint64_t directed_yields = 0;            // kvm_vcpu_on_spin() yielded to a vCPU
  std::uint64_t directed_yields_remote = 0;     // ... queued on another pCPU (resched_curr IPI)
  std::uint64_t directed_yield_ipis_saved = 0;  // ... whose pCPU had need_resched already: no IPI
  std::uint64_t yield_to_failed = 0;            // yield_to() returned 0: the candidate was running
  std::uint64_t yield_to_esrch = 0;  // yield_to() returned -ESRCH: both queues had one task
  // Candidates kvm_vcpu_eligible_for_directed_yield() passed over (they were
  // inside kvm_vcpu_on_spin() themselves and their dy_eligible was false).
  std::uint64_t dy_ineligible = 0;
  // Directed yields to a vCPU that was woken from a halt (vcpu->ready, not
  // preempted): only with kvm.directed_yield_ready (d73eb57b80b).
  std::uint64_t directed_yields_woken = 0;
  using Fields =
      CounterFields<DirectedYieldStats, &DirectedYieldStats::directed_yields,
                    &DirectedYieldStats::directed_yields_remote,
                    &DirectedYieldStats::directed_yield_ipis_saved,
                    &DirectedYieldStats::yield_to_failed, &DirectedYieldStats::yield_to_esrch,
                    &DirectedYieldStats::dy_ineligible, &DirectedYieldStats::directed_yields_woken>;
};

class DirectedYield {
 public:
  DirectedYield(Vcpu& vcpu, const DirectedYieldConfig& cfg) : v_(vcpu), cfg_(cfg) {}

  // kvm_vcpu_on_spin(me, yield_to_kernel_mode = true); returns the cycles
  // its yield_to() calls took (the scan itself is cost.handle_pause).
  Tsc kvm_vcpu_on_spin(Tsc now);
  // kvm_sched_yield(kvm, dest_id): yield to `target` if it may use the pCPU:
  // vcpu->ready (`ready`), else vcpu->preempted.
  struct SchedYield {
    bool yielded = false;  // this thread yielded
    Tsc cost = 0;          // yield_to()'s cycles
  };
  SchedYield kvm_sched_yield(Vcpu& target, bool ready, Tsc now);
  // The thread runs again (kvm_sched_in): a vCPU that yielded in
  // kvm_vcpu_on_spin() returns from yield_to()'s schedule() and leaves it.
  void sched_in() {
    if (in_spin_loop_) {
      in_spin_loop_ = false;  // kvm_vcpu_set_in_spin_loop(me, false)
      dy_eligible_ = false;   // kvm_vcpu_set_dy_eligible(me, false) for its next spin loop
    }
  }
  [[nodiscard]] const DirectedYieldConfig& config() const { return cfg_; }
  [[nodiscard]] const DirectedYieldStats& stats() const { return stats_; }

 private:
  struct YieldTo {
    int yielded = 0;         // yield_to()'s result (> 0: yielded)
    bool remote = false;     // the target queues on another pCPU
    bool ipi_saved = false;  // ... whose need_resched was set already: no IPI
    Tsc cost = 0;            // cost.host.yield_to when the run queues were locked
  };
  YieldTo kvm_vcpu_yield_to(Vcpu& target, Tsc now);
  // kvm_vcpu_eligible_for_directed_yield(): may toggle dy_eligible_.
  bool eligible_for_directed_yield();

  Vcpu& v_;
  const DirectedYieldConfig& cfg_;  // the VM's (VmConfig)
  // vcpu->spin_loop (CONFIG_HAVE_KVM_CPU_RELAX_INTERCEPT): in_spin_loop from
  // handle_pause() until this vCPU leaves kvm_vcpu_on_spin(), which for a
  // vCPU that yielded is when it runs again; dy_eligible toggles each time
  // another spinner considers it meanwhile.
  bool in_spin_loop_ = false;
  bool dy_eligible_ = false;
  DirectedYieldStats stats_;
};

}  // namespace kvmsim
