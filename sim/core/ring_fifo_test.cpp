// RingFifo (sim/core/ring_fifo.h): indexing from the front and dropping a
// prefix keep the order across growth and wrap-around (the invariant
// observer's armed deadlines use both; the FIFO order itself is pinned by
// sim/guest/kernel/step_queue_test.cpp).
#include "sim/core/ring_fifo.h"

#include <cstdint>

#include <catch2/catch.hpp>

using kvmsim::RingFifo;

TEST_CASE("RingFifo: the i-th value from the front, and dropping a prefix", "[core][queue]") {
  RingFifo<std::uint64_t> q;
  std::uint64_t next = 0;
  std::uint64_t first = 0;  // the value at the front
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < 7; ++i) q.push_back(next++);
    REQUIRE(q.size() == next - first);
    for (std::size_t i = 0; i < q.size(); ++i) REQUIRE(q[i] == first + i);
    q.drop_front(4);  // wraps the ring with values queued; it grows with its head mid-ring
    first += 4;
    CHECK(q.front() == first);
  }
  q.drop_front(q.size());
  CHECK(q.empty());
  q.push_back(42);
  CHECK(q.size() == 1);
  CHECK(q[0] == 42);
}

TEST_CASE("RingFifo: pushing one of its own values while it grows", "[core][queue]") {
  RingFifo<std::uint64_t> q;
  for (std::uint64_t i = 0; i < 8; ++i) q.push_back(100 + i);  // full: the next push grows
  q.push_back(q.front());
  REQUIRE(q.size() == 9);
  CHECK(q[8] == 100);
  CHECK(q[7] == 107);
}
