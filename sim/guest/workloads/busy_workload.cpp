// workload.type: busy — a CPU-bound task (sysbench --test=cpu) on
// cyclictest.vcpu of VM 0 in a Linux guest; runs for sim.max_simulated_s.
#include "sim/guest/kernel/linux_guest.h"
#include "sim/guest/workloads/cpu_hog.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

class BusyWorkload : public Workload {
 public:
  explicit BusyWorkload(const ParamSet& p) : vcpu_(workload_vcpu(p)) {}
  [[nodiscard]] bool open_ended() const override { return true; }  // sim.max_simulated_s
  void build(Machine& machine) override {
    guests_ = boot_linux_guests(machine);
    guests_.at(static_cast<std::size_t>(vcpu_))->add_task(&hog_);
  }
  [[nodiscard]] int measuring_vcpu() const override { return vcpu_; }

 private:
  int vcpu_;
  CpuHog hog_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    busy,
    "a CPU-bound guest task (sysbench --test=cpu) on cyclictest.vcpu of VM 0; runs for "
    "sim.max_simulated_s",
    nullptr, [](const ParamSet& p) { return std::make_unique<BusyWorkload>(p); })

}  // namespace kvmsim
