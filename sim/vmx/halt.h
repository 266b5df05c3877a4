// A halted vCPU: kvm_emulate_halt() (x86.c), vcpu_block() (x86.c, v5.16+;
// vmx_pre_block / post_block before), kvm_vcpu_halt() with halt polling,
// kvm_vcpu_block(), kvm_vcpu_check_block() and the wake-up side of
// kvm_vcpu_kick() (virt/kvm/kvm_main.c).
//
// A HLT exit blocks the vCPU: the hv timer moves to a host hrtimer (the
// preemption timer cannot fire while the thread sleeps), the thread may poll
// for a wake-up (halt_poll_ns, grown and shrunk per halt: sim/vmx/halt_poll.h),
// then schedules out until a timer or an IPI wakes it. A halt with RFLAGS.IF
// clear (the PV qspinlock's kvm_wait()) ends only with the PV kick
// (pv_unhalted); other wake-ups reach the thread and it sleeps again.
#pragma once

#include <cstdint>

#include "sim/core/counters.h"
#include "sim/core/dist.h"
#include "sim/core/time.h"
#include "sim/vmx/halt_poll.h"

namespace kvmsim {

class LapicVcpu;
class ParamSet;
class Vcpu;

// Halt polling in kvm_vcpu_halt() (virt/kvm/kvm_main.c): the module
// parameters halt_poll_ns (the window's maximum), halt_poll_ns_grow,
// halt_poll_ns_grow_start, halt_poll_ns_shrink and the era of the window
// rule (sim/vmx/halt_poll.h), and the 2016 proposal halt_poll_ns_timer
// (never merged: poll when the vCPU's own LAPIC timer fires within that
// many ns).
struct HaltPollConfig : HaltPollParams {
  std::uint32_t timer_ns = 0;
  [[nodiscard]] bool configured() const { return max_ns != 0 || timer_ns != 0; }
};

struct HaltConfig {
  HaltPollConfig poll;
  Sampler vcpu_block;        // vcpu_block() -> kvm_vcpu_halt(): prepare to wait, schedule() out
  Sampler vcpu_wakeup;       // idle exit, try_to_wake_up() of the vCPU thread, schedule() in
  Sampler vcpu_block_abort;  // schedule() of a task woken remotely before it was dequeued
  Sampler halt_poll_exit;    // a successful poll: leave the loop, stats, trace, back to vcpu_run
  static HaltConfig from(const ParamSet& p, const TscClock& clk);
};

// Halt polling under the kernel's stat names (halt_attempted_poll, ...).
struct HaltPollStats {
  std::uint64_t attempted = 0, successful = 0, invalid = 0, grows = 0, shrinks = 0;
  Tsc success_cycles = 0, fail_cycles = 0, wait_cycles = 0;
  using Fields = CounterFields<HaltPollStats, &HaltPollStats::attempted, &HaltPollStats::successful,
                               &HaltPollStats::invalid, &HaltPollStats::grows,
                               &HaltPollStats::shrinks, &HaltPollStats::success_cycles,
                               &HaltPollStats::fail_cycles, &HaltPollStats::wait_cycles>;
};

struct HaltStats {
  std::uint64_t halts = 0, blocks = 0;  // HLT exits; of those, how many slept
  Tsc blocked_cycles = 0;
  // Wake-ups of a thread halted with RFLAGS.IF clear by an interrupt it
  // cannot take: after an IPI kvm_vcpu_check_block() found nothing and the
  // thread slept again in the same kvm_vcpu_block(); after its own timer
  // kvm_vcpu_block() returned, the timer went to the IRR and a new one began.
  std::uint64_t spurious_wakeups = 0;
  using Fields = CounterFields<HaltStats, &HaltStats::halts, &HaltStats::blocks,
                               &HaltStats::blocked_cycles, &HaltStats::spurious_wakeups>;
};

class KvmHalt {
 public:
  KvmHalt(Vcpu& vcpu, const HaltConfig& cfg) : v_(vcpu), cfg_(cfg) {}

  // kvm_emulate_halt() (the HLT exit handler): the vCPU blocks after it.
  Tsc handle_halt();
  // vcpu_block(): after the HLT exit was handled.
  void vcpu_block(Tsc now);
  // vcpu_block() again: a timer ended kvm_vcpu_block() of a halt with IF
  // clear, and vcpu_run() moved it to the IRR (restart_halt()).
  void halt_restart(Tsc now) {
    halt_restart_ = true;
    vcpu_block(now);
  }
  // The stage the vCPU was in ended (Poll, Block) or its thread runs again
  // after sleeping (Blocked).
  void after_poll(Tsc now);
  void after_block(Tsc now);
  void after_sleep(Tsc now);

  // kvm_vcpu_wake_up() part of kvm_vcpu_kick(): true when the vCPU was in
  // its halt (polling, blocking or asleep), which the kick reached.
  // From the LAPIC timer on `from_cpu` (apic_timer_fn):
  bool wake_up(Tsc now, int from_cpu);
  // From `sender`'s thread at `at` (an IPI); *cost: the sender's share.
  bool wake_up_from(LapicVcpu& sender, Tsc at, Tsc* cost);
  // need_resched on this pCPU ends a poll (kvm_vcpu_can_poll()).
  void resched_requested(Tsc now);

  // kvm_vcpu_check_block() / kvm_arch_vcpu_runnable(): a timer interrupt is
  // pending, or a vector is deliverable from the (v)IRR or waits in the PIR.
  // A halt with RFLAGS.IF clear (the PV qspinlock's kvm_wait() -> halt()) ends
  // only on pv_unhalted.
  [[nodiscard]] bool vcpu_runnable() const;
  // vcpu->arch.pv.pv_unhalted: a KVM_HC_KICK_CPU arrived; the next (or
  // current) halt ends, IF or not. Cleared when the halt returns.
  void set_pv_unhalted() { pv_unhalted_ = true; }
  // The thread sleeps in this halt (asleep, or woken in vain with IF clear
  // and not running yet): a PV kick now ends the halt it slept in.
  [[nodiscard]] bool sleeping_in_halt() const;

  [[nodiscard]] std::uint32_t halt_poll_ns() const { return halt_poll_ns_; }
  void set_poll_control(bool on) { poll_control_ = on; }
  [[nodiscard]] const HaltStats& stats() const { return stats_; }
  [[nodiscard]] const HaltPollStats& poll_stats() const { return hp_stats_; }

 private:
  void finish_halt(Tsc now, bool waited);  // window update, stats, kvm_vcpu_wakeup
  void end_block(Tsc now, Tsc sched_cost);
  void rewait_block(Tsc now);
  void restart_halt(Tsc now, bool waited);
  [[nodiscard]] bool polling_allowed() const { return cfg_.poll.configured() && poll_control_; }

  Vcpu& v_;
  const HaltConfig& cfg_;  // the VM's (VmConfig)
  bool hv_timer_before_block_ = false;
  bool block_kicked_ = false;  // a remote kick came during the Block stage
  bool rewaiting_ = false;     // the Block stage after a spurious wake-up (IF clear)
  bool halt_restart_ = false;  // vcpu_block() again after a timer ended kvm_vcpu_block()
  bool pv_unhalted_ = false;
  bool polled_ = false;             // this halt polled
  bool poll_control_ = true;        // MSR_KVM_POLL_CONTROL bit 0
  std::uint32_t halt_poll_ns_ = 0;  // vcpu->halt_poll_ns: this vCPU's current window
  Tsc block_start_ = 0;
  Tsc halt_start_ = 0, poll_start_ = 0, poll_end_ = 0;
  HaltPollStats hp_stats_;
  HaltStats stats_;
};

}  // namespace kvmsim
