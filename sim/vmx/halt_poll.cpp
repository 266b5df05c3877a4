#include "sim/vmx/halt_poll.h"

#include <algorithm>

namespace kvmsim {

std::uint32_t halt_poll_window(const HaltPollParams& p, std::uint32_t& halt_poll_ns) {
  if (p.rule == HaltPollRule::V4_0) halt_poll_ns = p.max_ns;  // fixed
  if (p.rule == HaltPollRule::V6_2) halt_poll_ns = std::min(halt_poll_ns, p.max_ns);
  return halt_poll_ns;
}

// grow_halt_poll_ns(): times halt_poll_ns_grow; the first step and the cap
// by era.
std::uint32_t grow_halt_poll_ns(const HaltPollParams& p, std::uint32_t old) {
  std::uint64_t val = old;
  switch (p.rule) {
    case HaltPollRule::V4_0:
      return old;  // no window rule
    case HaltPollRule::V4_3:
    case HaltPollRule::V4_7:
      // if (val == 0 && halt_poll_ns_grow) val = 10000; else val *= grow;
      if (val == 0 && p.grow)
        val = 10000;
      else
        val *= p.grow;
      if (p.rule == HaltPollRule::V4_7) val = std::min<std::uint64_t>(val, p.max_ns);
      break;
    case HaltPollRule::V5_2:
    case HaltPollRule::V5_15:
    case HaltPollRule::V6_2:
      if (p.grow == 0) return old;  // "goto out": unchanged (traced old -> old)
      val *= p.grow;
      if (val < p.grow_start) val = p.grow_start;
      if (p.rule != HaltPollRule::V6_2) val = std::min<std::uint64_t>(val, p.max_ns);
      break;
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(val, 0xffffffffU));
}

// shrink_halt_poll_ns(): divided by halt_poll_ns_shrink (0: reset to 0);
// since V5_15 anything below grow_start is 0.
std::uint32_t shrink_halt_poll_ns(const HaltPollParams& p, std::uint32_t old) {
  std::uint32_t val = p.shrink == 0 ? 0 : old / p.shrink;
  if ((p.rule == HaltPollRule::V5_15 || p.rule == HaltPollRule::V6_2) && val < p.grow_start)
    val = 0;
  return val;
}

// The end of kvm_vcpu_halt() (kvm_vcpu_block() before v5.16). With a
// maximum: keep the window if the halt ended inside it, shrink it if the
// halt outlasted the maximum, grow it if it ended after the window but
// within the maximum; no maximum: 0 (since ~v4.4; aca6ff29 left the window
// alone). An invalid wake-up shrinks: first thing since ~v5.x, only after
// the keep test and with a maximum in V4_7 (3491caf2); unknown in V4_3.
HaltPollUpdate halt_poll_update(const HaltPollParams& p, std::uint32_t& halt_poll_ns,
                                std::uint64_t halt_ns, bool valid) {
  HaltPollUpdate u;
  u.old_ns = u.new_ns = halt_poll_ns;
  if (p.rule == HaltPollRule::V4_0) return u;  // the window is always the maximum
  if (p.rule == HaltPollRule::V4_3 && p.max_ns == 0) return u;
  const bool invalid_first = p.rule >= HaltPollRule::V5_2;
  // The kernel's tests in the kernel's order: several lead to the same update,
  // and merging them would hide which era's rule decided.
  // NOLINTBEGIN(bugprone-branch-clone)
  if (invalid_first && !valid) {
    u.kind = HaltPollUpdate::Kind::Shrink;
  } else if (p.max_ns == 0) {
    halt_poll_ns = u.new_ns = 0;
    return u;
  } else if (halt_ns <= halt_poll_ns) {
    return u;  // the window was long enough
  } else if (p.rule == HaltPollRule::V4_7 && !valid) {
    u.kind = HaltPollUpdate::Kind::Shrink;
  } else if (halt_poll_ns && halt_ns > p.max_ns) {
    u.kind = HaltPollUpdate::Kind::Shrink;  // a long block: shrink polling
  } else if (halt_poll_ns < p.max_ns && halt_ns < p.max_ns) {
    u.kind = HaltPollUpdate::Kind::Grow;  // a short halt, the window too small
  } else {
    return u;
  }
  // NOLINTEND(bugprone-branch-clone)
  u.new_ns = u.kind == HaltPollUpdate::Kind::Grow ? grow_halt_poll_ns(p, halt_poll_ns)
                                                  : shrink_halt_poll_ns(p, halt_poll_ns);
  halt_poll_ns = u.new_ns;
  return u;
}

}  // namespace kvmsim
