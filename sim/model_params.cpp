#include "sim/model_params.h"

#include "sim/workload.h"

namespace kvmsim {

const ParamRegistry& model_params() {
  static const ParamRegistry reg = [] {
    ParamRegistry r;
    declare_core_params(r);
    declare_sched_params(r);
    declare_vmx_params(r);
    declare_lapic_params(r);
    declare_guest_params(r);
    declare_cpuid_params(r);
    declare_sched_eras(r);
    declare_vmx_eras(r);
    declare_lapic_eras(r);
    declare_guest_eras(r);
    declare_cpuid_rules(r);
    declare_kvm_guest_rules(r);
    // Workloads declare their own keys (sim/workload.h).
    for (const auto& [name, info] : WorkloadRegistry::instance().all())
      if (info.declare) info.declare(r);
    return r;
  }();
  return reg;
}

}  // namespace kvmsim
