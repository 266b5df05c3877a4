// workload.type: overcommit — a CPU-bound task (sysbench --test=cpu) on every
// vCPU of every VM, in a Linux guest; runs for sim.max_simulated_s. With more
// vCPUs than pCPUs the host scheduler time-slices the vCPU threads (and any
// host tasks, host.hog.*): run time, steal time and preemptions show it.
#include <fmt/format.h>

#include "sim/guest/kernel/linux_guest.h"
#include "sim/guest/workloads/cpu_hog.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

class OvercommitWorkload : public Workload {
 public:
  [[nodiscard]] bool open_ended() const override { return true; }  // sim.max_simulated_s
  void build(Machine& machine) override {
    guests_ = boot_linux_guests(machine);
    hogs_.resize(guests_.size());
    for (std::size_t i = 0; i < guests_.size(); ++i) guests_[i]->add_task(&hogs_[i]);
  }
  // top's view of the guests: the share of each vCPU's time it was runnable
  // but another thread had its pCPU (%st), over all vCPUs.
  [[nodiscard]] std::string headline(const Metrics& m) const override {
    double run = 0;
    const std::size_t n = hogs_.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto it = m.find(fmt::format("vcpu.{}.run_s", i));
      if (it != m.end()) run += it->second;
    }
    const auto st = m.find("vcpu.steal_s");
    const double steal = st == m.end() ? 0.0 : st->second;
    return fmt::format(
        "overcommit: {} CPU-bound vCPUs  run {:.3f} s  steal {:.3f} s  (%st {:.1f})\n", n, run,
        steal, run + steal > 0 ? 100 * steal / (run + steal) : 0.0);
  }

 private:
  std::vector<CpuHog> hogs_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    overcommit,
    "a CPU-bound guest task on every vCPU of every VM (over-commit when vCPUs outnumber "
    "pCPUs); runs for sim.max_simulated_s",
    nullptr, [](const ParamSet& /*p*/) { return std::make_unique<OvercommitWorkload>(); })

}  // namespace kvmsim
