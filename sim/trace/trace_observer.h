// `kvmsim run --trace FILE`: an observer that turns the model's events into
// the host's kvm tracepoints as `trace-cmd report` text (formats in
// trace_format.h), streamed to disk. It is attached only when tracing is
// asked for, so a run without --trace does not pay for it; with it, memory
// stays bounded (one reused line buffer, the ofstream's buffer).
//
// What the simulated host prints, per vCPU thread ("CPU n/KVM", pid 1000+n):
//   kvm_exit, kvm_entry, kvm_msr (TSC-deadline / EOI writes),
//   kvm_hv_timer_state, kvm_wait_lapic_expire, kvm_apic_accept_irq (the
//   LAPIC timer vector accepted into the IRR), kvm_vcpu_wakeup,
//   kvm_ple_window / kvm_ple_window_update, each where and as often as the
//   host's kernel version fires it (docs/guide/traces.md); and, for
//   every host thread (vCPU threads, host tasks, the idle task swapper/N),
//   the scheduler's sched_switch, sched_wakeup (at try_to_wake_up(), from
//   the waker's pCPU) and sched_migrate_task.
// Guest RIPs are not modelled: kvm_exit/kvm_entry carry a fixed RIP per exit
// kind (a WRMSR in lapic_next_deadline, the idle/spin loop for timer exits)
// so that tools keyed on RIP see stable values.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/observer.h"
#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/trace/trace_format.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim::trace {

class TraceObserver : public Observer {
 public:
  // tasks[vcpu]: the vCPU thread's comm and pid; cpus: pCPU count for the header.
  // host_kernel: the host's version ({4, 16}); a tracepoint the kernel did not have yet
  // is not written (empty: every tracepoint).
  TraceObserver(const std::string& path, TscClock clock, std::vector<TraceTask> tasks,
                std::vector<int> vcpu_apicid, int cpus, std::vector<int> host_kernel = {});
  ~TraceObserver() override;

  void connect(SignalRegistry& signals) override;
  void on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t);
  void on_vmentry(int vcpu, int pcpu, Tsc t);
  void on_msr_write(int vcpu, std::uint32_t msr, std::uint64_t value, Tsc t);
  void on_hv_timer_state(int vcpu, bool hv_timer, Tsc t);
  void on_wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t);
  void on_apic_accept_irq(int vcpu, std::uint8_t vector, Tsc t);
  void on_inj_virq(int vcpu, std::uint8_t vector, bool reinjected, Tsc t);
  void on_eoi(int vcpu, int vector, Tsc t);
  void on_apic_write(int vcpu, std::uint32_t reg, std::uint64_t val, Tsc t);
  void on_pv_eoi(int vcpu, int vector, Tsc t);
  void on_apic_accept_ipi(int sender, int target, std::uint8_t vector, Tsc t);
  void on_apic_ipi(int vcpu, std::uint32_t icr_low, std::uint32_t dest_id, Tsc t);
  void on_hypercall(int vcpu, std::uint64_t nr, std::uint64_t a0, std::uint64_t a1, Tsc t);
  void on_pv_tlb_flush(int vcpu, bool need_flush_tlb, Tsc t);
  void on_vcpu_block(int vcpu, int pcpu, Tsc t);
  void on_vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t);
  void on_halt_poll_ns(int vcpu, bool grow, std::uint32_t new_ns, std::uint32_t old_ns, Tsc t);
  void on_ple_window(int vcpu, bool grow, std::uint32_t new_window, std::uint32_t old_window,
                     Tsc t);
  void on_fastpath_reenter(int vcpu, Tsc t);
  void on_before_handle_exit(int vcpu, Tsc t);
  void on_sched_switch(int pcpu, const std::string& prev_comm, int prev_pid, int prev_prio,
                       bool prev_runnable, const std::string& next_comm, int next_pid,
                       int next_prio, Tsc t);
  void on_sched_wakeup(int waker_pcpu, const std::string& comm, int pid, int prio, int target,
                       Tsc t);
  void on_sched_waking(int waker_pcpu, const std::string& comm, int pid, int prio, int task_cpu,
                       Tsc t);
  void on_sched_migrate(const std::string& comm, int pid, int prio, int from, int to, Tsc t);

  [[nodiscard]] std::uint64_t lines() const { return writer_.lines_written(); }
  [[nodiscard]] bool ok() const { return static_cast<bool>(out_); }

 private:
  // A failed write is recorded in output_errors() (and stops the run) once.
  void check();
  [[nodiscard]] std::int64_t ns(Tsc t) const {
    return static_cast<std::int64_t>(clock_.cycles_to_ns(t));
  }
  [[nodiscard]] int cpu_of(int vcpu) const { return pcpu_[static_cast<std::size_t>(vcpu)]; }
  // The fields of kvm_eoi and kvm_pv_eoi: the vCPU's APIC ID and the vector.
  [[nodiscard]] KvmEoi eoi_fields(int vcpu, int vector) const {
    return {static_cast<unsigned>(apicid_[static_cast<std::size_t>(vcpu)]), vector};
  }

  // The host has the tracepoint that first appeared in `since` (or no version is known).
  [[nodiscard]] bool has_tracepoint(const std::vector<int>& since) const;

  std::vector<int> host_kernel_;
  std::vector<char> buffer_;
  std::ofstream out_;
  TscClock clock_;
  std::vector<TraceTask> tasks_;
  std::vector<int> apicid_;
  std::vector<int> pcpu_;           // last pCPU seen per vCPU
  std::vector<TraceTask> running_;  // per pCPU: the task the line prefix names
  std::vector<std::uint64_t> last_rip_;
  // v5.8-v5.10: a fastpath re-entry passes no trace_kvm_entry(), which is in
  // vcpu_enter_guest() (per vCPU: the next entry is one).
  std::vector<char> skip_entry_;
  // v5.3-v5.18: kvm_wait_lapic_expire is traced by vcpu_enter_guest() after
  // the exit, with the last wait's delta (per vCPU: the delta waiting for it).
  bool wait_after_exit_ = false;
  std::vector<std::int64_t> wait_delta_;
  std::vector<char> wait_pending_;
  std::string path_;
  bool failed_ = false;
  TraceWriter writer_;
};

}  // namespace kvmsim::trace
