// Unit tests of the guest's CFS (GuestFair, sim/guest/kernel/guest_fair.h) on
// a model built in this process (tests/support/model_fixture.h): CPU-bound
// SCHED_NORMAL tasks share the one vCPU of a guest whose vCPU thread is alone
// on its pCPU, so only the guest's scheduler decides who runs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/guest/kernel/guest_kernel.h"
#include "sim/guest/workloads/cpu_hog.h"
#include "sim/vmx/vcpu.h"
#include "tests/support/model_fixture.h"

using namespace kvmsim;
using kvmsim::test::InProcessModel;

namespace {

// One vCPU on pCPU 0 of the 4-pCPU desktop, no host hog, a Linux guest
// without tasks of its own (workload `idle`); the test adds the tasks.
std::vector<std::string> one_vcpu_guest(const std::string& hz, const std::string& latency_ns) {
  return {"workload.type=idle",   "vm.vcpus=1",     "vm.affinity=[0]",
          "host.hog.count=0",     "guest.hz=" + hz, "guest.sched_latency_ns=" + latency_ns,
          "sim.max_simulated_s=1"};
}

// The model's one guest kernel, with `first` and `second` added as CPU-bound
// SCHED_NORMAL tasks before the run.
GuestKernel& with_two_normal_hogs(InProcessModel& m, CpuHog& first, CpuHog& second) {
  REQUIRE(m.system().vcpus().size() == 1);
  auto* k = dynamic_cast<GuestKernel*>(m.system().vcpus().front()->guest());
  REQUIRE(k != nullptr);
  for (CpuHog* t : {&first, &second}) {
    t->policy = GuestTask::Policy::Normal;
    k->add_task(t);
  }
  return *k;
}

}  // namespace

TEST_CASE(
    "GuestFair: two CPU-bound Normal tasks alternate each time one has run past its "
    "slice at a tick, and share the vCPU evenly",
    "[model][guest_fair]") {
  // sched_latency 12 ms on one CPU (factor 1): with two tasks the ideal
  // slice is 6 ms, and at HZ=1000 check_preempt_tick() first finds it used
  // up at the 7th tick after the switch: ~1000/7 = 143 preemptions a second.
  InProcessModel m("scenarios/overcommit_busy.yaml", one_vcpu_guest("1000", "12000000"));
  CpuHog first;
  CpuHog second;
  const GuestKernel& k = with_two_normal_hogs(m, first, second);
  m.run();
  const auto& f = k.fair_stats();
  CHECK(f.tick_preemptions >= 135);
  CHECK(f.tick_preemptions <= 150);
  CHECK(f.wakeup_preemptions == 0);  // neither ever sleeps
  const auto a = static_cast<double>(first.sum_exec_runtime_ns());
  const auto b = static_cast<double>(second.sum_exec_runtime_ns());
  REQUIRE(a + b > 0.9e9);  // the vCPU ran ~1 s of tasks
  CHECK(a / (a + b) > 0.48);
  CHECK(a / (a + b) < 0.52);
}

TEST_CASE(
    "GuestFair: with the default 6 ms latency two CPU-bound Normal tasks switch every 4th "
    "tick at HZ=1000",
    "[model][guest_fair]") {
  // The ideal slice is 3 ms: at the 3rd tick after a switch the task has
  // run just under 3 ms and leads the other by less than a slice, so the
  // 4th tick preempts: ~250 preemptions a second.
  InProcessModel m("scenarios/overcommit_busy.yaml", one_vcpu_guest("1000", "6000000"));
  CpuHog first;
  CpuHog second;
  const GuestKernel& k = with_two_normal_hogs(m, first, second);
  m.run();
  CHECK(k.fair_stats().tick_preemptions >= 240);
  CHECK(k.fair_stats().tick_preemptions <= 251);
}
