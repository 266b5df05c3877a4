// The experiments `kvmsim validate` runs: per published target, the scenario,
// its paired runs, the --set that shortens it for --quick, and its checks
// (what each figure is compared with and how a derived figure is computed).
// Every published number, tolerance and source text comes from
// validation/targets.yaml (published_targets.h), bound to the checks here by
// figure id; a figure asked for here that the file lacks, or one of the file
// that nothing here asks for, is an error. An experiment whose scenario file
// does not exist is skipped, so a target can be listed before its scenario
// lands. To add one: its entry in validation/targets.yaml, a scenario file,
// and a builder below (its runs, its checks by figure id).
//
// Full runs use the scenario as it is, with its default seed: that is the
// published setup. --quick shortens each run; the tolerances stay the same
// except where a figure gives a quick_tolerance (and why).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/histogram.h"
#include "tools/kvmsim/published_targets.h"
#include "tools/kvmsim/validation.h"

namespace kvmsim::validate {

namespace {

// ------------------------------------------------------------ binding figures

// Binds the figures of one target to the checks of its experiment, and
// records what does not match.
class Binder {
 public:
  Binder(const Target& t, Experiment& e, std::vector<std::string>& errors)
      : t_(t), e_(e), errors_(errors) {}

  // A figure by id (marked used); nullptr (and an error) when missing.
  const Figure* take(const std::string& id) {
    used_.insert(id);
    const Figure* f = t_.figure(id);
    if (!f) error("figure " + id + " missing");
    return f;
  }

  // The published value of a figure (NaN, and an error, when it has none).
  double value(const std::string& id) {
    const Figure* f = take(id);
    if (f && std::isnan(f->value)) error("figure " + id + " needs a value (or range)");
    return f ? f->value : kNaN;
  }

  // Adds `c` with the published value, tolerance and role of figure `id`.
  void add(Check c, const std::string& id) { add(std::move(c), id, false, kNaN); }

  // Adds `c` whose published value validate derives (`published`, NaN for
  // none) from other data of the target; the figure says so (`derived`).
  void add_derived(Check c, const std::string& id, double published) {
    add(std::move(c), id, true, published);
  }

  // Every figure of the target was asked for.
  void finish() {
    for (const Figure& f : t_.figures)
      if (used_.count(f.id) == 0) error("figure " + f.id + " is not used by validate");
  }

 private:
  void error(const std::string& what) { errors_.push_back(t_.id + ": " + what); }

  void add(Check c, const std::string& id, bool derived, double published) {
    const Figure* f = take(id);
    if (f) {
      const std::string label = c.setting.empty() ? setting_label(e_, c) : c.setting;
      if (f->setting != label)
        error("figure " + id + ": setting '" + f->setting + "', validate compares with '" + label +
              "'");
      if (f->metric != c.metric)
        error("figure " + id + ": metric '" + f->metric + "', validate's is '" + c.metric + "'");
      if (f->unit != c.unit)
        error("figure " + id + ": unit '" + f->unit + "', validate's is '" + c.unit + "'");
      if (derived && f->derived.empty())
        error("figure " + id + ": validate derives it; say how (derived) instead of a value");
      if (!derived && std::isnan(f->value)) error("figure " + id + " needs a value (or range)");
      c.published = derived ? published : f->value;
      c.tolerance = f->tolerance;
      c.quick_tolerance = f->quick_tolerance;
      c.calibration = f->calibration;
      if (!f->source.empty()) c.setting = label + " (" + f->source + ")";
    }
    c.gated = t_.gated;
    e_.checks.push_back(std::move(c));
  }

  const Target& t_;
  Experiment& e_;
  std::vector<std::string>& errors_;
  std::set<std::string> used_;
};

// ------------------------------------------------------------ check builders

// A metric of summary.json of one run.
Check metric_check(std::size_t run, const std::string& key, int decimals) {
  Check c;
  c.metric = key;
  c.decimals = decimals;
  c.runs = {run};
  c.simulate = [key](const RunRefs& r) { return r[0]->metric(key); };
  return c;
}

// 100 * (1 - after / before) of a metric, in %.
Check reduction_check(const std::string& label, std::size_t before, std::size_t after,
                      const std::string& key) {
  Check c;
  c.metric = label;
  c.unit = "%";
  c.decimals = 1;
  c.runs = {before, after};
  c.simulate = [key](const RunRefs& r) {
    return 100.0 * (1.0 - r[1]->metric(key) / r[0]->metric(key));
  };
  return c;
}

// 100 * (with / without - 1) of a metric, in %.
Check boost_check(const std::string& label, std::size_t without, std::size_t with,
                  const std::string& key) {
  Check c;
  c.metric = label;
  c.unit = "%";
  c.decimals = 1;
  c.runs = {without, with};
  c.simulate = [key](const RunRefs& r) {
    return 100.0 * (r[1]->metric(key) / r[0]->metric(key) - 1.0);
  };
  return c;
}

// A statistic of one run's cyclictest histogram (NaN without one).
Check histogram_check(std::size_t run, const std::string& label, const std::string& unit,
                      int decimals, std::function<double(const LatencyHistogram&)> stat) {
  Check c;
  c.metric = label;
  c.unit = unit;
  c.decimals = decimals;
  c.runs = {run};
  c.simulate = [stat = std::move(stat)](const RunRefs& r) {
    return r[0]->ok && r[0]->histogram ? stat(*r[0]->histogram) : kNaN;
  };
  return c;
}

// --------------------------------------------------------------------- T1

// The T1 checks of one side (`series` of the published histogram): mode, min,
// mean over bins 3-12, W1 over bins 3-12 (normalised), the samples > 12 us
// (shown per the published loops).
void add_t1_checks(Binder& b, std::size_t run, const PublishedHistogram& h,
                   const std::string& series) {
  const auto bins = h.buckets(series);
  b.add_derived(histogram_check(run, "mode", "us", 0,
                                [](const LatencyHistogram& x) {
                                  return static_cast<double>(mode_bucket(x.counts()));
                                }),
                series + ".mode", static_cast<double>(mode_bucket(bins)));
  b.add(histogram_check(run, "min", "us", 0,
                        [](const LatencyHistogram& x) { return static_cast<double>(x.min_us()); }),
        series + ".min");
  b.add_derived(histogram_check(
                    run, "mean over bins 3-12", "us", 2,
                    [](const LatencyHistogram& x) { return mean_over_buckets(x.counts(), 3, 12); }),
                series + ".mean", mean_over_buckets(bins, 3, 12));
  b.add_derived(histogram_check(run, "W1 vs published, bins 3-12", "us", 3,
                                [bins](const LatencyHistogram& x) {
                                  return wasserstein1_buckets(x.counts(), bins, 3, 12);
                                }),
                series + ".w1", kNaN);
  const auto loops = static_cast<double>(h.loops);
  b.add_derived(
      histogram_check(run, "samples > 12 us per " + std::to_string(h.loops), "", 0,
                      [loops](const LatencyHistogram& x) {
                        std::uint64_t upto12 = 0;
                        for (std::size_t k = 0; k <= 12 && k < x.buckets(); ++k)
                          upto12 += x.count(k);
                        const auto n = static_cast<double>(x.samples());
                        return n > 0 ? static_cast<double>(x.samples() - upto12) / n * loops : kNaN;
                      }),
      series + ".above_12", static_cast<double>(h.above_last(series)));
}

void t1(Experiment& e, Binder& b, const Target& t) {
  e.scenario = "cyclictest_pinned.yaml";
  e.runs = switch_runs("kvm.enable_hv_timer", {"true", "false"});
  e.quick_sets = {"cyclictest.loops=60000"};  // full: the scenario's 600000
  if (!t.histogram || t.histogram->bucket_us.empty() || t.histogram->bucket_us.back() != 12 ||
      !t.histogram->counts.count("hv_on") || !t.histogram->counts.count("hv_off"))
    throw TargetsError("T1: a histogram of bins up to 12 us with series hv_on and hv_off needed");
  add_t1_checks(b, 0, *t.histogram, "hv_on");
  add_t1_checks(b, 1, *t.histogram, "hv_off");
}

// --------------------------------------------------------------------- T2

void t2(Experiment& e, Binder& b, const Target&) {
  e.scenario = "tscdeadline_latency.yaml";
  e.runs = switch_runs("kvm.hv_timer_advance", {"false", "true"});
  e.quick_sets = {"tscdeadline_latency.size=2000"};  // full: the scenario's 10000 samples
  const std::string key = "tscdeadline_latency.avg_cycles";
  b.add(metric_check(0, key, 0), "no_advance");
  b.add(metric_check(1, key, 0), "advance");
  b.add(reduction_check("reduction of avg_cycles", 0, 1, key), "reduction");
}

// --------------------------------------------------------------------- T3

void t3(Experiment& e, Binder& b, const Target&) {
  e.scenario = "vmexit_tscdeadline.yaml";
  e.runs = switch_runs("kvm.exit_fastpath", {"false", "true"});
  e.quick_sets = {"vmexit.goal_cycles=67108864"};  // 2^26; full: the scenario's GOAL 2^30
  const std::string immed = "vmexit.tscdeadline_immed.cycles";
  const std::string deadline = "vmexit.tscdeadline.cycles";
  b.add(metric_check(0, immed, 2), "immed.no_fastpath");
  b.add(metric_check(1, immed, 2), "immed.fastpath");
  b.add(metric_check(0, deadline, 2), "deadline.no_fastpath");
  b.add(metric_check(1, deadline, 2), "deadline.fastpath");
  b.add(reduction_check("improvement of tscdeadline_immed", 0, 1, immed), "immed.improvement");
  b.add(reduction_check("improvement of tscdeadline", 0, 1, deadline), "deadline.improvement");
}

// --------------------------------------------------------------------- T4

// ebizzy -M (sim/guest/workloads/ebizzy_workload.cpp) for the scenario's 5 simulated
// seconds (ebizzy -S 5); --quick runs 1 s. Per vCPU count, native and PV
// flush, and the boost except at 8 vCPUs (not compared on its own).
void t4(Experiment& e, Binder& b, const Target&) {
  e.scenario = "ebizzy_overcommit.yaml";
  e.quick_sets = {"sim.max_simulated_s=1"};
  const std::string key = "ebizzy.records_per_s";
  for (const int vcpus : {8, 16, 24, 32}) {
    const std::string v = "vm.vcpus=" + std::to_string(vcpus);
    const std::string id = "vcpus" + std::to_string(vcpus);
    const std::size_t native = e.runs.size();
    e.runs.push_back({v + " guest.pv_tlb_flush=false", {v, "guest.pv_tlb_flush=false"}});
    e.runs.push_back({v + " guest.pv_tlb_flush=true", {v, "guest.pv_tlb_flush=true"}});
    b.add(metric_check(native, key, 0), id + ".native");
    b.add(metric_check(native + 1, key, 0), id + ".pv");
    if (vcpus != 8) b.add(boost_check("PV flush boost", native, native + 1, key), id + ".boost");
  }
  // The text does not name the guest's CPU model (docs/model/cpu-model.md).
  e.configurations = {
      {"-cpu host",
       {},
       "the PV run needs kvm-pv-tlb-flush, which no named model gets, and the author's 2019 "
       "runs (PVQ) need PV spinlocks, which a named model gets only with +kvm-pv-unhalt"},
      {"-cpu qemu64,+kvm-pv-tlb-flush",
       {"vm.cpu_model=qemu64", "guest.cpuid.pv_tlb_flush=true"},
       "QEMU's default model with the feature the PV run needs: test-and-set spinlocks, no "
       "vcpu_is_preempted()"}};
}

// T4L: ebizzy -M beside two host hogs standing in for the other VM's
// 'stress --cpu 2' (scenarios/ebizzy_light_overcommit.yaml says why), with
// and without the vcpu->ready boost and PV sched yield.
void t4l(Experiment& e, Binder& b, const Target&) {
  e.scenario = "ebizzy_light_overcommit.yaml";
  e.runs = switch_runs("kvm.directed_yield_ready", {"false", "true"});
  e.runs.push_back({"guest.pv_sched_yield=true kvm.directed_yield_ready=false",
                    {"guest.pv_sched_yield=true", "kvm.directed_yield_ready=false"}});
  e.runs.push_back({"guest.pv_sched_yield=true kvm.directed_yield_ready=true",
                    {"guest.pv_sched_yield=true", "kvm.directed_yield_ready=true"}});
  e.quick_sets = {"sim.max_simulated_s=1"};
  const std::string key = "ebizzy.records_per_s";
  // perf top in the guest: the share of guest CPU in smp_call_function_many.
  const auto share = [](std::size_t run) {
    Check c;
    c.metric = "guest CPU in smp_call_function_many";
    c.unit = "%";
    c.decimals = 1;
    c.runs = {run};
    c.simulate = [](const RunRefs& r) {
      return 100.0 * r[0]->metric("ebizzy.flush_wait_on_cpu_share");
    };
    return c;
  };
  b.add(metric_check(0, key, 0), "plain.records");
  b.add(share(0), "plain.smp_call_share");
  b.add(metric_check(1, key, 0), "boost.records");
  b.add(share(1), "boost.smp_call_share");
  b.add(metric_check(2, key, 0), "pv_yield.records");
  b.add(metric_check(3, key, 0), "pv_yield_boost.records");
  b.add_derived(boost_check("d73eb57b80b boost", 0, 1, key), "boost",
                b.value("boost.records") / b.value("plain.records") * 100 - 100);
  // The text does not say how the two QEMUs were started, so not whether
  // the host scheduled them as groups (docs/model/host-scheduler.md).
  e.configurations = {
      {"no task groups",
       {},
       "QEMUs started by hand with autogroup inactive (shells in a cpu cgroup, or "
       "kernel.sched_autogroup_enabled=0): every thread in the root run queue"},
      {"a task group per VM",
       {"vm.cgroup=per_vm", "host.hog.cgroup=own"},
       "each QEMU from its own shell on a SCHED_AUTOGROUP=y desktop kernel (an autogroup per "
       "session), or libvirt's scope per VM: the stress VM's two busy vCPUs weigh one group"},
      {"no IBPB on a vCPU switch",
       {"host.spectre_v2_ibpb=false"},
       "a Haswell without the 2018 microcode that provides IBPB, or a host booted with "
       "spectre_v2_user=off / nospectre_v2; the chosen set-up is the v5.2 default with the "
       "distributions' microcode"}};
}

// --------------------------------------------------------------------- PVQ

// The PV qspinlock of a v5.3 guest under over-commit: ebizzy -M in 1-3
// guests of 80 vCPUs on 80 pCPUs, records/s per VM, on three host settings
// (kvm.directed_yield_ready = d73eb57b80b, kvm.kick_cpu_yield = 266e85a5ec9)
// and with the guest revert (guest.pv_spinlock_wait_early_preempted=false).
void pvq(Experiment& e, Binder& b, const Target& t) {
  e.scenario = "ebizzy_pvspinlock_revert.yaml";
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
  // The text names neither the CPU model (PV spinlocks: -cpu host, or a
  // named model +kvm-pv-unhalt) nor the QEMU release: released QEMU of
  // September 2019 was 4.1, which does not name kvm-pv-sched-yield; the
  // author's own QEMU patch naming it (b896c4b50d, 2019-07) was in QEMU
  // master, released in 4.2.
  e.configurations = {
      {"-cpu host, QEMU master of 2019 (4.2)",
       {},
       "the revert measured changes pv_wait_early(), which runs only with PV spinlocks; the "
       "author's QEMU master had his kvm-pv-sched-yield patch (the release is not stated)"},
      {"-cpu host, QEMU 4.1",
       {"vm.qemu_version=4.1"},
       "the last QEMU released before the measurement (2019-09): no kvm-pv-sched-yield, so no "
       "PV sched yield in the v5.3 guest"},
      {"-cpu host, QEMU 4.2, a task group per VM",
       {"vm.cgroup=per_vm"},
       "the VMs started by libvirt (a cgroup scope per VM) or from separate shells with "
       "autogroup: each VM's 80 vCPUs share one group's weight on a pCPU; the text does not "
       "say how the VMs were started"},
      {"-cpu host, QEMU 4.2, no IBPB on a vCPU switch",
       {"host.spectre_v2_ibpb=false"},
       "a host booted with spectre_v2_user=off or without IBPB microcode (the chosen set-up is "
       "the v5.x default: a barrier after every VMPTRLD of another vCPU's VMCS)"}};
  const std::string key = "ebizzy.records_per_s";
  const auto rate = [&](std::size_t r, const std::string& id) {
    b.add(metric_check(r, key, 0), id);
  };
  rate(at[kD73][1], "d73.vms1");
  rate(at[kD73][2], "d73.vms2");
  rate(at[kD73][3], "d73.vms3");
  rate(at[kNone][1], "none.vms1");
  rate(at[kNone][2], "none.vms2");
  rate(at[kNone][3], "none.vms3");
  rate(at[kNone][3], "none.vms3.thread");
  rate(at[kBoth][1], "both.vms1");
  rate(at[kBoth][2], "both.vms2");
  rate(at[kBoth][3], "both.vms3");
  rate(at[kBoth][3], "both.vms3.thread");
  rate(n3r, "none.vms3.revert");
  rate(b3r, "both.vms3.revert");
  Check gain = boost_check("revert boost", at[kNone][3], n3r, key);
  gain.setting = "vm.count=3 no-boost: upstream -> revert";
  b.add_derived(std::move(gain), "revert_boost",
                b.value("none.vms3.revert") / b.value("none.vms3.thread") * 100 - 100);
  // The share of the early waits that vcpu_is_preempted() caused, from the
  // two readings of the guest's lock event counters.
  Check share;
  share.metric = "early waits from vcpu_is_preempted()";
  share.unit = "%";
  share.decimals = 1;
  share.runs = {at[kNone][3]};
  share.simulate = [](const RunRefs& r) {
    const double early = r[0]->metric("ebizzy.lock.pv_wait_early");
    return early > 0 ? 100.0 * r[0]->metric("ebizzy.lock.pv_wait_early_preempted") / early : kNaN;
  };
  const auto delta = [&t](const std::string& name) {
    const auto it = t.counters.find(name);
    if (it == t.counters.end() || it->second.size() != 2)
      throw TargetsError("PVQ: counters: " + name + " needs two readings");
    return it->second[1] - it->second[0];
  };
  b.add_derived(std::move(share), "early_wait_share",
                100.0 * delta("pv_vcpu_is_preempted") / delta("pv_wait_early"));
}

// --------------------------------------------------------------------- T6

void t6(Experiment& e, Binder& b, const Target&) {
  e.scenario = "vmexit_ipi.yaml";
  e.runs = switch_runs("kvm.exit_fastpath", {"false", "true"});
  // --quick: only `ipi`, GOAL 2^26 (the full run: ipi then ipi_halt, 2^30).
  e.quick_sets = {"vmexit.goal_cycles=67108864", "vmexit.tests=ipi"};
  const std::string key = "vmexit.ipi.cycles";
  b.add(metric_check(0, key, 0), "no_fastpath");
  b.add(metric_check(1, key, 0), "fastpath");
  b.add(reduction_check("improvement of ipi", 0, 1, key), "improvement");
}

// ------------------------------------------- more points of the same families
// Published points of the timer-latency family that the scenarios reproduce
// without a new mechanism; reported, not gated.

// A Skylake server, 2018 kernel (v4.20), busy-wait tscdeadline_latency.
void tl2(Experiment& e, Binder& b, const Target&) {
  e.scenario = "tscdeadline_latency_skylake.yaml";
  e.runs = {{"kvm.enable_hv_timer=false", {"kvm.enable_hv_timer=false"}},
            {"kvm.lapic_timer_advance_ns=0", {"kvm.lapic_timer_advance_ns=0"}},
            {"kvm.lapic_timer_advance_ns=-1", {"kvm.lapic_timer_advance_ns=-1"}}};
  e.quick_sets = {"tscdeadline_latency.size=2000"};
  const std::string key = "tscdeadline_latency.avg_cycles";
  b.add(metric_check(0, key, 0), "hrtimer");
  b.add(metric_check(1, key, 0), "no_advance");
  b.add(metric_check(2, key, 0), "adaptive");
}

// The wait moved next to the world switch, on T2's Haswell desktop.
void tl3(Experiment& e, Binder& b, const Target&) {
  e.scenario = "tscdeadline_latency.yaml";
  e.runs = switch_runs("kvm.wait_lapic_expire_site", {"vcpu_enter_guest", "vmx_vcpu_run"});
  e.quick_sets = {"tscdeadline_latency.size=2000"};
  const std::string key = "tscdeadline_latency.avg_cycles";
  b.add(metric_check(0, key, 0), "enter_guest");
  b.add(metric_check(1, key, 0), "vcpu_run");
  b.add(reduction_check("reduction of avg_cycles", 0, 1, key), "reduction");
}

// T5 (halt_poll_ns_timer) has no numeric tolerance: a sweep whose wake-up
// latency must drop by about a schedule-out/wake-up; it is not an accuracy row.

using Builder = void (*)(Experiment&, Binder&, const Target&);

const std::vector<std::pair<std::string, Builder>>& builders() {
  static const std::vector<std::pair<std::string, Builder>> b = {
      {"T1", t1},   {"T2", t2}, {"T3", t3},   {"T4", t4},  {"T4L", t4l},
      {"PVQ", pvq}, {"T6", t6}, {"TL2", tl2}, {"TL3", tl3}};
  return b;
}

}  // namespace

std::vector<Experiment> build_experiments(const PublishedTargets& targets) {
  std::vector<Experiment> out;
  std::vector<std::string> errors;
  for (const auto& [id, build] : builders()) {
    const Target* t = targets.find(id);
    if (!t) {
      errors.push_back(id + ": target missing");
      continue;
    }
    Experiment e;
    e.id = id;
    e.title = t->title;
    e.source = t->source.summary();
    Binder b(*t, e, errors);
    try {
      build(e, b, *t);
    } catch (const TargetsError& err) {
      errors.emplace_back(err.what());
      continue;
    }
    b.finish();
    if (t->scenario != e.scenario)
      errors.push_back(id + ": scenario '" + t->scenario + "', validate runs '" + e.scenario + "'");
    out.push_back(std::move(e));
  }
  for (const Target& t : targets.targets) {
    const auto& ids = validation_target_ids();
    if (std::find(ids.begin(), ids.end(), t.id) == ids.end())
      errors.push_back(t.id + ": not a target validate checks (one of " + [&] {
        std::string s;
        for (const auto& i : ids) s += (s.empty() ? "" : ", ") + i;
        return s;
      }() + ")");
  }
  if (!errors.empty()) {
    std::string msg = targets.origin + " does not match validate's checks:";
    for (const auto& e : errors) msg += "\n  " + e;
    throw TargetsError(msg);
  }
  return out;
}

const std::vector<Experiment>& validation_targets() {
  static const std::vector<Experiment> targets = build_experiments(embedded_targets());
  return targets;
}

const std::vector<std::string>& validation_target_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> v;
    for (const auto& [id, build] : builders()) v.push_back(id);
    return v;
  }();
  return ids;
}

}  // namespace kvmsim::validate
