// Unit tests for the host CPU topology (sim/sched/topology.h).
#include "sim/sched/topology.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>
#include <vector>

#include <boost/graph/graph_traits.hpp>

using kvmsim::Topology;

TEST_CASE("topology: 2 sockets x 18 cores x 2 threads has 72 cpus", "[topology]") {
  const Topology t(2, 18, 2);
  CHECK(t.cpus() == 72);
  CHECK(t.sockets() == 2);
  // Graph: machine + 2 sockets + 36 cores + 72 threads, as a tree.
  CHECK(boost::num_vertices(t.graph()) == 1 + 2 + 36 + 72);
  CHECK(boost::num_edges(t.graph()) == 2 + 36 + 72);
  // Every cpu number 0..71 appears exactly once as a thread.
  std::set<int> threads;
  for (auto [it, end] = boost::vertices(t.graph()); it != end; ++it)
    if (t.graph()[*it].kind == Topology::Kind::Thread) threads.insert(t.graph()[*it].index);
  CHECK(threads.size() == 72);
  CHECK(*threads.begin() == 0);
  CHECK(*threads.rbegin() == 71);
}

TEST_CASE("topology: Linux numbering puts SMT siblings half the machine apart", "[topology]") {
  const Topology t(2, 18, 2);
  // cpu 0 and cpu 36: the two threads of core 0 on socket 0.
  CHECK(t.socket_of(0) == 0);
  CHECK(t.core_of(0) == 0);
  CHECK(t.socket_of(36) == 0);
  CHECK(t.core_of(36) == 0);
  CHECK(t.siblings(0) == std::vector<int>{36});
  CHECK(t.siblings(36) == std::vector<int>{0});
  // cpu 1 is another core on socket 0, not a sibling of cpu 0.
  CHECK(t.core_of(1) == 1);
  CHECK(t.socket_of(1) == 0);
  // cpu 17 is the last core of socket 0; cpu 18 is the first core of socket 1.
  CHECK(t.socket_of(17) == 0);
  CHECK(t.socket_of(18) == 1);
  CHECK(t.core_of(18) == 18);  // machine-wide core number
  CHECK(t.siblings(18) == std::vector<int>{54});
  CHECK(t.socket_of(54) == 1);
  CHECK(t.socket_of(71) == 1);
  CHECK(t.siblings(71) == std::vector<int>{35});
  // The whole rule: cpu = thread * 36 + socket * 18 + core.
  for (int cpu = 0; cpu < 72; ++cpu) {
    INFO("cpu " << cpu);
    CHECK(t.socket_of(cpu) == (cpu % 36) / 18);
    CHECK(t.core_of(cpu) == cpu % 36);
    CHECK(t.siblings(cpu) == std::vector<int>{(cpu + 36) % 72});
  }
}

TEST_CASE("topology: siblings() excludes the cpu itself", "[topology]") {
  const Topology t(1, 4, 4);  // 4 threads per core: cpu = thread * 4 + core
  CHECK(t.cpus() == 16);
  for (int cpu = 0; cpu < 16; ++cpu) {
    auto s = t.siblings(cpu);
    INFO("cpu " << cpu);
    CHECK(s.size() == 3);
    CHECK(std::find(s.begin(), s.end(), cpu) == s.end());
    for (int sib : s) CHECK(t.core_of(sib) == t.core_of(cpu));
  }
  auto s5 = t.siblings(5);
  std::sort(s5.begin(), s5.end());
  CHECK(s5 == std::vector<int>{1, 9, 13});
}

TEST_CASE("topology: one thread per core has no SMT siblings", "[topology]") {
  const Topology t(2, 8, 1);
  CHECK(t.cpus() == 16);
  for (int cpu = 0; cpu < 16; ++cpu) {
    INFO("cpu " << cpu);
    CHECK(t.siblings(cpu).empty());
    CHECK(t.core_of(cpu) == cpu);
    CHECK(t.socket_of(cpu) == cpu / 8);
  }
}

TEST_CASE("topology: a cpu number out of range throws", "[topology]") {
  const Topology t(2, 18, 2);
  CHECK_THROWS_AS(t.socket_of(72), std::out_of_range);
  CHECK_THROWS_AS(t.core_of(-1), std::out_of_range);
  CHECK_THROWS_AS(t.siblings(100), std::out_of_range);
}

TEST_CASE("topology: LLC span is the socket, SMT span the core, both ascending", "[topology]") {
  const Topology t(2, 2, 2);  // cpu = thread * 4 + socket * 2 + core
  CHECK(t.smt_span(0) == std::vector<int>{0, 4});
  CHECK(t.smt_span(4) == std::vector<int>{0, 4});
  CHECK(t.llc_span(0) == std::vector<int>{0, 1, 4, 5});
  CHECK(t.llc_span(7) == std::vector<int>{2, 3, 6, 7});
  CHECK(t.shares_llc(1, 5));
  CHECK_FALSE(t.shares_llc(1, 2));
  CHECK(t.threads_per_core() == 2);
  CHECK_THROWS_AS(t.llc_span(8), std::out_of_range);
}
