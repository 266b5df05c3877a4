// The vcpu_run() / vcpu_enter_guest() loop (x86.c) with vmx_vcpu_run() and
// vmx_handle_exit() (vmx.c). The exit handlers, the fastpath, halting,
// kicks and the mechanisms around the loop are in their own files (vcpu.h).
#include "sim/vmx/vcpu.h"

#include <algorithm>

#include "sim/core/invariants.h"
#include "sim/core/params.h"
#include "sim/sched/host.h"
#include "sim/vmx/exit_handlers.h"

namespace kvmsim {

VcpuCosts VcpuCosts::from(const ParamSet& p, const TscClock& clk) {
  VcpuCosts c;
  c.vmexit = p.dist("cost.vmexit").bind(clk);
  c.vmx_vcpu_run = p.dist("cost.vmx_vcpu_run").bind(clk);
  c.vmentry = p.dist("cost.vmentry").bind(clk);
  c.exit_fastpath = p.dist("cost.exit_fastpath").bind(clk);
  c.fastpath_wrmsr = p.dist("cost.fastpath_wrmsr").bind(clk);
  c.vcpu_enter_guest_exit_share = p.d("cost.vcpu_enter_guest_exit_share");
  c.vcpu_enter_guest = p.dist("cost.vcpu_enter_guest").bind(clk);
  c.handle_exit = p.dist("cost.handle_exit").bind(clk);
  for (std::size_t r = 0; r < c.exit_handler.size(); ++r)
    if (const char* key = g_kvm_vmx_exit_handlers[r].cost_key)
      c.exit_handler[r] = p.dist(key).bind(clk);
  return c;
}

VmxConfig VmxConfig::from(const ParamSet& p, const TscClock& clk) {
  VmxConfig c;
  c.preemption_timer_rate = static_cast<unsigned>(p.i("platform.preemption_timer_rate"));
  c.exit_fastpath = p.b("kvm.exit_fastpath");
  c.exit_fastpath_timer = p.b("kvm.exit_fastpath_timer");
  c.halt = HaltConfig::from(p, clk);
  c.ple = PleConfig::from(p);
  c.directed_yield = DirectedYieldConfig::from(p);
  c.steal_time = StealTimeConfig::from(p, clk);
  c.hypercall = HypercallConfig::from(p, clk);
  return c;
}

Vcpu::Vcpu(int vcpu_id, int vm_id, Pcpu& pcpu, CpuMask allowed, const VcpuCosts& costs,
           const VmxConfig& vmx, LapicConfig lapic_cfg, LapicCosts lapic_costs, TscScaling tsc)
    : LapicVcpu("CPU " + std::to_string(vcpu_id) + "/KVM", 1000 + vcpu_id, std::move(allowed),
                vcpu_id, pcpu),
      vm_id_(vm_id),
      kvm_signals_(pcpu.ctx().signals.get<KvmSignals>()),
      costs_(costs),
      vmx_(vmx),
      tsc_(tsc),
      lapic_(*this, lapic_cfg, std::move(lapic_costs)),
      halt_(*this, vmx_.halt),
      ple_(vmx_.ple),
      dy_(*this, vmx_.directed_yield),
      steal_(*this, vmx_.steal_time) {}

void Vcpu::start() {
  state_ = State::EnterGuest;
  pcpu_->host().start_thread(this, pcpu_->id(), now_tsc());
}

// kvm_sched_out(): preempted while still runnable -> vcpu->preempted; then
// kvm_arch_vcpu_put() -> kvm_steal_time_set_preempted().
void Vcpu::sched_out(Pcpu& /*cpu*/, Tsc /*now*/, bool preempted) {
  if (preempted) {
    preempted_ = true;
    ready_ = true;
    ++stats_.preemptions;
  }
  steal_.set_preempted(preempted);
}

// kvm_sched_in() -> kvm_arch_vcpu_load(): on another pCPU the LAPIC hrtimer
// follows (__kvm_migrate_apic_timer); the steal time is updated before the
// next entry (KVM_REQ_STEAL_UPDATE).
void Vcpu::sched_in(Pcpu& cpu, Tsc /*now*/) {
  preempted_ = false;
  ready_ = false;
  dy_.sched_in();
  ple_.shrink_ple_window();  // vmx_sched_in()
  if (&cpu != pcpu_) {
    pcpu_ = &cpu;
    lapic_.migrate_timer(cpu);
  }
  steal_.request_update();
}

// vmx_set_hv_timer(): the absolute host-TSC deadline that every entry reloads.
bool Vcpu::set_hv_timer(std::uint64_t guest_deadline_tsc, Tsc now, bool* expired) {
  // Kernels before 2019 did not subtract the advance on this path.
  const std::uint64_t advance =
      lapic_.config().hv_timer_advance ? lapic_.timer_advance_cycles() : 0;
  const auto r =
      vmx_set_hv_timer(tsc_, vmx_.preemption_timer_rate, now, guest_deadline_tsc, advance);
  if (!r.ok) {
    ++stats_.hv_timer_fallbacks;
    return false;
  }
  hv_deadline_tsc_ = r.hv_deadline_tsc;
  *expired = r.expired;
  return true;
}

Tsc Vcpu::take_enter_guest_exit_side() {
  const Tsc veg = costs_.vcpu_enter_guest(rng());
  const auto exit_side =
      static_cast<Tsc>(static_cast<double>(veg) * costs_.vcpu_enter_guest_exit_share);
  enter_guest_entry_side_ = veg - exit_side;
  return exit_side;
}

void Vcpu::run(Pcpu& /*cpu*/, Tsc now) {
  switch (state_) {
    case State::EnterGuest:
      after_vcpu_enter_guest(now);
      break;
    case State::VcpuRun:
      begin_vcpu_enter_guest(now);
      break;
    case State::WaitEarly:
      begin_vmx_vcpu_run(now);
      break;
    case State::VmxVcpuRun:
      after_vmx_vcpu_run(now);
      break;
    case State::WaitLate:
      begin_vmentry(now);
      break;
    case State::VmEntry:
      enter_guest_mode(now);
      break;
    case State::InGuest:
      if (ple_.window_ran_out(now)) {  // the spin goes on after the exit
        guest_->suspend(ple_.take_spin_left(now));
        exit_step_ = GuestStep{};
        vmexit(ExitReason::PAUSE_INSTRUCTION, now);
        break;
      }
      guest_step(now);  // a spin another vCPU's store ended, or a finished step
      break;
    case State::VmExit:
      if (!try_exit_fastpath(now)) handle_exit(now);
      break;
    case State::Fastpath:
      after_fastpath(now);
      break;
    case State::HostIrq: {
      state_ = State::HandleExit;
      pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
      break;
    }
    case State::HandleExit:
      after_handle_exit(now);
      break;
    case State::Block:
      halt_.after_block(now);
      break;
    case State::Poll:
      halt_.after_poll(now);
      break;
    case State::Blocked:
      halt_.after_sleep(now);
      break;
    case State::Wakeup:
    case State::Preempted:
      begin_vcpu_enter_guest(now);
      break;
    case State::HaltRestart:
      halt_.halt_restart(now);
      break;
  }
}

void Vcpu::after_handle_exit(Tsc now) {
  if (icr_send_pending_) {
    send_icr_ipi(now);
    return;
  }
  if (exit_reason_ == ExitReason::HLT) {  // kvm_emulate_halt(): the vCPU is halted
    halt_.vcpu_block(now);
    return;
  }
  // The vcpu_run() loop: need_resched -> schedule() (cond_resched(), or
  // xfer_to_guest_mode_handle_work() since v5.11) before the next entry.
  if (pcpu_->preempt_point(now)) {
    state_ = State::Preempted;
    return;
  }
  begin_vcpu_enter_guest(now);
}

void Vcpu::resched_requested(Pcpu& /*cpu*/, Tsc now) { halt_.resched_requested(now); }

// vcpu_enter_guest(): process requests (a pending timer is injected here),
// disable interrupts, load guest state.
void Vcpu::begin_vcpu_enter_guest(Tsc now) {
  // vcpu_run(): a timer apic_timer_expired() left pending (from the hrtimer,
  // or from the exit path before v5.8) is injected between two
  // vcpu_enter_guest() calls, interrupts on (kvm_inject_pending_timer_irqs()).
  if (lapic_.pending() && state_ != State::VcpuRun) {
    state_ = State::VcpuRun;
    pcpu_->run_for(Stage::VcpuRun, SegKind::HostIrqOn, lapic_.inject_pending_timer_irqs(now));
    return;
  }
  state_ = State::EnterGuest;
  Tsc cost = steal_.update_pending() ? steal_.record_steal_time(now) : 0;
  if (enter_guest_entry_side_ != kTscNever) {  // the exit side ran before the handler
    cost += enter_guest_entry_side_;
    enter_guest_entry_side_ = kTscNever;
  } else {
    cost += costs_.vcpu_enter_guest(rng());
  }
  cost += lapic_.inject_pending_timer_irqs(now);
  if (event_request_) {  // KVM_REQ_EVENT: inject_pending_event()
    event_request_ = false;
    cost += lapic_.inject_event();
  }
  pcpu_->run_for(Stage::VcpuEnterGuest, SegKind::HostIrqOff, cost);
}

// Before v5.3 the advance busy-wait ended vcpu_enter_guest().
void Vcpu::after_vcpu_enter_guest(Tsc now) {
  steal_.write_back();  // pre-v5.6 record_steal_time(): kvm_write_guest_cached() of the copy
  // vcpu_enter_guest(): with APICv, sync_pir_to_irr() before the entry (and
  // before kvm_wait_lapic_expire() looks for the timer vector in the vIRR).
  if (lapic_.config().apicv) lapic_.sync_pir_to_irr(false);
  if (!wait_lapic_expire_at(WaitLapicExpireSite::VcpuEnterGuest, State::WaitEarly, now))
    begin_vmx_vcpu_run(now);
}

// kvm_wait_lapic_expire() if this kernel calls it at `site`: a busy-wait
// segment, after which run() continues from `after`. False if it did nothing.
bool Vcpu::wait_lapic_expire_at(WaitLapicExpireSite site, State after, Tsc now) {
  if (lapic_.config().wait_site != site) return false;
  const Tsc spin = lapic_.wait_lapic_expire(now);
  if (!spin) return false;
  state_ = after;
  pcpu_->run_for(Stage::WaitLapicExpire, SegKind::HostIrqOff, spin);
  return true;
}

// vmx_vcpu_run(): the software entry half (register and MSR state,
// mitigations, perf MSRs).
void Vcpu::begin_vmx_vcpu_run(Tsc now) {
  if (const Tsc c = costs_.vmx_vcpu_run(rng())) {
    state_ = State::VmxVcpuRun;
    pcpu_->run_for(Stage::VmxVcpuRun, SegKind::HostIrqOff, c);
    return;
  }
  after_vmx_vcpu_run(now);
}

// The end of vmx_vcpu_run(): vmx_update_hv_timer() loads the counter from
// the absolute deadline with rdtsc() now, then (since v5.3)
// kvm_wait_lapic_expire(), then the world switch. The counter only starts
// once the guest runs, so the rest of the entry path makes the timer late by
// its length.
void Vcpu::after_vmx_vcpu_run(Tsc now) {
  preemption_timer_loaded_ = hv_deadline_tsc_ != kHvDeadlineNone;
  if (preemption_timer_loaded_) {
    preemption_timer_value_ =
        vmx_preemption_timer_value(hv_deadline_tsc_, now, vmx_.preemption_timer_rate);
    // Invariant: vmx_set_hv_timer()'s fit check keeps the VMCS value in 32 bits.
    if (hv_deadline_tsc_ > now && (hv_deadline_tsc_ - now) >> vmx_.preemption_timer_rate >> 32)
      invariant_failed(comm(), "the preemption-timer value does not fit in 32 bits");
  }
  if (!wait_lapic_expire_at(WaitLapicExpireSite::VmxVcpuRun, State::WaitLate, now))
    begin_vmentry(now);
}

void Vcpu::begin_vmentry(Tsc /*now*/) {
  state_ = State::VmEntry;
  pcpu_->run_for(Stage::VmEntry, SegKind::HostIrqOff, costs_.vmentry(rng()));
}

void Vcpu::enter_guest_mode(Tsc now) {
  steal_.check_entry();
  state_ = State::InGuest;
  exiting_ = false;
  ++stats_.entries;
  kvm_signals().kvm_entry(vcpu_id_, pcpu_->id(), now);
  // A host interrupt that arrived with interrupts off exits right away.
  if (pcpu_->irq_pending()) {
    vmexit(ExitReason::EXTERNAL_INTERRUPT, now);
    return;
  }
  if (preemption_timer_loaded_) {
    const Tsc fire =
        vmx_preemption_timer_fire_tsc(now, preemption_timer_value_, vmx_.preemption_timer_rate);
    if (fire <= now) {
      vmexit(ExitReason::PREEMPTION_TIMER, now);
      return;
    }
    pcpu_->arm_vmx_preemption_timer(fire);
  }
  // Vectors posted meanwhile: vcpu_enter_guest()'s sync_pir_to_irr() after
  // IN_GUEST_MODE, or a notification pending with interrupts off, which the
  // CPU processes as posted once in non-root mode (no exit).
  lapic_.sync_pir_to_irr(pcpu_->take_posted_intr_notification());
  // Virtual-interrupt delivery: a vector in the vIRR is taken on entry.
  deliver_pending_interrupt(now);
  guest_step(now);
}

void Vcpu::guest_step(Tsc now) {
  const GuestStep s = guest_->step(now);
  ple_.step_begins(s.pause_loop, s.kind == GuestStep::Kind::Exit);
  switch (s.kind) {
    case GuestStep::Kind::Run:
      pcpu_->run_for(s.stage, SegKind::Guest,
                     s.pause_loop ? ple_.bounded_spin(now, s.cycles) : s.cycles);
      break;
    case GuestStep::Kind::Idle:
      // Pause-Loop Exiting: a PAUSE loop (gaps below ple_gap) that lasts
      // ple_window cycles exits with PAUSE_INSTRUCTION.
      if (s.pause_loop && ple_.enabled()) {
        pcpu_->run_for(s.stage, SegKind::Guest, ple_.open_spin(now));
        break;
      }
      pcpu_->run_until(s.stage, SegKind::Guest, kTscNever);
      break;
    case GuestStep::Kind::Exit:
      exit_step_ = s;
      vmexit(s.reason, now);
      break;
  }
}

// What is left of the guest step a VM exit or a posted interrupt cuts short.
Tsc Vcpu::suspend_remaining(Pcpu& cpu, Tsc now) {
  return ple_.suspend_remaining(cpu.segment_end(), now);
}

void Vcpu::guest_interrupted(Pcpu& cpu, Tsc now) {
  guest_->suspend(suspend_remaining(cpu, now));
  vmexit(ExitReason::EXTERNAL_INTERRUPT, now);
}

void Vcpu::preemption_timer_expired(Pcpu& cpu, Tsc now) {
  guest_->suspend(suspend_remaining(cpu, now));
  vmexit(ExitReason::PREEMPTION_TIMER, now);
}

void Vcpu::vmexit(ExitReason reason, Tsc now) {
  pcpu_->disarm_vmx_preemption_timer();
  ple_.vmexit();
  in_kernel_at_exit_ = guest_->in_kernel_mode();
  state_ = State::VmExit;
  exit_reason_ = reason;
  ++stats_.exits;
  kvm_signals().kvm_exit(vcpu_id_, pcpu_->id(), reason, now);
  pcpu_->run_for(Stage::VmExit, SegKind::HostIrqOff, costs_.vmexit(rng()));
}

// After the exit half: handle_exit_irqoff() runs the host handler of an
// external interrupt (vmx_handle_external_intr), then local_irq_enable()
// lets any other pending interrupt in; then the exit handler proper.
void Vcpu::handle_exit(Tsc now) {
  const Tsc irq = pcpu_->take_pending_irqs(now);
  if (irq) {
    state_ = State::HostIrq;
    pcpu_->run_for(Stage::HostIrq, SegKind::HostIrqOff, irq);
    return;
  }
  state_ = State::HandleExit;
  pcpu_->run_for(Stage::HandleExit, SegKind::HostIrqOn, run_exit_handler(now));
}

// vmx_handle_exit() -> kvm_vmx_exit_handlers[reason] (exit_handlers.h);
// effects apply now, the returned cost is the length of the handle_exit stage.
Tsc Vcpu::run_exit_handler(Tsc now) {
  // vmx_handle_exit() returns at once for an exit the fastpath handled.
  if (fastpath_ == ExitFastpath::ExitHandled) return 0;
  Tsc cost = costs_.handle_exit(rng());
  const auto r = static_cast<std::size_t>(exit_reason_);
  const ExitHandler& h = g_kvm_vmx_exit_handlers[r];
  if (!h.fn) return cost;
  if (h.cost_key) cost += costs_.exit_handler[r](rng());
  return cost + h.fn(*this, now, cost);
}

}  // namespace kvmsim
