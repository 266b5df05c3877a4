// workload.type: cyclictest — one measurement thread on cyclictest.vcpu of
// VM 0, in a Linux guest on every vCPU.
#include "sim/core/metric_decl.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/guest/workloads/cyclictest.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

class CyclictestWorkload : public Workload {
 public:
  explicit CyclictestWorkload(const ParamSet& p)
      : vcpu_(workload_vcpu(p)), cfg_(CyclictestConfig::from(p)) {}

  void build(Machine& machine) override {
    task_ =
        std::make_unique<Cyclictest>(cfg_, CyclictestCosts::from(machine.params(), machine.clock()),
                                     [&machine] { machine.stop(); });
    guests_ = boot_linux_guests(machine);
    guests_.at(static_cast<std::size_t>(vcpu_))->add_task(task_.get());
  }

  [[nodiscard]] const LatencyHistogram* histogram() const override { return &task_->histogram(); }
  [[nodiscard]] std::uint64_t progress_total() const override { return cfg_.loops; }
  [[nodiscard]] int measuring_vcpu() const override { return vcpu_; }

  void report(Metrics& m, const TscClock& /*clk*/) const override {
    report_cyclictest(task_->histogram(), cfg_.nsecs, m, "cyclictest.");
    if (!cfg_.nsecs) report_guest_idle(guests_, m);
  }

 private:
  int vcpu_;
  CyclictestConfig cfg_;
  std::unique_ptr<Cyclictest> task_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    cyclictest,
    "rt-tests cyclictest, one thread on cyclictest.vcpu of VM 0 in a Linux guest "
    "(clock_nanosleep TIMER_ABSTIME; cyclictest -h histogram)",
    nullptr, [](const ParamSet& p) { return std::make_unique<CyclictestWorkload>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(cyclictest, {
    {"cyclictest.loops", "count", "cyclictest", "Latency samples taken (cyclictest's loop count)."},
    {"cyclictest.min_us", "us", "cyclictest", "Smallest wake-up latency (clock_nanosleep() deadline to the task running), as cyclictest's Min. The `_us` keys without cyclictest.nsecs."},
    {"cyclictest.avg_us", "us", "cyclictest", "Mean wake-up latency (cyclictest's Avg, here not truncated)."},
    {"cyclictest.max_us", "us", "cyclictest", "Largest wake-up latency (cyclictest's Max)."},
    {"cyclictest.p50_us", "us", "cyclictest", "Median of the latency histogram (1 us buckets)."},
    {"cyclictest.p99_us", "us", "cyclictest", "99th percentile of the latency histogram (1 us buckets)."},
    {"cyclictest.min_ns", "ns", "cyclictest", "As cyclictest.min_us, in ns: cyclictest -N (cyclictest.nsecs); the `_ns` keys replace the `_us` ones."},
    {"cyclictest.avg_ns", "ns", "cyclictest", "As cyclictest.avg_us, in ns (cyclictest.nsecs); the exact mean, which cyclictest prints truncated."},
    {"cyclictest.max_ns", "ns", "cyclictest", "As cyclictest.max_us, in ns (cyclictest.nsecs)."},
    {"cyclictest.p50_ns", "ns", "cyclictest", "Median of the 1 ns histogram (cyclictest.nsecs)."},
    {"cyclictest.p99_ns", "ns", "cyclictest", "99th percentile of the 1 ns histogram (cyclictest.nsecs)."},
    {"cyclictest.overflows", "count", "cyclictest", "Samples beyond the histogram's last bucket (cyclictest -h's overflows)."},
});
// clang-format on
