// cpuidle-haltpoll's governor (sim/guest/kernel/haltpoll.h): the limit starts at 0
// (HLT), grows to grow_start after a halt that a poll would have caught,
// doubles up to guest_halt_poll_ns, shrinks after a halt longer than the
// maximum, and a poll that ran out its limit is followed by one HLT.
#include "sim/guest/kernel/haltpoll.h"

#include <catch2/catch.hpp>

using kvmsim::GuestHaltpoll;
using kvmsim::HaltpollConfig;
using kvmsim::HaltpollStats;

TEST_CASE("guest haltpoll: select, grow, shrink and the timeout rule", "[guest][haltpoll]") {
  HaltpollConfig cfg;
  cfg.max_ns = 200000;
  HaltpollStats stats;
  GuestHaltpoll hp(cfg, stats);
  CHECK(hp.enabled());
  CHECK_FALSE(hp.select());  // limit 0: HLT
  hp.reflect(30000);         // a short halt: grow to grow_start
  CHECK(hp.limit_ns() == 50000);
  hp.reflect(80000);
  CHECK(hp.limit_ns() == 100000);
  hp.reflect(150000);
  CHECK(hp.limit_ns() == 200000);
  hp.reflect(190000);  // at the maximum already: no change
  CHECK(hp.limit_ns() == 200000);
  CHECK(stats.grows == 3);

  REQUIRE(hp.select());
  CHECK(hp.polling());
  hp.poll_done(200000, false);  // ran out its limit
  CHECK_FALSE(hp.polling());
  CHECK_FALSE(hp.select());  // so the next idle entry halts
  CHECK(hp.select());        // and the one after polls again
  hp.poll_done(1000, true);
  CHECK(stats.polls == 2);
  CHECK(stats.poll_hits == 1);
  CHECK(stats.poll_timeouts == 1);
  CHECK(stats.poll_ns == 201000);

  hp.reflect(5000000);  // longer than the maximum: shrink (divide by 2)
  CHECK(hp.limit_ns() == 100000);
  CHECK(stats.shrinks == 1);
}

TEST_CASE("guest haltpoll: not loaded when guest_halt_poll_ns is 0", "[guest][haltpoll]") {
  HaltpollConfig cfg;
  HaltpollStats stats;
  GuestHaltpoll hp(cfg, stats);
  CHECK_FALSE(hp.enabled());
  CHECK_FALSE(hp.select());
  hp.reflect(10000);  // block_ns > max_ns (0): shrink of 0 stays 0
  CHECK(hp.limit_ns() == 0);
}
