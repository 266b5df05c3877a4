// The vCPU mechanisms report their own counters, summed over the vCPUs of a
// run (as kvm_stat sums struct kvm_vcpu_stat): each registers a reporter from
// its own file,
//
//   static const RegisterVcpuMetrics halt_metrics([](const auto& vcpus, Metrics& m, ...) {...});
//
// and VcpuMetrics (vm.h) calls every one at the end of the run.
#pragma once

#include <type_traits>
#include <vector>

#include "sim/core/counters.h"
#include "sim/core/metrics.h"

namespace kvmsim {

class Vcpu;

using VcpuMetricsReporter = void (*)(const std::vector<Vcpu*>& vcpus, Metrics& m,
                                     const TscClock& clk);

std::vector<VcpuMetricsReporter>& vcpu_metrics_reporters();

struct RegisterVcpuMetrics {
  explicit RegisterVcpuMetrics(VcpuMetricsReporter r) { vcpu_metrics_reporters().push_back(r); }
};

// The sum over `vcpus` of the counters `get(vcpu)` returns.
template <class Get>
auto sum_over(const std::vector<Vcpu*>& vcpus, Get get) {
  std::decay_t<decltype(get(*vcpus.front()))> s{};
  for (const Vcpu* v : vcpus) s += get(*v);
  return s;
}

}  // namespace kvmsim
