// One guest CPU's part of kernel/smp.c: its cfd_data and csd_data (the csds
// it sends), its call_single_queue (the csds other CPUs queued for it), the
// initiator's smp_call_function_many_cond() / generic_exec_single(), and the
// CALL_FUNCTION(_SINGLE)_VECTOR handler's flush_smp_call_function_queue().
// Both run as KernelWork on their CPU (sim/guest/kernel/guest_task.h).
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "sim/guest/kernel/guest_task.h"

namespace kvmsim {

class GuestKernel;

class GuestSmpCalls {
 public:
  explicit GuestSmpCalls(GuestKernel& k) : k_(k) {}
  ~GuestSmpCalls();
  GuestSmpCalls(const GuestSmpCalls&) = delete;
  GuestSmpCalls& operator=(const GuestSmpCalls&) = delete;

  // smp_call_function_many_cond() from task context (the kernel WARNs from
  // interrupt context): the call runs as kernel work after the caller's
  // current step.
  void call(SmpCall call);
  // The CALL_FUNCTION(_SINGLE)_VECTOR handler body: llist_del_all() of this
  // CPU's queue; its csds run as kernel work inside the handler.
  void flush_queue();

 private:
  class CrossCall;
  class FlushCallQueue;
  // struct __call_single_data: one queued request, locked (CSD_FLAG_LOCK)
  // from csd_lock() on the initiator until the target's csd_unlock().
  struct Csd {
    GuestKernel* owner = nullptr;  // the initiator (who may spin on `locked`)
    SmpCallFunc func;
    bool locked = false;
    bool sync = false;  // CSD_FLAG_SYNCHRONOUS: unlock after func, not before
  };

  GuestKernel& k_;
  std::deque<Csd*> call_single_queue_;         // csds other CPUs queued for this one
  std::vector<std::unique_ptr<Csd>> cfd_csd_;  // this CPU's per-target csds (cfd_data)
  std::unique_ptr<Csd> csd_data_;              // smp_call_function_single(wait=0)'s csd
};

}  // namespace kvmsim
