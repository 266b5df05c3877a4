#include "sim/sched/pcpu.h"

#include <algorithm>

#include "sim/sched/host.h"

namespace kvmsim {

Pcpu::Pcpu(const sc_core::sc_module_name& name, int id, SimContext& ctx, PcpuCosts costs,
           Host& host)
    : sc_module(name),
      id_(id),
      ctx_(ctx),
      model_signals_(ctx.signals.get<ModelSignals>()),
      sched_signals_(ctx.signals.get<SchedSignals>()),
      costs_(std::move(costs)),
      host_(host),
      sched_(host.scheduler()),
      rng_(ctx.stream(std::string(name) + ".costs")),
      idle_comm_("swapper/" + std::to_string(id)),
      irq_(*this, ctx, std::string(name), costs_, hrtimers_) {
  // SystemC's kernel runs dispatch() on wake_ (--systemc-kernel, --vcd); the
  // model's own event kernel calls it directly.
  SC_METHOD(dispatch);
  sensitive << wake_;
  dont_initialize();
  kproc_ = ctx.kernel.add_process(
      this, [](void* self) { static_cast<Pcpu*>(self)->dispatch(); }, &wake_);
}

// The earliest time this pCPU must decide something: end of the current
// segment, clockevent expiry, next noise interrupt, IPI arrival,
// preemption-timer zero; `now` for an interrupt left pending (it came in
// while another one ran) or a posted-interrupt notification that the segment
// lets in. May lie before `now` (a timer started in the past).
inline Tsc Pcpu::next_decision(Tsc now) const {  // inline: every model step asks
  Tsc next = std::min(std::min(seg_end_, irq_.next_noise()), irq_.next_ipi());
  if (!irq_.timer_pending()) next = std::min(next, hrtimers_.next_expiry());
  if (seg_kind_ == SegKind::Guest) next = std::min(next, vmx_timer_);
  if (irq_pending() && seg_kind_ != SegKind::HostIrqOff && !in_nested_irq_)
    next = std::min(next, now);
  if (irq_.posted_intr_pending() &&
      (seg_kind_ == SegKind::Guest ||
       ((seg_kind_ == SegKind::HostIrqOn || seg_kind_ == SegKind::HostUser) && !in_nested_irq_)))
    next = std::min(next, now);
  return next;
}

void Pcpu::reschedule() {
  if (in_dispatch_) return;   // dispatch() re-arms on its way out
  const Tsc now = now_tsc();  // the model's time (a pCPU may have run ahead)
  const Tsc next = next_decision(now);
  if (next == scheduled_) return;
  ctx_.kernel.cancel(kproc_);
  scheduled_ = next;
  ModelTime::note_rearm();
  if (next == kTscNever) return;
  // Fires at max(next, now) in the model's time, as without run-ahead; the
  // delay counts from the kernel's own time.
  const Tsc at = std::max(next, now);
  ctx_.kernel.notify(kproc_, at - ModelTime::kernel_now());
}

bool Pcpu::need_resched() const { return sched_.need_resched(id_); }

// The idle task polls need_resched: its loop ends now, or when the interrupt
// that set it returns (schedule() from the idle loop).
void Pcpu::end_idle(Tsc now) {
  if (curr_ != nullptr) return;
  if (in_nested_irq_) {
    if (saved_stage_ == Stage::HostIdle) saved_remaining_ = 0;
    return;
  }
  if (seg_stage_ == Stage::HostIdle && !switching_) {
    seg_end_ = now;
    reschedule();
  }
}

void Pcpu::resched_curr(Tsc now, Pcpu* from, Tsc ipi_at) {
  if (from && from != this) {
    from->send_ipi(*this, HostIpi::Reschedule, std::max(ipi_at, now));  // smp_send_reschedule()
    return;
  }
  end_idle(now);  // a busy thread sees need_resched at its next preemption point
  if (curr_) curr_->resched_requested(*this, now);
}

// scheduler_tick(): task_tick_fair() checks the slice; a busy queue kicks
// the nohz idle balancer, which pulls work to idle pCPUs (each reached with a
// reschedule IPI, as nohz_balancer_kick's IPI reaches the balancing CPU).
void Pcpu::scheduler_tick(Tsc now) {
  if (sched_.tick(id_, now)) end_idle(now);
  // trigger_load_balance() -> rebalance_domains() (host.sched_load_balance):
  // tasks pulled here may preempt the current one (attach_task ->
  // check_preempt_curr); their old pCPUs re-arm their slices at their next pick.
  for (SchedEntity* e : sched_.rebalance_domains(id_, now))
    if (sched_.wakeup_preempts(id_, *e, now)) resched_curr(now);
  for (const auto& pulled : sched_.nohz_idle_balance(id_, now))
    if (host_.has_pcpu(pulled.first)) host_.pcpu(pulled.first).resched_curr(now, this, now);
}

void Pcpu::sleep_current(Tsc now) {
  sched_.dequeue(id_, curr_->se(), now, kDequeueSleep);
  schedule(now);
}

bool Pcpu::preempt_point(Tsc now) {
  if (!sched_.need_resched(id_)) return false;
  SchedEntity* se = sched_.pick_next(id_, now);
  HostThread* next = se ? Host::thread_of(*se) : nullptr;
  if (next == curr_) return false;
  switch_to(next, now);
  return true;
}

void Pcpu::schedule(Tsc now) {
  SchedEntity* se = sched_.pick_next(id_, now);
  HostThread* next = se ? Host::thread_of(*se) : nullptr;
  if (next == curr_) {  // nothing else to run: the same thread (or idle) goes on
    if (curr_)
      curr_->run(*this, now);
    else
      enter_idle(now);
    return;
  }
  switch_to(next, now);
}

// context_switch(): preempt notifiers out, the switch, notifiers in. A switch
// between two threads costs cost.host.context_switch; to and from the idle
// task the cost is the sleeping / waking thread's own (for a vCPU,
// cost.vcpu_block and cost.vcpu_wakeup). What the notifiers return (KVM's
// vcpu_put / vcpu_load beyond those) is added to the switch.
void Pcpu::switch_to(HostThread* next, Tsc now) {
  HostThread* prev = curr_;
  const bool prev_runnable = (prev != nullptr) && prev->se().on_rq;
  Tsc notifiers = 0;  // the preempt notifiers' work (KVM: vcpu_put / vcpu_load)
  if (prev) {
    stats_.busy_cycles += now - busy_since_;
    notifiers += prev->sched_out(*this, now, prev_runnable);
  }
  if (sched_signals_.sched_switch.connected()) {
    const std::string& idle = idle_comm_;
    sched_signals_.sched_switch(id_, prev ? prev->comm() : idle, prev ? prev->pid() : 0,
                                prev ? 120 + prev->se().nice : 120,
                                prev_runnable || (prev == nullptr), next ? next->comm() : idle,
                                next ? next->pid() : 0, next ? 120 + next->se().nice : 120, now);
  }
  curr_ = next;
  if (!prev) tick_nohz_restart_sched_tick(now);  // the idle task's tick_nohz_idle_exit()
  if (next) {
    busy_since_ = now;
    notifiers += next->sched_in(*this, now);
  }
  Tsc c = (prev && next ? costs_.context_switch(rng_) : 0) + notifiers;
  if (next && next->mm()) {
    // switch_mm(): back to the mm leave_mm() left (the lazy-TLB active_mm),
    // this pCPU is not in its cpumask any more, so it sets itself there and
    // reloads CR3. A different mm loads CR3 anyway (part of the switch).
    if (left_mm_ && next->mm() == active_mm_) {
      ++stats_.cpuidle.leave_mm;
      c += costs_.cpuidle.leave_mm_cost(rng_);
    }
    left_mm_ = false;
    active_mm_ = next->mm();
  }
  if (c) {
    switching_ = true;
    run_for(Stage::HostContextSwitch, SegKind::HostIrqOff, c);
    return;
  }
  if (next)
    next->run(*this, now);
  else
    enter_idle(now);
}

// NO_HZ_IDLE (host.nohz_idle): the idle task stops the tick, keeping where
// it would have fired next (ts->last_tick); leaving idle restarts it there,
// forwarded past now by whole periods (hrtimer_forward()), so the tick stays
// on its grid.
void Pcpu::tick_nohz_stop_sched_tick() {
  if (!costs_.nohz_idle || tick_ == nullptr || !tick_->queued()) return;
  last_tick_ = tick_->expires();
  HostHrtimerBase::cancel(tick_);
}

void Pcpu::tick_nohz_restart_sched_tick(Tsc now) {
  if (last_tick_ == kTscNever) return;
  Tsc next = last_tick_;
  if (next <= now) next += ((now - next) / tick_period_ + 1) * tick_period_;
  last_tick_ = kTscNever;
  hrtimers_.start(tick_, next);
}

// scheduler_ipi(): need_resched is already set by the sender (resched_curr).
void Pcpu::scheduler_ipi(Tsc now) {
  if (!sched_.idle(id_)) end_idle(now);
  if (curr_ && sched_.need_resched(id_)) curr_->resched_requested(*this, now);
}

void Pcpu::end_guest_spin() {
  // An open-ended spin, or the guest's bounded cpuidle poll.
  if (seg_kind_ != SegKind::Guest || (seg_end_ != kTscNever && seg_stage_ != Stage::GuestHaltPoll))
    return;
  seg_end_ = now_tsc();
  reschedule();
}

void Pcpu::shorten_segment(Tsc end) {
  const Tsc now = now_tsc();
  end = std::max(end, now);
  if (in_nested_irq_) {
    if (saved_remaining_ != kTscNever) saved_remaining_ = std::min(saved_remaining_, end - now);
    return;
  }
  if (end < seg_end_) {
    seg_end_ = end;
    reschedule();
  }
}

void Pcpu::end_segment(Tsc now) {
  if (seg_stage_ == Stage::HaltPoll) stats_.poll_cycles += now - seg_begin_;
  if (not_c0(seg_stage_)) stats_.not_c0_cycles += now - seg_begin_;
  if (seg_stage_ == Stage::HostIdle && cstate_ >= 0)
    stats_.cpuidle.residency[static_cast<std::size_t>(cstate_)] += now - seg_begin_;
  if (seg_stage_ == Stage::HostCstateExit) stats_.cpuidle.exit_cycles += now - seg_begin_;
  model_signals_.segment(id_, seg_stage_, seg_begin_, now);
}

// One decision point of this pCPU at `now` (what one SystemC event did).
void Pcpu::step(Tsc now) {
  ++ctx_.events;
  irq_.poll(now);

  if (seg_kind_ == SegKind::Guest && vmx_timer_ <= now && seg_end_ > now) {
    // Preemption timer reached zero in non-root mode.
    end_segment(now);
    vmx_timer_ = kTscNever;
    curr_->preemption_timer_expired(*this, now);
  } else if (irq_.posted_intr_pending() && seg_kind_ == SegKind::Guest && seg_end_ > now) {
    // Posted-interrupt notification in non-root mode: no VM exit.
    irq_.take_posted_intr_notification();
    end_segment(now);
    curr_->posted_interrupt(*this, now);
  } else if ((irq_pending() || irq_.posted_intr_pending()) && seg_end_ > now) {
    if (seg_kind_ == SegKind::Guest) {
      end_segment(now);
      vmx_timer_ = kTscNever;
      curr_->guest_interrupted(*this, now);
    } else if (seg_stage_ == Stage::HostIdle && cstate_ > 0 && !in_nested_irq_) {
      exit_cstate(now);  // the interrupt is taken once the core is back in C0
    } else if ((seg_kind_ == SegKind::HostIrqOn || seg_kind_ == SegKind::HostUser) &&
               !in_nested_irq_) {
      if (seg_stage_ == Stage::HostIdle && cstate_ == 0) {  // POLL: left at once
        end_segment(now);
        seg_begin_ = now;
        cstate_exited(now);
        if (seg_stage_ != Stage::HostIdle) return;
      }
      end_segment(now);
      in_nested_irq_ = true;
      saved_stage_ = seg_stage_;
      saved_kind_ = seg_kind_;
      saved_remaining_ = seg_end_ == kTscNever ? kTscNever : seg_end_ - now;
      run_for(Stage::HostIrq, SegKind::HostIrqOff, take_pending_irqs(now));
    }
    // HostIrqOff: stays pending until the thread enables interrupts.
  } else if (seg_end_ <= now) {
    end_segment(now);
    if (in_nested_irq_) {
      in_nested_irq_ = false;
      if (saved_kind_ == SegKind::HostUser && curr_ && sched_.need_resched(id_)) {
        // irqentry_exit_to_user_mode() -> schedule(): user code is preempted.
        curr_->user_preempted(saved_remaining_);
        schedule(now);
      } else if (saved_stage_ == Stage::HostIdle && !curr_ && costs_.cpuidle.enabled &&
                 saved_remaining_ != 0) {
        enter_idle(now, false);  // no need_resched: the idle loop goes round
      } else {
        const Tsc end = saved_remaining_ == kTscNever ? kTscNever : now + saved_remaining_;
        run_until(saved_stage_, saved_kind_, end);
        seg_begin_ = now;
      }
    } else if (switching_) {
      switching_ = false;
      if (curr_)
        curr_->run(*this, now);
      else
        schedule(now);  // the idle task: pick again (a wake-up may have come meanwhile)
    } else if (curr_) {
      curr_->run(*this, now);
    } else if (seg_stage_ == Stage::HostIdleEnter) {
      select_cstate(now);
    } else if (seg_stage_ == Stage::HostCstateExit) {
      cstate_exited(now);
    } else if (seg_stage_ == Stage::HostIdle && cstate_ > 0) {
      exit_cstate(now);  // need_resched seen by MWAIT's monitor (TIF_POLLING_NRFLAG): no IPI
    } else {
      schedule(now);  // the idle loop saw need_resched
    }
  }
}

// One SystemC activation: this pCPU's next decision points, run ahead as far
// as nothing else can act in between (RunAhead::dispatch()), then its event
// re-armed at the model time reached.
void Pcpu::dispatch() {
  in_dispatch_ = true;
  scheduled_ = kTscNever;
  const bool running = ctx_.run_ahead.dispatch(*this, ctx_.kernel);
  in_dispatch_ = false;
  reschedule();
  RunAhead::end_activation(running);
}

}  // namespace kvmsim
