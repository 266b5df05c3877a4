// Advisories of halt polling (sim/core/advisory.h): halt polling configured
// but never polled, and why, in kvm_vcpu_halt()'s terms.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/core/advisory.h"

namespace kvmsim {
namespace {

// kvm_vcpu_halt() polls when the vCPU's window is non-zero, the vCPU thread
// is the only task on its pCPU and nothing set need_resched
// (kvm_vcpu_can_poll()), and the guest has not turned host polling off
// (kvm_arch_no_poll(): MSR_KVM_POLL_CONTROL). The window starts at 0 and
// grows only after a halt that ended within kvm.halt_poll_ns.
void halt_poll_never_polled(const ParamSet& p, const Metrics& m, std::vector<Advisory>& out) {
  const std::int64_t max_ns = p.i("kvm.halt_poll_ns");
  const double halts = metric_or_zero(m, "vcpu.halts");
  // A handful of halts (a CPU-bound run's start) proves nothing either way.
  if (max_ns <= 0 || halts < 20 || metric_or_zero(m, "halt_poll.attempted") > 0) return;
  std::string why;
  if (p.i("guest.haltpoll_ns") > 0 && p.b("kvm.poll_control") && p.s("guest.idle") == "hlt") {
    why =
        "the guest's cpuidle-haltpoll turned host polling off (MSR_KVM_POLL_CONTROL; "
        "kvm.poll_control=false keeps it on)";
  } else if (metric_or_zero(m, "halt_poll.grow") <= 0) {
    const double blocks = metric_or_zero(m, "vcpu.blocks");
    const double mean_us = blocks > 0 ? metric_or_zero(m, "vcpu.blocked_s") / blocks * 1e6 : 0;
    why = fmt::format(
        "no halt ended within the maximum window ({} us), so no vCPU's window grew from 0 "
        "(the vCPUs slept {:.0f} us per halt on average); polling pays only for halts shorter "
        "than kvm.halt_poll_ns",
        static_cast<double>(max_ns) / 1000, mean_us);
  } else {
    why = fmt::format(
        "the windows grew {:.0f} times, but every halt found another task runnable on its "
        "pCPU or need_resched set (kvm_vcpu_can_poll() needs the vCPU alone on its pCPU)",
        metric_or_zero(m, "halt_poll.grow"));
  }
  out.push_back({"kvm.halt_poll_ns",
                 fmt::format("halt polling is configured (kvm.halt_poll_ns = {}) but none of "
                             "the {:.0f} halts polled: {}",
                             max_ns, halts, why)});
}

// cpuidle-haltpoll is a cpuidle driver: the guest's idle=poll loop never
// enters cpuidle, so guest.haltpoll_ns cannot act there.
void guest_haltpoll_unused(const ParamSet& p, const Metrics& m, std::vector<Advisory>& out) {
  if (p.i("guest.haltpoll_ns") <= 0 || metric_or_zero(m, "guest.haltpoll.polls") > 0) return;
  if (p.s("guest.idle") != "hlt")
    out.push_back({"guest.haltpoll_ns",
                   "guest.haltpoll_ns is set but guest.idle is poll: the idle=poll loop never "
                   "enters cpuidle, so cpuidle-haltpoll never ran (set guest.idle=hlt)"});
  else if (metric_or_zero(m, "guest.idle.hlt") > 0 || metric_or_zero(m, "vcpu.halts") > 0)
    out.push_back({"guest.haltpoll_ns",
                   "guest.haltpoll_ns is set but the guest never polled before its halts "
                   "(haltpoll_select() kept choosing HLT: no idle period ended within "
                   "guest.haltpoll_ns)"});
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_ADVISORY(halt_poll_never_polled, kvmsim::halt_poll_never_polled)
KVMSIM_REGISTER_ADVISORY(guest_haltpoll_unused, kvmsim::guest_haltpoll_unused)
