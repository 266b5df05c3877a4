// A Linux guest kernel on every vCPU of the system: the guest.* and
// cost.guest.* keys, read once. Workloads that run Linux tasks (cyclictest,
// a CPU hog, ...) boot it and add their tasks to the vCPUs they use.
#pragma once

#include <memory>
#include <vector>

#include "sim/core/metrics.h"
#include "sim/core/params.h"
#include "sim/guest/kernel/guest_kernel.h"

namespace kvmsim {

class Machine;  // sim/workload.h

GuestCosts guest_costs(const ParamSet& p, const TscClock& clk);
GuestConfig guest_config(const ParamSet& p);

// cyclictest.vcpu: the vCPU of VM 0 a single-task workload runs on
// (ScenarioError if VM 0 has no such vCPU).
int workload_vcpu(const ParamSet& p);

// One GuestKernel per vCPU (VM-major), installed as the vCPU's guest.
// Each VM's kernels share one GuestSmp (sim/guest/kernel/guest_smp.h).
std::vector<std::unique_ptr<GuestKernel>> boot_linux_guests(Machine& machine);

// The guest.ipi.* / guest.smp_call.* / guest.wakeups.* counters summed over
// the VMs of `guests`, for workloads that use SMP to report.
void report_guest_smp(const std::vector<std::unique_ptr<GuestKernel>>& guests, Metrics& m);

// timer_wakeup.{count,avg_us} (a LAPIC timer interrupt that found the vCPU
// idle in HLT or the haltpoll poll: its deadline to hrtimer_interrupt()),
// guest.idle.hlt and guest.haltpoll.*, summed over `guests`.
void report_guest_idle(const std::vector<std::unique_ptr<GuestKernel>>& guests, Metrics& m);

}  // namespace kvmsim
