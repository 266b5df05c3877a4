#include "sim/checks/invariant_observer.h"

#include <cstddef>

#include <fmt/format.h>

namespace kvmsim {

void InvariantObserver::segment_out_of_order(int pcpu, Stage stage, Tsc begin, Tsc end) const {
  invariant_failed(
      fmt::format("pcpu{}", pcpu),
      fmt::format("segment {} [{}, {}) overlaps or precedes the previous one "
                  "(ended at {})",
                  stage_name(stage), begin, end, pcpu_end_[static_cast<std::size_t>(pcpu)]));
}

void InvariantObserver::exit_elsewhere(int v, int pcpu, ExitReason reason, int entered_on) {
  invariant_failed(fmt::format("vcpu{}", v),
                   fmt::format("VM exit ({}) on pcpu{}, but the vCPU entered on pcpu{}",
                               exit_reason_name(reason), pcpu, entered_on));
}

void InvariantObserver::entry_in_guest(int v, int pcpu, int in_guest_on) {
  invariant_failed(
      fmt::format("vcpu{}", v),
      fmt::format("VM entry on pcpu{} while already in guest mode on pcpu{}", pcpu, in_guest_on));
}

void InvariantObserver::on_timer_armed(int v, int, Tsc deadline) {
  auto& q = vcpu(v).armed;
  q.push_back(deadline);
  if (q.size() > 64) q.pop_front();  // re-armed without a sample (cancelled timers): bounded
}

void InvariantObserver::on_latency_sample(int v, int, Tsc deadline, Tsc, std::int64_t) {
  auto& q = vcpu(v).armed;
  std::size_t i = 0;
  while (i < q.size() && q[i] != deadline) ++i;
  if (i == q.size())
    invariant_failed(fmt::format("vcpu{}", v),
                     fmt::format("latency sample for deadline {} that was not armed, or was "
                                 "delivered twice",
                                 deadline));
  else
    q.drop_front(i + 1);  // older deadlines were replaced by this one
}

}  // namespace kvmsim
