// The in-kernel LAPIC timer in TSC-deadline mode (arch/x86/kvm/lapic.c) and
// its two back ends: a host hrtimer (start_sw_tscdeadline -> apic_timer_fn)
// and the VMX preemption timer (start_hv_timer -> PREEMPTION_TIMER exit).
// Every operation returns the host cycles it cost, so the caller's stage
// grows by exactly the work the path taken did.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/core/dist.h"
#include "sim/lapic/apic_irq.h"
#include "sim/lapic/lapic_signals.h"
#include "sim/sched/host_hrtimer.h"

namespace kvmsim {

class LapicVcpu;

inline constexpr std::uint8_t LOCAL_TIMER_VECTOR = 0xec;  // guest Linux LVTT vector

// x2APIC ICR (MSR 0x830) fields, as apicdef.h names them.
inline constexpr std::uint32_t APIC_VECTOR_MASK = 0xff;
inline constexpr std::uint32_t APIC_MODE_MASK = 0x700;  // delivery mode; 0 = APIC_DM_FIXED
inline constexpr std::uint32_t APIC_DEST_LOGICAL = 0x800;
inline constexpr std::uint32_t APIC_INT_ASSERT = 0x4000;
inline constexpr std::uint32_t APIC_INT_LEVELTRIG = 0x8000;
inline constexpr std::uint32_t APIC_SHORT_MASK = 0xc0000;  // 0 = APIC_DEST_NOSHORT
inline constexpr std::uint32_t APIC_LVT_MASKED = 1u << 16;
inline constexpr std::uint32_t X2APIC_BROADCAST = 0xffffffffU;

class ApicMap;
class ParamSet;

struct LapicCosts {
  Sampler start_hv_timer;        // start_hv_timer() + vmx_set_hv_timer()
  Sampler start_sw_tscdeadline;  // start_sw_tscdeadline() incl. host hrtimer_start()
  Sampler cancel_hrtimer;        // hrtimer_cancel() of an armed apic timer
  Sampler apic_timer_fn;         // apic_timer_fn() -> apic_timer_expired() + kick
  Sampler inject_timer_irq;      // kvm_apic_inject_pending_timer_irqs() -> local deliver
  Sampler expired_hv_timer;      // kvm_lapic_expired_hv_timer() (excluding injection)
  Sampler wait_lapic_expire;     // __kvm_wait_lapic_expire() itself: rdtsc, trace, tuning
  Sampler eoi;                   // apic_set_eoi() for a trapped EOI write (no APICv)
  // IPIs between vCPUs (kvm_apic_send_ipi and what it calls).
  Sampler x2apic_icr_write;  // kvm_x2apic_icr_write(): decode, ICR/ICR2, kvm_apic_send_ipi()
                             // -> kvm_irq_delivery_to_apic_fast() map lookup
  Sampler x2apic_msr_write;  // slow path: kvm_x2apic_msr_write() -> kvm_lapic_reg_write(ICR2, ICR)
  Sampler accept_irq;        // __apic_accept_irq() for a fixed IPI: IRR/PIR, requests
  Sampler posted_intr_notify;  // kvm_vcpu_trigger_posted_interrupt(): the host's physical
                               // ICR write of POSTED_INTR_VECTOR to the target pCPU
  Sampler kick_wakeup;         // kvm_vcpu_kick() of a blocked vCPU: rcuwait_wake_up() ->
                               // try_to_wake_up() remote, incl. the reschedule IPI send
  Sampler kick_ipi;            // kvm_vcpu_kick() of a vCPU in guest mode: smp_send_reschedule()
  Sampler inject_irq;          // inject_pending_event() of an IRR vector without APICv
  static LapicCosts from(const ParamSet& p, const TscClock& clk);
};

// Counters of the IPI path, per sending (ipis_sent) or target LAPIC.
struct IpiStats {
  std::uint64_t sent = 0;      // kvm_apic_send_ipi() calls
  std::uint64_t accepted = 0;  // vectors accepted by this LAPIC
  std::uint64_t posted = 0;    // delivered into the vIRR with no VM exit of this vCPU
  std::uint64_t kicks = 0;     // kvm_vcpu_kick() calls that woke or IPIed this vCPU
  IpiStats& operator+=(const IpiStats& o) {
    sent += o.sent;
    accepted += o.accepted;
    posted += o.posted;
    kicks += o.kicks;
    return *this;
  }
};

// Where kvm_wait_lapic_expire() is called. Before v5.3 ("KVM: LAPIC: Optimize
// timer latency further", Wanpeng Li, May 2019) vcpu_enter_guest() called it ahead of
// kvm_x86_ops->run(), leaving vmx_vcpu_run()'s software entry half (~700 cycles on a Haswell
// desktop) between the end of the busy-wait and the world switch; since then
// vmx_vcpu_run() calls it right before VMRESUME.
enum class WaitLapicExpireSite : std::uint8_t { VmxVcpuRun, VcpuEnterGuest };

// lapic.c constants of the adaptive advance (since ~v5.4).
inline constexpr std::int64_t LAPIC_TIMER_ADVANCE_NS_INIT = 1000;
inline constexpr std::int64_t LAPIC_TIMER_ADVANCE_NS_MAX = 5000;
inline constexpr std::int64_t LAPIC_TIMER_ADVANCE_ADJUST_MIN = 100;    // guest cycles
inline constexpr std::int64_t LAPIC_TIMER_ADVANCE_ADJUST_MAX = 10000;  // guest cycles
inline constexpr std::int64_t LAPIC_TIMER_ADVANCE_ADJUST_STEP = 8;

// adjust_lapic_timer_advance(): one tuning step from the error `delta` (guest
// TSC at the wait minus the deadline; < 0 = the timer fired early). Errors
// outside [ADJUST_MIN, ADJUST_MAX] cycles are ignored; the step is 1/8 of
// the error in ns; a value above NS_MAX (or below zero, which wraps the
// kernel's u32) restarts from NS_INIT. Tuning never stops.
inline std::int64_t adjust_lapic_timer_advance(std::int64_t advance_ns, std::int64_t delta,
                                               std::uint64_t virtual_tsc_khz) {
  const std::int64_t mag = delta < 0 ? -delta : delta;
  if (mag > LAPIC_TIMER_ADVANCE_ADJUST_MAX || mag < LAPIC_TIMER_ADVANCE_ADJUST_MIN)
    return advance_ns;
  const auto ns =
      static_cast<std::int64_t>(static_cast<std::uint64_t>(mag) * 1000000u / virtual_tsc_khz);
  advance_ns +=
      delta < 0 ? -(ns / LAPIC_TIMER_ADVANCE_ADJUST_STEP) : ns / LAPIC_TIMER_ADVANCE_ADJUST_STEP;
  if (advance_ns > LAPIC_TIMER_ADVANCE_NS_MAX || advance_ns < 0)
    advance_ns = LAPIC_TIMER_ADVANCE_NS_INIT;
  return advance_ns;
}

// The v4.20..v5.3 rule (Wanpeng Li 2018, "Tune lapic_timer_advance_ns
// automatically"): the step is min(error ns, advance / 8); tuning stops for
// good once an error is under 100 cycles (ADJUST_DONE). An advance above
// 5000 ns is set to 0 and tuning stops (v4.20..v5.2); with `retry` (v5.3,
// "Retry tune per-vCPU timer_advance_ns if adaptive tuning goes insane") it
// goes back to 1000 ns and tuning resumes. Returns the new advance; *done is
// set when tuning has ended.
inline constexpr std::int64_t LAPIC_TIMER_ADVANCE_ADJUST_DONE = 100;  // guest cycles
inline std::int64_t adjust_lapic_timer_advance_until_done(std::int64_t advance_ns,
                                                          std::int64_t delta,
                                                          std::uint64_t virtual_tsc_khz, bool* done,
                                                          bool retry = false) {
  const std::int64_t mag = delta < 0 ? -delta : delta;
  const auto ns =
      static_cast<std::int64_t>(static_cast<std::uint64_t>(mag) * 1000000u / virtual_tsc_khz);
  const std::int64_t step = std::min(ns, advance_ns / LAPIC_TIMER_ADVANCE_ADJUST_STEP);
  advance_ns += delta < 0 ? -step : step;
  if (mag < LAPIC_TIMER_ADVANCE_ADJUST_DONE) *done = true;
  if (advance_ns > LAPIC_TIMER_ADVANCE_NS_MAX) {
    advance_ns = retry ? LAPIC_TIMER_ADVANCE_NS_INIT : 0;
    *done = !retry;
  }
  return advance_ns;
}

// Which kernels' adaptive advance (kvm.lapic_timer_advance_tuning):
// until_done (v4.20..v5.2: spin first, then adjust with the rule above),
// until_done_retry (v5.3: the same, with the rule's retry),
// spin_then_tune (v5.4..v5.13, "Tune lapic_timer_advance_ns smoothly" and
// the loosened filter: spin first, then adjust_lapic_timer_advance()) or
// always (v5.14+: adjust_lapic_timer_advance(), re-read the TSC, spin).
enum class AdvanceTuning : std::uint8_t { Always, UntilDone, UntilDoneRetry, SpinThenTune };

struct WaitLapicExpireStats {
  std::uint64_t calls = 0, early = 0, late = 0;
  double delta_sum = 0;  // guest cycles
  Tsc spin_cycles = 0;   // host cycles spent busy-waiting
  WaitLapicExpireStats& operator+=(const WaitLapicExpireStats& o) {
    calls += o.calls;
    early += o.early;
    late += o.late;
    delta_sum += o.delta_sum;
    spin_cycles += o.spin_cycles;
    return *this;
  }
};

struct LapicConfig {
  bool hv_timer_available = true;  // kvm_can_use_hv_timer(): enable_hv_timer && !mwait/posted
  bool apicv = true;               // APICv: inject from the exit path directly into vIRR
  // kvm.lapic_timer_advance_ns: 0 = off, N = fixed ns, -1 = adaptive
  // (starts at LAPIC_TIMER_ADVANCE_NS_INIT and tunes itself).
  std::int64_t timer_advance_ns = 0;
  bool hv_timer_advance = true;  // vmx_set_hv_timer() subtracts the advance
  WaitLapicExpireSite wait_site = WaitLapicExpireSite::VmxVcpuRun;
  AdvanceTuning tuning = AdvanceTuning::Always;
  // apic_timer_expired() from the exit path with APICv injects at once
  // (v5.8+); before, it marks the timer pending for vcpu_run().
  bool expired_inject = true;
  // kvm_can_post_timer_interrupt() (v5.3+, kvm.pi_inject_timer): the LAPIC
  // timer's hrtimer runs on a housekeeping pCPU (`post_timer_cpu`, not
  // pinned), and fires into the PIR with a posted-interrupt notification
  // while the vCPU is in guest mode; the preemption timer is not used.
  bool post_timer = false;
  int post_timer_cpu = 0;
  // The nohz_full pCPUs: get_nohz_timer_target() keeps a posted timer on a
  // busy housekeeping pCPU and moves it off these only.
  std::vector<std::int64_t> nohz_full_cpus;
  [[nodiscard]] bool on_nohz_full(int cpu) const {
    return std::find(nohz_full_cpus.begin(), nohz_full_cpus.end(), cpu) != nohz_full_cpus.end();
  }
  // kvm.x2apic_icr_64bit: the ICR write's kvm_apic trace (v5.18+: one,
  // after the send; before: ICR2 and ICR, before it).
  bool x2apic_icr_64bit = true;
  // `preemption_timer_usable`: the CPU's VMX preemption timer can be used at
  // all (kvm_can_use_hv_timer()'s platform part, sim/vmx/preemption_timer.h).
  static LapicConfig from(const ParamSet& p, bool preemption_timer_usable);
};

class KvmLapic : public HostHrtimer {
 public:
  KvmLapic(LapicVcpu& vcpu, LapicConfig cfg, LapicCosts costs);

  // WRMSR IA32_TSC_DEADLINE: kvm_set_lapic_tscdeadline_msr().
  Tsc set_tscdeadline_msr(std::uint64_t data, Tsc now);
  // kvm_lapic_reg_write(APIC_LVTT) in TSC-deadline mode (the mode the
  // model's guests keep): only the mask changes, and apic_update_lvtt()
  // leaves the armed deadline alone; kvm_apic_local_deliver() then drops
  // the timer interrupt while LVTT is masked.
  void set_lvtt(std::uint64_t value) { lvtt_masked_ = (value & APIC_LVT_MASKED) != 0; }
  // Timer expiries LVTT's mask dropped (for tests; not a metric).
  [[nodiscard]] std::uint64_t masked_expiries() const { return masked_expiries_; }
  // PREEMPTION_TIMER exit: kvm_lapic_expired_hv_timer().
  Tsc expired_hv_timer(Tsc now);
  // vcpu_enter_guest(): kvm_inject_pending_timer_irqs() when pending.
  Tsc inject_pending_timer_irqs(Tsc now);
  // Around blocking (vmx_pre_block / vmx_post_block, later vcpu_block()).
  Tsc switch_to_sw_timer(Tsc now);
  Tsc switch_to_hv_timer(Tsc now);

  // kvm_wait_lapic_expire(): before VM entry, if the timer interrupt being
  // injected fired early because of the advance, busy-wait until the guest
  // deadline (at most one advance period), tuning the advance on the way.
  // Returns the host cycles the call takes (0 = it did nothing).
  Tsc wait_lapic_expire(Tsc now);
  // nsec_to_cycles(vcpu, timer_advance_ns): the advance in guest cycles.
  [[nodiscard]] std::uint64_t timer_advance_cycles() const;
  [[nodiscard]] std::uint64_t virtual_tsc_khz() const;
  [[nodiscard]] std::int64_t timer_advance_ns() const { return timer_advance_ns_; }
  [[nodiscard]] bool can_use_hv_timer() const { return cfg_.hv_timer_available; }
  [[nodiscard]] const WaitLapicExpireStats& wait_stats() const { return wait_stats_; }
  Tsc eoi(Tsc now);  // apic_set_eoi() of a trapped EOI write (trace_kvm_eoi)
  // trace_kvm_apic_write(): kvm_lapic_reg_write() of an x2APIC register, or
  // the ICR write of kvm_x2apic_icr_write() / the fastpath.
  void trace_reg_write(std::uint32_t reg, std::uint64_t val, Tsc now);
  // The guest's EOI when APICv virtualizes it (no exit; the CPU clears the
  // vISR bit and re-evaluates RVI; no kvm_eoi for an edge vector).
  void virtual_eoi();
  // PV EOI (KVM_FEATURE_PV_EOI, no APICv): the guest clears the flag KVM set
  // at the injection and writes no EOI; the vector leaves service now, and
  // KVM's apic_sync_pv_eoi_from_guest() -> apic_set_eoi() (kvm_eoi) runs
  // at the next exit (sync_pv_eoi_from_guest()).
  void pv_eoi();
  void sync_pv_eoi_from_guest(Tsc now);

  // --- Vectors and IPIs ----------------------------------------------------
  // WRMSR(0x830): kvm_x2apic_icr_write() -> kvm_apic_send_ipi() ->
  // kvm_irq_delivery_to_apic() (fixed, physical, single target); returns the
  // cost on the sender after the decode (accept, posted notify or kick).
  Tsc send_ipi(std::uint32_t icr_low, std::uint32_t dest_id, Tsc now);
  // handle_fastpath_set_x2apic_icr_irqoff() conditions: x2APIC, no
  // shorthand, physical, fixed, not broadcast.
  [[nodiscard]] static bool icr_fastpath_ok(std::uint64_t icr);
  // __apic_accept_irq(APIC_DM_FIXED) on this LAPIC, from `sender`'s vCPU.
  Tsc accept_irq(std::uint8_t vector, LapicVcpu& sender, Tsc now);
  void set_apic_map(const ApicMap* m) { map_ = m; }
  Tsc inject_event();  // KVM_REQ_EVENT: inject an IRR vector (no APICv)
  void count_kick();
  // A vector is deliverable (IRR above PPR) or waiting in the PIR:
  // kvm_cpu_has_interrupt() with vmx_sync_pir_to_irr().
  [[nodiscard]] bool has_interrupt() const {
    return irq_.deliverable() != ApicIrqState::kNone || irq_.pir_pending();
  }
  // apic->irr_pending: any vector in the IRR, deliverable or not.
  [[nodiscard]] bool irr_pending() const { return irq_.highest_irr() != ApicIrqState::kNone; }
  // A vector in service (apic->highest_isr_cache != -1).
  [[nodiscard]] bool isr_pending() const { return irq_.highest_isr() != ApicIrqState::kNone; }
  // vmx_sync_pir_to_irr(); vectors new in the IRR count as posted when
  // `posted` (moved there by the CPU with no exit on this vCPU).
  void sync_pir_to_irr(bool posted);
  // Interrupt acknowledge at delivery, kvm_get_apic_interrupt() ->
  // apic_set_isr(): the highest deliverable vector moves to the ISR; -1 when
  // none. The only way a vector reaches the guest (Vcpu::deliver_pending_interrupt).
  int ack_interrupt();
  [[nodiscard]] const ApicIrqState& irq_state() const { return irq_; }
  [[nodiscard]] const IpiStats& ipi_stats() const { return ipi_stats_; }

  // __kvm_migrate_apic_timer(): an armed hrtimer moves to the pCPU the vCPU
  // thread now runs on (hrtimer_start_expires there).
  void migrate_timer(Pcpu& cpu);
  // The hrtimer function: apic_timer_fn(), in host hard-IRQ context.
  Tsc fn(Pcpu& cpu, Tsc now) override;
  // apic_timer_expired() with kvm_use_posted_timer_interrupt(): the busy-wait
  // and the posted delivery on `cpu` (the housekeeping pCPU).
  Tsc post_timer_interrupt(Pcpu& cpu, Tsc now);
  // __kvm_wait_lapic_expire(): the advance busy-wait (`now`: where it starts).
  Tsc wait_lapic_expire_spin(Tsc now);

  [[nodiscard]] std::uint64_t tscdeadline() const { return tscdeadline_; }
  [[nodiscard]] int pending() const { return pending_; }
  [[nodiscard]] bool hv_timer_in_use() const { return hv_timer_in_use_; }
  [[nodiscard]] bool timer_irr() const { return irq_.irr_test(LOCAL_TIMER_VECTOR); }
  [[nodiscard]] std::uint64_t expired_tscdeadline() const { return expired_tscdeadline_; }
  void clear_expired_tscdeadline() { expired_tscdeadline_ = 0; }
  [[nodiscard]] const LapicConfig& config() const { return cfg_; }
  [[nodiscard]] LapicCosts& costs() { return costs_; }

 private:
  Tsc start_apic_timer(Tsc now);
  Tsc restart_apic_timer(Tsc now);
  bool start_hv_timer(Tsc now, Tsc* cost);
  Tsc start_sw_timer(Tsc now);
  Tsc start_sw_tscdeadline(Tsc now);
  void cancel_hv_timer();
  void check_eoi(int vector);
  void two_back_ends(const char* fired, const char* other) const;
  Tsc apic_timer_expired(bool from_timer_fn, Tsc now);
  Tsc local_deliver_timer(Tsc now);

  LapicVcpu& vcpu_;
  LapicSignals& signals_;
  bool pv_eoi_pending_ = false;  // KVM_APIC_PV_EOI_PENDING, read back at the next exit
  int pv_eoi_vector_ = -1;
  LapicConfig cfg_;
  LapicCosts costs_;
  std::uint64_t tscdeadline_ = 0;          // guest TSC, 0 = disarmed
  std::uint64_t expired_tscdeadline_ = 0;  // for kvm_wait_lapic_expire()
  std::int64_t timer_advance_ns_ = 0;      // lapic_timer.timer_advance_ns
  bool advance_adaptive_ = false;          // lapic_timer_advance_dynamic
  bool advance_adjust_done_ = false;       // lapic_timer_advance_adjust_done (until_done rule)
  WaitLapicExpireStats wait_stats_;
  int pending_ = 0;           // lapic_timer.pending
  bool lvtt_masked_ = false;  // LVTT's mask bit (the guest booted with it clear)
  std::uint64_t masked_expiries_ = 0;
  bool hv_timer_in_use_ = false;
  ApicIrqState irq_;                   // (v)IRR, (v)ISR, PIR
  std::uint64_t acks_ = 0, eois_ = 0;  // for the acknowledge-once invariant's message
  bool fault_ack_without_isr_ = false, fault_timer_twice_ = false;  // KVMSIM_FAULT (tests)
  const ApicMap* map_ = nullptr;
  IpiStats ipi_stats_;
};

}  // namespace kvmsim
