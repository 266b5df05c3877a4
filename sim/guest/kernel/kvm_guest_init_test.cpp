// The guest kernel's paravirtual choices from its CPUID (kvm_guest_init.cpp)
// and the CPUID from the CPU model, the QEMU release and the host
// (sim/vmx/cpuid.cpp), on the model's own registry.
#include <initializer_list>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "sim/model_params.h"

using namespace kvmsim;
using Catch::Matchers::Contains;

namespace {

ParamSet resolved(std::initializer_list<std::pair<const char*, const char*>> sets) {
  ParamSet p(model_params());
  for (const auto& [k, v] : sets) p.set_text(k, v, "--set");
  apply_kernel_eras(p);
  return p;
}

std::string error_of(std::initializer_list<std::pair<const char*, const char*>> sets) {
  try {
    resolved(sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "QEMU -cpu host on a v4.16 host gives a v4.16 guest PV spinlocks, vcpu_is_preempted and PV TLB "
    "flush, and PV sched yield is v5.3 on both sides",
    "[guest][cpuid]") {
  const ParamSet p =
      resolved({{"host.kernel", "4.16"}, {"guest.kernel", "4.16"}, {"vm.vcpus", "8"}});
  CHECK(p.s("vm.cpu_model") == "host");
  CHECK(p.b("guest.cpuid.pv_unhalt"));
  CHECK(p.b("guest.cpuid.pv_tlb_flush"));
  CHECK_FALSE(p.b("guest.cpuid.pv_sched_yield"));
  CHECK(p.b("guest.pv_spinlock"));
  CHECK(p.b("guest.vcpu_is_preempted"));
  CHECK(p.b("guest.pv_tlb_flush"));
  CHECK_FALSE(p.b("guest.pv_sched_yield"));
  CHECK(p.origin("guest.pv_tlb_flush") ==
        "kvm_guest_init(): KVM_FEATURE_PV_TLB_FLUSH and STEAL_TIME (derived)");
  const ParamSet late = resolved({{"host.kernel", "5.3"}, {"guest.kernel", "5.3"}});
  CHECK(late.b("guest.pv_sched_yield"));
  // A v4.15 guest has no kvm_flush_tlb_others() whatever its CPUID says.
  CHECK_FALSE(
      resolved({{"host.kernel", "4.16"}, {"guest.kernel", "4.15"}}).b("guest.pv_tlb_flush"));
}

TEST_CASE(
    "a named CPU model (qemu64) has steal time but no PV_UNHALT: test-and-set lock, no "
    "vcpu_is_preempted before v5.18, no PV TLB flush",
    "[guest][cpuid]") {
  const ParamSet p = resolved({{"host.kernel", "4.16"},
                               {"guest.kernel", "4.16"},
                               {"vm.cpu_model", "qemu64"},
                               {"vm.vcpus", "8"}});
  CHECK(p.b("guest.cpuid.steal_time"));
  CHECK_FALSE(p.b("guest.cpuid.pv_unhalt"));
  CHECK_FALSE(p.b("guest.pv_spinlock"));
  CHECK(p.b("guest.virt_spin_lock"));
  CHECK_FALSE(p.b("guest.vcpu_is_preempted"));
  CHECK_THAT(p.origin("guest.vcpu_is_preempted"), Contains("no KVM_FEATURE_PV_UNHALT"));
  CHECK_FALSE(p.b("guest.pv_tlb_flush"));
  CHECK(p.b("guest.sched_steal_accounting"));
  // v5.18+: kvm_guest_init() installs it with steal time alone.
  CHECK(resolved({{"guest.kernel", "5.18"}, {"vm.cpu_model", "qemu64"}})
            .b("guest.vcpu_is_preempted"));
  // -cpu qemu64,+kvm-pv-unhalt
  const ParamSet plus = resolved({{"host.kernel", "4.16"},
                                  {"guest.kernel", "4.16"},
                                  {"vm.cpu_model", "qemu64"},
                                  {"guest.cpuid.pv_unhalt", "true"}});
  CHECK(plus.b("guest.pv_spinlock"));
  CHECK(plus.b("guest.vcpu_is_preempted"));
  // No steal time: no vcpu_is_preempted, no PV flush, no steal accounting.
  const ParamSet nost = resolved({{"guest.cpuid.steal_time", "false"}});
  CHECK_FALSE(nost.b("guest.vcpu_is_preempted"));
  CHECK_FALSE(nost.b("guest.pv_tlb_flush"));
  CHECK_FALSE(nost.b("guest.sched_steal_accounting"));
}

TEST_CASE(
    "QEMU -cpu host passes only what its QEMU names, KVM_HINTS_REALTIME turns the PV paths off "
    "from "
    "v4.17 guests",
    "[guest][cpuid]") {
  CHECK_FALSE(resolved({{"host.kernel", "4.16"}, {"vm.qemu_version", "2.10"}})
                  .b("guest.cpuid.pv_tlb_flush"));
  CHECK(resolved({{"host.kernel", "4.16"}, {"vm.qemu_version", "2.11"}})
            .b("guest.cpuid.pv_tlb_flush"));
  CHECK_FALSE(resolved({{"host.kernel", "5.3"}, {"vm.qemu_version", "4.1"}})
                  .b("guest.cpuid.pv_sched_yield"));
  const ParamSet rt = resolved(
      {{"guest.kernel", "4.17"}, {"guest.cpuid.hint_realtime", "true"}, {"vm.vcpus", "4"}});
  CHECK_FALSE(rt.b("guest.pv_spinlock"));
  CHECK_FALSE(rt.b("guest.virt_spin_lock"));
  CHECK_FALSE(rt.b("guest.pv_tlb_flush"));
  const ParamSet old = resolved(
      {{"guest.kernel", "4.16"}, {"guest.cpuid.hint_realtime", "true"}, {"vm.vcpus", "4"}});
  CHECK(old.b("guest.pv_spinlock"));  // a v4.16 guest does not read the hint
  // v5.9+: without PV_UNHALT kvm_spinlock_init() returns before turning the
  // test-and-set key off, hint or not; with it the key is always off.
  const ParamSet q510 = resolved({{"guest.kernel", "5.10"},
                                  {"vm.cpu_model", "qemu64"},
                                  {"guest.cpuid.hint_realtime", "true"}});
  CHECK(q510.b("guest.virt_spin_lock"));
  CHECK_FALSE(resolved({{"guest.kernel", "5.10"}, {"guest.pv_spinlock", "false"}})
                  .b("guest.virt_spin_lock"));
  // Before v5.18 vcpu_is_preempted() came with the PV lock: nopvspin drops it.
  CHECK_FALSE(
      resolved({{"guest.kernel", "4.16"}, {"host.kernel", "4.16"}, {"guest.pv_spinlock", "false"}})
          .b("guest.vcpu_is_preempted"));
  CHECK(resolved({{"vm.qemu_version", "7.2.0"}}).b("guest.cpuid.pv_tlb_flush"));
  CHECK_THAT(error_of({{"vm.qemu_version", "2.11x"}}), Contains("is not a QEMU version"));
  // A v4.19+ guest with one possible CPU needs no PV lock.
  CHECK_FALSE(resolved({{"guest.kernel", "4.19"}, {"vm.vcpus", "1"}}).b("guest.pv_spinlock"));
}

TEST_CASE("asking for a feature the configuration cannot give is an error naming the key and why",
          "[guest][cpuid]") {
  CHECK_THAT(error_of({{"vm.cpu_model", "qemu64"}, {"guest.pv_spinlock", "true"}}),
             Contains("key 'guest.pv_spinlock': true cannot act: kvm_spinlock_init(): no "
                      "KVM_FEATURE_PV_UNHALT (guest.cpuid.pv_unhalt=false: vm.cpu_model=qemu64 has "
                      "no kvm-pv-unhalt"));
  CHECK_THAT(error_of({{"host.kernel", "4.15"}, {"guest.cpuid.pv_tlb_flush", "true"}}),
             Contains("the host's KVM does not offer it (host.kernel=4.15"));
  CHECK_THAT(error_of({{"vm.qemu_version", "2.11"}, {"guest.cpuid.hint_realtime", "true"}}),
             Contains("no kvm-hint-dedicated (QEMU 2.12)"));
  CHECK_THAT(error_of({{"vm.qemu_version", "two"}}), Contains("is not a QEMU version"));
  CHECK(error_of({{"vm.cpu_model", "qemu64"}, {"guest.pv_spinlock", "false"}}).empty());
}
