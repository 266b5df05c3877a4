// workload.type: idle — an idle Linux guest (T5b's idle-cost figures): no
// task on any vCPU, only the idle loop and the kernel's own timers, the
// guest.hz tick (stopped in idle by NO_HZ_IDLE unless guest.nohz=false) and
// the softlockup watchdog (guest.watchdog_s). Each timer is a wake-up of a
// halted vCPU: HLT exit, the vCPU thread blocks (or polls), the LAPIC
// hrtimer fires on the host, the thread wakes and the guest takes the
// interrupt. Runs for sim.max_simulated_s; the idle cost is the busy
// fraction of the vCPU's pCPU (host.cpu.N.busy_frac).
#include "sim/guest/kernel/linux_guest.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

class IdleWorkload : public Workload {
 public:
  explicit IdleWorkload(const ParamSet& /*p*/) {}
  [[nodiscard]] bool open_ended() const override { return true; }  // sim.max_simulated_s
  void build(Machine& machine) override { guests_ = boot_linux_guests(machine); }
  void report(Metrics& m, const TscClock& /*clk*/) const override { report_guest_idle(guests_, m); }

 private:
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    idle,
    "an idle Linux guest (no task: the tick with guest.hz / guest.nohz and the watchdog "
    "wake the halted vCPUs); runs for sim.max_simulated_s",
    nullptr, [](const ParamSet& p) { return std::make_unique<IdleWorkload>(p); })

}  // namespace kvmsim
