#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {

std::vector<VcpuMetricsReporter>& vcpu_metrics_reporters() {
  static std::vector<VcpuMetricsReporter> r;
  return r;
}

}  // namespace kvmsim
