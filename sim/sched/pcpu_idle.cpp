// The physical core's idle states (sim/sched/cpuidle.h): cpu_idle_loop() with
// cpuidle_idle_call(), the menu governor's choice, MWAIT and the exit
// latency back to C0, and the C0 accounting (MPERF) that the idle-cost
// figures read.
#include <limits>

#include "sim/sched/host.h"
#include "sim/sched/pcpu.h"

namespace kvmsim {

// cpu_idle_loop(): without cpuidle the idle task just waits for an
// interrupt (the calibrated hosts); with it, tick_nohz_idle_enter() and
// cpuidle_select() run with interrupts off before the C-state.
void Pcpu::enter_idle(Tsc /*now*/, bool first) {
  cstate_ = -1;
  tick_nohz_stop_sched_tick();  // tick_nohz_idle_enter() (a no-op once stopped)
  if (!costs_.cpuidle.enabled) {
    run_until(Stage::HostIdle, SegKind::HostIrqOn, kTscNever);
    return;
  }
  if (stats_.cpuidle.usage.empty()) {
    stats_.cpuidle.usage.assign(costs_.cpuidle.states.size(), 0);
    stats_.cpuidle.residency.assign(costs_.cpuidle.states.size(), 0);
  }
  // tick_nohz_idle_enter() runs once when the idle task starts; each round
  // of the loop (after an interrupt that set no need_resched) runs only
  // cpuidle_idle_call(): irq_exit() already stopped the tick again.
  Tsc c = costs_.cpuidle.select_cost(rng_);
  if (first) c += costs_.cpuidle.enter_cost(rng_);
  run_for(Stage::HostIdleEnter, SegKind::HostIrqOff, c);
}

// cpuidle_idle_call(): need_resched ends the loop before MWAIT; otherwise
// menu_select() with tick_nohz_get_sleep_length() (the next host hrtimer on
// this pCPU: the LAPIC timer of a blocked vCPU, the host tick) and
// intel_idle()'s MWAIT.
void Pcpu::select_cstate(Tsc now) {
  if (sched_.need_resched(id_) || !sched_.idle(id_)) {
    schedule(now);
    return;
  }
  const Tsc next = hrtimers_.next_expiry();
  const std::uint64_t next_us =
      next == kTscNever ? std::numeric_limits<std::uint32_t>::max()
      : next > now
          ? static_cast<std::uint64_t>(ctx_.clock.to_ns(static_cast<double>(next - now)) / 1000)
          : 0;
  cstate_ = menu_.select(costs_.cpuidle.states, next_us, costs_.cpuidle.latency_req_us);
  ++stats_.cpuidle.usage[static_cast<std::size_t>(cstate_)];
  // intel_idle(): leave_mm() before MWAIT for a CPUIDLE_FLAG_TLB_FLUSHED
  // state (CR3 = swapper_pg_dir, this pCPU out of the mm's cpumask).
  if (costs_.cpuidle.states[static_cast<std::size_t>(cstate_)].tlb_flushed) left_mm_ = true;
  cstate_enter_ = now;
  run_until(Stage::HostIdle, SegKind::HostIrqOn, kTscNever);
}

// The core leaves the C-state: an interrupt (MWAIT breaks on it with
// interrupts off, ecx = 1) or a store to the monitored thread flags. It
// executes again after the state's exit latency (intel_idle's table value;
// none if the interrupt was already pending at MWAIT).
void Pcpu::exit_cstate(Tsc now) {
  end_segment(now);
  const auto& st = costs_.cpuidle.states[static_cast<std::size_t>(cstate_)];
  const Tsc lat = now == cstate_enter_ ? 0 : ctx_.clock.from_ns(st.exit_latency_us * 1000.0);
  // A state that flushed the core's L1/L2 and TLB: what runs next refills
  // them from L3 (no refill if MWAIT returned at once).
  if (st.tlb_flushed && lat) cold_refill_left_ = costs_.cpuidle.refill_cost(rng_);
  run_until(Stage::HostCstateExit, SegKind::HostIrqOff, now + lat);
}

// The cold-cache refill after a tlb_flushed state is paid by the work that
// runs first: each cycle of it costs one more (the misses to L3 and the page
// walks) until the refill is spent. Waits that end at a given time (halt
// polling, the guest's poll state, kvm_wait_lapic_expire()) are not work.
Tsc Pcpu::run_cold(Stage stage, Tsc cycles) {
  if (stage == Stage::HaltPoll || stage == Stage::GuestHaltPoll ||
      stage == Stage::WaitLapicExpire || stage == Stage::HostIdle || stage == Stage::HostCstateExit)
    return cycles;
  const Tsc extra = std::min(cycles, cold_refill_left_);
  cold_refill_left_ -= extra;
  stats_.cpuidle.refill_cycles += extra;
  return cycles + extra;
}

// Back in C0: cpuidle_enter_state() measured the residency (entry to now,
// exit latency included), menu_update() learns from it; local_irq_enable()
// takes the interrupt in the idle loop, or need_resched schedules.
void Pcpu::cstate_exited(Tsc now) {
  const double us = ctx_.clock.to_ns(static_cast<double>(now - cstate_enter_)) / 1000.0;
  menu_.update(costs_.cpuidle.states, cstate_, static_cast<std::uint64_t>(us));
  cstate_ = -1;
  if (irq_pending() || irq_.posted_intr_pending()) {
    run_until(Stage::HostIdle, SegKind::HostIrqOn, kTscNever);  // the IRQ nests at once
    return;
  }
  if (sched_.need_resched(id_)) {
    schedule(now);
    return;
  }
  enter_idle(now, false);
}

bool Pcpu::not_c0(Stage s) const {
  if (s == Stage::HostCstateExit) return true;
  return s == Stage::HostIdle && (!costs_.cpuidle.enabled || cstate_ > 0);
}

Tsc Pcpu::c0_cycles(Tsc now) const {
  Tsc off = stats_.not_c0_cycles;
  if (!in_nested_irq_ && not_c0(seg_stage_) && now > seg_begin_) off += now - seg_begin_;
  return now > off ? now - off : 0;
}

}  // namespace kvmsim
