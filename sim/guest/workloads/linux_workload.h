// A workload of Linux tasks that can run on some of the VMs: build() boots a
// Linux guest on every vCPU (boot_linux_guests()) and hands all of them to
// build_on(); a workload that composes others (the fleet workload) boots the
// guests once and hands each part the kernels of its own VMs.
#pragma once

#include <memory>
#include <vector>

#include "sim/guest/kernel/guest_kernel.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/workload.h"

namespace kvmsim {

class LinuxWorkload : public Workload {
 public:
  void build(Machine& machine) override { build_on(machine, boot_linux_guests(machine)); }
  // `guests`: the kernels of whole VMs, VM-major (machine.vcpus_per_vm() each).
  virtual void build_on(Machine& machine, std::vector<std::unique_ptr<GuestKernel>> guests) = 0;
};

// workload.type ebizzy (ebizzy_workload.cpp): one ebizzy process per VM given.
std::unique_ptr<LinuxWorkload> make_ebizzy_workload(const ParamSet& p);

}  // namespace kvmsim
