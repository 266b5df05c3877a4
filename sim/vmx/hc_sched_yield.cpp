// KVM_HC_SCHED_YIELD (v5.2, PV sched yield): a guest that sends a
// CALL_FUNCTION IPI to a preempted vCPU asks the host to yield to it
// (x86.c kvm_sched_yield()).
#include "sim/vmx/hypercall.h"
#include "sim/vmx/kvm_para.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {
namespace {

Tsc kvm_hc_sched_yield(Vcpu& caller, std::uint64_t a1, Tsc at) {
  ++caller.hypercall_stats().sched_yield_calls;
  Vcpu& target = hypercall_target(caller, a1, "KVM_HC_SCHED_YIELD");
  // The target test is vcpu->ready with d73eb57b80b, vcpu->preempted before.
  const auto y =
      caller.directed_yield().kvm_sched_yield(target, caller.directed_yield().config().ready, at);
  if (y.yielded) ++caller.hypercall_stats().sched_yields;
  return y.cost;
}

}  // namespace

KVMSIM_HYPERCALL(KVM_HC_SCHED_YIELD, "KVM_HC_SCHED_YIELD", "cost.handle_sched_yield",
                 kvm_hc_sched_yield);

}  // namespace kvmsim
