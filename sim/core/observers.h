// The observer hub: the model calls it, it forwards to each observer.
// With no observer attached a call costs a few branches.
//
// The hub keeps one list per hook: an observer that does not override a
// hook leaves that hook's list the first time the hub calls it there (the
// base class's empty default says so), so the hot hooks (on_segment: every
// model step) only call the observers that use them. The observers every
// run has (exit statistics, latency breakdown, RunGuard) are not in the
// lists: the hub calls them directly (set_core()).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/core/breakdown.h"
#include "sim/core/exit_stats.h"
#include "sim/core/observer.h"
#include "sim/core/run_guard.h"

namespace kvmsim {

// Whether class T overrides hook `fn` (&T::fn then names T's member, not
// ModelObserver's).
#define KVMSIM_OVERRIDES_IN(T, fn) (!std::is_same_v<decltype(&T::fn), decltype(&ModelObserver::fn)>)
// Calls `fn` on each core observer that is set and whose class overrides
// `test` (a hook name; on_apic_accept_ipi's default forwards to
// on_apic_accept_irq, so that one is tested for both).
#define KVMSIM_CORE_CALL_TESTED(test1, test2, fn, ...)                                            \
  do {                                                                                            \
    if constexpr (KVMSIM_OVERRIDES_IN(ExitStats, test1) || KVMSIM_OVERRIDES_IN(ExitStats, test2)) \
      if (exit_stats_) exit_stats_->fn(__VA_ARGS__);                                              \
    if constexpr (KVMSIM_OVERRIDES_IN(LatencyBreakdown, test1) ||                                 \
                  KVMSIM_OVERRIDES_IN(LatencyBreakdown, test2))                                   \
      if (breakdown_) breakdown_->fn(__VA_ARGS__);                                                \
    if constexpr (KVMSIM_OVERRIDES_IN(RunGuard, test1) || KVMSIM_OVERRIDES_IN(RunGuard, test2))   \
      if (guard_) guard_->fn(__VA_ARGS__);                                                        \
  } while (0)
#define KVMSIM_CORE_CALL(fn, ...) KVMSIM_CORE_CALL_TESTED(fn, fn, fn, __VA_ARGS__)

class Observers {
 public:
  void add(ModelObserver* o) {
    for (auto& l : lists_) l.push_back(o);
    ++count_;
  }
  // The observers every run has (System's), called directly: their classes
  // are final, so these calls are inline, and only for the hooks each one
  // overrides (checked at compile time). Any of them may be null.
  void set_core(ExitStats* exit_stats, LatencyBreakdown* breakdown, RunGuard* guard) {
    exit_stats_ = exit_stats;
    breakdown_ = breakdown;
    guard_ = guard;
    count_ += (exit_stats != nullptr) + (breakdown != nullptr) + (guard != nullptr);
  }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  // Observers still called for `h` (for tests).
  [[nodiscard]] std::size_t subscribers(Hook h) const { return list(h).size(); }

  void segment(int pcpu, Stage s, Tsc b, Tsc e) const {
    KVMSIM_CORE_CALL(on_segment, pcpu, s, b, e);
    for (auto* o : list(Hook::Segment)) o->on_segment(pcpu, s, b, e);
    prune_if_unused(Hook::Segment);
  }
  void vmexit(int vcpu, int pcpu, ExitReason r, Tsc t) const {
    KVMSIM_CORE_CALL(on_vmexit, vcpu, pcpu, r, t);
    for (auto* o : list(Hook::Vmexit)) o->on_vmexit(vcpu, pcpu, r, t);
    prune_if_unused(Hook::Vmexit);
  }
  void vmentry(int vcpu, int pcpu, Tsc t) const {
    KVMSIM_CORE_CALL(on_vmentry, vcpu, pcpu, t);
    for (auto* o : list(Hook::Vmentry)) o->on_vmentry(vcpu, pcpu, t);
    prune_if_unused(Hook::Vmentry);
  }
  void timer_armed(int vcpu, int pcpu, Tsc d) const {
    KVMSIM_CORE_CALL(on_timer_armed, vcpu, pcpu, d);
    for (auto* o : list(Hook::TimerArmed)) o->on_timer_armed(vcpu, pcpu, d);
    prune_if_unused(Hook::TimerArmed);
  }
  void latency_sample(int vcpu, int pcpu, Tsc d, Tsc t, std::int64_t ns) const {
    KVMSIM_CORE_CALL(on_latency_sample, vcpu, pcpu, d, t, ns);
    for (auto* o : list(Hook::LatencySample)) o->on_latency_sample(vcpu, pcpu, d, t, ns);
    prune_if_unused(Hook::LatencySample);
  }
  void vcpu_poll(int vcpu, int pcpu, Tsc t) const {
    KVMSIM_CORE_CALL(on_vcpu_poll, vcpu, pcpu, t);
    for (auto* o : list(Hook::VcpuPoll)) o->on_vcpu_poll(vcpu, pcpu, t);
    prune_if_unused(Hook::VcpuPoll);
  }
  void vcpu_block(int vcpu, int pcpu, Tsc t) const {
    KVMSIM_CORE_CALL(on_vcpu_block, vcpu, pcpu, t);
    for (auto* o : list(Hook::VcpuBlock)) o->on_vcpu_block(vcpu, pcpu, t);
    prune_if_unused(Hook::VcpuBlock);
  }
  void vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t) const {
    KVMSIM_CORE_CALL(on_vcpu_wakeup, vcpu, waited, ns, t);
    for (auto* o : list(Hook::VcpuWakeup)) o->on_vcpu_wakeup(vcpu, waited, ns, t);
    prune_if_unused(Hook::VcpuWakeup);
  }
  void halt_poll_ns(int vcpu, bool grow, std::uint32_t n, std::uint32_t o, Tsc t) const {
    KVMSIM_CORE_CALL(on_halt_poll_ns, vcpu, grow, n, o, t);
    for (auto* ob : list(Hook::HaltPollNs)) ob->on_halt_poll_ns(vcpu, grow, n, o, t);
    prune_if_unused(Hook::HaltPollNs);
  }
  void hv_timer_state(int vcpu, bool on, Tsc t) const {
    KVMSIM_CORE_CALL(on_hv_timer_state, vcpu, on, t);
    for (auto* o : list(Hook::HvTimerState)) o->on_hv_timer_state(vcpu, on, t);
    prune_if_unused(Hook::HvTimerState);
  }
  void wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t) const {
    KVMSIM_CORE_CALL(on_wait_lapic_expire, vcpu, delta, t);
    for (auto* o : list(Hook::WaitLapicExpire)) o->on_wait_lapic_expire(vcpu, delta, t);
    prune_if_unused(Hook::WaitLapicExpire);
  }
  void apic_accept_irq(int vcpu, std::uint8_t vec, Tsc t) const {
    KVMSIM_CORE_CALL(on_apic_accept_irq, vcpu, vec, t);
    for (auto* o : list(Hook::ApicAcceptIrq)) o->on_apic_accept_irq(vcpu, vec, t);
    prune_if_unused(Hook::ApicAcceptIrq);
  }
  void apic_accept_ipi(int sender, int target, std::uint8_t vec, Tsc t) const {
    KVMSIM_CORE_CALL_TESTED(on_apic_accept_ipi, on_apic_accept_irq, on_apic_accept_ipi, sender,
                            target, vec, t);
    for (auto* o : list(Hook::Count)) o->on_apic_accept_ipi(sender, target, vec, t);
  }
  void apic_ipi(int vcpu, std::uint32_t icr_low, std::uint32_t dest, Tsc t) const {
    KVMSIM_CORE_CALL(on_apic_ipi, vcpu, icr_low, dest, t);
    for (auto* o : list(Hook::ApicIpi)) o->on_apic_ipi(vcpu, icr_low, dest, t);
    prune_if_unused(Hook::ApicIpi);
  }
  void hypercall(int vcpu, std::uint64_t nr, std::uint64_t a0, std::uint64_t a1, Tsc t) const {
    KVMSIM_CORE_CALL(on_hypercall, vcpu, nr, a0, a1, t);
    for (auto* o : list(Hook::Hypercall)) o->on_hypercall(vcpu, nr, a0, a1, t);
    prune_if_unused(Hook::Hypercall);
  }
  void msr_write(int vcpu, std::uint32_t msr, std::uint64_t v, Tsc t) const {
    KVMSIM_CORE_CALL(on_msr_write, vcpu, msr, v, t);
    for (auto* o : list(Hook::MsrWrite)) o->on_msr_write(vcpu, msr, v, t);
    prune_if_unused(Hook::MsrWrite);
  }
  void pv_tlb_flush(int vcpu, bool need, Tsc t) const {
    KVMSIM_CORE_CALL(on_pv_tlb_flush, vcpu, need, t);
    for (auto* o : list(Hook::PvTlbFlush)) o->on_pv_tlb_flush(vcpu, need, t);
    prune_if_unused(Hook::PvTlbFlush);
  }
  void sched_switch(int pcpu, const std::string& pc, int pp, int ppr, bool prun,
                    const std::string& nc, int np, int npr, Tsc t) const {
    for (auto* o : list(Hook::SchedSwitch))
      o->on_sched_switch(pcpu, pc, pp, ppr, prun, nc, np, npr, t);
    prune_if_unused(Hook::SchedSwitch);
  }
  void sched_wakeup(int waker, const std::string& c, int pid, int prio, int target, Tsc t) const {
    KVMSIM_CORE_CALL(on_sched_wakeup, waker, c, pid, prio, target, t);
    for (auto* o : list(Hook::SchedWakeup)) o->on_sched_wakeup(waker, c, pid, prio, target, t);
    prune_if_unused(Hook::SchedWakeup);
  }
  void sched_migrate(const std::string& c, int pid, int prio, int from, int to, Tsc t) const {
    KVMSIM_CORE_CALL(on_sched_migrate, c, pid, prio, from, to, t);
    for (auto* o : list(Hook::SchedMigrate)) o->on_sched_migrate(c, pid, prio, from, to, t);
    prune_if_unused(Hook::SchedMigrate);
  }

 private:
  // Hook::Count's list: every observer (on_apic_accept_ipi, whose default is
  // not empty).
  [[nodiscard]] const std::vector<ModelObserver*>& list(Hook h) const {
    return lists_[static_cast<std::size_t>(h)];
  }
  void prune_if_unused(Hook h) const {
    if (!detail::g_hook_unused) return;
    detail::g_hook_unused = false;
    auto& l = lists_[static_cast<std::size_t>(h)];
    l.erase(std::remove_if(l.begin(), l.end(),
                           [h](const ModelObserver* o) { return o->hook_unused(h); }),
            l.end());
  }
  mutable std::array<std::vector<ModelObserver*>, kHookCount + 1> lists_;
  std::size_t count_ = 0;
  ExitStats* exit_stats_ = nullptr;
  LatencyBreakdown* breakdown_ = nullptr;
  RunGuard* guard_ = nullptr;
};

#undef KVMSIM_CORE_CALL
#undef KVMSIM_CORE_CALL_TESTED
#undef KVMSIM_OVERRIDES_IN

}  // namespace kvmsim
