#include "sim/lapic/lapic.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/core/invariants.h"
#include "sim/lapic/apic_map.h"
#include "sim/lapic/lapic_vcpu.h"
#include "sim/sched/host.h"

namespace kvmsim {

KvmLapic::KvmLapic(LapicVcpu& vcpu, LapicConfig cfg, LapicCosts costs)
    : HostHrtimer("apic_timer_fn"),
      vcpu_(vcpu),
      signals_(vcpu.ctx().signals.get<LapicSignals>()),
      cfg_(std::move(cfg)),
      costs_(std::move(costs)) {
  // kvm_create_lapic(): -1 selects the adaptive advance, starting at 1000 ns.
  advance_adaptive_ = cfg_.timer_advance_ns < 0;
  timer_advance_ns_ = advance_adaptive_ ? LAPIC_TIMER_ADVANCE_NS_INIT : cfg_.timer_advance_ns;
  // Deliberately broken sequences for the tests of the invariants below.
  fault_ack_without_isr_ = fault_injected("ack_without_isr");
  fault_timer_twice_ = fault_injected("timer_delivered_twice");
}

// vcpu->arch.virtual_tsc_khz: the guest's TSC rate (host rate scaled by the ratio).
std::uint64_t KvmLapic::virtual_tsc_khz() const { return vcpu_.virtual_tsc_khz(); }

std::uint64_t KvmLapic::timer_advance_cycles() const {
  const std::uint64_t guest_khz = virtual_tsc_khz();
  return static_cast<std::uint64_t>(static_cast<u128>(timer_advance_ns_) * guest_khz / 1000000u);
}

// kvm_wait_lapic_expire() -> __kvm_wait_lapic_expire(). Acts only when the
// timer that expired early is the interrupt going into the guest on this
// entry (lapic_timer_int_injected: the vector is in the vIRR with APICv; in
// the vISR, i.e. actually injected, without it) and an advance is set.
Tsc KvmLapic::wait_lapic_expire(Tsc now) {
  if (!expired_tscdeadline_ || timer_advance_ns_ == 0 || !timer_irr()) return 0;
  if (!cfg_.apicv && !vcpu_.guest_interruptible()) return 0;  // not injected on this entry
  return wait_lapic_expire_spin(now);
}

Tsc KvmLapic::wait_lapic_expire_spin(Tsc now) {
  const std::uint64_t deadline = expired_tscdeadline_;
  expired_tscdeadline_ = 0;
  const std::uint64_t guest_tsc = vcpu_.guest_tsc(now);
  const auto delta = static_cast<std::int64_t>(guest_tsc - deadline);  // < 0: early
  signals_.kvm_wait_lapic_expire(vcpu_.id(), delta, now);
  ++wait_stats_.calls;
  ++(delta < 0 ? wait_stats_.early : wait_stats_.late);
  wait_stats_.delta_sum += static_cast<double>(delta);
  const std::uint64_t guest_khz = virtual_tsc_khz();
  // __wait_lapic_expire(): __delay(min(guest cycles, advance)) at the default
  // ratio; ndelay() of the same span in ns when TSC is scaled.
  auto spin_for = [&](std::uint64_t from_guest_tsc, std::uint64_t cap) -> Tsc {
    if (from_guest_tsc >= deadline) return 0;
    const std::uint64_t guest_cycles = std::min(deadline - from_guest_tsc, cap);
    return vcpu_.tsc_scaled() ? vcpu_.ctx().clock.ns_to_cycles(static_cast<std::uint64_t>(
                                    static_cast<u128>(guest_cycles) * 1000000u / guest_khz))
                              : guest_cycles;
  };
  const Tsc overhead = costs_.wait_lapic_expire(vcpu_.rng());
  Tsc spin = 0;
  if (cfg_.tuning == AdvanceTuning::UntilDone || cfg_.tuning == AdvanceTuning::UntilDoneRetry) {
    // v4.20..v5.3: spin first (capped by the advance before tuning), then tune.
    spin = spin_for(guest_tsc, timer_advance_cycles());
    if (advance_adaptive_ && !advance_adjust_done_)
      timer_advance_ns_ = adjust_lapic_timer_advance_until_done(
          timer_advance_ns_, delta, guest_khz, &advance_adjust_done_,
          cfg_.tuning == AdvanceTuning::UntilDoneRetry);
  } else if (cfg_.tuning == AdvanceTuning::SpinThenTune) {
    // v5.4..v5.13: __wait_lapic_expire() from the TSC read above (capped by
    // the advance before tuning), then adjust_lapic_timer_advance() on the
    // same delta; the tuning's own work comes after the spin.
    spin = spin_for(guest_tsc, timer_advance_cycles());
    if (advance_adaptive_)
      timer_advance_ns_ = adjust_lapic_timer_advance(timer_advance_ns_, delta, guest_khz);
  } else {
    // v5.14+: tune, re-read the TSC after that work, spin exactly to the
    // deadline, capped by the tuned advance.
    if (advance_adaptive_)
      timer_advance_ns_ = adjust_lapic_timer_advance(timer_advance_ns_, delta, guest_khz);
    spin = spin_for(vcpu_.guest_tsc(now + overhead), timer_advance_cycles());
  }
  wait_stats_.spin_cycles += spin;
  return spin + overhead;
}

// __kvm_migrate_apic_timer(): the hrtimer follows its vCPU, unless it is
// posted (then it stays on its housekeeping pCPU).
void KvmLapic::migrate_timer(Pcpu& cpu) {
  if (queued() && !cfg_.post_timer) cpu.hrtimers().start(this, expires());
}

// kvm_set_lapic_tscdeadline_msr(): cancel the hrtimer, store, restart.
Tsc KvmLapic::set_tscdeadline_msr(std::uint64_t data, Tsc now) {
  Tsc cost = 0;
  if (queued()) {
    HostHrtimerBase::cancel(this);  // hrtimer_cancel(): on whichever base holds it
    cost += costs_.cancel_hrtimer(vcpu_.rng());
  }
  tscdeadline_ = data;
  return cost + start_apic_timer(now);
}

// start_apic_timer() -> __start_apic_timer(): a new deadline clears pending.
Tsc KvmLapic::start_apic_timer(Tsc now) {
  pending_ = 0;
  return restart_apic_timer(now);
}

// restart_apic_timer(): prefer the VMX preemption timer, else the hrtimer.
Tsc KvmLapic::restart_apic_timer(Tsc now) {
  if (pending_) return 0;  // one-shot already fired, nothing to arm
  Tsc cost = 0;
  if (!start_hv_timer(now, &cost)) cost += start_sw_timer(now);
  return cost;
}

bool KvmLapic::start_hv_timer(Tsc now, Tsc* cost) {
  if (!cfg_.hv_timer_available || !tscdeadline_) return false;
  *cost += costs_.start_hv_timer(vcpu_.rng());
  bool expired = false;
  if (!vcpu_.set_hv_timer(tscdeadline_, now, &expired)) return false;  // -ERANGE
  hv_timer_in_use_ = true;
  if (queued()) {
    HostHrtimerBase::cancel(this);  // hrtimer_cancel(): on whichever base holds it
    *cost += costs_.cancel_hrtimer(vcpu_.rng());
  }
  if (pending_) {
    cancel_hv_timer();
  } else if (expired) {
    *cost += apic_timer_expired(false, now);
    cancel_hv_timer();
  }
  signals_.kvm_hv_timer_state(vcpu_.id(), hv_timer_in_use_, now);
  return true;
}

void KvmLapic::cancel_hv_timer() {
  vcpu_.cancel_hv_timer();
  hv_timer_in_use_ = false;
}

// start_sw_timer(): the hrtimer back end.
Tsc KvmLapic::start_sw_timer(Tsc now) {
  if (hv_timer_in_use_) cancel_hv_timer();
  if (pending_) return 0;
  const Tsc cost = start_sw_tscdeadline(now);
  signals_.kvm_hv_timer_state(vcpu_.id(), false, now);
  return cost;
}

// start_sw_tscdeadline(): convert the guest-TSC deadline to host ns and arm a
// host hrtimer, early by the advance; already due -> expire at once.
Tsc KvmLapic::start_sw_tscdeadline(Tsc now) {
  if (!tscdeadline_) return 0;
  const TscClock& host = vcpu_.ctx().clock;
  const std::uint64_t guest_tsc = vcpu_.guest_tsc(now);
  const std::uint64_t guest_khz = virtual_tsc_khz();
  const std::uint64_t delta = tscdeadline_ > guest_tsc ? tscdeadline_ - guest_tsc : 0;
  const auto ns = static_cast<std::uint64_t>((static_cast<u128>(delta) * 1000000u) / guest_khz);
  const auto advance = static_cast<std::uint64_t>(timer_advance_ns_);
  Tsc cost = costs_.start_sw_tscdeadline(vcpu_.rng());
  if (tscdeadline_ > guest_tsc && ns > advance) {
    // expire = ktime_get() + ns - advance, on the host clock (host TSC ns).
    const std::uint64_t now_ns = host.cycles_to_ns(now);
    const Tsc expire = host.ns_to_cycles(now_ns + ns - advance);
    // HRTIMER_MODE_ABS_HARD on a nohz_full pCPU goes to a housekeeping one
    // (get_nohz_timer_target()) when posted; else it is pinned here.
    Pcpu& cpu = cfg_.post_timer && cfg_.on_nohz_full(vcpu_.pcpu().id())
                    ? vcpu_.pcpu().host().pcpu(cfg_.post_timer_cpu)
                    : vcpu_.pcpu();
    cpu.hrtimers().start(this, expire);
    if (&cpu != &vcpu_.pcpu()) cpu.reschedule();  // its clockevent, from another pCPU
  } else {
    cost += apic_timer_expired(false, now);
  }
  return cost;
}

// apic_timer_fn(): the host hrtimer fired (host hard-IRQ context).
Tsc KvmLapic::fn(Pcpu& cpu, Tsc now) {
  const Tsc cost = costs_.apic_timer_fn(vcpu_.rng());
  // A posted timer kept on the vCPU's own (housekeeping) pCPU fires after
  // the exit its interrupt caused: the vCPU is no longer in guest mode.
  if (cfg_.post_timer && &cpu != &vcpu_.pcpu()) {
    // kvm_use_posted_timer_interrupt(): posted only while the vCPU is in
    // guest mode; otherwise pending, and kvm_vcpu_kick() from this pCPU.
    if (vcpu_.in_guest_mode_for_ipi()) return cost + post_timer_interrupt(cpu, now + cost);
    if (pending_) return cost;
    expired_tscdeadline_ = tscdeadline_;
    ++pending_;
    vcpu_.kick(now, cpu.id());
    return cost;
  }
  return cost + apic_timer_expired(true, now);
}

// apic_timer_expired() -> kvm_use_posted_timer_interrupt() (v5.3+): on the
// housekeeping pCPU, __kvm_wait_lapic_expire() spins out the advance, then
// kvm_apic_inject_pending_timer_irqs() -> __apic_accept_irq() ->
// vmx_deliver_posted_interrupt(): PIR, and POSTED_INTR_VECTOR to the vCPU's
// pCPU, which takes it in non-root mode (no VM exit).
Tsc KvmLapic::post_timer_interrupt(Pcpu& cpu, Tsc now) {
  if (pending_) return 0;
  expired_tscdeadline_ = tscdeadline_;
  Tsc cost = 0;
  if (timer_advance_ns_ != 0) cost += wait_lapic_expire_spin(now);
  expired_tscdeadline_ = 0;
  if (!tscdeadline_) return cost;
  if (lvtt_masked_) {  // kvm_apic_local_deliver(): a masked LVT accepts nothing
    ++masked_expiries_;
    tscdeadline_ = 0;
    return cost;
  }
  signals_.kvm_apic_accept_irq(vcpu_.id(), LOCAL_TIMER_VECTOR, now + cost);
  tscdeadline_ = 0;
  cost += costs_.inject_timer_irq(vcpu_.rng());
  if (irq_.post(LOCAL_TIMER_VECTOR)) {  // ON was clear: notify
    cost += costs_.posted_intr_notify(vcpu_.rng());
    cpu.send_ipi(vcpu_.pcpu(), HostIpi::PostedIntr, now + cost);
  }
  return cost;
}

// apic_timer_expired(): coalesce, remember the deadline for the advance
// busy-wait, then either inject right away (exit path with APICv, v5.8+) or
// mark pending (kvm_set_pending_timer()) and, from the hrtimer, kick the vCPU;
// vcpu_run() injects a pending timer before the next vcpu_enter_guest().
Tsc KvmLapic::apic_timer_expired(bool from_timer_fn, Tsc now) {
  if (pending_) return 0;
  // Invariant: one back end holds an armed deadline: the hrtimer firing while
  // the preemption timer is loaded too would deliver it twice.
  if (from_timer_fn && hv_timer_in_use_) two_back_ends("hrtimer", "preemption timer");
  expired_tscdeadline_ = tscdeadline_;
  // v5.8+: on the exit path (vCPU loaded) with APICv the vector goes in now.
  if (!from_timer_fn && cfg_.apicv && cfg_.expired_inject) return local_deliver_timer(now);
  ++pending_;
  if (from_timer_fn) vcpu_.kick(now);
  return 0;
}

// kvm_apic_local_deliver(LVTT) -> __apic_accept_irq(): with APICv
// vmx_deliver_posted_interrupt() sets the vector in the PIR (the vCPU is the
// running one, so no notification; vcpu_enter_guest()'s sync_pir_to_irr()
// moves it to the vIRR), else the IRR. A TSC-deadline timer is one-shot,
// so the deadline is consumed.
Tsc KvmLapic::local_deliver_timer(Tsc now) {
  // Invariant: an armed deadline is delivered once. The one-shot is consumed
  // below; only a new WRMSR arms another (and clears pending).
  if (!tscdeadline_)
    invariant_failed(vcpu_.comm(),
                     "LAPIC timer interrupt delivered for a TSC deadline already consumed "
                     "(delivered twice)");
  if (lvtt_masked_) {
    // kvm_apic_local_deliver(): a masked LVT accepts nothing; the one-shot
    // is consumed all the same (lapic_timer_shutdown() of v4.11..v6.11
    // guests leaves the deadline armed behind the mask).
    ++masked_expiries_;
    tscdeadline_ = 0;
    pending_ = 0;
    return 0;
  }
  signals_.kvm_apic_accept_irq(vcpu_.id(), LOCAL_TIMER_VECTOR, now);
  if (cfg_.apicv)
    irq_.post(LOCAL_TIMER_VECTOR);
  else
    irq_.set_irr(LOCAL_TIMER_VECTOR);
  tscdeadline_ = 0;
  pending_ = 0;
  return costs_.inject_timer_irq(vcpu_.rng());
}

// apic_set_eoi(): trace_kvm_eoi() with the highest vector in service, -1
// when none was.
Tsc KvmLapic::eoi(Tsc now) {
  const int v = irq_.eoi();
  check_eoi(v);
  signals_.kvm_eoi(vcpu_.id(), v, now);
  return costs_.eoi(vcpu_.rng());
}

void KvmLapic::trace_reg_write(std::uint32_t reg, std::uint64_t val, Tsc now) {
  signals_.kvm_apic_write(vcpu_.id(), reg, val, now);
}

void KvmLapic::two_back_ends(const char* fired, const char* other) const {
  invariant_failed(vcpu_.comm(), fmt::format("TSC deadline {} expired from the {} while the {} "
                                             "held it too (it would be delivered twice)",
                                             tscdeadline_, fired, other));
}

void KvmLapic::virtual_eoi() { check_eoi(irq_.eoi()); }

void KvmLapic::pv_eoi() {
  pv_eoi_vector_ = irq_.eoi();
  check_eoi(pv_eoi_vector_);
  pv_eoi_pending_ = true;
}

// kvm_lapic_sync_from_vapic() -> apic_sync_pv_eoi_from_guest(): the guest
// cleared the PV EOI flag, so KVM runs apic_set_eoi() for it now.
void KvmLapic::sync_pv_eoi_from_guest(Tsc now) {
  if (!pv_eoi_pending_) return;
  pv_eoi_pending_ = false;
  signals_.kvm_eoi(vcpu_.id(), pv_eoi_vector_, now);
  signals_.kvm_pv_eoi(vcpu_.id(), pv_eoi_vector_, now);
}

int KvmLapic::ack_interrupt() {
  const int v = irq_.ack();
  if (v == ApicIrqState::kNone) return v;
  ++acks_;
  if (fault_ack_without_isr_) irq_.eoi();  // the vector leaves the IRR but is not in service
  return v;
}

// Invariant: an injected vector is acknowledged once and ended once. Every
// EOI the guest writes ends a vector that kvm_get_apic_interrupt() moved to
// the ISR; an EOI that finds the ISR empty means a vector reached the guest
// without the acknowledge, or one acknowledge was ended twice.
void KvmLapic::check_eoi(int vector) {
  if (vector != ApicIrqState::kNone) {
    ++eois_;
    return;
  }
  invariant_failed(vcpu_.comm(),
                   fmt::format("EOI with an empty ISR ({} vectors acknowledged, {} EOIs): a "
                               "vector was delivered without kvm_get_apic_interrupt(), or "
                               "ended twice",
                               acks_, eois_));
}

// --- IPIs -------------------------------------------------------------------

bool KvmLapic::icr_fastpath_ok(std::uint64_t icr) {
  const auto low = static_cast<std::uint32_t>(icr);
  return (low & APIC_SHORT_MASK) == 0 && (low & APIC_DEST_LOGICAL) == 0 &&
         (low & APIC_MODE_MASK) == 0 && static_cast<std::uint32_t>(icr >> 32) != X2APIC_BROADCAST;
}

// kvm_apic_send_ipi() -> kvm_irq_delivery_to_apic(): the model delivers the
// fixed, physical, single-target IPIs that kvm_irq_delivery_to_apic_fast()
// takes (the only ones the workloads send); the target's
// __apic_accept_irq() runs on this (the sender's) thread.
Tsc KvmLapic::send_ipi(std::uint32_t icr_low, std::uint32_t dest_id, Tsc now) {
  // A workload sending another kind is a model error, not an input error.
  if (!icr_fastpath_ok(static_cast<std::uint64_t>(dest_id) << 32 | icr_low))
    throw std::logic_error(
        "kvm_apic_send_ipi: only fixed, physical, single-target IPIs are modelled");
  ++ipi_stats_.sent;
  signals_.kvm_apic_ipi(vcpu_.id(), icr_low, dest_id, now);
  KvmLapic* target = map_ ? map_->find(dest_id) : nullptr;
  if (!target) return 0;
  return target->accept_irq(static_cast<std::uint8_t>(icr_low & APIC_VECTOR_MASK), vcpu_, now);
}

// __apic_accept_irq(APIC_DM_FIXED, edge) on the target. With APICv:
// vmx_deliver_posted_interrupt(): PIR + ON; a target in guest mode on
// another pCPU gets the posted-interrupt notification (no VM exit there),
// any other is kicked (woken if blocked; else the vector is synced from the
// PIR at its next entry). Without APICv: kvm_lapic_set_irr(),
// KVM_REQ_EVENT, kvm_vcpu_kick() (an IPI forces a target in guest mode
// out), injection at the next entry.
Tsc KvmLapic::accept_irq(std::uint8_t vector, LapicVcpu& sender, Tsc now) {
  ++ipi_stats_.accepted;
  signals_.kvm_apic_accept_ipi(sender.id(), vcpu_.id(), vector, now);
  Tsc cost = costs_.accept_irq(sender.rng());
  if (cfg_.apicv) {
    if (!irq_.post(vector)) return cost;  // ON already set: a notification is on its way
    if (&vcpu_ != &sender && vcpu_.in_guest_mode_for_ipi()) {
      // kvm_vcpu_trigger_posted_interrupt(): send POSTED_INTR_VECTOR.
      cost += costs_.posted_intr_notify(sender.rng());
      sender.pcpu().send_ipi(vcpu_.pcpu(), HostIpi::PostedIntr, now + cost);
      return cost;
    }
    return cost + vcpu_.kick_from(sender, now + cost);
  }
  irq_.set_irr(vector);
  vcpu_.request_event();
  return cost + vcpu_.kick_from(sender, now + cost);
}

void KvmLapic::sync_pir_to_irr(bool posted) {
  const int n = irq_.sync_pir_to_irr();
  if (posted) ipi_stats_.posted += static_cast<std::uint64_t>(n);
}

// inject_pending_event() for KVM_REQ_EVENT without APICv: the vector stays
// in the IRR and is taken at entry; this is the injection's cost.
Tsc KvmLapic::inject_event() { return costs_.inject_irq(vcpu_.rng()); }

void KvmLapic::count_kick() { ++ipi_stats_.kicks; }

Tsc KvmLapic::inject_pending_timer_irqs(Tsc now) {
  if (!pending_) return 0;
  if (fault_timer_twice_) {
    const Tsc c = local_deliver_timer(now);
    return c + local_deliver_timer(now);
  }
  return local_deliver_timer(now);
}

// kvm_lapic_expired_hv_timer().
Tsc KvmLapic::expired_hv_timer(Tsc now) {
  if (!hv_timer_in_use_) return 0;                             // spurious / soft-disabled
  if (queued()) two_back_ends("preemption timer", "hrtimer");  // invariant, as above
  Tsc cost = costs_.expired_hv_timer(vcpu_.rng());
  cost += apic_timer_expired(false, now);
  cancel_hv_timer();
  return cost;
}

// kvm_lapic_switch_to_sw_timer(): before blocking, the deadline moves to an
// hrtimer because the preemption timer cannot fire while the thread sleeps.
Tsc KvmLapic::switch_to_sw_timer(Tsc now) {
  if (!hv_timer_in_use_) return 0;
  return start_sw_timer(now);
}

// kvm_lapic_switch_to_hv_timer() = restart_apic_timer().
Tsc KvmLapic::switch_to_hv_timer(Tsc now) { return restart_apic_timer(now); }

}  // namespace kvmsim
