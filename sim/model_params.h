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
void declare_vmx_eras(ParamRegistry& r);
void declare_lapic_eras(ParamRegistry& r);
void declare_guest_eras(ParamRegistry& r);

const ParamRegistry& model_params();

}  // namespace kvmsim
