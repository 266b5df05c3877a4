// The tracepoint audit (issue 32, item 4): every tracepoint `kvmsim run
// --trace` writes, counted against the modelled events it stands for, as the
// kernel of the scenario's era counts it. Each test names the kernel call
// site it pins (docs/trace-format.md, "Where each tracepoint fires"); each
// one compares the trace with the run's own counters or with other
// tracepoints of the same run, so a tracepoint fired twice, at the wrong
// place or not at all makes it fail.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "sim/trace/trace_parse.h"
#include "sim/vmx/exit_reason.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/traced_run.h"

using namespace kvmsim::test;
namespace tr = kvmsim::trace;

namespace {

using Ev = TracedEvent;
using Run = TracedRun;

// One VM exit of a thread up to its next entry: the events the vCPU thread
// traced in between (the exit's handling, and a halt's block and wake-up).
struct ExitSpan {
  std::string reason;
  std::vector<const Ev*> inside;
  bool closed = false;  // the next kvm_entry came (not the end of the run)
};

std::vector<ExitSpan> exit_spans(const Run& run) {
  std::vector<ExitSpan> spans;
  std::map<int, std::size_t> open;  // pid -> index in spans
  for (const Ev& e : run.events) {
    if (const auto* x = std::get_if<tr::KvmExit>(&e.data)) {
      open[e.pid] = spans.size();
      spans.push_back({x->reason, {}, false});
      continue;
    }
    auto it = open.find(e.pid);
    if (it == open.end()) continue;
    if (e.event == "kvm_entry") {
      spans[it->second].closed = true;
      open.erase(it);
      continue;
    }
    spans[it->second].inside.push_back(&e);
  }
  return spans;
}

std::size_t count_in(const ExitSpan& s, const std::string& event) {
  std::size_t n = 0;
  for (const Ev* e : s.inside) n += e->event == event;
  return n;
}

// How many `event` lines a thread wrote outside its exit spans (before its
// first kvm_exit, or between a kvm_entry and its next kvm_exit).
std::size_t count_outside_exit_spans(const Run& run, const std::string& event) {
  std::size_t outside = 0;
  std::map<int, bool> in_exit;
  for (const Ev& e : run.events) {
    if (e.event == "kvm_exit") in_exit[e.pid] = true;
    if (e.event == "kvm_entry") in_exit[e.pid] = false;
    if (e.event == event && !in_exit[e.pid]) ++outside;
  }
  return outside;
}

// How many events that `is_target` picks follow, on their thread, an event
// that `ok(prev, e)` rejects (prev: the thread's previous event, null for
// its first).
template <class Target, class Ok>
std::size_t count_not_after(const Run& run, Target is_target, Ok ok) {
  std::map<int, const Ev*> last;  // pid -> the thread's previous event
  std::size_t bad = 0;
  for (const Ev& e : run.events) {
    if (is_target(e)) bad += ok(last[e.pid], e) ? 0 : 1;
    last[e.pid] = &e;
  }
  return bad;
}

// Short runs of the shipped scenarios.
const std::string kTscdeadline =
    "scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=300";
const std::string kPingpong = "scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=200";
// kvm-unit-tests' IPI test without APICv: its EOI writes trap.
const std::string kIpiNoApicvEoi =
    "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=65536 --set platform.apicv=false";
// An idle NO_HZ guest with no watchdog timer: once the tick stops nothing is
// queued and lapic_timer_shutdown() masks LVTT and zeroes the TSC deadline
// and TMICT; the next timer unmasks LVTT.
const std::string kTimerlessGuest =
    "scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=0.2 --set kvm.halt_poll_ns=0 "
    "--set guest.watchdog_s=0 --set guest.clocksource_watchdog_ms=0 "
    "--set guest.clockevent_shutdown=lvtt_deadline0";
const std::string kCyclictest = "scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=300";
const std::string kEbizzy =
    "scenarios/ebizzy_overcommit.yaml --set sim.max_simulated_s=0.05 --allow-partial";
const std::string kPvspin =
    "scenarios/ebizzy_pvspinlock_revert.yaml --set sim.max_simulated_s=0.02 --allow-partial";

}  // namespace

TEST_CASE(
    "tracepoint kvm_exit: one per VM exit, by reason as summary.json counts them "
    "(vmx_handle_exit v4.x, vmx_vcpu_run v5.8)",
    "[cli][trace][tracepoint]") {
  for (const std::string& args : {kTscdeadline, kPingpong, kCyclictest}) {
    INFO(args);
    const Run run = traced_run("exit", args);
    // summary.json counts an exit when its handling ends (the service
    // time); an exit still being handled when the run stops is only traced.
    std::map<std::string, double> by_reason, unfinished;
    for (const ExitSpan& s : exit_spans(run)) {
      by_reason[s.reason] += 1;
      if (!s.closed) unfinished[s.reason] += 1;
    }
    double total = 0;
    for (auto it = run.metrics.begin(); it != run.metrics.end(); ++it) {
      const std::string k = it.key();
      if (k.rfind("exits.", 0) != 0 || k.size() < 12 || k.substr(k.size() - 6) != ".count")
        continue;
      const std::string reason = k.substr(6, k.size() - 12);
      INFO(reason);
      CHECK(by_reason[reason] == it.value().get<double>() + unfinished[reason]);
      total += it.value().get<double>() + unfinished[reason];
    }
    CHECK(static_cast<double>(run.count("kvm_exit")) == total);
    CHECK(total > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_entry: one per VM entry, alternating with kvm_exit on each vCPU "
    "thread (vcpu_enter_guest before kvm_x86_ops->run, no fastpath re-entry)",
    "[cli][trace][tracepoint]") {
  for (const std::string& args : {kPingpong, kCyclictest}) {
    INFO(args);
    const Run run = traced_run("entry", args);
    std::map<int, int> in_guest;  // pid -> 1 after kvm_entry, 0 after kvm_exit
    std::size_t out_of_order = 0;
    for (const Ev& e : run.events) {
      if (e.event == "kvm_entry") {
        out_of_order += in_guest[e.pid] == 1;  // two entries without an exit
        in_guest[e.pid] = 1;
      } else if (e.event == "kvm_exit") {
        out_of_order += in_guest.count(e.pid) == 0 || in_guest[e.pid] == 0;
        in_guest[e.pid] = 0;
      }
    }
    CHECK(out_of_order == 0);
    // The run ends with each vCPU either in the guest (one entry more) or not.
    const auto entries = run.count("kvm_entry");
    const auto exits = run.count("kvm_exit");
    CHECK(entries >= exits);
    CHECK(entries <= exits + in_guest.size());
    CHECK(static_cast<double>(exits) > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_entry: none for a fastpath re-entry before v5.11 (trace_kvm_entry in "
    "vcpu_enter_guest, the v5.8 loop inside vmx_vcpu_run), one per pass from v5.11",
    "[cli][trace][tracepoint]") {
  const std::string fast = kCyclictest + " --set kvm.exit_fastpath=true";
  // Two kvm_exit lines of one thread with no kvm_entry between them.
  auto back_to_back = [](const Run& run) {
    std::map<int, bool> exited;
    std::size_t n = 0;
    for (const Ev& e : run.events) {
      if (e.event == "kvm_exit") {
        n += exited[e.pid];
        exited[e.pid] = true;
      } else if (e.event == "kvm_entry") {
        exited[e.pid] = false;
      }
    }
    return n;
  };
  SECTION("v5.8 (the scenario's host)") {
    const Run run = traced_run("entry-fast58", fast);
    const double reenter = run.metric("vmx.fastpath.reenter_guest");
    REQUIRE(reenter > 0);
    // The run may end inside a re-entered pass (one vCPU here).
    CHECK(static_cast<double>(back_to_back(run)) <= reenter);
    CHECK(static_cast<double>(back_to_back(run)) >= reenter - 1);
    const auto entries = static_cast<double>(run.count("kvm_entry"));
    const auto exits = static_cast<double>(run.count("kvm_exit"));
    CHECK(entries >= exits - reenter);
    CHECK(entries <= exits - reenter + 1);
  }
  SECTION("v5.11") {
    const Run run = traced_run("entry-fast511", fast + " --set host.kernel=5.11");
    REQUIRE(run.metric("vmx.fastpath.reenter_guest") > 0);
    CHECK(back_to_back(run) == 0);
  }
}

TEST_CASE(
    "tracepoint kvm_msr: one msr_write per WRMSR exit, between the exit and the next "
    "entry (kvm_emulate_wrmsr and handle_fastpath_set_msr_irqoff v5.8)",
    "[cli][trace][tracepoint]") {
  for (const std::string& args : {kPingpong, kPingpong + " --set kvm.exit_fastpath=true",
                                  kTscdeadline, kCyclictest + " --set kvm.exit_fastpath=true"}) {
    INFO(args);
    const Run run = traced_run("msr", args);
    std::size_t wrmsr_exits = 0, msr_in_wrmsr = 0, misplaced = 0, twice = 0;
    for (const ExitSpan& s : exit_spans(run)) {
      const std::size_t n = count_in(s, "kvm_msr");
      if (s.reason == "MSR_WRITE") {
        ++wrmsr_exits;
        msr_in_wrmsr += n;
        twice += n > 1;
        // The last exit of a run may end before its handler ran.
        if (s.closed) CHECK(n == 1);
      } else {
        misplaced += n;
      }
    }
    CHECK(misplaced == 0);
    CHECK(twice == 0);
    CHECK(msr_in_wrmsr == run.count("kvm_msr"));
    // The fastpath runs: the ICR (EXIT_HANDLED) and TSC-deadline (REENTER_GUEST) paths.
    if (args.find("exit_fastpath=true") != std::string::npos)
      CHECK(run.metric("vmx.fastpath.exit_handled") + run.metric("vmx.fastpath.reenter_guest") >=
            static_cast<double>(wrmsr_exits) - 2);
    CHECK(run.count("kvm_msr") + 1 >= wrmsr_exits);
    CHECK(run.count("kvm_msr") <= wrmsr_exits);
    CHECK(wrmsr_exits > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_hv_timer_state: start_hv_timer on each TSC-deadline write and "
    "start_sw_timer at vmx_pre_block (lapic.c v4.14+)",
    "[cli][trace][tracepoint]") {
  SECTION("a busy-waiting guest: one hv_timer 1 per armed deadline write, nothing else") {
    const Run run = traced_run("hv-busy", kTscdeadline);
    const auto deadline_writes = run.count_if<tr::KvmMsr>(
        [](const tr::KvmMsr& m) { return m.write && m.msr == 0x6e0 && m.data != 0; });
    CHECK(run.count("kvm_hv_timer_state") == deadline_writes);
    CHECK(run.count_if<tr::KvmHvTimerState>(
              [](const tr::KvmHvTimerState& s) { return s.hv_timer == 0; }) == 0);
    CHECK(deadline_writes > 0);
  }
  SECTION("a halting guest: hv_timer 0 exactly when vcpu_block() ran pre_block") {
    const Run run = traced_run("hv-halt", kCyclictest);
    std::size_t halts = 0, off_in_halts = 0, off_elsewhere = 0;
    for (const ExitSpan& s : exit_spans(run)) {
      std::size_t off = 0;
      for (const Ev* e : s.inside)
        if (const auto* h = std::get_if<tr::KvmHvTimerState>(&e->data)) off += h->hv_timer == 0;
      if (s.reason == "HLT") {
        ++halts;
        off_in_halts += off;
        CHECK(off <= 1);
      } else {
        off_elsewhere += off;
      }
    }
    CHECK(off_elsewhere == 0);
    // The guest re-arms before every halt here, so every halt blocks with
    // the preemption timer in use: one switch to the hrtimer each.
    CHECK(static_cast<double>(off_in_halts) == run.metric("vcpu.blocks"));
    CHECK(halts > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_wait_lapic_expire: once per early-injected timer interrupt with an "
    "advance, next to the entry (vmx_vcpu_run v5.3+, vcpu_enter_guest before)",
    "[cli][trace][tracepoint]") {
  for (const std::string& args : {kTscdeadline, kCyclictest + " --set host.kernel=5.19"}) {
    INFO(args);
    const Run run = traced_run("wait", args);
    const std::size_t waits = run.count("kvm_wait_lapic_expire");
    CHECK(static_cast<double>(waits) == run.metric("lapic.wait_lapic_expire.calls"));
    // One per LAPIC timer interrupt accepted (vector 236, the guest's LOCAL_TIMER_VECTOR).
    CHECK(waits == run.count_if<tr::KvmApicAcceptIrq>(
                       [](const tr::KvmApicAcceptIrq& a) { return a.vec == 236; }));
    // Next to the thread's VM entry, nothing of that thread between them:
    // kvmsim traces it just before kvm_entry (the entry is stamped at the
    // world switch, after the busy-wait); the kernel traces kvm_entry first
    // (trace_kvm_entry() precedes the busy-wait in every era).
    std::map<int, const Ev*> last;  // pid -> the thread's previous event
    std::map<int, bool> waiting;
    std::size_t apart = 0;
    for (const Ev& e : run.events) {
      if (waiting[e.pid] && e.event != "kvm_entry") ++apart;
      if (e.event == "kvm_wait_lapic_expire")
        waiting[e.pid] = !(last[e.pid] && last[e.pid]->event == "kvm_entry");
      else
        waiting[e.pid] = false;
      last[e.pid] = &e;
    }
    CHECK(apart == 0);
    CHECK(waits > 0);
  }
  SECTION("v5.3-v5.18: once per vcpu_enter_guest after the exit, the last wait's delta") {
    // The 5.8 host of the scenario: vcpu_enter_guest() traces
    // advance_expire_delta after the world switch, before handle_exit().
    for (const std::string& args : {kCyclictest, kCyclictest + " --set kvm.exit_fastpath=true"}) {
      INFO(args);
      const Run run = traced_run("wait58", args);
      const std::size_t waits = run.count("kvm_wait_lapic_expire");
      const double calls = run.metric("lapic.wait_lapic_expire.calls");
      const double reenter = run.metric("vmx.fastpath.reenter_guest");
      REQUIRE(waits > 0);
      // Without re-entries one wait per call; a re-entry's wait is folded
      // into its call's one line.
      CHECK(static_cast<double>(waits) <= calls);
      CHECK(static_cast<double>(waits) >= calls - reenter);
      if (reenter == 0) CHECK(static_cast<double>(waits) == calls);
      // Each inside an exit span (after the thread's kvm_exit, before its
      // next kvm_entry), at most one per span.
      std::size_t twice = 0;
      for (const ExitSpan& s : exit_spans(run)) twice += count_in(s, "kvm_wait_lapic_expire") > 1;
      CHECK(count_outside_exit_spans(run, "kvm_wait_lapic_expire") == 0);
      CHECK(twice == 0);
    }
  }
  SECTION("no advance, no busy-wait and no event") {
    const Run run = traced_run("wait0", kTscdeadline + " --set kvm.lapic_timer_advance_ns=0");
    CHECK(run.count("kvm_wait_lapic_expire") == 0);
    CHECK(run.count("kvm_apic_accept_irq") > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_vcpu_wakeup: one per kvm_vcpu_block() return, polled or waited, "
    "also without halt polling (kvm_main.c v4.0+)",
    "[cli][trace][tracepoint]") {
  SECTION("waited = one per halt that slept, poll = one per successful poll") {
    const Run run = traced_run("wakeup-poll", kEbizzy);
    REQUIRE(run.metric("vcpu.spurious_wakeups") == 0);
    CHECK(static_cast<double>(run.count_if<tr::KvmVcpuWakeup>(
              [](const tr::KvmVcpuWakeup& w) { return w.waited; })) == run.metric("vcpu.blocks"));
    CHECK(static_cast<double>(run.count_if<tr::KvmVcpuWakeup>([](const tr::KvmVcpuWakeup& w) {
            return !w.waited;
          })) >= run.metric("halt_poll.successful"));
    CHECK(run.count_if<tr::KvmVcpuWakeup>([](const tr::KvmVcpuWakeup& w) { return !w.valid; }) ==
          0);  // x86 wake-ups are all valid
    CHECK(run.metric("halt_poll.successful") > 0);
  }
  // x86's vcpu_block() calls kvm_vcpu_block() only for a vCPU that is not
  // runnable, right after vmx_pre_block() moved the armed preemption timer to
  // an hrtimer (kvm_hv_timer_state 0): each halt has the wake-up iff it has
  // the switch, whether it slept, polled, or saw the interrupt arrive
  // before schedule() (the long block stage below, halt polling off).
  for (const std::string& args : {kPingpong, kPingpong + " --set cost.vcpu_block=20us"}) {
    INFO(args);
    const Run run = traced_run("wakeup-block", args);
    std::size_t blocked = 0, mismatched = 0;
    for (const ExitSpan& s : exit_spans(run)) {
      if (s.reason != "HLT" || !s.closed) continue;
      std::size_t pre_block = 0;
      for (const Ev* e : s.inside)
        if (const auto* h = std::get_if<tr::KvmHvTimerState>(&e->data)) pre_block += !h->hv_timer;
      const std::size_t wakeups = count_in(s, "kvm_vcpu_wakeup");
      blocked += pre_block;
      mismatched += wakeups != pre_block;
    }
    CHECK(mismatched == 0);
    CHECK(blocked >= 199);
  }
}

TEST_CASE(
    "tracepoint kvm_halt_poll_ns: one per grow or shrink of the window, just before "
    "kvm_vcpu_wakeup (kvm_vcpu_block out:, v4.3+)",
    "[cli][trace][tracepoint]") {
  const Run run = traced_run("hpn", kEbizzy);
  const std::size_t n = run.count("kvm_halt_poll_ns");
  CHECK(static_cast<double>(n) == run.metric("halt_poll.grow") + run.metric("halt_poll.shrink"));
  CHECK(static_cast<double>(run.count_if<tr::KvmHaltPollNs>(
            [](const tr::KvmHaltPollNs& h) { return h.grow; })) == run.metric("halt_poll.grow"));
  // Grow raises the window, shrink lowers it (x86: every wake-up valid).
  CHECK(run.count_if<tr::KvmHaltPollNs>([](const tr::KvmHaltPollNs& h) {
    return h.grow ? h.new_ns <= h.old_ns : h.new_ns >= h.old_ns;
  }) == 0);
  std::map<int, bool> pending;
  std::size_t not_followed = 0;
  for (const Ev& e : run.events) {
    auto it = pending.find(e.pid);
    if (it != pending.end() && it->second && e.event != "kvm_vcpu_wakeup") ++not_followed;
    pending[e.pid] = e.event == "kvm_halt_poll_ns";
  }
  CHECK(not_followed == 0);
  CHECK(n > 0);
  SECTION("halt_poll_ns = 0: no window, no event") {
    const Run off = traced_run("hpn0", kEbizzy + " --set kvm.halt_poll_ns=0");
    CHECK(off.count("kvm_halt_poll_ns") == 0);
    CHECK(off.count("kvm_vcpu_wakeup") > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_apic_accept_irq: one per __apic_accept_irq, each timer expiry and "
    "each IPI target (lapic.c)",
    "[cli][trace][tracepoint]") {
  SECTION("the timer: one per preemption-timer expiry") {
    const Run run = traced_run("accept-timer", kTscdeadline);
    CHECK(run.count("kvm_apic_accept_irq") == run.count_if<tr::KvmExit>([](const tr::KvmExit& x) {
      return x.reason == "PREEMPTION_TIMER";
    }));
    CHECK(run.count("kvm_apic_accept_irq") > 0);
  }
  SECTION("IPIs: one per accepted IPI, as kvm_apic_ipi sent them") {
    const Run run = traced_run("accept-ipi", kPingpong);
    const auto ipi_accepts = run.count_if<tr::KvmApicAcceptIrq>(
        [](const tr::KvmApicAcceptIrq& a) { return a.vec != 236; });
    CHECK(static_cast<double>(ipi_accepts) == run.metric("ipi.accepted"));
    CHECK(ipi_accepts == run.count("kvm_apic_ipi"));
    CHECK(ipi_accepts > 0);
  }
}

TEST_CASE(
    "tracepoint kvm_apic_ipi: one per ICR write that sends, before its kvm_msr "
    "(kvm_apic_send_ipi from kvm_lapic_reg_write or the x2APIC ICR fastpath)",
    "[cli][trace][tracepoint]") {
  for (const std::string& args : {kPingpong, kPingpong + " --set kvm.exit_fastpath=true"}) {
    INFO(args);
    const Run run = traced_run("ipi", args);
    CHECK(static_cast<double>(run.count("kvm_apic_ipi")) == run.metric("ipi.sent"));
    std::size_t icr_writes = 0, in_order = 0;
    for (const ExitSpan& s : exit_spans(run)) {
      if (s.reason != "MSR_WRITE" || !s.closed) continue;
      const Ev* ipi = nullptr;
      for (const Ev* e : s.inside) {
        if (e->event == "kvm_apic_ipi") ipi = e;
        const auto* m = std::get_if<tr::KvmMsr>(&e->data);
        if (m && m->msr == 0x830) {
          ++icr_writes;
          in_order += ipi != nullptr;
        }
      }
    }
    CHECK(icr_writes == in_order);
    CHECK(static_cast<double>(icr_writes) >= run.metric("ipi.sent") - 1);
    CHECK(icr_writes > 0);
  }
}

namespace {

// How an ICR write traces kvm_apic: ICR2 and ICR before kvm_apic_ipi
// (kvm_lapic_reg_write() twice, before v5.18), or one ICR after it with the
// busy bit cleared: the low word (the fastpath before v5.18) or all 64 bits
// (kvm_x2apic_icr_write(), v5.18+).
enum class IcrTrace { Split, LowAfter, FullAfter };

// The kvm_apic lines each x2APIC register write must bring, in its MSR_WRITE
// exit, between the previous kvm_msr and its own, with kvm_apic_ipi and
// kvm_eoi in their places: kvm_lapic_reg_write()'s trace of
// (msr - APIC_BASE_MSR) << 4 and the low word (an EOI's before its kvm_eoi),
// the ICR's as `icr` says. The TSC-deadline MSR brings none, and nothing
// follows a span's last kvm_msr. Returns how many kvm_apic lines the run
// must hold in all.
std::size_t check_kvm_apic_per_msr_write(const Run& run, IcrTrace icr) {
  using kvmsim::APIC_ICR;
  using kvmsim::APIC_ICR2;
  std::size_t expected = 0;
  for (const ExitSpan& s : exit_spans(run)) {
    if (s.reason != "MSR_WRITE") continue;
    std::vector<std::string> since;  // kvm_apic / kvm_apic_ipi / kvm_eoi since the last kvm_msr
    for (const Ev* e : s.inside) {
      if (const auto* a = std::get_if<tr::KvmApic>(&e->data)) {
        since.push_back(fmt::format("{:x}={:x}", a->reg, a->val));
        continue;
      }
      if (e->event == "kvm_apic_ipi") since.emplace_back("ipi");
      if (e->event == "kvm_eoi") since.emplace_back("eoi");
      const auto* m = std::get_if<tr::KvmMsr>(&e->data);
      if (!m || !m->write) continue;
      std::vector<std::string> want;
      const auto low = static_cast<std::uint32_t>(m->data);
      const std::uint64_t cleared = m->data & ~kvmsim::APIC_ICR_BUSY;
      if (m->msr == kvmsim::MSR_X2APIC_ICR) {
        if (icr == IcrTrace::Split)
          want = {fmt::format("{:x}={:x}", APIC_ICR2, m->data >> 32),
                  fmt::format("{:x}={:x}", APIC_ICR, low), "ipi"};
        else
          want = {"ipi",
                  fmt::format(
                      "{:x}={:x}", APIC_ICR,
                      icr == IcrTrace::FullAfter ? cleared : static_cast<std::uint32_t>(cleared))};
      } else if (m->msr >= kvmsim::MSR_X2APIC_BASE && m->msr <= kvmsim::MSR_X2APIC_LAST) {
        want = {fmt::format("{:x}={:x}", kvmsim::x2apic_msr_reg(m->msr), low)};
        if (m->msr == kvmsim::MSR_X2APIC_EOI) want.emplace_back("eoi");
      }
      INFO("kvm_msr " << std::hex << m->msr << " = 0x" << m->data);
      CHECK(since == want);
      for (const std::string& w : want) expected += w != "ipi" && w != "eoi";
      since.clear();
    }
    CHECK(since.empty());
  }
  return expected;
}

std::size_t count_msr_writes(const Run& run, std::uint32_t msr) {
  return run.count_if<tr::KvmMsr>([msr](const tr::KvmMsr& m) { return m.write && m.msr == msr; });
}

}  // namespace

TEST_CASE(
    "tracepoint kvm_apic: one per emulated x2APIC register write, before its kvm_msr "
    "(kvm_lapic_reg_write), the ICR write as ICR2 + ICR before the send up to v5.18, one ICR "
    "after it from v5.18 and in the fastpath, none for the TSC deadline",
    "[cli][trace][tracepoint]") {
  using kvmsim::MSR_IA32_TSC_DEADLINE;
  using kvmsim::MSR_X2APIC_EOI;
  using kvmsim::MSR_X2APIC_ICR;
  using kvmsim::MSR_X2APIC_LVTT;
  using kvmsim::MSR_X2APIC_TMICT;
  SECTION("ICR, v5.8 host: kvm_x2apic_msr_write() writes ICR2, then ICR") {
    const Run run = traced_run("apic-split", kPingpong);
    REQUIRE(count_msr_writes(run, MSR_X2APIC_ICR) > 0);
    CHECK(run.count("kvm_apic") == check_kvm_apic_per_msr_write(run, IcrTrace::Split));
    CHECK(run.count("kvm_apic") >= 2 * count_msr_writes(run, MSR_X2APIC_ICR));
  }
  SECTION("ICR as one 64-bit register (v5.18+): kvm_x2apic_icr_write() sends, then traces") {
    const Run run = traced_run("apic-64", kPingpong + " --set kvm.x2apic_icr_64bit=true");
    REQUIRE(count_msr_writes(run, MSR_X2APIC_ICR) > 0);
    CHECK(run.count("kvm_apic") == check_kvm_apic_per_msr_write(run, IcrTrace::FullAfter));
    // The destination (ICR bits 63:32) is in the one line.
    CHECK(run.count_if<tr::KvmApic>([](const tr::KvmApic& a) { return (a.val >> 32) != 0; }) > 0);
  }
  SECTION("the ICR fastpath before v5.18 traces the low word after the send") {
    const Run run = traced_run("apic-fastpath", kPingpong + " --set kvm.exit_fastpath=true");
    REQUIRE(count_msr_writes(run, MSR_X2APIC_ICR) > 0);
    CHECK(run.count("kvm_apic") == check_kvm_apic_per_msr_write(run, IcrTrace::LowAfter));
  }
  SECTION("trapped x2APIC EOI writes (no APICv): APIC_EOI, then kvm_eoi, then kvm_msr") {
    const Run run = traced_run("apic-eoi", kIpiNoApicvEoi);
    const std::size_t eoi = count_msr_writes(run, MSR_X2APIC_EOI);
    REQUIRE(eoi > 0);
    CHECK(run.count("kvm_apic") == check_kvm_apic_per_msr_write(run, IcrTrace::Split));
    CHECK(run.count_if<tr::KvmApic>([](const tr::KvmApic& a) {
      return a.reg == kvmsim::x2apic_msr_reg(MSR_X2APIC_EOI);
    }) == eoi);
  }
  SECTION("the clockevent's shutdown and re-arm: LVTT and TMICT, none for IA32_TSC_DEADLINE") {
    const Run run = traced_run("apic-lvtt", kTimerlessGuest);
    REQUIRE(count_msr_writes(run, MSR_X2APIC_LVTT) > 0);
    REQUIRE(count_msr_writes(run, MSR_X2APIC_TMICT) > 0);
    REQUIRE(count_msr_writes(run, MSR_IA32_TSC_DEADLINE) > 0);
    CHECK(run.count("kvm_apic") == check_kvm_apic_per_msr_write(run, IcrTrace::Split));
    CHECK(run.count("kvm_apic") ==
          count_msr_writes(run, MSR_X2APIC_LVTT) + count_msr_writes(run, MSR_X2APIC_TMICT));
  }
}

TEST_CASE(
    "tracepoint kvm_pv_tlb_flush: one per record_steal_time, i.e. per vCPU sched-in "
    "that reaches an entry, need_flush as the flushes (x86.c v5.4+, none before)",
    "[cli][trace][tracepoint]") {
  // The scenario's v5.3 host predates the tracepoint: the flushes happen, no line is
  // written. The same guest on a v5.4 host traces each record.
  const Run old_host = traced_run("pvtlb-5.3", kPvspin);
  CHECK(old_host.metric("vcpu.pv_tlb_flushes") > 0);
  CHECK(old_host.count("kvm_pv_tlb_flush") == 0);
  const Run run = traced_run("pvtlb", kPvspin + " --set host.kernel=5.4");
  CHECK(static_cast<double>(run.count_if<tr::KvmPvTlbFlush>([](const tr::KvmPvTlbFlush& f) {
          return f.need_flush_tlb;
        })) == run.metric("vcpu.pv_tlb_flushes"));
  // Per vCPU thread: KVM_REQ_STEAL_UPDATE is made in kvm_arch_vcpu_load()
  // and served once, before the next entry. (The model starts each vCPU
  // thread in the entry half of vcpu_enter_guest(), so the first load's
  // record comes before the second entry: allowed once per thread.)
  std::map<int, bool> loaded;  // pid -> switched in, no entry yet
  std::map<int, bool> started, late;
  std::size_t loads_entered = 0, records = 0, unexpected = 0;
  for (const Ev& e : run.events) {
    if (const auto* sw = std::get_if<tr::SchedSwitch>(&e.data)) {
      if (sw->next_comm.find("/KVM") != std::string::npos) loaded[sw->next_pid] = true;
      continue;
    }
    if (e.event == "kvm_pv_tlb_flush") {
      ++records;
      if (loaded[e.pid]) {
        loaded[e.pid] = false;
      } else if (late[e.pid]) {
        late[e.pid] = false;
      } else {
        ++unexpected;
      }
      continue;
    }
    if (e.event != "kvm_entry") continue;
    const bool first = !started[e.pid];
    started[e.pid] = true;
    if (!loaded[e.pid]) continue;
    loaded[e.pid] = false;
    if (first) {
      late[e.pid] = true;
    } else {
      ++loads_entered;  // a load whose entry came without the record
    }
  }
  std::size_t still_late = 0;
  for (const auto& [pid, l] : late) still_late += l;
  CHECK(unexpected == 0);
  CHECK(loads_entered == 0);
  CHECK(still_late == 0);
  CHECK(records > 0);
  SECTION("without guest.pv_tlb_flush no event") {
    const Run off = traced_run("pvtlb-off", kEbizzy);
    CHECK(off.count("kvm_pv_tlb_flush") == 0);
  }
}

TEST_CASE(
    "tracepoint kvm_ple_window: every grow_ple_window and shrink_ple_window call up to "
    "v5.3, kvm_ple_window_update only when the window changes from v5.4",
    "[cli][trace][tracepoint]") {
  SECTION("v4.16 (the scenario's host): kvm_ple_window on every call") {
    const Run run = traced_run("ple416", kEbizzy);
    const auto grows =
        run.count_if<tr::KvmPleWindow>([](const tr::KvmPleWindow& w) { return w.grow; });
    const auto shrinks =
        run.count_if<tr::KvmPleWindow>([](const tr::KvmPleWindow& w) { return !w.grow; });
    REQUIRE(run.metric("vcpu.pause_exits") > 0);
    // handle_pause() -> grow_ple_window() on every PAUSE exit, changed or not.
    CHECK(static_cast<double>(grows) == run.metric("vcpu.pause_exits"));
    CHECK(static_cast<double>(run.count_if<tr::KvmPleWindow>([](const tr::KvmPleWindow& w) {
            return w.grow && w.new_window > w.old_window;
          })) == run.metric("vcpu.ple_window_grows"));
    // vmx_sched_in() -> shrink_ple_window() at every sched-in of a vCPU
    // thread: each one follows a sched_switch to that thread, on its pCPU.
    std::size_t switches_in = 0;
    for (const Ev& e : run.events)
      if (const auto* s = std::get_if<tr::SchedSwitch>(&e.data))
        switches_in += s->next_comm.find("/KVM") != std::string::npos;
    CHECK(shrinks > 0);
    CHECK(shrinks == switches_in);
    // ple_window_shrink 0: every shrink resets to ple_window (4096).
    CHECK(run.count_if<tr::KvmPleWindow>(
              [](const tr::KvmPleWindow& w) { return !w.grow && w.new_window != 4096; }) == 0);
    CHECK(run.count("kvm_ple_window_update") == 0);
  }
  SECTION("v5.4: kvm_ple_window_update, only the changes") {
    const Run run = traced_run("ple54", kEbizzy + " --set host.kernel=5.4");
    REQUIRE(run.metric("vcpu.pause_exits") > 0);
    CHECK(run.count("kvm_ple_window") == 0);
    CHECK(run.count_if<tr::KvmPleWindowUpdate>(
              [](const tr::KvmPleWindowUpdate& w) { return w.old_window == w.new_window; }) == 0);
    CHECK(static_cast<double>(run.count_if<tr::KvmPleWindowUpdate>(
              [](const tr::KvmPleWindowUpdate& w) { return w.grew(); })) ==
          run.metric("vcpu.ple_window_grows"));
  }
}

TEST_CASE("tracepoint kvm_hypercall: one per VMCALL exit (kvm_emulate_hypercall)",
          "[cli][trace][tracepoint]") {
  const Run run = traced_run("hypercall", kPvspin);
  std::size_t vmcalls = 0, misplaced = 0;
  for (const ExitSpan& s : exit_spans(run)) {
    const std::size_t n = count_in(s, "kvm_hypercall");
    if (s.reason == "VMCALL") {
      ++vmcalls;
      if (s.closed) CHECK(n == 1);
    } else {
      misplaced += n;
    }
  }
  CHECK(misplaced == 0);
  CHECK(run.count("kvm_hypercall") <= vmcalls);
  CHECK(run.count("kvm_hypercall") + 1 >= vmcalls);
  CHECK(vmcalls > 0);
}

TEST_CASE(
    "tracepoint sched_switch: one per context switch, prev the task that ran "
    "(__schedule, prev != next)",
    "[cli][trace][tracepoint]") {
  const Run run = traced_run("switch", kEbizzy);
  CHECK(static_cast<double>(run.count("sched_switch")) ==
        run.metric("host.sched.context_switches"));
  std::map<int, int> current;  // cpu -> pid switched in last
  std::size_t broken = 0, self = 0;
  for (const Ev& e : run.events) {
    const auto* sw = std::get_if<tr::SchedSwitch>(&e.data);
    if (!sw) continue;
    auto it = current.find(e.cpu);
    if (it != current.end() && it->second != sw->prev_pid) ++broken;
    self += sw->prev_pid == sw->next_pid;
    current[e.cpu] = sw->next_pid;
  }
  CHECK(broken == 0);
  CHECK(self == 0);
  CHECK(run.count("sched_switch") > 0);
}

TEST_CASE(
    "tracepoint sched_wakeup: one per wake-up of a sleeping task (ttwu_do_wakeup), "
    "before the woken vCPU's kvm_vcpu_wakeup",
    "[cli][trace][tracepoint]") {
  const Run run = traced_run("wakeup", kEbizzy);
  CHECK(static_cast<double>(run.count("sched_wakeup")) == run.metric("host.sched.wakeups"));
  // Every halt that slept (kvm_vcpu_wakeup waited) was woken first.
  std::map<int, int> woken;  // pid -> sched_wakeups not yet used
  std::size_t unwoken = 0, slept = 0;
  for (const Ev& e : run.events) {
    if (const auto* w = std::get_if<tr::SchedWakeup>(&e.data)) {
      ++woken[w->pid];
      continue;
    }
    const auto* k = std::get_if<tr::KvmVcpuWakeup>(&e.data);
    if (!k || !k->waited) continue;
    ++slept;
    if (woken[e.pid] == 0) {
      ++unwoken;
    } else {
      --woken[e.pid];
    }
  }
  CHECK(unwoken == 0);
  CHECK(slept > 0);
}

TEST_CASE(
    "tracepoint sched_waking: one per sched_wakeup, just before it in the waker's context "
    "(try_to_wake_up before select_task_rq, v4.3+), target_cpu the CPU the task last ran on",
    "[cli][trace][tracepoint]") {
  const Run run = traced_run("waking", kEbizzy);
  // pid -> (timestamp, target_cpu) of its sched_waking not yet followed by its sched_wakeup
  std::map<int, std::pair<std::int64_t, int>> waking;
  std::map<int, int> last_cpu;  // pid -> the CPU it last switched in on
  std::size_t wakeups = 0, paired = 0, ran_before = 0, from_last_cpu = 0, unpaired_waking = 0;
  for (const Ev& e : run.events) {
    if (const auto* s = std::get_if<tr::SchedSwitch>(&e.data)) {
      last_cpu[s->next_pid] = e.cpu;
      continue;
    }
    if (e.event == "sched_waking") {
      // comm=%s pid=%d prio=%d target_cpu=%03d
      const auto p = e.payload.find(" pid=");
      const auto c = e.payload.find("target_cpu=");
      REQUIRE(p != std::string::npos);
      REQUIRE(c != std::string::npos);
      const int pid = std::stoi(e.payload.substr(p + 5));
      const int target = std::stoi(e.payload.substr(c + 11));
      CHECK(target >= 0);
      unpaired_waking += waking.count(pid);
      waking[pid] = {e.ts, target};
      if (last_cpu.count(pid)) {
        ++ran_before;
        from_last_cpu += last_cpu[pid] == target;
      }
      continue;
    }
    if (const auto* w = std::get_if<tr::SchedWakeup>(&e.data)) {
      ++wakeups;
      const auto it = waking.find(w->pid);
      if (it != waking.end() && it->second.first == e.ts) ++paired;
      if (it != waking.end()) waking.erase(it);
    }
  }
  REQUIRE(wakeups > 0);
  CHECK(run.count("sched_waking") == wakeups);
  CHECK(paired == wakeups);
  CHECK(unpaired_waking == 0);
  CHECK(waking.empty());
  CHECK(ran_before > 0);
  CHECK(from_last_cpu == ran_before);
  // The first wake-up of a bound kthread that never ran (the host's
  // softlockup watchdog thread, every 4 s on a stock host): task_cpu() is
  // the CPU kthread_bind() put it on.
  const Run stock = traced_run(
      "waking-kthread",
      "scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=4.5 --set kvm.halt_poll_ns=0");
  std::size_t kthread = 0;
  for (const Ev& e : stock.events) {
    if (e.event != "sched_waking") continue;
    // watchdog/N before v4.19 (the scenario's 4.3 host), migration/N after
    if (e.payload.find("comm=watchdog/") != 0 && e.payload.find("comm=migration/") != 0) continue;
    ++kthread;
    CHECK(e.payload.find("target_cpu=-") == std::string::npos);
    CHECK(e.payload.find(fmt::format("target_cpu={:03}", e.cpu)) != std::string::npos);
  }
  CHECK(kthread > 0);
  // A v4.2 host has no sched_waking; its wake-ups are traced all the same.
  const Run old = traced_run("waking-4.2", kEbizzy + " --set host.kernel=4.2");
  CHECK(old.count("sched_waking") == 0);
  CHECK(old.count("sched_wakeup") > 0);
}

TEST_CASE(
    "tracepoint sched_migrate_task: only when the CPU changes, and the task next runs "
    "there (set_task_cpu)",
    "[cli][trace][tracepoint]") {
  const Run run = traced_run("migrate", kPvspin);
  std::size_t n = 0, same_cpu = 0, ran = 0, elsewhere = 0;
  std::map<int, int> dest;  // pid -> the CPU it was moved to, until it runs
  for (const Ev& e : run.events) {
    if (e.event == "sched_migrate_task") {
      // comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d
      const auto p = e.payload.find(" pid=");
      const auto o = e.payload.find("orig_cpu=");
      const auto d = e.payload.find("dest_cpu=");
      REQUIRE(p != std::string::npos);
      REQUIRE(o != std::string::npos);
      REQUIRE(d != std::string::npos);
      ++n;
      const int to = std::stoi(e.payload.substr(d + 9));
      same_cpu += std::stoi(e.payload.substr(o + 9)) == to;
      dest[std::stoi(e.payload.substr(p + 5))] = to;
      continue;
    }
    const auto* sw = std::get_if<tr::SchedSwitch>(&e.data);
    if (!sw) continue;
    auto it = dest.find(sw->next_pid);
    if (it == dest.end()) continue;
    ++ran;
    elsewhere += it->second != e.cpu;
    dest.erase(it);
  }
  CHECK(same_cpu == 0);
  CHECK(elsewhere == 0);
  CHECK(ran > 0);
  CHECK(n > 0);
}

TEST_CASE(
    "tracepoint kvm_hv_timer_state: not written on a host older than v4.8, which had no "
    "preemption-timer path for the LAPIC timer nor its tracepoint",
    "[cli][trace][tracepoint]") {
  const std::string idle = "scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=0.2";
  const Run old_host = traced_run("hvstate-4.3", idle + " --set host.kernel=4.3");
  CHECK(old_host.count("kvm_exit") > 0);
  CHECK(old_host.count("kvm_hv_timer_state") == 0);
  const Run new_host = traced_run("hvstate-4.8", idle + " --set host.kernel=4.8");
  CHECK(new_host.count("kvm_hv_timer_state") > 0);
}

namespace {
const std::string kIpiNoApicv =
    "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=1048576 --set platform.apicv=false";
const std::string kCyclictestNoApicv = kCyclictest + " --set platform.apicv=false";
}  // namespace

TEST_CASE(
    "tracepoint kvm_inj_virq: one per vector injected through the VM-entry fields (no APICv), "
    "before the entry that delivers it",
    "[cli][trace][tracepoint]") {
  SECTION("with APICv: virtual-interrupt delivery, no event") {
    const Run run = traced_run("inj-apicv", kCyclictest);
    CHECK(run.count("kvm_inj_virq") == 0);
    CHECK(run.count("kvm_apic_accept_irq") > 0);
  }
  for (const std::string& args :
       {kIpiNoApicv + " --set host.kernel=6.6", kCyclictestNoApicv + " --set host.kernel=6.6",
        kPingpong + " --set platform.apicv=false --set host.kernel=6.6"}) {
    INFO(args);
    const Run run = traced_run("inj", args);
    // Each accepted vector is injected once (the last ones may still be
    // pending at the end), in the v5.19+ format, never as a re-injection.
    const std::size_t injected = run.count("kvm_inj_virq");
    const std::size_t accepted = run.count("kvm_apic_accept_irq");
    REQUIRE(accepted > 100);
    CHECK(injected <= accepted);
    CHECK(injected + 3 >= accepted);
    CHECK(run.count_if<tr::KvmInjVirq>(
              [](const tr::KvmInjVirq& e) { return e.legacy || e.reinjected || e.soft; }) == 0);
    // Every injection precedes the thread's next kvm_entry with no exit in
    // between.
    std::map<int, bool> injected_open;
    std::size_t exit_before_entry = 0;
    for (const Ev& e : run.events) {
      if (e.event == "kvm_inj_virq") injected_open[e.pid] = true;
      if (e.event == "kvm_entry") injected_open[e.pid] = false;
      if (e.event == "kvm_exit") exit_before_entry += injected_open[e.pid];
    }
    CHECK(exit_before_entry == 0);
    // Vectors: only ones that were accepted.
    std::map<unsigned, std::size_t> acc, inj;
    for (const Ev& e : run.events) {
      if (const auto* a = std::get_if<tr::KvmApicAcceptIrq>(&e.data)) ++acc[a->vec];
      if (const auto* i = std::get_if<tr::KvmInjVirq>(&e.data)) ++inj[i->vector];
    }
    for (const auto& [vec, n] : inj) CHECK(n <= acc[vec]);
    WARN(args << ": " << injected << " injections, " << accepted << " vectors accepted");
  }
  SECTION("before v5.19 the format is 'irq %u'") {
    const Run run = traced_run("inj58", kIpiNoApicv + " --set host.kernel=5.8");
    const std::size_t n = run.count("kvm_inj_virq");
    CHECK(n > 0);
    CHECK(run.count_if<tr::KvmInjVirq>([](const tr::KvmInjVirq& e) { return e.legacy; }) == n);
  }
}

TEST_CASE(
    "tracepoint kvm_eoi: one per EOI KVM sees (apic_set_eoi): a trapped EOI write before its "
    "kvm_msr, a Linux guest's PV EOI at the next exit, none with APICv",
    "[cli][trace][tracepoint]") {
  SECTION("kvm-unit-tests without APICv: the EOI write traps") {
    const Run run = traced_run("eoi-kut", kIpiNoApicv);
    const std::size_t eois = run.count("kvm_eoi");
    const std::size_t writes =
        run.count_if<tr::KvmMsr>([](const tr::KvmMsr& m) { return m.write && m.msr == 0x80b; });
    CHECK(eois == writes);
    CHECK(eois + 2 >= run.count("kvm_apic_accept_irq"));
    // The IPI vector, ended in service (never -1), traced just before the
    // write's kvm_msr of the same thread.
    CHECK(run.count_if<tr::KvmEoi>([](const tr::KvmEoi& e) { return e.vector == 32; }) == eois);
    const auto is_eoi_write = [](const Ev& e) {
      const auto* m = std::get_if<tr::KvmMsr>(&e.data);
      return m && m->msr == 0x80b;
    };
    const auto after_eoi = [](const Ev* prev, const Ev&) {
      return prev && prev->event == "kvm_eoi";
    };
    CHECK(count_not_after(run, is_eoi_write, after_eoi) == 0);
  }
  SECTION("a Linux guest without APICv: PV EOI, read back at the next exit") {
    const Run run = traced_run("eoi-pv", kCyclictestNoApicv);
    const std::size_t eois = run.count("kvm_eoi");
    CHECK(run.count_if<tr::KvmMsr>([](const tr::KvmMsr& m) { return m.msr == 0x80b; }) == 0);
    CHECK(eois + 2 >= run.count("kvm_inj_virq"));
    CHECK(eois <= run.count("kvm_inj_virq"));
    // Inside an exit span (after the thread's kvm_exit, before its entry).
    CHECK(count_outside_exit_spans(run, "kvm_eoi") == 0);
    CHECK(run.count_if<tr::KvmEoi>([](const tr::KvmEoi& e) { return e.vector == 236; }) == eois);
  }
  SECTION("with APICv: the EOI of an edge vector is virtualized, no event") {
    const Run run = traced_run("eoi-apicv", kCyclictest);
    CHECK(run.count("kvm_eoi") == 0);
  }
}

TEST_CASE(
    "tracepoint kvm_pv_eoi: one per PV EOI KVM reads back (apic_sync_pv_eoi_from_guest), right "
    "after that EOI's kvm_eoi with the same fields, none for a trapped EOI write",
    "[cli][trace][tracepoint]") {
  SECTION("a Linux guest without APICv: every EOI but a trapped x2APIC write is a PV EOI") {
    const Run run = traced_run("pv-eoi", kCyclictestNoApicv);
    const std::size_t pv = run.count("kvm_pv_eoi");
    const std::size_t trapped =
        run.count_if<tr::KvmMsr>([](const tr::KvmMsr& m) { return m.write && m.msr == 0x80b; });
    CHECK(pv > 0);
    CHECK(pv + trapped == run.count("kvm_eoi"));
    const auto is_pv_eoi = [](const Ev& e) { return e.event == "kvm_pv_eoi"; };
    // The previous event is its kvm_eoi: same time, same fields.
    const auto after_its_eoi = [](const Ev* prev, const Ev& e) {
      const auto* eoi = prev ? std::get_if<tr::KvmEoi>(&prev->data) : nullptr;
      return eoi && *eoi == std::get<tr::KvmPvEoi>(e.data) && prev->ts == e.ts;
    };
    CHECK(count_not_after(run, is_pv_eoi, after_its_eoi) == 0);
  }
  SECTION("kvm-unit-tests without APICv: the EOI write traps, no PV EOI") {
    const Run run = traced_run("pv-eoi-kut", kIpiNoApicv);
    CHECK(run.count("kvm_eoi") > 0);
    CHECK(run.count("kvm_pv_eoi") == 0);
  }
}
