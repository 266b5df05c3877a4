// workload.type: fleet — a mixed fleet on one host: ebizzy in the first
// fleet.ebizzy_vms VMs (the noisy neighbours: ebizzy_workload.cpp, one
// process per VM) and rt-tests cyclictest in each of the others (one
// measurement thread on cyclictest.vcpu of each VM, the rest of the VM idle),
// every VM a Linux guest with the same vm.* and guest.* settings. What it
// answers: the latency a timer-driven guest sees when its vCPU threads share
// the host's pCPUs with busy guests (host CFS wake-up preemption, steal).
//
// The run ends at sim.max_simulated_s or when every cyclictest thread has
// taken cyclictest.loops samples, whichever comes first; ebizzy's records/s
// are over the time run. The cyclictest.* keys are over the samples of all
// latency VMs together (one histogram, as if their -h outputs were added);
// cyclictest.vm<n>.* are each VM's own.
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/metric_decl.h"
#include "sim/guest/workloads/cyclictest.h"
#include "sim/guest/workloads/linux_workload.h"

namespace kvmsim {
namespace {

// clang-format off
void declare_fleet_params(ParamRegistry& r) {
  r.declare({"fleet.ebizzy_vms", ParamType::Int, "1", "count", 0, 256, {},
             "workload fleet: VMs 0 .. fleet.ebizzy_vms-1 run ebizzy (the ebizzy.* keys), the "
             "other VMs of vm.count each run one cyclictest thread on cyclictest.vcpu "
             "(the cyclictest.* keys); at most vm.count."});
}
// clang-format on

class FleetWorkload : public Workload {
 public:
  explicit FleetWorkload(const ParamSet& p)
      : ebizzy_vms_(static_cast<int>(p.i("fleet.ebizzy_vms"))),
        vcpu_(workload_vcpu(p)),
        vcpus_per_vm_(static_cast<int>(p.i("vm.vcpus"))),
        vm_count_(static_cast<int>(p.i("vm.count"))),
        cfg_(CyclictestConfig::from(p)),
        ebizzy_(make_ebizzy_workload(p)) {
    if (ebizzy_vms_ > vm_count_)
      throw ScenarioError(fmt::format(
          "{}: key 'fleet.ebizzy_vms': {} ebizzy VMs but vm.count is {} (the ebizzy VMs are "
          "VMs 0 .. fleet.ebizzy_vms-1 of vm.count)",
          p.origin("fleet.ebizzy_vms"), ebizzy_vms_, vm_count_));
    if (p.b("cyclictest.nsecs"))
      throw ScenarioError(
          fmt::format("{}: key 'cyclictest.nsecs': the fleet workload reports microseconds only "
                      "(cyclictest -N is for a single cyclictest run: workload.type cyclictest)",
                      p.origin("cyclictest.nsecs")));
  }

  [[nodiscard]] bool open_ended() const override { return true; }  // sim.max_simulated_s

  void build(Machine& machine) override {
    const ParamSet& p = machine.params();
    const TscClock& clk = machine.clock();
    auto guests = boot_linux_guests(machine);
    const auto split = static_cast<std::ptrdiff_t>(ebizzy_vms_) * machine.vcpus_per_vm();
    // The latency VMs' kernels stay here; the ebizzy VMs' go to the ebizzy part.
    std::vector<std::unique_ptr<GuestKernel>> noisy;
    std::move(guests.begin(), guests.begin() + split, std::back_inserter(noisy));
    guests_.assign(std::make_move_iterator(guests.begin() + split),
                   std::make_move_iterator(guests.end()));
    if (ebizzy_vms_ > 0) ebizzy_->build_on(machine, std::move(noisy));
    for (std::size_t g = 0; g < guests_.size();
         g += static_cast<std::size_t>(machine.vcpus_per_vm())) {
      tasks_.push_back(
          std::make_unique<Cyclictest>(cfg_, CyclictestCosts::from(p, clk), [this, &machine] {
            if (++tasks_done_ == tasks_.size()) machine.stop();
          }));
      guests_.at(g + static_cast<std::size_t>(vcpu_))->add_task(tasks_.back().get());
    }
  }

  [[nodiscard]] const LatencyHistogram* histogram() const override {
    if (tasks_.empty()) return nullptr;
    merged_ = LatencyHistogram(cfg_.histogram_buckets);
    for (const auto& t : tasks_) merged_.merge(t->histogram());
    return &merged_;
  }
  // The first latency VM's cyclictest vCPU (VM-major): its LAPIC reports
  // lapic.timer_advance_ns; vCPU 0 when every VM runs ebizzy.
  [[nodiscard]] int measuring_vcpu() const override {
    return ebizzy_vms_ < vm_count_ ? ebizzy_vms_ * vcpus_per_vm_ + vcpu_ : 0;
  }
  [[nodiscard]] double done_fraction() const override {
    if (tasks_.empty() || cfg_.loops == 0) return -1;
    std::uint64_t least = cfg_.loops;
    for (const auto& t : tasks_) least = std::min(least, t->loops_done());
    return static_cast<double>(least) / static_cast<double>(cfg_.loops);
  }

  void report(Metrics& m, const TscClock& clk) const override {
    if (ebizzy_vms_ > 0) ebizzy_->report(m, clk);
    if (tasks_.empty()) return;
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      report_cyclictest(tasks_[i]->histogram(), false, m,
                        fmt::format("cyclictest.vm{}.", static_cast<std::size_t>(ebizzy_vms_) + i));
    }
    report_cyclictest(*histogram(), false, m, "cyclictest.");
    report_guest_idle(guests_, m);
  }

  [[nodiscard]] std::string headline(const Metrics& m) const override {
    return ebizzy_vms_ > 0 ? ebizzy_->headline(m) : std::string();
  }

 private:
  int ebizzy_vms_;
  int vcpu_;
  int vcpus_per_vm_;
  int vm_count_;
  CyclictestConfig cfg_;
  std::unique_ptr<LinuxWorkload> ebizzy_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;  // the latency VMs', VM-major
  std::vector<std::unique_ptr<Cyclictest>> tasks_;    // one per latency VM
  std::size_t tasks_done_ = 0;
  mutable LatencyHistogram merged_{1};  // the latency VMs' histograms added (histogram())
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    fleet,
    "a mixed fleet: ebizzy in VMs 0 .. fleet.ebizzy_vms-1, one cyclictest thread on "
    "cyclictest.vcpu in each other VM (the noisy-neighbour question); runs for "
    "sim.max_simulated_s or until every cyclictest has taken cyclictest.loops samples",
    declare_fleet_params, [](const ParamSet& p) { return std::make_unique<FleetWorkload>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(fleet, {
    {"cyclictest.vm<n>.loops", "count", "fleet", "workload fleet: latency samples VM n's cyclictest took."},
    {"cyclictest.vm<n>.min_us", "us", "fleet", "workload fleet: VM n's smallest wake-up latency (cyclictest's Min)."},
    {"cyclictest.vm<n>.avg_us", "us", "fleet", "workload fleet: VM n's mean wake-up latency (cyclictest's Avg, not truncated)."},
    {"cyclictest.vm<n>.max_us", "us", "fleet", "workload fleet: VM n's largest wake-up latency (cyclictest's Max)."},
    {"cyclictest.vm<n>.p50_us", "us", "fleet", "workload fleet: VM n's median wake-up latency, from its histogram."},
    {"cyclictest.vm<n>.p99_us", "us", "fleet", "workload fleet: VM n's 99th-percentile wake-up latency, from its histogram."},
    {"cyclictest.vm<n>.overflows", "count", "fleet", "workload fleet: VM n's samples beyond the histogram (cyclictest.histogram_us)."},
});
// clang-format on
