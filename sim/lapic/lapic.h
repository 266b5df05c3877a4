// The in-kernel LAPIC timer in TSC-deadline mode (arch/x86/kvm/lapic.c) and
// its two back ends: a host hrtimer (start_sw_tscdeadline -> apic_timer_fn)
// and the VMX preemption timer (start_hv_timer -> PREEMPTION_TIMER exit).
// Every operation returns the host cycles it cost, so the caller's stage
// grows by exactly the work the path taken did.
#pragma once

#include <cstdint>

#include "sim/core/dist.h"
#include "sim/sched/host_hrtimer.h"

namespace kvmsim {

class Vcpu;

inline constexpr std::uint8_t LOCAL_TIMER_VECTOR = 0xec;  // guest Linux LVTT vector

struct LapicCosts {
  Sampler start_hv_timer;        // start_hv_timer() + vmx_set_hv_timer()
  Sampler start_sw_tscdeadline;  // start_sw_tscdeadline() incl. host hrtimer_start()
  Sampler cancel_hrtimer;        // hrtimer_cancel() of an armed apic timer
  Sampler apic_timer_fn;         // apic_timer_fn() -> apic_timer_expired() + kick
  Sampler inject_timer_irq;      // kvm_apic_inject_pending_timer_irqs() -> local deliver
  Sampler expired_hv_timer;      // kvm_lapic_expired_hv_timer() (excluding injection)
};

struct LapicConfig {
  bool hv_timer_available = true;  // kvm_can_use_hv_timer(): enable_hv_timer && !mwait/posted
  bool apicv = true;               // APICv: inject from the exit path directly into vIRR
  std::int64_t timer_advance_ns = 0;  // lapic_timer_advance_ns (>= 0 here; adaptive later)
  bool hv_timer_advance = true;       // vmx_set_hv_timer() subtracts the advance
};

class KvmLapic : public HostHrtimer {
 public:
  KvmLapic(Vcpu& vcpu, LapicConfig cfg, LapicCosts costs);

  // WRMSR IA32_TSC_DEADLINE: kvm_set_lapic_tscdeadline_msr().
  Tsc set_tscdeadline_msr(std::uint64_t data, Tsc now);
  // PREEMPTION_TIMER exit: kvm_lapic_expired_hv_timer().
  Tsc expired_hv_timer(Tsc now);
  // vcpu_enter_guest(): kvm_inject_pending_timer_irqs() when pending.
  Tsc inject_pending_timer_irqs(Tsc now);
  // Around blocking (vmx_pre_block / vmx_post_block, later vcpu_block()).
  Tsc switch_to_sw_timer(Tsc now);
  Tsc switch_to_hv_timer(Tsc now);

  // The hrtimer function: apic_timer_fn(), in host hard-IRQ context.
  Tsc fn(Pcpu& cpu, Tsc now) override;

  [[nodiscard]] std::uint64_t tscdeadline() const { return tscdeadline_; }
  [[nodiscard]] int pending() const { return pending_; }
  [[nodiscard]] bool hv_timer_in_use() const { return hv_timer_in_use_; }
  [[nodiscard]] bool timer_irr() const { return irr_timer_; }
  void ack_timer_irr() { irr_timer_ = false; }
  [[nodiscard]] std::uint64_t expired_tscdeadline() const { return expired_tscdeadline_; }
  void clear_expired_tscdeadline() { expired_tscdeadline_ = 0; }
  [[nodiscard]] const LapicConfig& config() const { return cfg_; }

 private:
  Tsc start_apic_timer(Tsc now);
  Tsc restart_apic_timer(Tsc now);
  bool start_hv_timer(Tsc now, Tsc* cost);
  Tsc start_sw_timer(Tsc now);
  Tsc start_sw_tscdeadline(Tsc now);
  void cancel_hv_timer();
  Tsc apic_timer_expired(bool from_timer_fn, Tsc now);
  Tsc local_deliver_timer(Tsc now);

  Vcpu& vcpu_;
  LapicConfig cfg_;
  LapicCosts costs_;
  std::uint64_t tscdeadline_ = 0;          // guest TSC, 0 = disarmed
  std::uint64_t expired_tscdeadline_ = 0;  // for kvm_wait_lapic_expire()
  int pending_ = 0;                        // lapic_timer.pending
  bool hv_timer_in_use_ = false;
  bool irr_timer_ = false;                 // LVTT vector pending in the (v)IRR
};

}  // namespace kvmsim
