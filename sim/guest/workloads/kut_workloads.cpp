// workload.type: tscdeadline_latency and vmexit — kvm-unit-tests programs that
// replace the Linux guest on a one-vCPU VM (-smp 1).
#include <fmt/format.h>

#include "sim/core/metric_decl.h"
#include "sim/guest/workloads/kut.h"
#include "sim/guest/workloads/kut_ipi.h"
#include "sim/vmx/vm.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

void require_one_vcpu(const ParamSet& p, const std::string& test) {
  if (p.i("vm.count") != 1 || p.i("vm.vcpus") != 1)
    throw ScenarioError(
        fmt::format("{}: key 'workload.type': kvm-unit-tests '{}' runs on one VM with "
                    "one vCPU (-smp 1); set vm.count: 1 and vm.vcpus: 1",
                    p.origin("workload.type"), test));
}

KutCosts kut_costs(const ParamSet& p, const TscClock& clk) {
  const auto S = [&](const char* key) { return p.dist(key).bind(clk); };
  return KutCosts{S("cost.kut.irq_delivery"), S("cost.kut.isr"), S("cost.kut.iret"),
                  S("cost.kut.loop")};
}

class TscdeadlineLatencyWorkload : public Workload {
 public:
  explicit TscdeadlineLatencyWorkload(const ParamSet& p) {
    require_one_vcpu(p, "tscdeadline_latency");
    cfg_.delta = static_cast<std::uint64_t>(p.i("tscdeadline_latency.delta"));
    cfg_.size = static_cast<std::uint64_t>(p.i("tscdeadline_latency.size"));
    cfg_.breakmax = static_cast<std::uint64_t>(p.i("tscdeadline_latency.breakmax"));
    cfg_.hlt = p.b("tscdeadline_latency.hlt");
  }
  void build(Machine& machine) override {
    Vcpu& v = *machine.vcpus().front();
    guest_tsc_khz_ = machine.vms().front()->guest_tsc_khz();
    test_ = std::make_unique<TscdeadlineLatencyTest>(
        v, kut_costs(machine.params(), machine.clock()), cfg_, [&machine] { machine.stop(); });
    v.set_guest(test_.get());
  }
  [[nodiscard]] std::uint64_t progress_total() const override { return cfg_.size; }

  // The test's own summary: latencies in guest TSC cycles.
  void report(Metrics& m, const TscClock& /*clk*/) const override {
    const auto& lat = test_->latencies();
    double sum = 0;
    std::int64_t lo = lat.empty() ? 0 : lat.front();
    std::int64_t hi = lo;
    for (auto l : lat) {
      sum += static_cast<double>(l);
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
    m["tscdeadline_latency.samples"] = static_cast<double>(lat.size());
    m["tscdeadline_latency.avg_cycles"] = lat.empty() ? 0 : sum / static_cast<double>(lat.size());
    m["tscdeadline_latency.min_cycles"] = static_cast<double>(lo);
    m["tscdeadline_latency.max_cycles"] = static_cast<double>(hi);
    // With HLT every interrupt wakes a halted vCPU: the timer wake-up, from
    // the deadline to the handler's rdtsc, in us of the guest's TSC.
    if (cfg_.hlt && !lat.empty())
      m["timer_wakeup.avg_us"] =
          sum / static_cast<double>(lat.size()) / static_cast<double>(guest_tsc_khz_) * 1e3;
  }

 private:
  TscdeadlineLatencyConfig cfg_;
  std::uint64_t guest_tsc_khz_ = 1;
  std::unique_ptr<TscdeadlineLatencyTest> test_;
};

// x86/vmexit.flat: the timer tests on one vCPU (-smp 1), or the ipi tests on
// two or more (-smp 2: the sender on vCPU 0, HLT-idle APs on the others).
class VmexitWorkload : public Workload {
 public:
  explicit VmexitWorkload(const ParamSet& p)
      : goal_(static_cast<std::uint64_t>(p.i("vmexit.goal_cycles"))) {
    const std::string& list = p.s("vmexit.tests");
    ipi_ = list.find("ipi") != std::string::npos;
    std::size_t pos = 0;
    while (pos <= list.size()) {
      const std::size_t comma = std::min(list.find(',', pos), list.size());
      std::string name = list.substr(pos, comma - pos);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!VmexitTimerTests::known_test(name) && !VmexitIpiTests::known_test(name))
        throw ScenarioError(
            fmt::format("{}: key 'vmexit.tests': unknown test '{}' (modelled: "
                        "tscdeadline, tscdeadline_immed, ipi, ipi_halt)",
                        p.origin("vmexit.tests"), name));
      if (VmexitIpiTests::known_test(name) != ipi_)
        throw ScenarioError(
            fmt::format("{}: key 'vmexit.tests': '{}': timer tests (1 vCPU) and ipi "
                        "tests (2 vCPUs) run in separate scenarios",
                        p.origin("vmexit.tests"), name));
      tests_.push_back(name);
      pos = comma + 1;
    }
    if (ipi_) {
      if (p.i("vm.count") != 1 || p.i("vm.vcpus") < 2)
        throw ScenarioError(
            fmt::format("{}: key 'vmexit.tests': the ipi tests need one VM with at least two "
                        "vCPUs (-smp 2); set vm.count: 1 and vm.vcpus: 2",
                        p.origin("vmexit.tests")));
    } else {
      require_one_vcpu(p, "vmexit");
    }
  }

  void build(Machine& machine) override {
    const KutCosts kc = kut_costs(machine.params(), machine.clock());
    Vcpu& v0 = *machine.vcpus().front();
    machine.add_observer(&stage_totals_);
    if (!ipi_) {
      auto t =
          std::make_unique<VmexitTimerTests>(v0, kc, tests_, goal_, [&machine] { machine.stop(); });
      t->set_stage_totals(&stage_totals_);
      timer_ = t.get();
      main_ = std::move(t);
      v0.set_guest(main_.get());
      return;
    }
    const TscClock& clk = machine.clock();
    KutIpiCosts ic{machine.params().dist("cost.kut.on_cpu").bind(clk),
                   machine.params().dist("cost.kut.cacheline_transfer").bind(clk)};
    auto t = std::make_unique<VmexitIpiTests>(v0, kc, ic, tests_, goal_, 1,
                                              [&machine] { machine.stop(); });
    t->set_stage_totals(&stage_totals_);
    ipi_tests_ = t.get();
    main_ = std::move(t);
    v0.set_guest(main_.get());
    for (std::size_t i = 1; i < machine.vcpus().size(); ++i) {
      aps_.push_back(
          std::make_unique<KutIpiTarget>(*machine.vcpus()[i], kc, i == 1 ? ipi_tests_ : nullptr));
      machine.vcpus()[i]->set_guest(aps_.back().get());
    }
  }

  void report(Metrics& m, const TscClock& /*clk*/) const override {
    const auto& results = ipi_ ? ipi_tests_->results() : timer_->results();
    for (const auto& res : results) {
      m["vmexit." + res.name + ".cycles"] = static_cast<double>(res.cycles);
      m["vmexit." + res.name + ".iterations"] = static_cast<double>(res.iterations);
      for (int st = 0; st < kStageCount; ++st) {
        const double c = res.stage_cycles[static_cast<std::size_t>(st)];
        if (c > 0)
          m["vmexit." + res.name + ".stage." + std::string(stage_name(static_cast<Stage>(st))) +
            ".cycles"] = c;
      }
    }
    if (ipi_) {
      std::uint64_t handled = 0;
      for (const auto& ap : aps_) handled += ap->handled();
      m["ipi.handled"] = static_cast<double>(handled);  // the targets' handler runs
    }
  }

 private:
  std::uint64_t goal_;
  bool ipi_ = false;
  std::vector<std::string> tests_;
  StageTotals stage_totals_;
  std::unique_ptr<KutGuest> main_;
  VmexitTimerTests* timer_ = nullptr;
  VmexitIpiTests* ipi_tests_ = nullptr;
  std::vector<std::unique_ptr<KutIpiTarget>> aps_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    tscdeadline_latency,
    "kvm-unit-tests x86/tscdeadline_latency (one vCPU): TSC-deadline interrupt latency in "
    "guest cycles",
    nullptr, [](const ParamSet& p) { return std::make_unique<TscdeadlineLatencyWorkload>(p); })

KVMSIM_REGISTER_WORKLOAD(
    vmexit,
    "kvm-unit-tests x86/vmexit: timer tests on one vCPU (tscdeadline, tscdeadline_immed) or "
    "ipi tests on two (ipi, ipi_halt)",
    nullptr, [](const ParamSet& p) { return std::make_unique<VmexitWorkload>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(kut, {
    {"tscdeadline_latency.samples", "count", "tscdeadline_latency", "Latencies measured (tscdeadline_latency.size)."},
    {"tscdeadline_latency.avg_cycles", "cycles", "tscdeadline_latency", "Mean latency from the TSC deadline to the handler's rdtsc, in guest TSC cycles."},
    {"tscdeadline_latency.min_cycles", "cycles", "tscdeadline_latency", "Smallest latency, in guest TSC cycles."},
    {"tscdeadline_latency.max_cycles", "cycles", "tscdeadline_latency", "Largest latency, in guest TSC cycles."},
    {"vmexit.<test>.cycles", "cycles", "vmexit", "What x86/vmexit prints for test `<test>` (tscdeadline, tscdeadline_immed, ipi, ipi_halt): guest TSC cycles per iteration of the first batch that took vmexit.goal_cycles."},
    {"vmexit.<test>.iterations", "count", "vmexit", "Iterations of the batch `vmexit.<test>.cycles` comes from (64, doubled before each batch until one takes vmexit.goal_cycles)."},
    {"vmexit.<test>.stage.<stage>.cycles", "cycles", "vmexit", "Host cycles per iteration spent in stage `<stage>` (the breakdown's stage names) during the same batch, over all pCPUs; stages with none are left out."},
    {"ipi.handled", "count", "vmexit", "IPI handler runs on the targets (vmexit's ipi tests)."},
});
// clang-format on
