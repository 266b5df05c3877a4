// Advisories of the LAPIC timer (sim/core/advisory.h): a posted-timer
// setting that cannot act.
#include <string>
#include <vector>

#include "sim/core/advisory.h"

namespace kvmsim {
namespace {

// kvm_can_post_timer_interrupt(): pi_inject_timer && APICv (&& MWAIT/HLT in
// guest from v5.18, which the model's VMs never have).
void pi_inject_timer_inactive(const ParamSet& p, const Metrics& /*m*/, std::vector<Advisory>& out) {
  if (p.i("kvm.pi_inject_timer") != 1) return;
  if (!p.b("platform.apicv"))
    out.push_back({"kvm.pi_inject_timer",
                   "kvm.pi_inject_timer=1 has no effect: posted timer interrupts need APICv, "
                   "and this platform has none (platform.apicv)"});
  else if (p.b("kvm.pi_inject_timer_needs_hlt_in_guest"))
    out.push_back({"kvm.pi_inject_timer",
                   "kvm.pi_inject_timer=1 has no effect: from v5.18 (1714a4eb6fb0) KVM posts "
                   "timer interrupts only to VMs with HLT or MWAIT in guest, and the model's "
                   "VMs exit on HLT (kvm.pi_inject_timer_needs_hlt_in_guest)"});
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_ADVISORY(pi_inject_timer_inactive, kvmsim::pi_inject_timer_inactive)
