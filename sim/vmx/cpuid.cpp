// The VM's CPUID as its guest reads it: the KVM paravirtual features of leaf
// 0x40000001 (kvm_para_has_feature(), KVM_CPUID_FEATURES) and the hint
// KVM_HINTS_REALTIME. Two parties decide it, and each is a parameter:
//  - the host's KVM: KVM_GET_SUPPORTED_CPUID (arch/x86/kvm/cpuid.c, case
//    KVM_CPUID_FEATURES) offers what host.kernel implements;
//  - the VMM: QEMU's -cpu model (vm.cpu_model). `-cpu host` passes every
//    feature KVM offers; a named model (qemu64, kvm64, Haswell, ...) gets
//    kvm_default_props (target/i386/cpu.c): kvmclock, kvm-nopiodelay,
//    kvm-asyncpf, kvm-steal-time, kvm-pv-eoi and x2apic, and not
//    kvm-pv-unhalt, kvm-pv-tlb-flush or kvm-pv-sched-yield.
// guest.cpuid.* are the features the guest sees. Their defaults follow from
// vm.cpu_model and the host; a scenario sets one as `-cpu qemu64,+kvm-pv-unhalt`
// would. The guest kernel's choices from them are the derived keys of
// sim/guest/kernel/kvm_guest_init.cpp (kvm_guest_init(), kvm_spinlock_init()).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "sim/model_params.h"

namespace kvmsim {
namespace {

// One KVM feature bit: the key, QEMU's name for it, the host kernel that
// first offers it (nullptr: the host switch kvm.pv_sched_yield decides) and
// the QEMU release that first names it (nullptr: older than any modelled).
// `-cpu host` is migratable by default, and x86_cpu_get_migratable_flags()
// passes only the bits QEMU has a name for.
struct KvmFeature {
  const char* key;
  const char* qemu_name;
  const char* host_since;
  const char* qemu_since;
  bool in_default_props;  // kvm_default_props: named CPU models get it too
  const char* what;
};

constexpr KvmFeature kFeatures[] = {
    {"guest.cpuid.steal_time", "kvm-steal-time", "3.1", nullptr, true,
     "KVM_FEATURE_STEAL_TIME: MSR_KVM_STEAL_TIME, the steal-time area with its `preempted` "
     "byte (vcpu_is_preempted(), PV TLB flush) and the guest's steal accounting"},
    {"guest.cpuid.pv_unhalt", "kvm-pv-unhalt", "3.12", nullptr, false,
     "KVM_FEATURE_PV_UNHALT: KVM_HC_KICK_CPU, so the guest may use paravirtual spinlocks "
     "(kvm_spinlock_init())"},
    {"guest.cpuid.pv_tlb_flush", "kvm-pv-tlb-flush", "4.16", "2.11", false,
     "KVM_FEATURE_PV_TLB_FLUSH: KVM_VCPU_FLUSH_TLB in the steal-time area, flushed by "
     "record_steal_time() before the vCPU's next entry"},
    {"guest.cpuid.pv_sched_yield", "kvm-pv-sched-yield", nullptr, "4.2", false,
     "KVM_FEATURE_PV_SCHED_YIELD: KVM_HC_SCHED_YIELD (the host offers it with "
     "kvm.pv_sched_yield)"},
};

// "2.11" -> {2, 11}; QEMU versions run past 9, so not parse_kernel_version().
std::optional<std::pair<int, int>> parse_qemu_version(const std::string& text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(),
                                   [](char c) { return c == '.' || (c >= '0' && c <= '9'); }))
    return std::nullopt;
  int major = 0;
  int minor = 0;
  int patch = 0;
  char tail = 0;
  const int n = std::sscanf(text.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail);
  const auto dots = std::count(text.begin(), text.end(), '.');
  if (!((n == 2 && dots == 1) || (n == 3 && dots == 2)) || major < 1 || major > 99 || minor < 0 ||
      minor > 99 || patch < 0)
    return std::nullopt;
  return std::make_pair(major, minor);
}

bool qemu_names(const ParamSet& p, const char* since) {
  const auto have = parse_qemu_version(p.s("vm.qemu_version"));
  if (!have)
    throw ScenarioError(
        fmt::format("{}: key 'vm.qemu_version': '{}' is not a QEMU version "
                    "(major.minor[.patch], e.g. 2.11, 7.2.0)",
                    p.origin("vm.qemu_version"), p.s("vm.qemu_version")));
  return since == nullptr || *have >= *parse_qemu_version(since);
}

bool host_offers(const ParamSet& p, const KvmFeature& f) {
  return f.host_since ? kernel_at_least(p, "host.kernel", f.host_since) : p.b("kvm.pv_sched_yield");
}

std::string host_offer_text(const ParamSet& p, const KvmFeature& f) {
  return f.host_since ? fmt::format("host.kernel={}", p.s("host.kernel"))
                      : fmt::format("kvm.pv_sched_yield={}", p.text("kvm.pv_sched_yield"));
}

// What the host's KVM offers and QEMU can name. QEMU drops any other with a
// warning (or refuses it with -cpu ...,enforce); kvmsim refuses it, as
// enforce does, so that a setting never silently fails to act.
DerivedValue host_cap(const ParamSet& p, const KvmFeature& f) {
  if (!qemu_names(p, f.qemu_since))
    return {"false", fmt::format("vm.qemu_version={} has no {} (QEMU {})", p.s("vm.qemu_version"),
                                 f.qemu_name, f.qemu_since)};
  if (host_offers(p, f)) return {"true", ""};
  return {"false", fmt::format("the host's KVM does not offer it ({}; {} needs {}); QEMU "
                               "cannot pass {}",
                               host_offer_text(p, f), f.key,
                               f.host_since ? fmt::format("v{}", f.host_since)
                                            : std::string("kvm.pv_sched_yield"),
                               f.qemu_name)};
}

DerivedValue model_rule(const ParamSet& p, const KvmFeature& f) {
  const std::string& model = p.s("vm.cpu_model");
  if (!host_offers(p, f)) return {"false", host_offer_text(p, f) + " does not offer it"};
  if (!qemu_names(p, f.qemu_since))
    return {"false", fmt::format("vm.qemu_version={} has no {} (QEMU {})", p.s("vm.qemu_version"),
                                 f.qemu_name, f.qemu_since)};
  if (model == "host") return {"true", "vm.cpu_model=host passes it"};
  if (f.in_default_props)
    return {"true", fmt::format("vm.cpu_model={} gets {} (kvm_default_props)", model, f.qemu_name)};
  return {"false",
          fmt::format("vm.cpu_model={} has no {} (not in kvm_default_props)", model, f.qemu_name)};
}

}  // namespace

// clang-format off
void declare_cpuid_params(ParamRegistry& r) {
  r.declare({"vm.cpu_model", ParamType::String, "host", "",
             {}, {}, {"host", "qemu64", "kvm64", "Haswell", "Broadwell", "Skylake-Server"},
             "QEMU's -cpu model of every VM: host passes every KVM feature the host offers; a "
             "named model gets QEMU's kvm_default_props (kvm-steal-time, not kvm-pv-unhalt, "
             "kvm-pv-tlb-flush or kvm-pv-sched-yield). Sets the defaults of guest.cpuid.*; a "
             "scenario names its measurement's model and the evidence."});
  r.declare({"vm.qemu_version", ParamType::String, "7.2", "version", {}, {}, {},
             "QEMU release (major.minor) of every VM: `-cpu host` passes only the KVM features "
             "it names (kvm-pv-tlb-flush from 2.11, kvm-hint-dedicated 2.12, kvm-pv-sched-yield "
             "4.2), and it refuses to set one it does not name."});
  for (const auto& f : kFeatures)
    r.declare({f.key, ParamType::Bool, "false", "bool", {}, {}, {},
               fmt::format("The guest's CPUID has {} (QEMU -cpu MODEL,+{}).", f.what,
                           f.qemu_name)});
  r.declare({"guest.cpuid.hint_realtime", ParamType::Bool, "false", "bool", {}, {}, {},
             "KVM_HINTS_REALTIME (QEMU kvm-hint-dedicated=on, never on by default): the VMM promises dedicated pCPUs, and a v4.17+ guest then "
             "uses no PV spinlocks, PV TLB flush or PV sched yield."});
}

void declare_cpuid_rules(ParamRegistry& r) {
  for (const auto& f : kFeatures) {
    DerivedDefault d;
    d.from = {"vm.cpu_model", "vm.qemu_version",
              f.host_since ? "host.kernel" : "kvm.pv_sched_yield"};
    const std::string offer = f.host_since ? fmt::format("host.kernel {}+", f.host_since)
                                           : std::string("kvm.pv_sched_yield");
    d.doc = f.in_default_props
                ? fmt::format("true when the host offers it ({}); every CPU model passes it",
                              offer)
                : fmt::format("true when the host offers it ({}), vm.cpu_model is host and "
                              "vm.qemu_version names it{}",
                              offer, f.qemu_since ? fmt::format(" ({}+)", f.qemu_since) : "");
    d.rule = [&f](const ParamSet& p) { return model_rule(p, f); };
    d.cap = [&f](const ParamSet& p) { return host_cap(p, f); };
    r.set_derived(f.key, std::move(d));
  }
  // kvm-hint-dedicated is never on by default (no_autoenable_flags); a
  // scenario turns it on as -cpu MODEL,kvm-hint-dedicated=on would.
  DerivedDefault hint;
  hint.from = {"vm.qemu_version"};
  hint.doc = "false (QEMU sets it only when asked, from 2.12)";
  hint.rule = [](const ParamSet&) {
    return DerivedValue{"false", "QEMU sets KVM_HINTS_REALTIME only with kvm-hint-dedicated=on"};
  };
  hint.cap = [](const ParamSet& p) {
    if (qemu_names(p, "2.12")) return DerivedValue{"true", ""};
    return DerivedValue{"false", fmt::format("vm.qemu_version={} has no kvm-hint-dedicated "
                                             "(QEMU 2.12)",
                                             p.s("vm.qemu_version"))};
  };
  r.set_derived("guest.cpuid.hint_realtime", std::move(hint));
}
// clang-format on

}  // namespace kvmsim
