// The registry of every model parameter (declared once, in the folder of the
// mechanism that reads it: sim/*/params.cpp).
#pragma once

#include "sim/core/params.h"

namespace kvmsim {

void declare_sched_params(ParamRegistry& r);  // host, noise, host costs
void declare_vmx_params(ParamRegistry& r);    // kvm (VMX side), vm, exit costs
void declare_lapic_params(ParamRegistry& r);  // kvm (LAPIC side), lapic costs
void declare_guest_params(ParamRegistry& r);  // guest, workloads, guest costs
// Kernel-version tables of the version switches (ParamRegistry::set_eras),
// declared after every key, in the folder of the switch.
void declare_sched_eras(ParamRegistry& r);
void declare_vmx_eras(ParamRegistry& r);
void declare_lapic_eras(ParamRegistry& r);
void declare_guest_eras(ParamRegistry& r);
// The VM's CPUID (sim/vmx/cpuid.cpp): vm.cpu_model and guest.cpuid.*, and
// their defaults from the host and the CPU model; then the guest kernel's
// choices from them (sim/guest/kernel/kvm_guest_init.cpp). Derived defaults
// (ParamRegistry::set_derived), set after the eras they read.
void declare_cpuid_params(ParamRegistry& r);
void declare_cpuid_rules(ParamRegistry& r);
void declare_kvm_guest_rules(ParamRegistry& r);

const ParamRegistry& model_params();

}  // namespace kvmsim
