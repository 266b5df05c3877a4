// StepQueue (sim/guest/kernel/step_queue.h), the guest contexts' FIFO of
// steps: steps come out in the order they went in, across the ring's growth
// and its wrap-around, and a queue emptied and refilled starts over cleanly.
#include "sim/guest/kernel/step_queue.h"

#include <cstdint>

#include <catch2/catch.hpp>

using kvmsim::GuestStep;
using kvmsim::Stage;
using kvmsim::StepQueue;

TEST_CASE("StepQueue: first in, first out across growth and wrap-around", "[guest][queue]") {
  StepQueue q;
  CHECK(q.empty());
  std::uint64_t pushed = 0;
  std::uint64_t popped = 0;
  // Interleave pushes and pops so that the ring wraps with steps queued, and
  // grows (8 -> 16 -> 32 -> 64) while its head is not at slot 0.
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 5; ++i) q.push_back(GuestStep::run(Stage::GuestSyscall, ++pushed));
    for (int i = 0; i < 3; ++i) {
      REQUIRE_FALSE(q.empty());
      CHECK(q.front().cycles == ++popped);
      q.pop_front();
    }
    CHECK(q.size() == pushed - popped);
  }
  while (!q.empty()) {
    CHECK(q.front().cycles == ++popped);
    q.pop_front();
  }
  CHECK(popped == 200);
  q.push_back(GuestStep::hlt());
  CHECK(q.size() == 1);
  CHECK(q.front().kind == GuestStep::Kind::Exit);
}
