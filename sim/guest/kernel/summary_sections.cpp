// What the guest's cpuidle-haltpoll governor did (the guest_halt_poll_*
// behaviour of drivers/cpuidle/governors/haltpoll.c), summed over vCPUs.
#include <fmt/format.h>

#include "sim/core/advisory.h"
#include "sim/core/summary_section.h"

namespace kvmsim {
namespace {

SummarySection guest_haltpoll(const ParamSet& /*p*/, const Metrics& m) {
  SummarySection s{"guest cpuidle-haltpoll", {}};
  const double polls = metric_or_zero(m, "guest.haltpoll.polls");
  if (polls <= 0) return s;
  s.stats = {{"polls", metric_count(m, "guest.haltpoll.polls")},
             {"hits", metric_count(m, "guest.haltpoll.hits")},
             {"timeouts", metric_count(m, "guest.haltpoll.timeouts")},
             {"grow", metric_count(m, "guest.haltpoll.grow")},
             {"shrink", metric_count(m, "guest.haltpoll.shrink")},
             {"poll_time", fmt::format("{:.3f}s", metric_or_zero(m, "guest.haltpoll.poll_s"))}};
  return s;
}

}  // namespace
}  // namespace kvmsim

KVMSIM_REGISTER_SUMMARY_SECTION(guest_haltpoll, 25, kvmsim::guest_haltpoll)
