// Unit tests of the vCPU's mechanisms and the pCPU dispatcher on a model
// built in this process (tests/support/model_fixture.h): each test case runs
// one short scenario and checks the objects' own counters, and that the
// counters each mechanism reports (vcpu_metrics.h) are the sums of them.
#include <catch2/catch.hpp>

#include <cstdint>

#include "sim/sched/host.h"
#include "sim/vmx/vcpu.h"
#include "tests/support/model_fixture.h"

using namespace kvmsim;
using kvmsim::test::InProcessModel;

namespace {
double metric(const RunResult& r, const char* key) {
  const auto it = r.metrics.find(key);
  REQUIRE(it != r.metrics.end());
  return it->second;
}
}  // namespace

TEST_CASE("KvmHalt: a ping-pong with halt polling polls every halt and most polls succeed",
          "[model][halt]") {
  InProcessModel m("scenarios/ipi_pingpong.yaml",
                   {"ipi_pingpong.rounds=300", "kvm.halt_poll_ns=200000"});
  const RunResult& r = m.run();
  REQUIRE(r.completed);
  std::uint64_t attempted = 0, successful = 0, halts = 0, grows = 0;
  for (const Vcpu* v : m.system().vcpus()) {
    const HaltPollStats& hp = v->halt_poll_stats();
    const HaltStats& hs = v->halt().stats();
    CHECK(hp.successful <= hp.attempted);
    CHECK(hp.attempted <= hs.halts);
    CHECK(v->halt_poll_ns() <= 200000U);  // the window never exceeds halt_poll_ns
    attempted += hp.attempted;
    successful += hp.successful;
    halts += hs.halts;
    grows += hp.grows;
  }
  // A hop is far shorter than the window: after the first grow every halt
  // polls, and the peer's IPI ends the poll.
  CHECK(grows >= 1);
  CHECK(attempted >= halts - 2 * grows - 2);
  CHECK(successful * 10 >= attempted * 9);
  CHECK(metric(r, "halt_poll.attempted") == static_cast<double>(attempted));
  CHECK(metric(r, "halt_poll.successful") == static_cast<double>(successful));
  CHECK(metric(r, "vcpu.halts") == static_cast<double>(halts));
}

TEST_CASE("KvmHalt: without halt polling every halt that finds nothing pending sleeps",
          "[model][halt]") {
  InProcessModel m("scenarios/ipi_pingpong.yaml",
                   {"ipi_pingpong.rounds=300", "kvm.halt_poll_ns=0"});
  const RunResult& r = m.run();
  REQUIRE(r.completed);
  std::uint64_t halts = 0, blocks = 0;
  for (const Vcpu* v : m.system().vcpus()) {
    CHECK(v->halt_poll_stats().attempted == 0);
    CHECK(v->halt().stats().blocks <= v->halt().stats().halts);
    halts += v->halt().stats().halts;
    blocks += v->halt().stats().blocks;
  }
  // Each hop halts the sender's vCPU until the reply comes: about one halt
  // per hop on each side, nearly all of which sleep.
  CHECK(halts >= 2 * 300 - 4);
  CHECK(blocks * 10 >= halts * 9);
  CHECK(metric(r, "vcpu.blocks") == static_cast<double>(blocks));
}

TEST_CASE("PleWindow and DirectedYield: over-committed spinners exit on PAUSE and yield",
          "[model][ple]") {
  InProcessModel m("scenarios/ebizzy_light_overcommit.yaml", {"sim.max_simulated_s=0.1"});
  const RunResult& r = m.run();
  std::uint64_t pause_exits = 0, yields = 0;
  for (const Vcpu* v : m.system().vcpus()) {
    const PleStats& ple = v->ple().stats();
    const DirectedYieldStats& dy = v->directed_yield().stats();
    CHECK(ple.ple_window_peak <= 0x3fffffffU);
    // kvm_vcpu_on_spin() yields at most once per PAUSE exit.
    CHECK(dy.directed_yields <= ple.pause_exits);
    CHECK(dy.directed_yields_woken <= dy.directed_yields);
    pause_exits += ple.pause_exits;
    yields += dy.directed_yields;
  }
  CHECK(pause_exits > 0);
  CHECK(yields > 0);
  CHECK(metric(r, "vcpu.pause_exits") == static_cast<double>(pause_exits));
  CHECK(metric(r, "vcpu.directed_yields") == static_cast<double>(yields));
}

TEST_CASE("Vcpu run loop: exits and entries alternate, and the fastpath re-enters the guest",
          "[model][vcpu]") {
  InProcessModel m("scenarios/vmexit_tscdeadline.yaml",
                   {"vmexit.goal_cycles=1048576", "kvm.exit_fastpath=true"});
  const RunResult& r = m.run();
  REQUIRE(r.completed);
  const Vcpu& v = *m.system().vcpus().at(0);
  const VcpuStats& s = v.stats();
  CHECK(s.exits > 1000);
  // The vCPU ends either in the guest (one entry more) or in the host.
  CHECK((s.entries == s.exits || s.entries == s.exits + 1));
  // v5.8 fastpath: the TSC-deadline WRMSR and the preemption timer re-enter
  // the guest without the slow path (REENTER_GUEST).
  CHECK(s.fastpath_reenter > 0);
  CHECK(s.fastpath_reenter + s.fastpath_exit_handled <= s.exits);
  CHECK(metric(r, "vmx.fastpath.reenter_guest") == static_cast<double>(s.fastpath_reenter));
}

TEST_CASE("Pcpu dispatcher: run-ahead takes several model steps per SystemC activation",
          "[model][pcpu]") {
  InProcessModel m("scenarios/vmexit_ipi.yaml", {"vmexit.goal_cycles=1048576", "vm.pinning=[2,2]"});
  const RunResult& r = m.run();
  REQUIRE(r.completed);
  const SimContext& ctx = m.system().ctx();
  CHECK(ctx.run_ahead.enabled);
  CHECK(ctx.run_ahead.activations > 0);
  CHECK(ctx.run_ahead.activations < ctx.events);  // steps ran ahead inline
  CHECK(ctx.run_ahead.ties == 0);
  // Two vCPU threads share pCPU 2: the host scheduler switches between them.
  CHECK(m.system().host().scheduler().counters().context_switches > 0);
  CHECK(metric(r, "sim.events") == static_cast<double>(ctx.events));
}
