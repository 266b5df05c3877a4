// KVM_HC_KICK_CPU (x86.c kvm_pv_kick_cpu_op()): the PV qspinlock's pv_kick()
// wakes a waiter halted in kvm_wait(): kvm_irq_delivery_to_apic() with
// APIC_DM_REMRD -> __apic_accept_irq(): pv_unhalted = 1, KVM_REQ_EVENT,
// kvm_vcpu_kick(). A vCPU that has not halted yet finds pv_unhalted at its
// halt's kvm_vcpu_check_block() and does not sleep.
#include "sim/vmx/hypercall.h"
#include "sim/vmx/kvm_para.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {
namespace {

Tsc kvm_pv_kick_cpu_op(Vcpu& target, Vcpu& sender, Tsc at) {
  // A blocked thread that is asleep, or was woken in vain (IF clear) and is
  // not running yet, is still in this halt, which the kick ends.
  if (target.halt().sleeping_in_halt()) ++sender.hypercall_stats().pv_kick_wakeups;
  target.halt().set_pv_unhalted();
  ++sender.hypercall_stats().pv_kicks;
  return target.kick_from(sender, at);
}

Tsc kvm_hc_kick_cpu(Vcpu& caller, std::uint64_t a1, Tsc at) {
  Vcpu& target = hypercall_target(caller, a1, "KVM_HC_KICK_CPU");
  const Tsc cost = kvm_pv_kick_cpu_op(target, caller, at);
  // 266e85a5ec9 (v5.3, "Boost queue head vCPU to mitigate lock waiter
  // preemption"): kvm_sched_yield(kvm, a1) after the kick. It came after
  // d73eb57b80b, so its test is always vcpu->ready.
  if (!caller.vmx().hypercall.kick_cpu_yield) return cost;
  const auto y = caller.directed_yield().kvm_sched_yield(target, true, at + cost);
  if (y.yielded) ++caller.hypercall_stats().kick_yields;
  return cost + y.cost;
}

}  // namespace

KVMSIM_HYPERCALL(KVM_HC_KICK_CPU, "KVM_HC_KICK_CPU", "cost.handle_kick_cpu", kvm_hc_kick_cpu);

}  // namespace kvmsim
