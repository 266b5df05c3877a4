#include "sim/vmx/loaded_vmcs.h"

#include "sim/core/params.h"
#include "sim/sched/host.h"
#include "sim/vmx/vcpu.h"
#include "sim/vmx/vcpu_metrics.h"

namespace kvmsim {

LoadedVmcsConfig LoadedVmcsConfig::from(const ParamSet& p, const TscClock& clk) {
  LoadedVmcsConfig c;
  c.ibpb = p.b("host.spectre_v2_ibpb");
  c.vcpu_put = p.dist("cost.vcpu_put").bind(clk);
  c.vcpu_load = p.dist("cost.vcpu_load").bind(clk);
  c.vmptrld = p.dist("cost.vmptrld").bind(clk);
  c.ibpb_cost = p.dist("cost.host.ibpb").bind(clk);
  c.loaded_vmcs_clear = p.dist("cost.loaded_vmcs_clear").bind(clk);
  return c;
}

Tsc LoadedVmcs::vcpu_put(bool preempted) {
  if (!preempted) return 0;
  const Tsc c = cfg_.vcpu_put(v_.rng());
  stats_.cycles += c;
  return c;
}

// vmx_vcpu_load(): the clear on a pCPU change (loaded_vmcs_clear() waits for
// the old pCPU's __loaded_vmcs_clear(), which also drops the VMCS as that
// pCPU's current one), then VMPTRLD and the barrier if another VMCS is
// current here.
Tsc LoadedVmcs::vcpu_load(Pcpu& cpu, bool was_preempted) {
  if (cpu_ < 0) {  // created and first loaded here before the run
    cpu_ = cpu.id();
    cpu.current_vmcs = this;
    return 0;
  }
  Rng& rng = v_.rng();
  Tsc c = was_preempted ? cfg_.vcpu_load(rng) : 0;
  if (cpu_ != cpu.id()) {
    Pcpu& old = cpu.host().pcpu(cpu_);
    if (old.current_vmcs == this) old.current_vmcs = nullptr;
    c += cfg_.loaded_vmcs_clear(rng);
    ++stats_.loaded_vmcs_clears;
    cpu_ = cpu.id();
  }
  if (cpu.current_vmcs != this) {
    cpu.current_vmcs = this;
    c += cfg_.vmptrld(rng);
    ++stats_.vmptrlds;
    if (cfg_.ibpb) {
      c += cfg_.ibpb_cost(rng);
      ++stats_.ibpbs;
    }
  }
  stats_.cycles += c;
  return c;
}

// Only in runs where a vCPU was put or loaded at a cost (a preemption, a
// VMCS that gave way to another or changed pCPU).
static const RegisterVcpuMetrics loaded_vmcs_metrics([](const std::vector<Vcpu*>& vcpus, Metrics& m,
                                                        const TscClock& clk) {
  const LoadedVmcsStats s = sum_over(vcpus, [](const Vcpu& v) { return v.loaded_vmcs().stats(); });
  if (!s.cycles && !s.vmptrlds && !s.loaded_vmcs_clears) return;
  m["vcpu.vmptrlds"] = static_cast<double>(s.vmptrlds);
  m["vcpu.ibpbs"] = static_cast<double>(s.ibpbs);
  m["vcpu.loaded_vmcs_clears"] = static_cast<double>(s.loaded_vmcs_clears);
  m["vcpu.vmcs_switch_us"] = clk.to_us(static_cast<double>(s.cycles));
});

}  // namespace kvmsim
