#include "sim/model_params.h"

namespace kvmsim {

const ParamRegistry& model_params() {
  static const ParamRegistry reg = [] {
    ParamRegistry r;
    declare_core_params(r);
    declare_sched_params(r);
    declare_vmx_params(r);
    declare_lapic_params(r);
    declare_guest_params(r);
    return r;
  }();
  return reg;
}

}  // namespace kvmsim
