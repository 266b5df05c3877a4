// Unit tests of the guest kernel's subsystems (sim/guest/kernel: GuestTick,
// GuestClockevent, GuestIrq, GuestIdle) on a model built in this process
// (tests/support/model_fixture.h): an idle Linux guest (the T5b scenario)
// runs for a short time and each subsystem's own counters are checked
// against what the kernel of that configuration does.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/guest/kernel/guest_kernel.h"
#include "sim/vmx/vcpu.h"
#include "tests/support/model_fixture.h"

using namespace kvmsim;
using kvmsim::test::InProcessModel;

namespace {

// Runs the model and returns its one guest kernel.
const GuestKernel& run_idle_guest(InProcessModel& m) {
  const RunResult& r = m.run();
  REQUIRE(r.completed);
  REQUIRE(m.system().vcpus().size() == 1);
  const auto* k = dynamic_cast<const GuestKernel*>(m.system().vcpus().front()->guest());
  REQUIRE(k != nullptr);
  return *k;
}

// The idle guest of the T5b scenario for one simulated second, with `extra`.
std::vector<std::string> idle_guest(const std::vector<std::string>& extra) {
  std::vector<std::string> o{"sim.max_simulated_s=1", "kvm.halt_poll_ns=0"};
  o.insert(o.end(), extra.begin(), extra.end());
  return o;
}

// The same NO_HZ_IDLE guest with no watchdog: once the tick stops nothing is
// queued, and the clockevent shuts down as `shutdown_era` says.
std::vector<std::string> timerless_guest(const std::string& shutdown_era) {
  return idle_guest({"guest.nohz=true", "guest.watchdog_s=0", "guest.clocksource_watchdog_ms=0",
                     "guest.clockevent_shutdown=" + shutdown_era});
}

}  // namespace

TEST_CASE(
    "GuestTick: with nohz=off the idle guest's tick fires HZ times a second and never stops, and "
    "its "
    "timers never fall due during hrtimer_interrupt() (no -ETIME retry)",
    "[model][guest_kernel]") {
  InProcessModel m("scenarios/halt_poll_idle.yaml", idle_guest({"guest.nohz=false"}));
  const GuestKernel& k = run_idle_guest(m);
  const GuestTick::Stats& t = k.tick().stats();
  CHECK(t.ticks >= 249);  // 250 Hz over 1 s, from a random boot phase
  CHECK(t.ticks <= 251);
  CHECK(t.starts == 1);
  CHECK(t.stops == 0);
  // Every tick wakes the halted vCPU: one HLT and one timer wake-up per tick
  // (plus the watchdogs, which fire on their own timers).
  CHECK(k.idle_stats().timer_wakeups >= t.ticks);
  CHECK(k.idle_stats().hlt >= t.ticks);
  // Its own timers cost ~1 us and fall due milliseconds apart: no pass of
  // hrtimer_interrupt() ends after the next expiry.
  CHECK(k.clockevent().stats().retries == 0);
  CHECK(k.irq().stats().interrupts >= k.tick().stats().ticks);
}

TEST_CASE(
    "GuestTick: NO_HZ_IDLE stops the tick on idle entry, so the idle guest wakes only for "
    "its watchdogs",
    "[model][guest_kernel]") {
  InProcessModel m("scenarios/halt_poll_idle.yaml", idle_guest({"guest.nohz=true"}));
  const GuestKernel& k = run_idle_guest(m);
  const GuestTick::Stats& t = k.tick().stats();
  CHECK(t.stops >= 1);
  CHECK(t.stops <= t.starts);
  // The clocksource watchdog (a wheel timer, every 500 ms) needs the tick
  // around its jiffy; the rest of the second the tick is stopped.
  CHECK(t.ticks < 25);
  CHECK(k.idle_stats().timer_wakeups >= 2);
  CHECK(k.idle_stats().timer_wakeups < 25);
  // The watchdogs keep a timer queued: the device is never shut down.
  CHECK(k.clockevent().stats().shutdowns == 0);
}

TEST_CASE("GuestClockevent: with no timer left a v4.11+ guest shuts the device down, once",
          "[model][guest_kernel]") {
  InProcessModel m("scenarios/halt_poll_idle.yaml", timerless_guest("lvtt_tmict"));
  const GuestKernel& k = run_idle_guest(m);
  const GuestClockevent::Stats& c = k.clockevent().stats();
  // Boot arms the tick (one deadline write); the first idle entry stops it
  // and nothing else is queued: lapic_timer_shutdown() masks LVTT, and the
  // tick's deadline, still armed behind the mask, expires without an
  // interrupt (kvm_apic_local_deliver() drops it).
  CHECK(k.tick().stats().stops == 1);
  CHECK(c.programs == 1);
  CHECK(c.shutdowns == 1);
  CHECK(c.rearms == 0);
  CHECK(k.irq().stats().interrupts == 0);
  CHECK(m.system().vcpus().front()->lapic().masked_expiries() == 1);
}

TEST_CASE("GuestClockevent: a guest before v4.11 leaves the stale deadline armed",
          "[model][guest_kernel]") {
  InProcessModel m("scenarios/halt_poll_idle.yaml", timerless_guest("none"));
  const GuestKernel& k = run_idle_guest(m);
  CHECK(k.clockevent().stats().programs == 1);
  CHECK(k.clockevent().stats().shutdowns == 0);
  // The deadline the tick left fires once into the idle guest.
  CHECK(k.irq().stats().interrupts == 1);
  CHECK(m.system().vcpus().front()->lapic().masked_expiries() == 0);
}

TEST_CASE(
    "GuestClockevent: a timer due by the end of hrtimer_interrupt() runs in the same interrupt "
    "(-ETIME retry), three attempts, then the hang path's delay",
    "[model][guest_kernel]") {
  // A tick whose work (2 ms) outlasts its period (1 ms): each pass ends past
  // the next tick, so hrtimer_interrupt() runs the queues again; after its
  // third attempt it takes the hang path: the device is programmed as far
  // past now as the interrupt took (~6 ms), and nothing reprograms it before
  // then. Three ticks per interrupt, one deadline write per interrupt.
  InProcessModel m("scenarios/halt_poll_idle.yaml",
                   idle_guest({"guest.nohz=false", "guest.hz=1000", "cost.guest.tick=2ms",
                               "sim.max_simulated_s=0.1"}));
  const GuestKernel& k = run_idle_guest(m);
  const std::uint64_t irqs = k.irq().stats().interrupts;
  const GuestClockevent::Stats& c = k.clockevent().stats();
  REQUIRE(irqs > 5);
  CHECK(c.retries == 2 * irqs);
  CHECK(c.hangs == irqs);
  CHECK(k.tick().stats().ticks == 3 * irqs);
  // One write per interrupt, plus the boot-time arms (tick and two watchdogs).
  CHECK(c.programs <= irqs + 3);
  // ~6 ms in the handler, then ~6 ms of the hang delay: one interrupt per
  // ~12 ms of the 100 ms (an expired deadline written instead would fire at
  // once: one per ~6 ms).
  CHECK(irqs <= 100 / 12 + 1);
}

TEST_CASE("GuestIrq: before v4.8 every tick raises TIMER_SOFTIRQ, run at irq_exit()",
          "[model][guest_kernel]") {
  InProcessModel m("scenarios/halt_poll_idle.yaml",
                   idle_guest({"guest.nohz=false", "guest.tick_timer_softirq=true"}));
  const GuestKernel& k = run_idle_guest(m);
  CHECK(k.irq().stats().timer_softirqs >= k.tick().stats().ticks);
  CHECK(k.irq().stats().interrupts >= k.irq().stats().timer_softirqs);
}

TEST_CASE("GuestIrq: from v4.8 only a due wheel timer raises TIMER_SOFTIRQ",
          "[model][guest_kernel]") {
  InProcessModel m("scenarios/halt_poll_idle.yaml",
                   idle_guest({"guest.nohz=false", "guest.tick_timer_softirq=false"}));
  const GuestKernel& k = run_idle_guest(m);
  // The clocksource watchdog, every 500 ms, is the only wheel timer.
  CHECK(k.irq().stats().timer_softirqs >= 1);
  CHECK(k.irq().stats().timer_softirqs <= 3);
  CHECK(k.tick().stats().ticks >= 249);
}
