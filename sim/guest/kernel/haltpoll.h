// cpuidle-haltpoll (drivers/cpuidle/cpuidle-haltpoll.c with the haltpoll
// governor, drivers/cpuidle/governors/haltpoll.c, v5.4+): the guest's own
// halt polling. Before HLT the idle loop may poll need_resched for the
// per-CPU poll_limit_ns (poll_idle(), drivers/cpuidle/poll_state.c), with
// TIF_POLLING_NRFLAG set so that a waker on another CPU sends no IPI; the
// limit adapts after each halt (haltpoll_reflect() -> adjust_poll_limit()).
// The guest kernel's idle loop asks it (GuestKernel::idle_step).
#pragma once

#include <cstdint>

namespace kvmsim {

// The guest_halt_poll_* module parameters; max_ns 0 = not loaded.
struct HaltpollConfig {
  unsigned max_ns = 0;          // guest_halt_poll_ns
  unsigned grow = 2;            // guest_halt_poll_grow
  unsigned grow_start = 50000;  // guest_halt_poll_grow_start
  unsigned shrink = 2;          // guest_halt_poll_shrink
  bool allow_shrink = true;     // guest_halt_poll_allow_shrink
};

struct HaltpollStats {
  std::uint64_t polls = 0, poll_hits = 0, poll_timeouts = 0;
  std::uint64_t poll_ns = 0;             // guest time spent polling
  std::uint64_t grows = 0, shrinks = 0;  // poll_limit_ns changes
};

class GuestHaltpoll {
 public:
  GuestHaltpoll(const HaltpollConfig& cfg, HaltpollStats& stats) : cfg_(cfg), stats_(stats) {}

  [[nodiscard]] bool enabled() const { return cfg_.max_ns != 0; }
  // haltpoll_select(): poll (state 0) unless the limit is 0 or the last
  // poll ran out its limit without an event; then HLT (state 1). True =
  // poll for limit_ns() now (the poll state begins).
  bool select();
  // poll_idle() returns after `poll_ns`: an event (need_resched, `hit`) or
  // the limit (dev->poll_time_limit).
  void poll_done(std::uint64_t poll_ns, bool hit);
  // haltpoll_reflect() after a halt of `block_ns`: adjust_poll_limit().
  void reflect(std::uint64_t block_ns);

  [[nodiscard]] bool polling() const { return polling_; }  // TIF_POLLING_NRFLAG
  [[nodiscard]] unsigned limit_ns() const { return poll_limit_ns_; }

 private:
  const HaltpollConfig& cfg_;
  HaltpollStats& stats_;
  bool polling_ = false;
  unsigned poll_limit_ns_ = 0;    // cpuidle_device->poll_limit_ns
  bool last_state_poll_ = false;  // dev->last_state_idx == 0
  bool poll_time_limit_ = false;  // dev->poll_time_limit
};

}  // namespace kvmsim
