// The published targets `kvmsim validate` checks: one Experiment per target of
// the published measurements (the numbers below are copied from their
// sources; each says where it comes from; docs/validation.md shows them). An experiment whose
// scenario file does not exist is skipped, so a target can be listed before its scenario lands. To
// add one: a scenario file, its paired runs (switch_runs), the
// --set that shortens it for --quick, and its checks.
//
// Full runs use the scenario as it is, with its default seed: that is the
// published setup. --quick shortens each run; the tolerances stay the same
// except where a check says otherwise (quick_tolerance) and why.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/histogram.h"
#include "tools/kvmsim/validation.h"

namespace kvmsim::validate {

namespace {

// ------------------------------------------------------------ check builders

// A metric of summary.json of one run.
Check metric_check(std::size_t run, const std::string& key, double published, Tolerance tol,
                   int decimals) {
  Check c;
  c.metric = key;
  c.decimals = decimals;
  c.runs = {run};
  c.published = published;
  c.tolerance = tol;
  c.simulate = [key](const RunRefs& r) { return r[0]->metric(key); };
  return c;
}

// 100 * (1 - after / before) of a metric, in %, checked in percentage points.
Check reduction_check(const std::string& label, std::size_t before, std::size_t after,
                      const std::string& key, double published_pct, double tolerance_pp) {
  Check c;
  c.metric = label;
  c.unit = "%";
  c.decimals = 1;
  c.runs = {before, after};
  c.published = published_pct;
  c.tolerance = Tolerance::absolute(tolerance_pp);
  c.simulate = [key](const RunRefs& r) {
    return 100.0 * (1.0 - r[1]->metric(key) / r[0]->metric(key));
  };
  return c;
}

// 100 * (with / without - 1) of a metric, in %, checked relative to itself.
Check boost_check(const std::string& label, std::size_t without, std::size_t with,
                  const std::string& key, double published_pct, double relative) {
  Check c;
  c.metric = label;
  c.unit = "%";
  c.decimals = 1;
  c.runs = {without, with};
  c.published = published_pct;
  c.tolerance = Tolerance::relative(relative);
  c.simulate = [key](const RunRefs& r) {
    return 100.0 * (r[1]->metric(key) / r[0]->metric(key) - 1.0);
  };
  return c;
}

// A statistic of one run's cyclictest histogram (NaN without one).
Check histogram_check(std::size_t run, const std::string& label, const std::string& unit,
                      double published, Tolerance tol, int decimals,
                      std::function<double(const LatencyHistogram&)> stat) {
  Check c;
  c.metric = label;
  c.unit = unit;
  c.decimals = decimals;
  c.runs = {run};
  c.published = published;
  c.tolerance = tol;
  c.simulate = [stat = std::move(stat)](const RunRefs& r) {
    return r[0]->ok && r[0]->histogram ? stat(*r[0]->histogram) : kNaN;
  };
  return c;
}

// Marks checks [from, end) as calibration: their published figure set a cost.
void mark_calibration(Experiment& e, std::size_t from,
                      std::size_t to = static_cast<std::size_t>(-1)) {
  for (std::size_t i = from; i < e.checks.size() && i < to; ++i) e.checks[i].calibration = true;
}

// --------------------------------------------------------------------- T1

// One side of T1's published cyclictest histogram.
struct PublishedHistogram {
  std::vector<std::uint64_t> bins;  // counts of buckets 0..12 (us)
  std::uint64_t above12 = 0;        // "> 12 (not printed, derived)"
  std::uint64_t loops = 0;
  std::int64_t min_us = 0;  // cyclictest "Min Latencies"
};

// The T1 checks of one side: mode exact, min exact, mean over bins 3-12
// within 0.3 us, W1 over bins 3-12 (normalised) at most 0.3 us, the
// fraction > 12 us within a factor 3 (shown per `loops` samples).
void add_t1_checks(Experiment& e, std::size_t run, const PublishedHistogram& pub,
                   std::optional<Tolerance> quick_min) {
  const auto bins = pub.bins;
  e.checks.push_back(histogram_check(
      run, "mode", "us", static_cast<double>(mode_bucket(bins)), Tolerance::exact(), 0,
      [](const LatencyHistogram& h) { return static_cast<double>(mode_bucket(h.counts())); }));
  Check min =
      histogram_check(run, "min", "us", static_cast<double>(pub.min_us), Tolerance::exact(), 0,
                      [](const LatencyHistogram& h) { return static_cast<double>(h.min_us()); });
  min.quick_tolerance = quick_min;
  e.checks.push_back(min);
  e.checks.push_back(histogram_check(
      run, "mean over bins 3-12", "us", mean_over_buckets(bins, 3, 12), Tolerance::absolute(0.3), 2,
      [](const LatencyHistogram& h) { return mean_over_buckets(h.counts(), 3, 12); }));
  e.checks.push_back(histogram_check(
      run, "W1 vs published, bins 3-12", "us", kNaN, Tolerance::at_most(0.3), 3,
      [bins](const LatencyHistogram& h) { return wasserstein1_buckets(h.counts(), bins, 3, 12); }));
  const auto loops = static_cast<double>(pub.loops);
  e.checks.push_back(histogram_check(
      run, "samples > 12 us per " + std::to_string(pub.loops), "", static_cast<double>(pub.above12),
      Tolerance::factor(3), 0, [loops](const LatencyHistogram& h) {
        std::uint64_t upto12 = 0;
        for (std::size_t b = 0; b <= 12 && b < h.buckets(); ++b) upto12 += h.count(b);
        const auto n = static_cast<double>(h.samples());
        return n > 0 ? static_cast<double>(h.samples() - upto12) / n * loops : kNaN;
      }));
}

Experiment t1() {
  Experiment e;
  e.id = "T1";
  e.title = "VMX preemption timer vs hrtimer-emulated TSC deadline (cyclictest, Xeon E5-2699 v3)";
  e.scenario = "cyclictest_pinned.yaml";
  e.runs = switch_runs("kvm.enable_hv_timer", {"true", "false"});
  e.quick_sets = {"cyclictest.loops=60000"};  // full: the scenario's 600000
  // docs/validation.md T1: cyclictest -h bins 3..12 of 600000 loops, the
  // "> 12" row (600000 minus the printed bins) and "Min Latencies".
  const PublishedHistogram on{
      {0, 0, 0, 0, 2174, 42961, 479383, 71123, 3720, 467, 78, 11, 9}, 74, 600000, 4};
  const PublishedHistogram off{
      {0, 0, 0, 0, 0, 42, 772, 8262, 200759, 381126, 8056, 234, 367}, 382, 600000, 5};
  add_t1_checks(e, 0, on, std::nullopt);
  // The hrtimer path's published minimum, 5 us, is 42 samples in 600000: a
  // run of a tenth of the loops may stop one bucket higher without the
  // distribution being any different (tests/cli/t1_regression_test.cpp
  // allows the same).
  add_t1_checks(e, 1, off, Tolerance::offset(0, 1));
  // Calibration, all of it: the guest-side costs were fitted on the hv-on
  // histogram and the host IRQ path on the hv-off one (haswell-e5-2699v3.yaml).
  mark_calibration(e, 0);
  return e;
}

// --------------------------------------------------------------------- T2

Experiment t2() {
  Experiment e;
  e.id = "T2";
  e.title = "timer advance applied to the VMX preemption timer (tscdeadline_latency, Haswell)";
  e.scenario = "tscdeadline_latency.yaml";
  e.runs = switch_runs("kvm.hv_timer_advance", {"false", "true"});
  e.quick_sets = {"tscdeadline_latency.size=2000"};  // full: the scenario's 10000 samples
  const std::string key = "tscdeadline_latency.avg_cycles";
  // docs/validation.md T2: "~4450 cycles without the advance on the
  // hv-timer path, ~1660 cycles with it (-63%)"; each within 15%, the
  // reduction within 10 percentage points.
  e.checks.push_back(metric_check(0, key, 4450, Tolerance::relative(0.15), 0));
  e.checks.push_back(metric_check(1, key, 1660, Tolerance::relative(0.15), 0));
  e.checks.push_back(reduction_check("reduction of avg_cycles", 0, 1, key, 63, 10));
  // The exit -> injection path was split so that the no-advance run costs
  // ~4450 cycles (haswell-desktop-i7-4770.yaml): calibration. The advance
  // run and the reduction are predictions.
  mark_calibration(e, 0, 1);
  return e;
}

// --------------------------------------------------------------------- T3

Experiment t3() {
  Experiment e;
  e.id = "T3";
  e.title = "exit fastpath for TSC-deadline WRMSR and preemption timer (vmexit.flat, Skylake-SP)";
  e.scenario = "vmexit_tscdeadline.yaml";
  e.runs = switch_runs("kvm.exit_fastpath", {"false", "true"});
  e.quick_sets = {"vmexit.goal_cycles=67108864"};  // 2^26; full: the scenario's GOAL 2^30
  // docs/validation.md T3 table (cycles per iteration, no fastpath /
  // fastpath, -17.6% and -8.3%); each within 10%, each improvement within 5
  // percentage points.
  const std::string immed = "vmexit.tscdeadline_immed.cycles";
  const std::string deadline = "vmexit.tscdeadline.cycles";
  e.checks.push_back(metric_check(0, immed, 3028.5, Tolerance::relative(0.10), 2));
  e.checks.push_back(metric_check(1, immed, 2494.75, Tolerance::relative(0.10), 2));
  e.checks.push_back(metric_check(0, deadline, 5765.7, Tolerance::relative(0.10), 2));
  e.checks.push_back(metric_check(1, deadline, 5285, Tolerance::relative(0.10), 2));
  e.checks.push_back(reduction_check("improvement of tscdeadline_immed", 0, 1, immed, 17.6, 5));
  e.checks.push_back(reduction_check("improvement of tscdeadline", 0, 1, deadline, 8.3, 5));
  // All calibration: the stages the fastpath skips were sized on the
  // published differences (534, 481 cycles) and the LAPIC work on the
  // tscdeadline_immed "before" (skylake-sp-gold-6148.yaml).
  mark_calibration(e, 0);
  return e;
}

// --------------------------------------------------------------------- T4

// ebizzy -M (sim/guest/ebizzy_workload.cpp) for the scenario's 5 simulated
// seconds (ebizzy -S 5); --quick runs 1 s. The 8-vCPU native figure set
// cost.ebizzy.record (haswell-desktop-i7-4770.yaml); every other value is a
// prediction of the flush mechanism under the host's CFS.
Experiment t4() {
  Experiment e;
  e.id = "T4";
  e.title = "paravirtual remote TLB flush under over-commit (ebizzy -M, Haswell i7, 8 pCPUs)";
  e.scenario = "ebizzy_overcommit.yaml";
  e.quick_sets = {"sim.max_simulated_s=1"};
  const std::string key = "ebizzy.records_per_s";
  // docs/validation.md T4: records/s, native flush / PV flush, boost;
  // each value within 25%, boost within 25% relative. The boost at 8 vCPUs
  // (-0.68%) is not checked relative to itself (25% of 0.68 pp is noise);
  // its two values are. The collapse from 8 to 16 vCPUs and the recovery
  // with PV flush follow from the values' 25% bands.
  struct Point {
    int vcpus;
    double native, pv, boost_pct;
  };
  const Point points[] = {{8, 10152, 10083, -0.68},
                          {16, 1224, 4866, 297.5},
                          {24, 1109, 3871, 249},
                          {32, 1025, 3375, 229.3}};
  for (const Point& p : points) {
    const std::string v = "vm.vcpus=" + std::to_string(p.vcpus);
    const std::size_t native = e.runs.size();
    e.runs.push_back({v + " guest.pv_tlb_flush=false", {v, "guest.pv_tlb_flush=false"}});
    e.runs.push_back({v + " guest.pv_tlb_flush=true", {v, "guest.pv_tlb_flush=true"}});
    e.checks.push_back(metric_check(native, key, p.native, Tolerance::relative(0.25), 0));
    e.checks.push_back(metric_check(native + 1, key, p.pv, Tolerance::relative(0.25), 0));
    if (p.vcpus != 8)
      e.checks.push_back(boost_check("PV flush boost", native, native + 1, key, p.boost_pct, 0.25));
  }
  mark_calibration(e, 0, 1);  // the 8-vCPU native figure: cost.ebizzy.record
  return e;
}

// Ref: the d73eb57b80b (v5.3) message, Haswell desktop 8 HT, 2019: ebizzy -M
// in an 8-vCPU VM beside a VM running 'stress --cpu 2', without the patch and
// without PV sched yield: 1570 records/s, perf top in the guest 72.33% in
// smp_call_function_many. Out of sample (nothing was fitted on it), reported
// and not gated: the message does not state the guest's flush mode (the
// profile is native flush's), and the second VM is two host hogs here
// (scenarios/ebizzy_light_overcommit.yaml says why). T4's 25% is shown for
// comparison. With the patch (kvm.directed_yield_ready, the v5.3 vcpu->ready
// boost): 4000 records/s, +155%. With PV sched yield in the guest
// (guest.pv_sched_yield, KVM_HC_SCHED_YIELD): 1844 without the patch, 5157
// with it.
Experiment t4l() {
  Experiment e;
  e.id = "T4L";
  e.title = "ebizzy -M beside 2 busy vCPUs of another VM, Haswell desktop, 2019 (d73eb57b80b)";
  e.scenario = "ebizzy_light_overcommit.yaml";
  e.runs = switch_runs("kvm.directed_yield_ready", {"false", "true"});
  e.runs.push_back({"guest.pv_sched_yield=true kvm.directed_yield_ready=false",
                    {"guest.pv_sched_yield=true", "kvm.directed_yield_ready=false"}});
  e.runs.push_back({"guest.pv_sched_yield=true kvm.directed_yield_ready=true",
                    {"guest.pv_sched_yield=true", "kvm.directed_yield_ready=true"}});
  e.quick_sets = {"sim.max_simulated_s=1"};
  e.checks.push_back(metric_check(0, "ebizzy.records_per_s", 1570, Tolerance::relative(0.25), 0));
  // perf top in the guest: smp_call_function_many 72.33% without the patch,
  // 38.43% with it.
  const auto share = [](std::size_t run, double published) {
    Check c;
    c.metric = "guest CPU in smp_call_function_many";
    c.unit = "%";
    c.decimals = 1;
    c.runs = {run};
    c.published = published;
    c.tolerance = Tolerance::relative(0.25);
    c.simulate = [](const RunRefs& r) {
      return 100.0 * r[0]->metric("ebizzy.flush_wait_on_cpu_share");
    };
    return c;
  };
  e.checks.push_back(share(0, 72.33));
  e.checks.push_back(metric_check(1, "ebizzy.records_per_s", 4000, Tolerance::relative(0.25), 0));
  e.checks.push_back(share(1, 38.43));
  e.checks.push_back(metric_check(2, "ebizzy.records_per_s", 1844, Tolerance::relative(0.25), 0));
  e.checks.push_back(metric_check(3, "ebizzy.records_per_s", 5157, Tolerance::relative(0.25), 0));
  e.checks.push_back(boost_check("d73eb57b80b boost", 0, 1, "ebizzy.records_per_s",
                                 4000.0 / 1570 * 100 - 100, 0.25));
  for (auto& c : e.checks) c.gated = false;
  return e;
}

// --------------------------------------------------------------------- PVQ

// The PV qspinlock of a v5.3 guest under over-commit: ebizzy -M in 1-3
// guests of 80 vCPUs on an 80-thread two-socket Skylake
// (scenarios/ebizzy_pvspinlock_revert.yaml), records/s per VM. Published by
// Wanpeng Li, 2019, three commits on the same host and benchmark:
//  - d73eb57b80b "KVM: Boost vCPUs that are delivering interrupts"
//    (kvm.directed_yield_ready): 1 / 2 / 3 VMs 21443 / 2800 / 1800
//    without it, 23520 / 8000 / 3100 with it;
//  - 266e85a5ec9 "KVM: X86: Boost queue head vCPU to mitigate lock waiter
//    preemption" (kvm.kick_cpu_yield), on top of d73eb57b80b (its
//    "vanilla" rows are d73eb57b80b's "boosting" rows, figure for figure):
//    25040 / 13600 / 5400;
//  - 89340d0935c9, the revert of 75437bb304b2 "locking/pvqspinlock: Don't
//    wait if vCPU is preempted" (3 VMs): 1700-1800 upstream and
//    13000-14000 with the revert on a host without both boosts; 4500-5000
//    and 14000-15500 with both;
//  - in the revert thread (2019-09-10, reply to Waiman Long), the guest's
//    cumulative lock event counters at two reads 5 s apart: pv_wait_early
//    189429 -> 202574, pv_vcpu_is_preempted 45588 -> 46336, so 748 of the
//    13145 early waits of those 5 s (5.7%; "6%" in the mail) came from
//    vcpu_is_preempted() and not from a halted predecessor. The mail does
//    not say which host ran it; it is compared with the upstream guest on
//    the host without the boosts.
// None of the messages says whether the guests used PV TLB flush; the
// scenario has it on (the PVQ rows of docs/validation.md show both). Ranges are checked
// at their middle. The 1-VM rate with d73eb57b80b set cost.ebizzy.lock_hold
// (skylake-sp-gold-6148.yaml); the rest are predictions, reported and not
// gated.
Experiment pvq() {
  Experiment e;
  e.id = "PVQ";
  e.title =
      "PV qspinlock wait-early and the 2019 host boosts, ebizzy -M, 1-3 x 80 vCPUs on 80 pCPUs";
  e.scenario = "ebizzy_pvspinlock_revert.yaml";
  // The host settings: kvm.directed_yield_ready (d73eb57b80b) and
  // kvm.kick_cpu_yield (266e85a5ec9).
  struct Host {
    const char* label;
    bool d73, kick;
  };
  enum { kD73, kNone, kBoth };
  const Host hosts[] = {
      {"d73eb57b80b", true, false}, {"no-boost", false, false}, {"both-boosts", true, true}};
  const auto run = [&](int vms, int host, bool revert) {
    const Host& h = hosts[host];
    RunSetting r;
    r.label = "vm.count=" + std::to_string(vms) + " " + h.label + (revert ? " revert" : "");
    r.sets = {std::string("kvm.directed_yield_ready=") + (h.d73 ? "true" : "false"),
              std::string("kvm.kick_cpu_yield=") + (h.kick ? "true" : "false"),
              "vm.count=" + std::to_string(vms)};
    if (revert) r.sets.emplace_back("guest.pv_spinlock_wait_early_preempted=false");
    e.runs.push_back(std::move(r));
    return e.runs.size() - 1;
  };
  // at[host][vms]: 1-3 VMs per host setting, the d73eb57b80b runs first
  // (the calibration run, and its check, come first).
  std::size_t at[3][4] = {};
  for (const int host : {kD73, kNone, kBoth})
    for (int vms = 1; vms <= 3; ++vms) at[host][vms] = run(vms, host, false);
  const std::size_t n3r = run(3, kNone, true);
  const std::size_t b3r = run(3, kBoth, true);
  e.quick_sets = {"sim.max_simulated_s=0.2"};
  const std::string key = "ebizzy.records_per_s";
  const auto rate = [&](std::size_t r, double published, const char* source) {
    Check c = metric_check(r, key, published, Tolerance::relative(0.25), 0);
    c.setting = e.runs[r].label + " (" + source + ")";
    e.checks.push_back(std::move(c));
  };
  rate(at[kD73][1], 23520, "d73eb57b80b, 266e85a5ec9");
  rate(at[kD73][2], 8000, "d73eb57b80b, 266e85a5ec9");
  rate(at[kD73][3], 3100, "d73eb57b80b, 266e85a5ec9");
  rate(at[kNone][1], 21443, "d73eb57b80b");
  rate(at[kNone][2], 2800, "d73eb57b80b");
  rate(at[kNone][3], 1800, "d73eb57b80b");
  rate(at[kNone][3], 1750, "89340d0935c9 thread");
  rate(at[kBoth][1], 25040, "266e85a5ec9");
  rate(at[kBoth][2], 13600, "266e85a5ec9");
  rate(at[kBoth][3], 5400, "266e85a5ec9");
  rate(at[kBoth][3], 4750, "89340d0935c9 thread");
  rate(n3r, 13500, "89340d0935c9 thread");
  rate(b3r, 14750, "89340d0935c9 thread");
  Check gain =
      boost_check("revert boost", at[kNone][3], n3r, key, 13500.0 / 1750.0 * 100 - 100, 0.25);
  gain.setting = "vm.count=3 no-boost: upstream -> revert (89340d0935c9 thread)";
  e.checks.push_back(std::move(gain));
  Check share;
  share.metric = "early waits from vcpu_is_preempted()";
  share.unit = "%";
  share.decimals = 1;
  share.runs = {at[kNone][3]};
  share.published = 100.0 * 748 / 13145;
  share.tolerance = Tolerance::absolute(3);
  share.simulate = [](const RunRefs& r) {
    const double early = r[0]->metric("ebizzy.lock.pv_wait_early");
    return early > 0 ? 100.0 * r[0]->metric("ebizzy.lock.pv_wait_early_preempted") / early : kNaN;
  };
  share.setting = e.runs[at[kNone][3]].label + " (89340d0935c9 thread, lock event counters)";
  e.checks.push_back(std::move(share));
  for (auto& c : e.checks) c.gated = false;
  mark_calibration(e, 0, 1);  // the 1-VM rate with d73eb57b80b: cost.ebizzy.lock_hold
  return e;
}

// --------------------------------------------------------------------- T6

Experiment t6() {
  Experiment e;
  e.id = "T6";
  e.title = "IPI cost and the x2APIC ICR fastpath (vmexit.flat ipi, 2 vCPUs, Skylake-SP)";
  e.scenario = "vmexit_ipi.yaml";
  e.runs = switch_runs("kvm.exit_fastpath", {"false", "true"});
  // --quick: only `ipi`, GOAL 2^26 (the full run: ipi then ipi_halt, 2^30).
  e.quick_sets = {"vmexit.goal_cycles=67108864", "vmexit.tests=ipi"};
  // docs/validation.md T6 (vmexit-cost_L1_published-numbers.csv ref c):
  // 4238 -> 3543 cycles, each within 10%, the improvement (-16.4%) within 5
  // percentage points. The no-fastpath figure calibrated
  // cost.vcpu_block_abort (see the platform file); the fastpath figure and
  // the improvement are predictions.
  const std::string key = "vmexit.ipi.cycles";
  e.checks.push_back(metric_check(0, key, 4238, Tolerance::relative(0.10), 0));
  e.checks.push_back(metric_check(1, key, 3543, Tolerance::relative(0.10), 0));
  e.checks.push_back(reduction_check("improvement of ipi", 0, 1, key, 16.4, 5));
  mark_calibration(e, 0, 1);  // cost.vcpu_block_abort
  return e;
}

// ------------------------------------------- more points of the same families
// Published points of the published timer-latency figures (docs/validation.md)
// (rows of refs 2 and 3, copied here with their source) that the scenarios
// reproduce without a new mechanism. Reported in the table and in the group
// errors, not gated: the CSV gives most of them as "~" and no tolerance was
// set for them; T2's 15% (10 pp for a reduction) is shown for comparison.
// Not reproducible today, so not listed: ref 1 (host not stated), ref 4
// (periodic/oneshot modes), ref 6 (swait -> rcuwait), ref 7 (SPEC_CTRL);
// vmexit-cost refs a/b (cpuid, vmcall: no such vmexit.flat test modelled),
// c's ultra fastpath, e (the T3 rows), f (rcuwait early check).

// Ref 2: a Skylake server, 2018 kernel (v4.20), busy-wait tscdeadline_latency.
Experiment tl2() {
  Experiment e;
  e.id = "TL2";
  e.title = "tscdeadline_latency on a Skylake server, 2018 (timer-latency CSV ref 2)";
  e.scenario = "tscdeadline_latency_skylake.yaml";
  e.runs = {{"kvm.enable_hv_timer=false", {"kvm.enable_hv_timer=false"}},
            {"kvm.lapic_timer_advance_ns=0", {"kvm.lapic_timer_advance_ns=0"}},
            {"kvm.lapic_timer_advance_ns=-1", {"kvm.lapic_timer_advance_ns=-1"}}};
  e.quick_sets = {"tscdeadline_latency.size=2000"};
  const std::string key = "tscdeadline_latency.avg_cycles";
  e.checks.push_back(metric_check(0, key, 5700, Tolerance::relative(0.15), 0));
  e.checks.push_back(metric_check(1, key, 2600, Tolerance::relative(0.15), 0));
  e.checks.push_back(metric_check(2, key, 1200, Tolerance::relative(0.15), 0));
  for (auto& c : e.checks) c.gated = false;
  mark_calibration(e, 0, 1);  // the Skylake-SP host IRQ costs were sized on it
  return e;
}

// Ref 3: the wait moved next to the world switch, on T2's Haswell desktop.
Experiment tl3() {
  Experiment e;
  e.id = "TL3";
  e.title = "wait_lapic_expire next to the world switch, Haswell desktop (timer-latency CSV ref 3)";
  e.scenario = "tscdeadline_latency.yaml";
  e.runs = switch_runs("kvm.wait_lapic_expire_site", {"vcpu_enter_guest", "vmx_vcpu_run"});
  e.quick_sets = {"tscdeadline_latency.size=2000"};
  const std::string key = "tscdeadline_latency.avg_cycles";
  e.checks.push_back(metric_check(0, key, 1600, Tolerance::relative(0.15), 0));
  e.checks.push_back(metric_check(1, key, 1000, Tolerance::relative(0.15), 0));
  e.checks.push_back(reduction_check("reduction of avg_cycles", 0, 1, key, 40, 10));
  for (auto& c : e.checks) c.gated = false;
  // Not calibration: cost.vmx_vcpu_run (700 cycles) comes from the text of
  // the same message, not from these latencies.
  return e;
}

// T5 (halt_poll_ns_timer) has no numeric tolerance in docs/validation.md
// (a sweep whose wake-up latency must drop by about a schedule-out/wake-up):
// it is not an accuracy row.

}  // namespace

const std::vector<Experiment>& validation_targets() {
  static const std::vector<Experiment> targets = {t1(),  t2(), t3(),  t4(), t4l(),
                                                  pvq(), t6(), tl2(), tl3()};
  return targets;
}

}  // namespace kvmsim::validate
