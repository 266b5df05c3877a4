#include "sim/system.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <systemc>

#include "sim/checks/sched_invariants.h"
#include "sim/core/invariants.h"
#include "sim/sched/host.h"
#include "sim/sched/host_kernel_timers.h"
#include "sim/sched/host_task.h"
#include "sim/trace/trace_observer.h"
#include "sim/views/perfetto_observer.h"
#include "sim/views/vcd_observer.h"
#include "sim/vmx/vm.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

[[noreturn]] void config_error(const std::string& msg) { throw ScenarioError(msg); }

// Where every vCPU thread (VM-major) starts and may run: vm.pinning (one pCPU
// each, taskset -c; several vCPUs may share one), else vm.affinity (all
// threads unpinned over that set, started round-robin), else host.isolcpus
// as one pinned pCPU per vCPU.
struct Placement {
  std::vector<int> start;
  std::vector<CpuMask> allowed;
};
Placement vcpu_placement(const ParamSet& p, const Topology& topo, int nvcpus) {
  const auto check = [&](const char* key, std::int64_t c) {
    if (c >= topo.cpus())
      config_error(fmt::format("{}: key '{}': pCPU {} does not exist ({} pCPUs)", p.origin(key),
                               key, c, topo.cpus()));
  };
  Placement pl;
  const auto& pin = p.ints("vm.pinning");
  const auto& aff = p.ints("vm.affinity");
  if (!pin.empty() && !aff.empty())
    config_error(
        fmt::format("{}: key 'vm.affinity': set either vm.pinning (one pCPU per vCPU) "
                    "or vm.affinity (a set shared by all vCPUs), not both",
                    p.origin("vm.affinity")));
  if (!aff.empty()) {
    std::vector<int> set;
    for (auto c : aff) {
      check("vm.affinity", c);
      set.push_back(static_cast<int>(c));
    }
    for (int i = 0; i < nvcpus; ++i) {
      pl.start.push_back(set[static_cast<std::size_t>(i) % set.size()]);
      pl.allowed.push_back(CpuMask::of(set));
    }
    return pl;
  }
  const bool from_pin = !pin.empty();
  const auto& list = from_pin ? pin : p.ints("host.isolcpus");
  const char* key = from_pin ? "vm.pinning" : "host.isolcpus";
  if (static_cast<int>(list.size()) < nvcpus)
    config_error(fmt::format(
        "{}: key '{}': {} vCPUs need a pCPU each, only {} given (list one pCPU per vCPU in "
        "vm.pinning, repeating pCPUs to share them, or give vm.affinity)",
        p.origin(key), key, nvcpus, list.size()));
  for (int i = 0; i < nvcpus; ++i) {
    const auto c = list[static_cast<std::size_t>(i)];
    check(key, c);
    pl.start.push_back(static_cast<int>(c));
    pl.allowed.push_back(CpuMask::only(static_cast<int>(c)));
  }
  return pl;
}

}  // namespace

// Prints "cyclictest 123000/600000 samples" on a terminal now and then.
// The progress line on a terminal, for every workload: latency samples out
// of those expected (cyclictest, tscdeadline_latency), else simulated time
// (out of sim.max_simulated_s for a workload without an end of its own),
// refreshed every 65536 segments.
class System::Progress : public Observer {
 public:
  void connect(SignalRegistry& signals) override {
    auto& model = signals.get<ModelSignals>();
    model.latency_sample.connect<&Progress::on_latency_sample>(this);
    model.segment.connect<&Progress::on_segment>(this);
  }
  Progress(std::string what, std::uint64_t total, TscClock clk, double end_s)
      : what_(std::move(what)),
        total_(total),
        step_(total / 100 ? total / 100 : 1),
        clk_(clk),
        end_s_(end_s) {}
  void on_latency_sample(int, int, Tsc, Tsc, std::int64_t) {
    if (!total_) return;
    if (++n_ % step_ == 0 || n_ == total_) {
      std::fprintf(stderr, "\r[kvmsim] %s %llu/%llu samples (%3llu%%)", what_.c_str(),
                   static_cast<unsigned long long>(n_), static_cast<unsigned long long>(total_),
                   static_cast<unsigned long long>(n_ * 100 / total_));
      shown_ = true;
    }
  }
  void on_segment(int, Stage, Tsc, Tsc end) {
    if (total_ || ++segments_ % 65536) return;
    const double s = clk_.to_s(static_cast<double>(end));
    if (end_s_ > 0)
      std::fprintf(stderr, "\r[kvmsim] %s %.3f/%.3f s simulated (%3.0f%%)", what_.c_str(), s,
                   end_s_, 100 * s / end_s_);
    else
      std::fprintf(stderr, "\r[kvmsim] %s %.3f s simulated", what_.c_str(), s);
    shown_ = true;
  }
  void finish() const {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  std::string what_;
  std::uint64_t total_, step_, n_ = 0, segments_ = 0;
  TscClock clk_;
  double end_s_;
  bool shown_ = false;
};

struct System::Views {
  std::unique_ptr<trace::TraceObserver> trace;
  std::unique_ptr<views::PerfettoObserver> perfetto;
  std::unique_ptr<views::VcdObserver> vcd;
};

System::System(const ParamSet& p, const RunOptions& opts) : p_(p), views_(new Views) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);  // 1 unit = 1 host TSC cycle
  // sc_stop() at the end of a workload is the normal way a run ends.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  ctx_.clock.tsc_khz = static_cast<std::uint64_t>(p.i("platform.tsc_khz"));
  ctx_.seed = static_cast<std::uint64_t>(p.i("sim.seed"));
  ctx_.kernel.use_systemc(opts.systemc_kernel || !opts.vcd_path.empty());  // sc_trace: SystemC's
  ctx_.run_ahead.enabled =
      opts.run_ahead && opts.vcd_path.empty();  // sc_trace samples SystemC's time
  ModelTime::reset();
  // Exit statistics, latency breakdown and the guard (core_observers.h)
  // connect first, so each signal calls them before any other observer.
  core_.connect(ctx_.signals);

  host_ = std::make_unique<Host>(p, ctx_);
  const int nvms = static_cast<int>(p.i("vm.count"));
  vcpus_per_vm_ = static_cast<int>(p.i("vm.vcpus"));
  const Placement place = vcpu_placement(p, host_->topology(), nvms * vcpus_per_vm_);
  const VmConfig vm_cfg = vm_config(p, ctx_.clock);

  const std::string& type = p.s("workload.type");
  const WorkloadInfo* info = WorkloadRegistry::instance().find(type);
  if (!info)
    config_error(fmt::format("{}: key 'workload.type': no workload '{}' is registered",
                             p.origin("workload.type"), type));
  workload_ = info->make(p);
  // The pace warning (run_guard.h): samples, the workload's own count, or
  // simulated time.
  {
    const Workload* w = workload_.get();
    const RunGuard* g = &core_.guard;
    const auto total = static_cast<double>(w->progress_total());
    const double limit = p.d("sim.max_simulated_s");
    const TscClock clk = ctx_.clock;
    // The run ends with the workload or at sim.max_simulated_s, whichever
    // comes first.
    core_.guard.set_pace_probe(type, [w, g, total, limit, clk] {
      const double by_time = clk.to_s(static_cast<double>(now_tsc())) / limit;
      if (total > 0) return std::max(by_time, static_cast<double>(g->latency_samples()) / total);
      return std::max(by_time, w->done_fraction());
    });
  }
  if (opts.progress && isatty(STDERR_FILENO)) {
    auto prog =
        std::make_unique<Progress>(type, workload_->progress_total(), ctx_.clock,
                                   workload_->open_ended() ? p.d("sim.max_simulated_s") : 0.0);
    progress_ = prog.get();
    add_observer(prog.get());
    owned_observers_.push_back(std::move(prog));
  }

  // The VMs' task groups on the host (vm.cgroup, or host.sched_autogroup's
  // session groups): one per VM, or one for all.
  const GroupLayout layout = GroupLayout::from(p);
  const std::string& cgroup = layout.vms;
  const std::uint64_t shares = layout.vm_shares;
  TaskGroup* shared_group =
      cgroup == "shared" ? host_->scheduler().create_group("machine", shares) : nullptr;
  for (int vm = 0; vm < nvms; ++vm) {
    TaskGroup* group = cgroup == "per_vm"
                           ? host_->scheduler().create_group(fmt::format("vm{}", vm), shares)
                           : shared_group;
    vms_.push_back(
        std::make_unique<Vm>(vm, vm * vcpus_per_vm_, vcpus_per_vm_, vm_cfg, [&](int vcpu) {
          const auto i = static_cast<std::size_t>(vcpu);
          return std::make_pair(&host_->pcpu(place.start[i]), place.allowed[i]);
        }));
    for (const auto& v : vms_.back()->vcpus()) {
      vcpus_.push_back(v.get());
      host_->scheduler().attach(v->se(), group);
      host_->add_thread(v.get());
    }
  }
  workload_->build(*this);
  host_tasks_ = make_host_tasks(p, *host_);
  host_->finalize();
  for (auto& t : make_kernel_timers(p, *host_)) host_tasks_.push_back(std::move(t));

  metric_sources_.push_back(host_.get());
  vcpu_metrics_ = std::make_unique<VcpuMetrics>(vcpus_, workload_->measuring_vcpu());
  metric_sources_.push_back(vcpu_metrics_.get());
  metric_sources_.push_back(workload_.get());

  if (p.b("sim.check_invariants")) {
    std::vector<int> pids;
    for (const auto* v : vcpus_) pids.push_back(v->pid());
    invariants_ = std::make_unique<SchedInvariants>(std::move(pids));
    add_observer(invariants_.get());
    metric_sources_.push_back(invariants_.get());
  }
  attach_views(opts);
  for (auto* o : opts.observers) add_observer(o);
}

System::~System() = default;

void System::attach_views(const RunOptions& opts) {
  const TscClock& clk = ctx_.clock;
  if (!opts.trace_path.empty()) {
    std::vector<trace::TraceTask> tasks;
    std::vector<int> apicid;
    for (const auto* v : vcpus_) {
      tasks.push_back({v->comm(), v->pid()});
      apicid.push_back(v->id() % vcpus_per_vm_);  // APIC ID = vCPU index in its VM
    }
    views_->trace = std::make_unique<trace::TraceObserver>(
        opts.trace_path, clk, std::move(tasks), std::move(apicid), host_->topology().cpus(),
        parse_kernel_version(p_.s("host.kernel")).value_or(std::vector<int>{}));
    add_observer(views_->trace.get());
  }
  if (!opts.perfetto_path.empty()) {
    std::vector<int> cpus;
    std::vector<views::ViewVcpu> vv;
    for (const auto* c : host_->pcpus()) cpus.push_back(c->id());
    for (auto* v : vcpus_) vv.push_back({v->id(), v->pcpu().id(), v->comm()});
    views_->perfetto = std::make_unique<views::PerfettoObserver>(
        opts.perfetto_path, clk, clk.from_ns(opts.perfetto_limit_ms * 1e6), std::move(cpus),
        std::move(vv));
    add_observer(views_->perfetto.get());
  }
  if (!opts.vcd_path.empty()) {  // sc_trace needs the file before sc_start()
    std::vector<const Vcpu*> vv(vcpus_.begin(), vcpus_.end());
    views_->vcd = std::make_unique<views::VcdObserver>(
        opts.vcd_path, clk, clk.from_ns(opts.vcd_limit_ms * 1e6), clk.from_ns(opts.vcd_sample_ns),
        std::move(vv));
    add_observer(views_->vcd.get());
  }
}

void System::stop() {
  stopped_ = true;
  sim_stop();
}

RunResult System::run() {
  const TscClock& clk = ctx_.clock;
  for (auto* v : vcpus_) v->start();
  for (auto& t : host_tasks_) t->start(*host_);
  const Tsc limit = clk.from_ns(p_.d("sim.max_simulated_s") * 1e9);
  ctx_.run_ahead.run_until = limit;
  const auto wall0 = std::chrono::steady_clock::now();
  ctx_.kernel.run(limit);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (progress_) progress_->finish();
  if (std::getenv("KVMSIM_RUN_AHEAD_STATS"))
    std::fprintf(stderr, "run-ahead %s: %llu model steps in %llu SystemC activations, %llu ties\n",
                 ctx_.run_ahead.enabled ? "on" : "off",
                 static_cast<unsigned long long>(ctx_.events),
                 static_cast<unsigned long long>(ctx_.run_ahead.activations),
                 static_cast<unsigned long long>(ctx_.run_ahead.ties));
  if (std::getenv("KVMSIM_RUN_AHEAD_STATS") && !ctx_.kernel.systemc()) {
    const auto& k = ctx_.kernel.stats();
    std::fprintf(stderr,
                 "event kernel: %llu timed notifications, %llu cancelled, heap up to %llu\n",
                 static_cast<unsigned long long>(k.timed), static_cast<unsigned long long>(k.dead),
                 static_cast<unsigned long long>(k.max_heap));
  }
  if (!invariant_violation().empty()) throw InvariantError(invariant_violation());

  RunResult r;
  const Tsc end = now_tsc();  // where a pCPU that ran ahead called sc_stop(), if one did
  host_->account_to(end);
  r.completed = stopped_ || workload_->open_ended();
  r.simulated_s = clk.to_s(static_cast<double>(end));
  auto& mt = r.metrics;
  mt["sim.events"] = static_cast<double>(ctx_.events);
  mt["sim.wall_s"] = wall_s;
  mt["sim.simulated_s"] = r.simulated_s;
  mt["sim.seed"] = static_cast<double>(ctx_.seed);
  mt["sim.fingerprint"] = static_cast<double>(core_.guard.fingerprint());

  for (int i = 0; i < kMaxExitReason; ++i) {
    const auto& s = core_.exit_stats.all()[static_cast<std::size_t>(i)];
    if (!s.count) continue;
    ExitRow row;
    row.reason = std::string(exit_reason_name(static_cast<ExitReason>(i)));
    row.count = s.count;
    row.total_ns = clk.to_ns(static_cast<double>(s.total));
    row.min_ns = clk.to_ns(static_cast<double>(s.min));
    row.max_ns = clk.to_ns(static_cast<double>(s.max));
    mt["exits." + row.reason + ".count"] = static_cast<double>(row.count);
    mt["exits." + row.reason + ".avg_ns"] = row.total_ns / static_cast<double>(row.count);
    r.exits.push_back(row);
  }
  std::stable_sort(r.exits.begin(), r.exits.end(),
                   [](const ExitRow& a, const ExitRow& b) { return a.count > b.count; });

  double sum = 0;
  // Path order: the host stages (those appended after the guest ones, such
  // as halt_poll and vcpu_run, included), then the guest's (guest_halt_poll
  // too).
  std::vector<int> order;
  const auto is_guest = [](int s) {
    return (s >= static_cast<int>(Stage::Guest) && s <= static_cast<int>(Stage::GuestUser)) ||
           s == static_cast<int>(Stage::GuestHaltPoll);
  };
  for (int s = 0; s < kStageCount; ++s)
    if (!is_guest(s)) order.push_back(s);
  for (int s = 0; s < kStageCount; ++s)
    if (is_guest(s)) order.push_back(s);
  for (const int s : order) {
    const double ns = clk.to_ns(core_.breakdown.mean_cycles(static_cast<Stage>(s)));
    if (ns <= 0) continue;
    const std::string name(stage_name(static_cast<Stage>(s)));
    r.breakdown.push_back({name, ns});
    mt["breakdown." + name + ".avg_ns"] = ns;
    sum += ns;
  }
  mt["breakdown.total.avg_ns"] = sum;

  for (const auto* src : metric_sources_) src->report(mt, clk);
  if (invariants_ && ((invariants_->violations() != 0u) || mt["vcpu.kicks_lost"] > 0)) {
    std::string msg = fmt::format("invariant violated {} times ({} kicks lost)",
                                  invariants_->violations(), mt["vcpu.kicks_lost"]);
    for (const auto& m : invariants_->messages()) msg += "\n  " + m;
    throw std::runtime_error(msg);
  }
  if (const auto* h = workload_->histogram()) r.histogram = *h;
  r.headline = workload_->headline(mt);

  views_->trace.reset();  // flush and close the trace file
  if (views_->perfetto) views_->perfetto->finish(end);
  if (views_->vcd) views_->vcd->finish();
  return r;
}

RunResult run_simulation(const ParamSet& p, const RunOptions& opts) {
  // The model is torn down by the process exit: SystemC objects cannot be
  // destroyed and re-elaborated within one process.
  auto* sys = new System(p, opts);
  return sys->run();
}

}  // namespace kvmsim
