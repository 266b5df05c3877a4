#include "sim/core/counters.h"

#include <catch2/catch.hpp>

#include <cstdint>

namespace {
struct TwoCounters {
  std::uint64_t a = 0, b = 0;
  std::uint64_t peak = 0;  // not a sum: kept out of Fields
  using Fields = kvmsim::CounterFields<TwoCounters, &TwoCounters::a, &TwoCounters::b>;
};
}  // namespace

TEST_CASE("counters: += adds exactly the listed fields", "[counters]") {
  using kvmsim::operator+=;
  TwoCounters x{1, 2, 7};
  const TwoCounters y{10, 20, 70};
  x += y;
  CHECK(x.a == 11);
  CHECK(x.b == 22);
  CHECK(x.peak == 7);
}
