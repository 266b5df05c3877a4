#include "sim/sched/host_irq.h"

#include <algorithm>

#include "sim/sched/host.h"
#include "sim/sched/pcpu.h"

namespace kvmsim {

namespace {
// Poisson arrivals: next arrival after `now` for a rate in Hz.
Tsc next_arrival(Rng& rng, const TscClock& clk, double rate_hz, Tsc now) {
  if (rate_hz <= 0) return kTscNever;
  const double mean_cycles = static_cast<double>(clk.tsc_khz) * 1e3 / rate_hz;
  return now + 1 + static_cast<Tsc>(rng.exponential(mean_cycles));
}
}  // namespace

HostIrqs::HostIrqs(Pcpu& cpu, SimContext& ctx, const std::string& name, const PcpuCosts& costs,
                   HostHrtimerBase& hrtimers)
    : cpu_(cpu),
      ctx_(ctx),
      costs_(costs),
      hrtimers_(hrtimers),
      noise_rng_(ctx.stream(name + ".noise")),
      softirq_rng_(ctx.stream(name + ".softirq")) {
  noise_next_ = next_arrival(noise_rng_, ctx.clock, costs_.noise_irq_rate_hz, 0);
  softirq_next_ = next_arrival(softirq_rng_, ctx.clock, costs_.softirq_rate_hz, 0);
}

void HostIrqs::send_ipi(Pcpu& target, HostIpi kind, Tsc sent) {
  target.irqs().receive_ipi(kind, sent + costs_.ipi_latency(cpu_.rng()));
}

void HostIrqs::receive_ipi(HostIpi kind, Tsc arrival) {
  const auto it =
      std::upper_bound(ipi_inflight_.begin(), ipi_inflight_.end(), arrival,
                       [](Tsc t, const std::pair<Tsc, HostIpi>& e) { return t < e.first; });
  ipi_inflight_.insert(it, {arrival, kind});
  cpu_.reschedule();
}

void HostIrqs::poll_arrivals(Tsc now) {
  while (!ipi_inflight_.empty() && ipi_inflight_.front().first <= now) {
    ++(ipi_inflight_.front().second == HostIpi::PostedIntr ? pending_pi_ : pending_resched_);
    ipi_inflight_.erase(ipi_inflight_.begin());
  }
  if (hrtimers_.next_expiry() <= now) pending_timer_ = true;
  while (noise_next_ <= now) {
    ++pending_noise_;
    // Arrival times come from their own stream, so they do not depend on
    // what the model did in between (paired runs see the same noise).
    noise_next_ = next_arrival(noise_rng_, ctx_.clock, costs_.noise_irq_rate_hz, noise_next_);
  }
}

Tsc HostIrqs::irq_exit(Tsc now) {
  // irq_exit() -> invoke_softirq(): run deferred work raised since the last run.
  Rng& rng = cpu_.rng();
  Tsc cost = costs_.irq_exit(rng);
  while (softirq_next_ <= now) {
    softirq_backlog_ += costs_.softirq_duration(rng);
    softirq_next_ = next_arrival(softirq_rng_, ctx_.clock, costs_.softirq_rate_hz, softirq_next_);
  }
  if (softirq_backlog_) {
    ++stats_.softirq_runs;
    stats_.softirq_cycles += softirq_backlog_;
    cost += softirq_backlog_;
    softirq_backlog_ = 0;
  }
  return cost;
}

Tsc HostIrqs::take_pending(Tsc now) {
  poll(now);
  Rng& rng = cpu_.rng();
  Tsc cost = 0;
  while (pending_noise_) {
    --pending_noise_;
    ++stats_.noise_irqs;
    ++stats_.irqs;
    cost += costs_.irq_entry(rng) + costs_.noise_irq_duration(rng) + irq_exit(now);
  }
  while (pending_resched_) {
    // RESCHEDULE_VECTOR -> scheduler_ipi(): need_resched is already set by
    // the sender (resched_curr); an idle loop ends when this returns. In
    // guest mode the IPI forced the VM exit (kvm_vcpu_kick).
    --pending_resched_;
    ++stats_.ipis;
    ++stats_.resched_ipis;
    ++stats_.irqs;
    cost += costs_.irq_entry(rng) + costs_.reschedule_ipi(rng) + irq_exit(now);
    cpu_.scheduler_ipi(now);
  }
  // POSTED_INTR_VECTOR taken in root mode: the vector stays in the PIR and
  // is synced at the next entry.
  if (pending_pi_) {
    pending_pi_ = 0;
    ++stats_.ipis;
    ++stats_.irqs;
    cost += costs_.irq_entry(rng) + costs_.posted_intr_ipi(rng) + irq_exit(now);
  }
  if (pending_timer_) {
    pending_timer_ = false;
    ++stats_.timer_irqs;
    ++stats_.irqs;
    // local_apic_timer_interrupt() -> hrtimer_interrupt()
    cost += costs_.irq_entry(rng) + costs_.hrtimer_interrupt(rng);
    cost += hrtimers_.run_expired(cpu_, now);
    cost += irq_exit(now);
  }
  stats_.irq_cycles += cost;
  return cost;
}

}  // namespace kvmsim
