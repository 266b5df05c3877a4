// PleWindow: Pause-Loop Exiting's window over the guest's PAUSE loops
// (vmx.c grow_ple_window() / shrink_ple_window(), v4.16 defaults).
#include "sim/vmx/ple.h"

#include <catch2/catch.hpp>

using kvmsim::kTscNever;
using kvmsim::PleConfig;
using kvmsim::PleWindow;
using kvmsim::Tsc;

namespace {
// PleWindow keeps a reference to its (the VM's) configuration: each test
// keeps the configuration alive for the window's lifetime.
PleConfig v416() {
  PleConfig c;
  c.gap = 128;
  c.window = 4096;
  c.window_grow = 2;
  c.window_shrink = 0;
  c.window_max = 0x3fffffff;
  return c;
}
}  // namespace

TEST_CASE("PLE: an open-ended spin exits after ple_window cycles and each exit doubles the window",
          "[ple]") {
  const PleConfig c = v416();
  PleWindow w(c);
  w.step_begins(true, false);
  CHECK(w.open_spin(1000) == 4096);
  CHECK_FALSE(w.window_ran_out(1000 + 4095));  // the segment ended early (a store)
  w.step_begins(true, false);
  // The same PAUSE loop goes on: the window counts from where it began.
  CHECK(w.open_spin(1000 + 4095) == 1);
  CHECK(w.window_ran_out(1000 + 4096));
  CHECK(w.take_spin_left(1000 + 4096) == kTscNever);  // open-ended: the spin goes on
  w.grow_ple_window();
  CHECK(w.stats().pause_exits == 1);
  CHECK(w.stats().ple_window_grows == 1);
  CHECK(w.stats().ple_window_peak == 8192);
  w.vmexit();  // the count starts again after the entry
  w.step_begins(true, false);
  CHECK(w.open_spin(50000) == 8192);
}

TEST_CASE("PLE: the grown window is capped at ple_window_max and sched_in resets it", "[ple]") {
  PleConfig c = v416();
  c.window_max = 10000;
  PleWindow w(c);
  w.step_begins(true, false);
  (void)w.open_spin(0);  // sets the window to ple_window
  for (int i = 0; i < 5; ++i) w.grow_ple_window();
  CHECK(w.stats().ple_window_peak == 10000);
  CHECK(w.stats().ple_window_grows == 2);  // 4096 -> 8192 -> 10000, then no growth
  w.shrink_ple_window();                   // ple_window_shrink 0: back to ple_window
  w.vmexit();
  w.step_begins(true, false);
  CHECK(w.open_spin(0) == 4096);
}

TEST_CASE("PLE: a shrink divisor below ple_window divides and never goes under it", "[ple]") {
  PleConfig c = v416();
  c.window_shrink = 4;
  PleWindow w(c);
  w.step_begins(true, false);
  (void)w.open_spin(0);
  for (int i = 0; i < 4; ++i) w.grow_ple_window();  // 65536
  w.shrink_ple_window();                            // 16384
  w.vmexit();
  w.step_begins(true, false);
  CHECK(w.open_spin(0) == 16384);
  w.shrink_ple_window();  // 4096
  w.shrink_ple_window();  // 1024 -> kept at ple_window
  w.vmexit();
  w.step_begins(true, false);
  CHECK(w.open_spin(0) == 4096);
}

TEST_CASE("PLE: a bounded spin shorter than the window runs to its end without arming", "[ple]") {
  const PleConfig c = v416();
  PleWindow w(c);
  w.step_begins(true, false);
  CHECK(w.bounded_spin(100, 1000) == 1000);
  CHECK(w.spin_is_finite());
  CHECK_FALSE(w.window_ran_out(1100));
  // An exit in the middle keeps the spin's own end.
  CHECK(w.suspend_remaining(1100, 600) == 500);
}

TEST_CASE("PLE: a bounded spin longer than the window is cut at it and resumes after the exit",
          "[ple]") {
  const PleConfig c = v416();
  PleWindow w(c);
  w.step_begins(true, false);
  CHECK(w.bounded_spin(0, 10000) == 4096);
  CHECK(w.window_ran_out(4096));
  CHECK(w.take_spin_left(4096) == 10000 - 4096);
}

TEST_CASE("PLE: off (ple_gap 0) never arms a window", "[ple]") {
  PleConfig c = v416();
  c.gap = 0;
  PleWindow w(c);
  CHECK_FALSE(w.enabled());
  w.step_begins(true, false);
  CHECK(w.bounded_spin(0, 100000) == 100000);
  CHECK_FALSE(w.window_ran_out(100000));
  w.shrink_ple_window();  // nothing to shrink
  CHECK(w.stats().ple_window_peak == 0);
}

TEST_CASE("PLE: other guest work between two spins starts a new PAUSE loop", "[ple]") {
  const PleConfig c = v416();
  PleWindow w(c);
  w.step_begins(true, false);
  CHECK(w.open_spin(0) == 4096);
  CHECK_FALSE(w.window_ran_out(3000));
  w.step_begins(false, false);  // a non-spinning step
  w.step_begins(true, false);
  CHECK(w.open_spin(3000) == 4096);  // counted from 3000, not from 0
}
