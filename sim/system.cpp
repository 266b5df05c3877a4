#include "sim/system.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <systemc>

#include "sim/core/breakdown.h"
#include "sim/core/context.h"
#include "sim/core/exit_stats.h"
#include "sim/core/invariants.h"
#include "sim/core/run_guard.h"
#include "sim/guest/cpu_hog.h"
#include "sim/guest/cyclictest.h"
#include "sim/guest/guest_kernel.h"
#include "sim/guest/kut.h"
#include "sim/sched/pcpu.h"
#include "sim/sched/topology.h"
#include "sim/trace/trace_observer.h"
#include "sim/views/perfetto_observer.h"
#include "sim/views/vcd_observer.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {
namespace {

// The residual host tick on an isolated pCPU (tick_sched_timer).
class HostTick : public HostHrtimer {
 public:
  HostTick(Tsc period, Sampler cost)
      : HostHrtimer("tick_sched_timer"), period_(period), cost_(std::move(cost)) {}
  Tsc fn(Pcpu& cpu, Tsc /*now*/) override {
    cpu.hrtimers().start(this, expires() + period_);  // hrtimer_forward()
    return cost_(cpu.rng());
  }

 private:
  Tsc period_;
  Sampler cost_;
};

// Prints "cyclictest 123000/600000 loops" on a terminal now and then.
class Progress : public ModelObserver {
 public:
  Progress(std::string what, std::uint64_t total)
      : what_(std::move(what)), total_(total), step_(total / 100 ? total / 100 : 1) {}
  void on_latency_sample(int, int, Tsc, Tsc, std::int64_t) override {
    if (++n_ % step_ == 0 || n_ == total_)
      std::fprintf(stderr, "\r[kvmsim] %s %llu/%llu samples (%3llu%%)", what_.c_str(),
                   static_cast<unsigned long long>(n_), static_cast<unsigned long long>(total_),
                   static_cast<unsigned long long>(n_ * 100 / total_));
  }
  ~Progress() override { std::fprintf(stderr, "\n"); }

 private:
  std::string what_;
  std::uint64_t total_, step_, n_ = 0;
};

struct Model {
  SimContext ctx;
  std::unique_ptr<Topology> topo;
  std::vector<std::unique_ptr<Pcpu>> pcpus;
  std::vector<std::unique_ptr<Vcpu>> vcpus;
  std::vector<std::unique_ptr<GuestKernel>> guests;
  std::vector<std::unique_ptr<HostTick>> ticks;
  std::unique_ptr<Cyclictest> cyclictest;
  std::unique_ptr<CpuHog> hog;
  std::unique_ptr<KutGuest> kut;  // kvm-unit-tests workloads replace the Linux guest
  ExitStats exit_stats;
  LatencyBreakdown breakdown;
  StageTotals stage_totals;
  std::unique_ptr<Progress> progress;
  std::unique_ptr<trace::TraceObserver> trace;
  std::unique_ptr<views::PerfettoObserver> perfetto;
  std::unique_ptr<views::VcdObserver> vcd;
  // Reliability (sim/core/run_guard.h): the trajectory hash, the invariant
  // checks, a signal's stop request; and whether the workload's own end (its
  // stop callback) was reached.
  RunGuard guard;
  bool workload_done = false;
};

Sampler S(const ParamSet& p, const TscClock& clk, const char* key) { return p.dist(key).bind(clk); }

[[noreturn]] void config_error(const std::string& msg) { throw ScenarioError(msg); }

}  // namespace

RunResult run_simulation(const ParamSet& p, const RunOptions& opts) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);  // 1 unit = 1 host TSC cycle
  // sc_stop() at the end of a workload is the normal way a run ends.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  auto m = std::make_unique<Model>();
  SimContext& ctx = m->ctx;
  ctx.clock.tsc_khz = static_cast<std::uint64_t>(p.i("platform.tsc_khz"));
  ctx.seed = static_cast<std::uint64_t>(p.i("sim.seed"));
  const TscClock& clk = ctx.clock;
  ctx.obs.add(&m->exit_stats);
  ctx.obs.add(&m->breakdown);
  ctx.obs.add(&m->guard);

  // Host topology and the pCPUs the VMs are pinned to.
  m->topo = std::make_unique<Topology>(static_cast<int>(p.i("platform.sockets")),
                                       static_cast<int>(p.i("platform.cores_per_socket")),
                                       static_cast<int>(p.i("platform.threads_per_core")));
  const int vms = static_cast<int>(p.i("vm.count"));
  const int vcpus_per_vm = static_cast<int>(p.i("vm.vcpus"));
  std::vector<std::int64_t> pin = p.ints("vm.pinning");
  const auto& isol = p.ints("host.isolcpus");
  if (pin.empty()) pin = isol;
  if (static_cast<int>(pin.size()) < vms * vcpus_per_vm)
    config_error(
        fmt::format("{}: key 'vm.pinning': {} vCPUs need a pCPU each, only {} given "
                    "(vm.pinning or host.isolcpus); shared pCPUs need the host scheduler, "
                    "not modelled yet",
                    p.origin("vm.pinning"), vms * vcpus_per_vm, pin.size()));
  for (int i = 0; i < vms * vcpus_per_vm; ++i) {
    const auto c = pin[static_cast<std::size_t>(i)];
    if (c >= m->topo->cpus())
      config_error(fmt::format("{}: key 'vm.pinning': pCPU {} does not exist ({} pCPUs)",
                               p.origin("vm.pinning"), c, m->topo->cpus()));
    for (int j = 0; j < i; ++j)
      if (pin[static_cast<std::size_t>(j)] == c)
        config_error(
            fmt::format("{}: key 'vm.pinning': pCPU {} given to two vCPUs; shared pCPUs "
                        "need the host scheduler, not modelled yet",
                        p.origin("vm.pinning"), c));
  }

  PcpuCosts pc;
  pc.irq_entry = S(p, clk, "cost.host.irq_entry");
  pc.irq_exit = S(p, clk, "cost.host.irq_exit");
  pc.hrtimer_interrupt = S(p, clk, "cost.host.hrtimer_interrupt");
  pc.noise_irq_rate_hz = p.d("noise.irq.rate_hz");
  pc.noise_irq_duration = S(p, clk, "noise.irq.duration");
  pc.softirq_rate_hz = p.d("noise.softirq.rate_hz");
  pc.softirq_duration = S(p, clk, "noise.softirq.duration");

  VcpuCosts vc;
  vc.vmexit = S(p, clk, "cost.vmexit");
  vc.vmx_vcpu_run = S(p, clk, "cost.vmx_vcpu_run");
  vc.vmentry = S(p, clk, "cost.vmentry");
  vc.exit_fastpath = S(p, clk, "cost.exit_fastpath");
  vc.fastpath_wrmsr = S(p, clk, "cost.fastpath_wrmsr");
  vc.handle_halt = S(p, clk, "cost.handle_halt");
  vc.vcpu_block = S(p, clk, "cost.vcpu_block");
  vc.vcpu_wakeup = S(p, clk, "cost.vcpu_wakeup");
  vc.vcpu_enter_guest = S(p, clk, "cost.vcpu_enter_guest");
  vc.handle_exit = S(p, clk, "cost.handle_exit");
  vc.handle_wrmsr = S(p, clk, "cost.handle_wrmsr");
  vc.handle_preemption_timer = S(p, clk, "cost.handle_preemption_timer");
  vc.handle_external_interrupt = S(p, clk, "cost.handle_external_interrupt");

  LapicCosts lc;
  lc.start_hv_timer = S(p, clk, "cost.lapic.start_hv_timer");
  lc.start_sw_tscdeadline = S(p, clk, "cost.lapic.start_sw_tscdeadline");
  lc.cancel_hrtimer = S(p, clk, "cost.lapic.cancel_hrtimer");
  lc.apic_timer_fn = S(p, clk, "cost.lapic.apic_timer_fn");
  lc.inject_timer_irq = S(p, clk, "cost.lapic.inject_timer_irq");
  lc.expired_hv_timer = S(p, clk, "cost.lapic.expired_hv_timer");
  lc.wait_lapic_expire = S(p, clk, "cost.lapic.wait_lapic_expire");
  lc.eoi = S(p, clk, "cost.lapic.eoi");

  GuestCosts gc;
  gc.irq_entry = S(p, clk, "cost.guest.irq_entry");
  gc.hrtimer_interrupt = S(p, clk, "cost.guest.hrtimer_interrupt");
  gc.hrtimer_wakeup = S(p, clk, "cost.guest.hrtimer_wakeup");
  gc.clockevent_program = S(p, clk, "cost.guest.clockevent_program");
  gc.irq_exit = S(p, clk, "cost.guest.irq_exit");
  gc.context_switch = S(p, clk, "cost.guest.context_switch");
  gc.tick = S(p, clk, "cost.guest.tick");
  gc.nohz_stop = S(p, clk, "cost.guest.nohz_stop");
  gc.nohz_restart = S(p, clk, "cost.guest.nohz_restart");
  gc.watchdog = S(p, clk, "cost.guest.watchdog");

  VmxConfig vmx;
  vmx.preemption_timer_rate = static_cast<unsigned>(p.i("platform.preemption_timer_rate"));
  vmx.exit_fastpath = p.b("kvm.exit_fastpath");
  LapicConfig lcfg;
  lcfg.hv_timer_available = p.b("kvm.enable_hv_timer") &&
                            vmx_preemption_timer_usable(clk.tsc_khz, vmx.preemption_timer_rate);
  lcfg.apicv = p.b("platform.apicv");
  lcfg.timer_advance_ns = p.i("kvm.lapic_timer_advance_ns");
  lcfg.hv_timer_advance = p.b("kvm.hv_timer_advance");
  lcfg.wait_site = p.s("kvm.wait_lapic_expire_site") == "vcpu_enter_guest"
                       ? WaitLapicExpireSite::VcpuEnterGuest
                       : WaitLapicExpireSite::VmxVcpuRun;
  lcfg.tuning = p.s("kvm.lapic_timer_advance_tuning") == "until_done" ? AdvanceTuning::UntilDone
                                                                      : AdvanceTuning::Always;
  if (vmx.exit_fastpath && lcfg.wait_site == WaitLapicExpireSite::VcpuEnterGuest)
    config_error(
        fmt::format("{}: key 'kvm.exit_fastpath': the exit fastpath (v5.8+) needs "
                    "kvm.wait_lapic_expire_site: vmx_vcpu_run (moved there in v5.3); "
                    "no kernel has both",
                    p.origin("kvm.exit_fastpath")));

  TscScaling tsc;
  const auto guest_khz =
      p.i("vm.tsc_khz") ? static_cast<std::uint64_t>(p.i("vm.tsc_khz")) : clk.tsc_khz;
  tsc.ratio = guest_khz == clk.tsc_khz ? TscScaling::kDefaultRatio
                                       : TscScaling::ratio_for(guest_khz, clk.tsc_khz);
  tsc.offset = p.i("vm.tsc_offset");

  const auto tick_hz = p.i("host.tick_hz");
  const Sampler tick_cost = S(p, clk, "cost.host.tick");

  // Workload: cyclictest in a Linux guest (one vCPU of VM 0), or a
  // kvm-unit-tests program on a 1-vCPU VM.
  const std::string workload = p.s("workload.type");
  const bool kut = workload == "tscdeadline_latency" || workload == "vmexit";
  if (kut && (vms != 1 || vcpus_per_vm != 1))
    config_error(
        fmt::format("{}: key 'workload.type': kvm-unit-tests '{}' runs on one VM with "
                    "one vCPU (-smp 1); set vm.count: 1 and vm.vcpus: 1",
                    p.origin("workload.type"), workload));
  const auto ct_vcpu = p.i("cyclictest.vcpu");
  if (!kut && ct_vcpu >= vcpus_per_vm)
    config_error(fmt::format("{}: key 'cyclictest.vcpu': vCPU {} does not exist (vm.vcpus = {})",
                             p.origin("cyclictest.vcpu"), ct_vcpu, vcpus_per_vm));
  auto stop = [done = &m->workload_done] {
    *done = true;
    sc_core::sc_stop();
  };
  std::uint64_t progress_total = 0;
  if (workload == "cyclictest") {
    CyclictestConfig cc;
    cc.loops = static_cast<std::uint64_t>(p.i("cyclictest.loops"));
    cc.interval_us = static_cast<std::uint64_t>(p.i("cyclictest.interval_us"));
    cc.histogram_buckets = static_cast<std::size_t>(p.i("cyclictest.histogram_us"));
    CyclictestCosts ctc{S(p, clk, "cost.cyclictest.nanosleep_enter"),
                        S(p, clk, "cost.cyclictest.nanosleep_return")};
    m->cyclictest = std::make_unique<Cyclictest>(cc, ctc, stop);
    progress_total = cc.loops;
  } else if (workload == "tscdeadline_latency") {
    progress_total = static_cast<std::uint64_t>(p.i("tscdeadline_latency.size"));
  }
  std::vector<std::string> vmexit_tests;
  if (workload == "vmexit") {
    const std::string& list = p.s("vmexit.tests");
    std::size_t pos = 0;
    while (pos <= list.size()) {
      const std::size_t comma = std::min(list.find(',', pos), list.size());
      std::string name = list.substr(pos, comma - pos);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!VmexitTimerTests::known_test(name))
        config_error(
            fmt::format("{}: key 'vmexit.tests': unknown test '{}' (modelled: "
                        "tscdeadline, tscdeadline_immed)",
                        p.origin("vmexit.tests"), name));
      vmexit_tests.push_back(name);
      pos = comma + 1;
    }
  }
  if (opts.progress && progress_total && isatty(STDERR_FILENO)) {
    m->progress = std::make_unique<Progress>(workload, progress_total);
    ctx.obs.add(m->progress.get());
  }
  KutCosts kc;
  if (kut)
    kc = KutCosts{S(p, clk, "cost.kut.irq_delivery"), S(p, clk, "cost.kut.isr"),
                  S(p, clk, "cost.kut.iret"), S(p, clk, "cost.kut.loop")};

  for (int vm = 0; vm < vms; ++vm) {
    for (int v = 0; v < vcpus_per_vm; ++v) {
      const int idx = vm * vcpus_per_vm + v;
      const int cpu = static_cast<int>(pin[static_cast<std::size_t>(idx)]);
      auto pcpu = std::make_unique<Pcpu>(fmt::format("pcpu{}", cpu).c_str(), cpu, ctx, pc);
      auto vcpu = std::make_unique<Vcpu>(idx, vm, *pcpu, vc, vmx, lcfg, lc, tsc);
      if (workload == "tscdeadline_latency") {
        TscdeadlineLatencyConfig tc;
        tc.delta = static_cast<std::uint64_t>(p.i("tscdeadline_latency.delta"));
        tc.size = static_cast<std::uint64_t>(p.i("tscdeadline_latency.size"));
        tc.breakmax = static_cast<std::uint64_t>(p.i("tscdeadline_latency.breakmax"));
        tc.hlt = p.b("tscdeadline_latency.hlt");
        m->kut = std::make_unique<TscdeadlineLatencyTest>(*vcpu, kc, tc, stop);
        vcpu->set_guest(m->kut.get());
      } else if (workload == "vmexit") {
        auto t = std::make_unique<VmexitTimerTests>(
            *vcpu, kc, vmexit_tests, static_cast<std::uint64_t>(p.i("vmexit.goal_cycles")), stop);
        ctx.obs.add(&m->stage_totals);
        t->set_stage_totals(&m->stage_totals);
        vcpu->set_guest(t.get());
        m->kut = std::move(t);
      } else {
        GuestConfig gcfg;
        gcfg.hz = static_cast<unsigned>(p.i("guest.hz"));
        gcfg.idle_hlt = p.s("guest.idle") == "hlt";
        gcfg.watchdog_s = static_cast<unsigned>(p.i("guest.watchdog_s"));
        auto guest = std::make_unique<GuestKernel>(*vcpu, gc, guest_khz, gcfg);
        vcpu->set_guest(guest.get());
        if (vm == 0 && v == ct_vcpu && m->cyclictest) guest->add_task(m->cyclictest.get());
        if (vm == 0 && v == ct_vcpu && workload == "busy") {
          m->hog = std::make_unique<CpuHog>();
          guest->add_task(m->hog.get());
        }
        m->guests.push_back(std::move(guest));
      }
      if (tick_hz > 0) {
        const Tsc period = clk.tsc_khz * 1000 / static_cast<Tsc>(tick_hz);
        auto tick = std::make_unique<HostTick>(period, tick_cost);
        // The tick's phase against the workload's timers is arbitrary on a
        // real host; a fixed phase would hit the same wake-up every time.
        Rng phase = ctx.stream(fmt::format("pcpu{}.tick", cpu));
        pcpu->hrtimers().start(tick.get(),
                               static_cast<Tsc>(phase.uniform() * static_cast<double>(period)));
        m->ticks.push_back(std::move(tick));
      }
      m->pcpus.push_back(std::move(pcpu));
      m->vcpus.push_back(std::move(vcpu));
    }
  }
  if (!opts.trace_path.empty()) {
    std::vector<trace::TraceTask> tasks;
    std::vector<int> apicid;
    for (const auto& v : m->vcpus) {
      tasks.push_back({v->comm(), v->pid()});
      apicid.push_back(v->id() % vcpus_per_vm);  // APIC ID = vCPU index in its VM
    }
    m->trace = std::make_unique<trace::TraceObserver>(opts.trace_path, clk, std::move(tasks),
                                                      std::move(apicid), m->topo->cpus());
    ctx.obs.add(m->trace.get());
  }
  if (!opts.perfetto_path.empty()) {
    std::vector<int> cpus;
    std::vector<views::ViewVcpu> vv;
    for (const auto& c : m->pcpus) cpus.push_back(c->id());
    for (const auto& v : m->vcpus) vv.push_back({v->id(), v->pcpu().id(), v->comm()});
    m->perfetto = std::make_unique<views::PerfettoObserver>(
        opts.perfetto_path, clk, clk.from_ns(opts.perfetto_limit_ms * 1e6), std::move(cpus),
        std::move(vv));
    ctx.obs.add(m->perfetto.get());
  }
  if (!opts.vcd_path.empty()) {  // sc_trace needs the file before sc_start()
    std::vector<const Vcpu*> vv;
    for (const auto& v : m->vcpus) vv.push_back(v.get());
    m->vcd = std::make_unique<views::VcdObserver>(opts.vcd_path, clk,
                                                  clk.from_ns(opts.vcd_limit_ms * 1e6),
                                                  clk.from_ns(opts.vcd_sample_ns), std::move(vv));
    ctx.obs.add(m->vcd.get());
  }
  for (auto* o : opts.observers) ctx.obs.add(o);
  for (auto& v : m->vcpus) v->start();

  const auto wall0 = std::chrono::steady_clock::now();
  sc_core::sc_start(cycles(clk.from_ns(p.d("sim.max_simulated_s") * 1e9)));
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  m->progress.reset();
  if (!invariant_violation().empty()) throw InvariantError(invariant_violation());

  RunResult r;
  r.completed = m->workload_done || workload == "busy";  // busy runs for sim.max_simulated_s
  const Tsc end = now_tsc();
  r.simulated_s = clk.to_s(static_cast<double>(end));
  auto& mt = r.metrics;
  mt["sim.events"] = static_cast<double>(ctx.events);
  mt["sim.wall_s"] = wall_s;
  mt["sim.simulated_s"] = r.simulated_s;
  mt["sim.seed"] = static_cast<double>(ctx.seed);
  mt["sim.fingerprint"] = static_cast<double>(m->guard.fingerprint());

  for (int i = 0; i < kMaxExitReason; ++i) {
    const auto& s = m->exit_stats.all()[static_cast<std::size_t>(i)];
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

  if (m->cyclictest) {
    const auto& h = m->cyclictest->histogram();
    r.histogram = h;
    mt["cyclictest.loops"] = static_cast<double>(h.samples());
    mt["cyclictest.min_us"] = static_cast<double>(h.min_us());
    mt["cyclictest.avg_us"] = h.avg_us();
    mt["cyclictest.max_us"] = static_cast<double>(h.max_us());
    mt["cyclictest.p50_us"] = h.percentile_us(50);
    mt["cyclictest.p99_us"] = h.percentile_us(99);
    mt["cyclictest.overflows"] = static_cast<double>(h.overflows());
  }
  if (auto* t = dynamic_cast<TscdeadlineLatencyTest*>(m->kut.get())) {
    // The test's own summary: latencies in guest TSC cycles.
    const auto& lat = t->latencies();
    double sum = 0;
    std::int64_t lo = lat.empty() ? 0 : lat.front(), hi = lo;
    for (auto l : lat) {
      sum += static_cast<double>(l);
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
    mt["tscdeadline_latency.samples"] = static_cast<double>(lat.size());
    mt["tscdeadline_latency.avg_cycles"] = lat.empty() ? 0 : sum / static_cast<double>(lat.size());
    mt["tscdeadline_latency.min_cycles"] = static_cast<double>(lo);
    mt["tscdeadline_latency.max_cycles"] = static_cast<double>(hi);
  }
  if (auto* t = dynamic_cast<VmexitTimerTests*>(m->kut.get())) {
    for (const auto& res : t->results()) {
      mt["vmexit." + res.name + ".cycles"] = static_cast<double>(res.cycles);
      mt["vmexit." + res.name + ".iterations"] = static_cast<double>(res.iterations);
      for (int st = 0; st < kStageCount; ++st) {
        const double c = res.stage_cycles[static_cast<std::size_t>(st)];
        if (c > 0)
          mt["vmexit." + res.name + ".stage." + std::string(stage_name(static_cast<Stage>(st))) +
             ".cycles"] = c;
      }
    }
  }

  double sum = 0;
  for (int s = 0; s < kStageCount; ++s) {
    const double ns = clk.to_ns(m->breakdown.mean_cycles(static_cast<Stage>(s)));
    if (ns <= 0) continue;
    const std::string name(stage_name(static_cast<Stage>(s)));
    r.breakdown.push_back({name, ns});
    mt["breakdown." + name + ".avg_ns"] = ns;
    sum += ns;
  }
  mt["breakdown.total.avg_ns"] = sum;

  std::uint64_t irqs = 0, noise = 0, softirqs = 0;
  for (const auto& c : m->pcpus) {
    irqs += c->stats().irqs;
    noise += c->stats().noise_irqs;
    softirqs += c->stats().softirq_runs;
  }
  mt["host.irqs"] = static_cast<double>(irqs);
  mt["host.noise_irqs"] = static_cast<double>(noise);
  mt["host.softirq_runs"] = static_cast<double>(softirqs);
  VcpuStats vs;
  WaitLapicExpireStats w;
  for (const auto& v : m->vcpus) {
    vs += v->stats();
    w += v->lapic().wait_stats();
  }
  mt["vmx.hv_timer_fallbacks"] = static_cast<double>(vs.hv_timer_fallbacks);
  mt["vmx.fastpath.reenter_guest"] = static_cast<double>(vs.fastpath_reenter);
  mt["vmx.fastpath.exit_handled"] = static_cast<double>(vs.fastpath_exit_handled);
  mt["vcpu.halts"] = static_cast<double>(vs.halts);
  mt["vcpu.blocks"] = static_cast<double>(vs.blocks);
  mt["vcpu.blocked_s"] = clk.to_s(static_cast<double>(vs.blocked_cycles));
  mt["lapic.wait_lapic_expire.calls"] = static_cast<double>(w.calls);
  mt["lapic.wait_lapic_expire.early"] = static_cast<double>(w.early);
  mt["lapic.wait_lapic_expire.late"] = static_cast<double>(w.late);
  mt["lapic.wait_lapic_expire.avg_delta_cycles"] =
      w.calls ? w.delta_sum / static_cast<double>(w.calls) : 0.0;
  mt["lapic.wait_lapic_expire.spin_ns"] = clk.to_ns(static_cast<double>(w.spin_cycles));
  // The advance the measuring vCPU ended with (the adaptive value, or the fixed one).
  const std::size_t wv = kut ? 0 : static_cast<std::size_t>(ct_vcpu);
  mt["lapic.timer_advance_ns"] = static_cast<double>(m->vcpus[wv]->lapic().timer_advance_ns());
  m->trace.reset();  // flush and close the trace file
  if (m->perfetto) m->perfetto->finish(end);
  if (m->vcd) m->vcd->finish();  // the observer stays with the model (it owns an sc_module)
  // The model is torn down by the process exit: SystemC objects cannot be
  // destroyed and re-elaborated within one process.
  m.release();
  return r;
}

}  // namespace kvmsim
