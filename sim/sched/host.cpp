#include "sim/sched/host.h"

#include <fmt/format.h>

namespace kvmsim {

PcpuCosts pcpu_costs(const ParamSet& p, const TscClock& clk) {
  PcpuCosts pc;
  pc.irq_entry = p.dist("cost.host.irq_entry").bind(clk);
  pc.irq_exit = p.dist("cost.host.irq_exit").bind(clk);
  pc.hrtimer_interrupt = p.dist("cost.host.hrtimer_interrupt").bind(clk);
  pc.noise_irq_rate_hz = p.d("noise.irq.rate_hz");
  pc.noise_irq_duration = p.dist("noise.irq.duration").bind(clk);
  pc.softirq_rate_hz = p.d("noise.softirq.rate_hz");
  pc.softirq_duration = p.dist("noise.softirq.duration").bind(clk);
  return pc;
}

Host::Host(const ParamSet& p, SimContext& ctx)
    : ctx_(ctx),
      topo_(static_cast<int>(p.i("platform.sockets")),
            static_cast<int>(p.i("platform.cores_per_socket")),
            static_cast<int>(p.i("platform.threads_per_core"))),
      costs_(pcpu_costs(p, ctx.clock)),
      tick_hz_(p.i("host.tick_hz")),
      tick_cost_(p.dist("cost.host.tick").bind(ctx.clock)) {
  by_id_.resize(static_cast<std::size_t>(topo_.cpus()));
}

Pcpu& Host::pcpu(int cpu) {
  auto& slot = by_id_.at(static_cast<std::size_t>(cpu));
  if (slot) return *slot;
  slot = std::make_unique<Pcpu>(fmt::format("pcpu{}", cpu).c_str(), cpu, ctx_, costs_);
  order_.push_back(slot.get());
  if (tick_hz_ > 0) {
    const Tsc period = ctx_.clock.tsc_khz * 1000 / static_cast<Tsc>(tick_hz_);
    auto tick = std::make_unique<HostTick>(period, tick_cost_);
    // The tick's phase against the workload's timers is arbitrary on a real
    // host; a fixed phase would hit the same wake-up every time.
    Rng phase = ctx_.stream(fmt::format("pcpu{}.tick", cpu));
    slot->hrtimers().start(tick.get(),
                           static_cast<Tsc>(phase.uniform() * static_cast<double>(period)));
    ticks_.push_back(std::move(tick));
  }
  return *slot;
}

void Host::report(Metrics& m, const TscClock& /*clk*/) const {
  std::uint64_t irqs = 0, noise = 0, softirqs = 0;
  for (const auto* c : order_) {
    irqs += c->stats().irqs;
    noise += c->stats().noise_irqs;
    softirqs += c->stats().softirq_runs;
  }
  m["host.irqs"] = static_cast<double>(irqs);
  m["host.noise_irqs"] = static_cast<double>(noise);
  m["host.softirq_runs"] = static_cast<double>(softirqs);
}

}  // namespace kvmsim
