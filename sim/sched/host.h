// The host: its CPU topology, the pCPUs that run threads, and the per-pCPU
// residual tick. pCPUs are created when something is placed on them, in that
// order (the order fixes SystemC's process order, hence the trajectory).
#pragma once

#include <memory>
#include <vector>

#include "sim/core/context.h"
#include "sim/core/metrics.h"
#include "sim/core/params.h"
#include "sim/sched/host_tick.h"
#include "sim/sched/pcpu.h"
#include "sim/sched/topology.h"

namespace kvmsim {

// cost.host.* and noise.* of the platform file.
PcpuCosts pcpu_costs(const ParamSet& p, const TscClock& clk);

class Host : public MetricSource {
 public:
  Host(const ParamSet& p, SimContext& ctx);

  [[nodiscard]] const Topology& topology() const { return topo_; }
  // The pCPU `cpu`, created (with its tick) on first use.
  Pcpu& pcpu(int cpu);
  [[nodiscard]] const std::vector<Pcpu*>& pcpus() const { return order_; }  // creation order

  void report(Metrics& m, const TscClock& clk) const override;

 private:
  SimContext& ctx_;
  Topology topo_;
  PcpuCosts costs_;
  std::int64_t tick_hz_;
  Sampler tick_cost_;
  std::vector<std::unique_ptr<Pcpu>> by_id_;
  std::vector<Pcpu*> order_;
  std::vector<std::unique_ptr<HostTick>> ticks_;
};

}  // namespace kvmsim
