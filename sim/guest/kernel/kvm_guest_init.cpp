// The guest kernel's paravirtual choices at boot, from its CPUID
// (guest.cpuid.*, sim/vmx/cpuid.cpp) and its version (guest.kernel), as
// arch/x86/kernel/kvm.c makes them:
//  - kvm_spinlock_init(): PV queued spinlocks only with KVM_FEATURE_PV_UNHALT
//    (and, from v4.17, not with KVM_HINTS_REALTIME); without them the slow
//    path is virt_spin_lock() (guest.virt_spin_lock);
//  - vcpu_is_preempted(): __kvm_vcpu_is_preempted() reads the steal-time
//    `preempted` byte. Until it moved to kvm_guest_init() it was installed in
//    kvm_spinlock_init() (until ~v5.18), after the PV_UNHALT check: a guest without
//    PV_UNHALT kept the native `false`, and mutex/rwsem spin-on-owner never
//    saw a preempted owner;
//  - kvm_guest_init(): kvm_flush_tlb_others() (v4.16) with
//    KVM_FEATURE_PV_TLB_FLUSH and STEAL_TIME (v4.17+: not with
//    KVM_HINTS_REALTIME); kvm_smp_send_call_func_ipi() (v5.3) with
//    KVM_FEATURE_PV_SCHED_YIELD and STEAL_TIME;
//  - steal-time accounting (paravirt_steal_enabled) with STEAL_TIME.
// Each is a derived key: its default is the kernel's choice, an explicit
// false is a guest booted without it (nopvspin, no-steal-acc, a kernel
// without the series), and an explicit true the CPUID does not allow is an
// error.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/model_params.h"

namespace kvmsim {
namespace {

// A switch and why it holds its value: "guest.cpuid.pv_unhalt=false:
// vm.cpu_model=qemu64 has no kvm-pv-unhalt
// (...)" or "guest.cpuid.pv_unhalt=false, set at file.yaml:12".
std::string cpuid_text(const ParamSet& p, const char* key) {
  const std::string origin = p.origin(key);
  if (const auto why = derived_why(origin)) return fmt::format("{}={}: {}", key, p.text(key), *why);
  return fmt::format("{}={}, set at {}", key, p.text(key), origin);
}

bool hint_realtime(const ParamSet& p) {
  // v4.17 (KVM_HINTS_REALTIME; called KVM_HINTS_DEDICATED during the 4.17
  // release candidates): the guest reads the hint only from then on.
  return kernel_at_least(p, "guest.kernel", "4.17") && p.b("guest.cpuid.hint_realtime");
}

DerivedValue pv_spinlock(const ParamSet& p) {
  if (!p.b("guest.cpuid.pv_unhalt"))
    return {"false", "kvm_spinlock_init(): no KVM_FEATURE_PV_UNHALT (" +
                         cpuid_text(p, "guest.cpuid.pv_unhalt") + ")"};
  if (hint_realtime(p))
    return {"false", "kvm_spinlock_init(): KVM_HINTS_REALTIME (guest.cpuid.hint_realtime)"};
  // v4.19: a single possible CPU needs no PV lock.
  if (kernel_at_least(p, "guest.kernel", "4.19") && p.i("vm.vcpus") == 1)
    return {"false", "kvm_spinlock_init(): num_possible_cpus() == 1 (vm.vcpus=1)"};
  return {"true", "kvm_spinlock_init(): KVM_FEATURE_PV_UNHALT"};
}

DerivedValue vcpu_is_preempted(const ParamSet& p) {
  if (!p.b("guest.cpuid.steal_time"))
    return {"false", "no steal-time area (" + cpuid_text(p, "guest.cpuid.steal_time") + ")"};
  // Until ~v5.18 kvm_spinlock_init() installed it, after its own checks;
  // from then kvm_guest_init() does, with STEAL_TIME alone.
  if (!kernel_at_least(p, "guest.kernel", "5.18") && !p.b("guest.pv_spinlock")) {
    // The resolved switch: nopvspin or a kernel without PV spinlocks leaves
    // the native `false` as much as a missing PV_UNHALT does.
    return {"false", "installed by kvm_spinlock_init() only with PV spinlocks (" +
                         cpuid_text(p, "guest.pv_spinlock") + ")"};
  }
  return {"true", "__kvm_vcpu_is_preempted() with KVM_FEATURE_STEAL_TIME"};
}

DerivedValue pv_tlb_flush(const ParamSet& p) {
  if (!kernel_at_least(p, "guest.kernel", "4.16"))
    return {"false",
            fmt::format("guest.kernel={}: kvm_flush_tlb_others() is v4.16", p.s("guest.kernel"))};
  if (!p.b("guest.cpuid.pv_tlb_flush") || !p.b("guest.cpuid.steal_time"))
    return {"false", "kvm_guest_init() needs KVM_FEATURE_PV_TLB_FLUSH and STEAL_TIME (" +
                         cpuid_text(p, "guest.cpuid.pv_tlb_flush") + ", " +
                         cpuid_text(p, "guest.cpuid.steal_time") + ")"};
  if (hint_realtime(p))
    return {"false", "kvm_guest_init(): KVM_HINTS_REALTIME (guest.cpuid.hint_realtime)"};
  return {"true", "kvm_guest_init(): KVM_FEATURE_PV_TLB_FLUSH and STEAL_TIME"};
}

DerivedValue pv_sched_yield(const ParamSet& p) {
  if (!kernel_at_least(p, "guest.kernel", "5.3"))
    return {"false", fmt::format("guest.kernel={}: kvm_smp_send_call_func_ipi() is v5.3",
                                 p.s("guest.kernel"))};
  if (!p.b("guest.cpuid.pv_sched_yield") || !p.b("guest.cpuid.steal_time"))
    return {"false", "kvm_guest_init() needs KVM_FEATURE_PV_SCHED_YIELD and STEAL_TIME (" +
                         cpuid_text(p, "guest.cpuid.pv_sched_yield") + ", " +
                         cpuid_text(p, "guest.cpuid.steal_time") + ")"};
  if (hint_realtime(p))
    return {"false", "kvm_guest_init(): KVM_HINTS_REALTIME (guest.cpuid.hint_realtime)"};
  return {"true", "kvm_guest_init(): KVM_FEATURE_PV_SCHED_YIELD and STEAL_TIME"};
}

// virt_spin_lock_key: the test-and-set fallback of a guest without PV
// spinlocks. v4.17-v5.8: kvm_smp_prepare_cpus() turns it off for
// KVM_HINTS_REALTIME. v5.9+: kvm_spinlock_init() returns without touching it
// when PV_UNHALT is missing (a qemu64 guest keeps it, hint or not), and
// otherwise always turns it off (REALTIME, one CPU, nopvspin, or PV locks
// installed).
DerivedValue virt_spin_lock(const ParamSet& p) {
  if (kernel_at_least(p, "guest.kernel", "5.9")) {
    if (!p.b("guest.cpuid.pv_unhalt"))
      return {"true", "kvm_spinlock_init() returns before the key: no KVM_FEATURE_PV_UNHALT"};
    return {"false", "kvm_spinlock_init() turns virt_spin_lock_key off (PV_UNHALT present)"};
  }
  if (hint_realtime(p))
    return {"false", "virt_spin_lock_key off: KVM_HINTS_REALTIME (guest.cpuid.hint_realtime)"};
  return {"true", "X86_FEATURE_HYPERVISOR: virt_spin_lock_key stays on"};
}

DerivedValue steal_accounting(const ParamSet& p) {
  if (!p.b("guest.cpuid.steal_time"))
    return {"false", "no KVM_FEATURE_STEAL_TIME (" + cpuid_text(p, "guest.cpuid.steal_time") + ")"};
  return {"true", "kvm_guest_init(): KVM_FEATURE_STEAL_TIME (paravirt_steal_enabled)"};
}

void set_rule(ParamRegistry& r, const char* key, std::vector<std::string> from, const char* doc,
              DerivedValue (*rule)(const ParamSet&)) {
  DerivedDefault d;
  d.from = std::move(from);
  d.doc = doc;
  d.rule = rule;
  d.cap = rule;  // the kernel's choice is also what its CPUID allows
  r.set_derived(key, std::move(d));
}

}  // namespace

void declare_kvm_guest_rules(ParamRegistry& r) {
  set_rule(r, "guest.pv_spinlock",
           {"guest.cpuid.pv_unhalt", "guest.cpuid.hint_realtime", "guest.kernel", "vm.vcpus"},
           "true with guest.cpuid.pv_unhalt, unless a v4.17+ guest sees "
           "guest.cpuid.hint_realtime or a v4.19+ guest has one vCPU",
           pv_spinlock);
  set_rule(r, "guest.virt_spin_lock",
           {"guest.cpuid.hint_realtime", "guest.cpuid.pv_unhalt", "guest.kernel"},
           "true, unless a v4.17-v5.8 guest sees guest.cpuid.hint_realtime; a v5.9+ guest keeps "
           "it only without guest.cpuid.pv_unhalt",
           virt_spin_lock);
  set_rule(r, "guest.vcpu_is_preempted",
           {"guest.cpuid.steal_time", "guest.pv_spinlock", "guest.kernel"},
           "true with guest.cpuid.steal_time; before v5.18 also only with guest.pv_spinlock "
           "(kvm_spinlock_init() installed it)",
           vcpu_is_preempted);
  set_rule(r, "guest.pv_tlb_flush",
           {"guest.kernel", "guest.cpuid.pv_tlb_flush", "guest.cpuid.steal_time",
            "guest.cpuid.hint_realtime"},
           "true for a v4.16+ guest with guest.cpuid.pv_tlb_flush and guest.cpuid.steal_time, "
           "unless a v4.17+ guest sees guest.cpuid.hint_realtime",
           pv_tlb_flush);
  set_rule(r, "guest.pv_sched_yield",
           {"guest.kernel", "guest.cpuid.pv_sched_yield", "guest.cpuid.steal_time",
            "guest.cpuid.hint_realtime"},
           "true for a v5.3+ guest with guest.cpuid.pv_sched_yield and guest.cpuid.steal_time, "
           "unless it sees guest.cpuid.hint_realtime",
           pv_sched_yield);
  set_rule(r, "guest.sched_steal_accounting", {"guest.cpuid.steal_time"},
           "true with guest.cpuid.steal_time", steal_accounting);
}

}  // namespace kvmsim
