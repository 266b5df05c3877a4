// The host interrupt layer of one pCPU: what arrives (the local clockevent
// of the host hrtimers, physical IPIs from other pCPUs, device noise), what
// is pending, and what taking it costs: irq_enter / the handler / irq_exit()
// with the softirqs raised meanwhile (kernel/softirq.c), scheduler_ipi() for
// RESCHEDULE_VECTOR, the POSTED_INTR_VECTOR handler in root mode, and
// local_apic_timer_interrupt() -> hrtimer_interrupt().
//
// Where an interrupt is taken (a VM exit, nested over a host segment, or
// left pending with interrupts off) is the pCPU's decision (pcpu.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/context.h"
#include "sim/core/counters.h"
#include "sim/sched/host_hrtimer.h"

namespace kvmsim {

class Pcpu;
struct PcpuCosts;

// Physical IPIs between pCPUs.
//   Reschedule: smp_send_reschedule() (kvm_vcpu_kick of a blocked vCPU, or
//               of one in guest mode without APICv: it forces a VM exit);
//   PostedIntr: POSTED_INTR_VECTOR (kvm_vcpu_trigger_posted_interrupt): in
//               non-root mode the CPU moves the PIR into the vIRR, no exit.
enum class HostIpi : std::uint8_t { Reschedule, PostedIntr };

struct IrqStats {
  std::uint64_t irqs = 0, noise_irqs = 0, softirq_runs = 0, timer_irqs = 0;
  std::uint64_t ipis = 0;  // physical IPIs taken (reschedule / posted-interrupt notification)
  std::uint64_t resched_ipis = 0;  // of those, reschedule IPIs
  Tsc irq_cycles = 0, softirq_cycles = 0;
  using Fields =
      CounterFields<IrqStats, &IrqStats::irqs, &IrqStats::noise_irqs, &IrqStats::softirq_runs,
                    &IrqStats::timer_irqs, &IrqStats::ipis, &IrqStats::resched_ipis,
                    &IrqStats::irq_cycles, &IrqStats::softirq_cycles>;
};

class HostIrqs {
 public:
  HostIrqs(Pcpu& cpu, SimContext& ctx, const std::string& name, const PcpuCosts& costs,
           HostHrtimerBase& hrtimers);

  // A timer, noise or reschedule interrupt is pending.
  [[nodiscard]] bool pending() const {
    return pending_timer_ || pending_noise_ != 0 || pending_resched_ != 0;
  }
  [[nodiscard]] bool timer_pending() const { return pending_timer_; }
  // A posted-interrupt notification is pending (it came in with interrupts
  // off, or arrives in non-root mode, where the CPU processes it as posted).
  [[nodiscard]] bool posted_intr_pending() const { return pending_pi_ != 0; }
  bool take_posted_intr_notification() {
    const bool p = pending_pi_ != 0;
    pending_pi_ = 0;
    return p;
  }
  // The next arrival of a noise interrupt or an IPI (the clockevent is the
  // hrtimers' next expiry).
  [[nodiscard]] Tsc next_noise() const { return noise_next_; }
  [[nodiscard]] Tsc next_ipi() const {
    return ipi_inflight_.empty() ? kTscNever : ipi_inflight_.front().first;
  }
  // Marks what arrived by `now` pending (IPIs, the clockevent, noise).
  void poll(Tsc now) {
    if (next_ipi() > now && hrtimers_.next_expiry() > now && noise_next_ > now) return;
    poll_arrivals(now);
  }
  // Runs every pending host interrupt now (irq entry, handlers, irq_exit with
  // softirqs) and returns the cycles that took; handlers' effects apply now.
  Tsc take_pending(Tsc now);
  // Send `kind` to `target`, leaving this pCPU at `sent` (the sender's ICR
  // write); it arrives after cost.host.ipi_latency.
  void send_ipi(Pcpu& target, HostIpi kind, Tsc sent);

  [[nodiscard]] const IrqStats& stats() const { return stats_; }

 private:
  void receive_ipi(HostIpi kind, Tsc arrival);
  void poll_arrivals(Tsc now);
  Tsc irq_exit(Tsc now);

  Pcpu& cpu_;
  SimContext& ctx_;
  const PcpuCosts& costs_;
  HostHrtimerBase& hrtimers_;
  Rng noise_rng_;  // arrival times only: identical across paired runs
  Rng softirq_rng_;
  bool pending_timer_ = false;
  std::uint32_t pending_noise_ = 0;
  Tsc noise_next_ = kTscNever;
  Tsc softirq_next_ = kTscNever;
  Tsc softirq_backlog_ = 0;
  // Physical IPIs in flight to this pCPU (arrival, kind) and pending ones.
  std::vector<std::pair<Tsc, HostIpi>> ipi_inflight_;  // sorted by arrival
  std::uint32_t pending_resched_ = 0, pending_pi_ = 0;
  IrqStats stats_;
};

}  // namespace kvmsim
