// The observer hub (sim/core/observer.h) calls an observer only for the
// hooks it overrides: after the first call of a hook it does not use (the
// base class's empty default), the observer leaves that hook's list, and it
// keeps getting every call of the hooks it does use, in the order added.
#include "sim/core/observers.h"

#include <vector>

#include <catch2/catch.hpp>

using kvmsim::ExitReason;
using kvmsim::Hook;
using kvmsim::ModelObserver;
using kvmsim::Observers;
using kvmsim::Stage;
using kvmsim::Tsc;

namespace {
struct SegmentsOnly : ModelObserver {
  std::vector<Tsc> ends;
  void on_segment(int, Stage, Tsc, Tsc end) override { ends.push_back(end); }
};
struct ExitsOnly : ModelObserver {
  int exits = 0;
  void on_vmexit(int, int, ExitReason, Tsc) override { ++exits; }
};
struct AcceptIrq : ModelObserver {
  int irqs = 0;
  void on_apic_accept_irq(int, std::uint8_t, Tsc) override { ++irqs; }
};
}  // namespace

TEST_CASE("observers: an unused hook is pruned after its first call, used hooks keep every call",
          "[observer]") {
  Observers hub;
  SegmentsOnly seg;
  ExitsOnly ex;
  hub.add(&seg);
  hub.add(&ex);
  CHECK(hub.subscribers(Hook::Segment) == 2);
  CHECK(hub.subscribers(Hook::Vmexit) == 2);
  for (Tsc t = 1; t <= 3; ++t) {
    hub.segment(0, Stage::Guest, t - 1, t);
    hub.vmexit(0, 0, ExitReason::HLT, t);
  }
  CHECK(seg.ends == std::vector<Tsc>{1, 2, 3});
  CHECK(ex.exits == 3);
  CHECK(hub.subscribers(Hook::Segment) == 1);  // ex left the segment list
  CHECK(hub.subscribers(Hook::Vmexit) == 1);   // seg left the exit list
  CHECK(hub.subscribers(Hook::Vmentry) == 2);  // not called yet: nothing pruned
  hub.vmentry(0, 0, 4);
  CHECK(hub.subscribers(Hook::Vmentry) == 0);
  CHECK_FALSE(hub.empty());
}

TEST_CASE(
    "observers: the core observers get their hooks directly, on_apic_accept_ipi still reaches "
    "on_apic_accept_irq",
    "[observer]") {
  Observers hub;
  kvmsim::ExitStats stats;
  kvmsim::RunGuard guard, fresh;
  AcceptIrq irq;
  hub.set_core(&stats, nullptr, &guard);
  CHECK_FALSE(hub.empty());
  CHECK(hub.subscribers(Hook::Vmexit) == 0);  // not in the lists
  hub.add(&irq);
  hub.vmexit(0, 0, ExitReason::HLT, 10);
  hub.vmentry(0, 0, 25);
  CHECK(stats.reason(ExitReason::HLT).count == 1);
  CHECK(stats.reason(ExitReason::HLT).total == 15);
  CHECK(guard.fingerprint() != fresh.fingerprint());
  const auto before = guard.fingerprint();
  hub.apic_accept_ipi(1, 0, 0xec, 30);  // RunGuard overrides on_apic_accept_irq only
  hub.apic_accept_ipi(1, 0, 0xec, 31);
  hub.apic_accept_irq(0, 0xef, 32);
  CHECK(guard.fingerprint() != before);
  CHECK(irq.irqs == 3);
}

TEST_CASE("observers: LatencyBreakdown sums only the stages seen after the deadline",
          "[observer]") {
  kvmsim::LatencyBreakdown b;
  b.on_timer_armed(0, 0, 100);
  b.on_segment(0, Stage::Guest, 50, 120);    // 20 after the deadline
  b.on_segment(0, Stage::VmExit, 120, 150);  // 30
  b.on_latency_sample(0, 0, 100, 150, 0);
  b.on_timer_armed(0, 0, 1000);
  b.on_segment(0, Stage::VmExit, 1000, 1010);  // 10: the first window's 30 is not carried over
  b.on_latency_sample(0, 0, 1000, 1010, 0);
  CHECK(b.samples() == 2);
  CHECK(b.mean_cycles(Stage::Guest) == Approx(10.0));
  CHECK(b.mean_cycles(Stage::VmExit) == Approx(20.0));
}
