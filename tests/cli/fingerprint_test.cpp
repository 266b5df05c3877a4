// sim.fingerprint pinned for the calibration scenarios (T1, T2, T3 and the
// stock-guest fastpath run), both sides of each switch: any change in the
// model's behaviour, even one that leaves the headline numbers alone, changes
// a fingerprint here. After an intended model change, update the values (and
// say why in the commit); the T1/T2/T3 tolerance tests say whether the new
// behaviour is still calibrated.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {
std::uint64_t fingerprint(const std::string& name, const std::string& args) {
  const auto m = run_metrics(name, args);
  return static_cast<std::uint64_t>(m.at("sim.fingerprint").get<double>());
}
}  // namespace

TEST_CASE("sim.fingerprint is pinned for the calibration scenarios", "[cli][fingerprint]") {
  const struct {
    const char* args;
    std::uint64_t fingerprint;
  } pinned[] = {
      {"scenarios/cyclictest_pinned.yaml --set cyclictest.loops=20000", 176060954133113},
      {"scenarios/cyclictest_pinned.yaml --set cyclictest.loops=20000 --set "
       "kvm.enable_hv_timer=false",
       4359487507879848},
      {"scenarios/tscdeadline_latency.yaml", 5044736680937457},
      {"scenarios/tscdeadline_latency.yaml --set kvm.hv_timer_advance=false", 5963444476703501},
      {"scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=67108864", 3951824705109539},
      {"scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=67108864 --set "
       "kvm.exit_fastpath=true",
       4700155234575172},
      {"scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=5000", 5713984186976447},
  };
  int i = 0;
  for (const auto& p : pinned) {
    INFO(p.args);
    CHECK(fingerprint("fp" + std::to_string(i++), p.args) == p.fingerprint);
  }
}

TEST_CASE("sim.fingerprint: same seed same value, another seed or an observer-only option",
          "[cli][fingerprint]") {
  const std::string t2 = "scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=500";
  const auto a = fingerprint("fp-a", t2 + " --seed 3");
  CHECK(fingerprint("fp-b", t2 + " --seed 3") == a);
  CHECK(fingerprint("fp-c", t2 + " --seed 4") != a);
  // Observers (trace, views) do not change the trajectory.
  const auto d = out_dir("fp-d");
  CHECK(fingerprint("fp-e", t2 + " --seed 3 --trace " + (d / "t.txt").string() + " --vcd " +
                                (d / "w.vcd").string()) == a);
}

// The host scheduler's runs: vCPU threads sharing pCPUs with each other and
// with host tasks (wake-up placement and preemption, the buddies of PLE's
// yield_to, new-idle and periodic balancing, migrations). Pinned so that a
// restructuring of sim/sched (e.g. group scheduling, which must leave the
// flat default alone) shows any change in a decision, not only in a headline
// figure. After an intended scheduler change, update the values and say why.
TEST_CASE("sim.fingerprint is pinned for runs where vCPU threads share pCPUs",
          "[cli][fingerprint][sched]") {
  const struct {
    const char* args;
    std::uint64_t fingerprint;
  } pinned[] = {
      {"scenarios/overcommit_busy.yaml --set sim.max_simulated_s=1", 4867955827747447},
      {"scenarios/overcommit_busy.yaml --set sim.max_simulated_s=1 --set "
       "host.sched_load_balance=true",
       813996487132848},
      {"scenarios/ebizzy_light_overcommit.yaml --set sim.max_simulated_s=0.05", 7415796286361828},
      {"scenarios/ebizzy_overcommit.yaml --set vm.vcpus=16 --set sim.max_simulated_s=0.05",
       6475193712996855},
      {"scenarios/ebizzy_multi_vm.yaml --set vm.count=2 --set sim.max_simulated_s=0.02",
       569576195689411},
      {"scenarios/ebizzy_pvspinlock_revert.yaml --set vm.count=2 --set sim.max_simulated_s=0.01",
       4203150866716519},
  };
  int i = 0;
  for (const auto& p : pinned) {
    INFO(p.args);
    CHECK(fingerprint("fp-sched" + std::to_string(i++), p.args) == p.fingerprint);
  }
}
