#include "sim/guest/kernel/haltpoll.h"

namespace kvmsim {

bool GuestHaltpoll::select() {
  const bool poll = poll_limit_ns_ != 0 && !(last_state_poll_ && poll_time_limit_);
  last_state_poll_ = poll;
  if (poll) {
    poll_time_limit_ = false;
    polling_ = true;
    ++stats_.polls;
  }
  return poll;
}

void GuestHaltpoll::poll_done(std::uint64_t poll_ns, bool hit) {
  polling_ = false;
  stats_.poll_ns += poll_ns;
  if (hit) {
    ++stats_.poll_hits;
  } else {
    ++stats_.poll_timeouts;
    poll_time_limit_ = true;
  }
}

// adjust_poll_limit(): grow (times grow, at least grow_start, at most
// guest_halt_poll_ns) when the halt outlasted the limit but not the maximum;
// shrink (divide, 0 = reset) when it outlasted the maximum. Unlike the
// host's rule there is no floor at grow_start.
void GuestHaltpoll::reflect(std::uint64_t block_ns) {
  if (block_ns > poll_limit_ns_ && block_ns <= cfg_.max_ns) {
    std::uint64_t val = std::uint64_t{poll_limit_ns_} * cfg_.grow;
    if (val < cfg_.grow_start) val = cfg_.grow_start;
    if (val > cfg_.max_ns) val = cfg_.max_ns;
    if (val != poll_limit_ns_) ++stats_.grows;
    poll_limit_ns_ = static_cast<unsigned>(val);
  } else if (block_ns > cfg_.max_ns && cfg_.allow_shrink) {
    const unsigned val = cfg_.shrink == 0 ? 0 : poll_limit_ns_ / cfg_.shrink;
    if (val != poll_limit_ns_) ++stats_.shrinks;
    poll_limit_ns_ = val;
  }
}

}  // namespace kvmsim
