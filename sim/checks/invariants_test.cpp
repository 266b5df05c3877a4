// The run-time invariants (sim/core/invariants.h, sim/checks/invariant_observer.h) catch the
// impossible trajectories they describe, and stay quiet on a sound one.
#include "sim/checks/invariant_observer.h"

#include <catch2/catch.hpp>

#include "sim/checks/fingerprint.h"

using kvmsim::ExitReason;
using kvmsim::FingerprintObserver;
using kvmsim::InvariantObserver;
using kvmsim::Stage;

TEST_CASE("invariants: a sound trajectory passes, an impossible one is reported once",
          "[invariants]") {
  InvariantObserver ok;
  ok.on_segment(0, Stage::Guest, 0, 100);
  ok.on_segment(0, Stage::Guest, 100, 250);
  ok.on_vmentry(0, 3, 10);
  ok.on_vmexit(0, 3, ExitReason::MSR_WRITE, 20);
  ok.on_timer_armed(0, 3, 500);
  ok.on_timer_armed(0, 3, 900);
  ok.on_latency_sample(0, 3, 500, 510, 4);
  ok.on_latency_sample(0, 3, 900, 905, 2);
  REQUIRE(kvmsim::invariant_violation().empty());

  InvariantObserver bad;
  bad.on_vmentry(1, 2, 10);
  bad.on_vmexit(1, 5, ExitReason::HLT, 20);  // exits on another pCPU than it entered on
  const std::string& first = kvmsim::invariant_violation();
  CHECK(first.find("in vcpu1: VM exit (HLT) on pcpu5, but the vCPU entered on pcpu2") !=
        std::string::npos);
  bad.on_segment(0, Stage::Guest, 100, 50);  // a second violation keeps the first message
  CHECK(kvmsim::invariant_violation() == first);
}

TEST_CASE("fingerprint: every event counts, order included, and fits a double exactly",
          "[fingerprint]") {
  auto run = [](bool swap, std::uint64_t t) {
    FingerprintObserver f;
    f.on_segment(0, Stage::Guest, 0, 100);
    if (swap) {
      f.on_vmexit(0, 0, ExitReason::MSR_WRITE, t);
      f.on_vmentry(0, 0, 150);
    } else {
      f.on_vmentry(0, 0, 150);
      f.on_vmexit(0, 0, ExitReason::MSR_WRITE, t);
    }
    return f.value();
  };
  CHECK(run(false, 120) == run(false, 120));
  CHECK(run(false, 120) != run(true, 120));
  CHECK(run(false, 120) != run(false, 121));
  CHECK(run(false, 120) < (std::uint64_t{1} << 53));
  CHECK(FingerprintObserver().value() != run(false, 120));
}
