#include "sim/trace/trace_observer.h"

#include "sim/core/params.h"

#include "sim/lapic/lapic_signals.h"
#include "sim/sched/sched_signals.h"
#include "sim/vmx/kvm_signals.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "sim/core/output_errors.h"

namespace kvmsim::trace {
namespace {

// Stable stand-in guest RIPs (the model has no guest instruction pointer).
std::uint64_t rip_for(ExitReason r) {
  switch (r) {
    case ExitReason::MSR_WRITE:
      return 0xffffffff8106a6c8ULL;  // wrmsr in lapic_next_deadline
    case ExitReason::PREEMPTION_TIMER:
    case ExitReason::EXTERNAL_INTERRUPT:
      return 0xffffffff81a3c4e2ULL;  // guest loop
    case ExitReason::HLT:
      return 0xffffffff81a3c6f1ULL;
    default:
      return 0xffffffff81000000ULL;
  }
}

}  // namespace

void TraceObserver::connect(SignalRegistry& signals) {
  auto& kvm = signals.get<KvmSignals>();
  kvm.kvm_exit.connect<&TraceObserver::on_vmexit>(this);
  kvm.kvm_entry.connect<&TraceObserver::on_vmentry>(this);
  kvm.kvm_msr_write.connect<&TraceObserver::on_msr_write>(this);
  kvm.kvm_hypercall.connect<&TraceObserver::on_hypercall>(this);
  kvm.kvm_inj_virq.connect<&TraceObserver::on_inj_virq>(this);
  // trace_kvm_pv_tlb_flush() came with record_steal_time()'s flush in v5.4 (b382f44e9850).
  if (has_tracepoint({5, 4})) kvm.kvm_pv_tlb_flush.connect<&TraceObserver::on_pv_tlb_flush>(this);
  kvm.vcpu_block.connect<&TraceObserver::on_vcpu_block>(this);
  kvm.kvm_vcpu_wakeup.connect<&TraceObserver::on_vcpu_wakeup>(this);
  kvm.kvm_halt_poll_ns.connect<&TraceObserver::on_halt_poll_ns>(this);
  kvm.kvm_ple_window.connect<&TraceObserver::on_ple_window>(this);
  // trace_kvm_entry() moved from vcpu_enter_guest() into vmx_vcpu_run() in
  // v5.11 ("kvm: tracing: Fix unmatched kvm_entry and kvm_exit events"):
  // before, the v5.8 fastpath's re-entries (goto reenter_guest inside
  // vmx_vcpu_run()) had a kvm_exit and no kvm_entry.
  if (!has_tracepoint({5, 11}))
    kvm.fastpath_reenter.connect<&TraceObserver::on_fastpath_reenter>(this);
  // ec0671d5684a ("Delay trace_kvm_wait_lapic_expire tracepoint to after
  // vmexit", v5.3) left only the delta in __kvm_wait_lapic_expire();
  // vcpu_enter_guest() traced it once after the exit, before handle_exit(),
  // until v5.19 ("KVM: LAPIC: Fix advance timer expiration delta trace")
  // put the tracepoint back at the wait.
  wait_after_exit_ = has_tracepoint({5, 3}) && !has_tracepoint({5, 19});
  if (wait_after_exit_) kvm.before_handle_exit.connect<&TraceObserver::on_before_handle_exit>(this);
  auto& lapic = signals.get<LapicSignals>();
  // kvm_hv_timer_state came with the VMX preemption timer for the LAPIC timer (v4.8).
  if (has_tracepoint({4, 8}))
    lapic.kvm_hv_timer_state.connect<&TraceObserver::on_hv_timer_state>(this);
  lapic.kvm_wait_lapic_expire.connect<&TraceObserver::on_wait_lapic_expire>(this);
  lapic.kvm_apic_accept_irq.connect<&TraceObserver::on_apic_accept_irq>(this);
  lapic.kvm_apic_accept_ipi.connect<&TraceObserver::on_apic_accept_ipi>(this);
  lapic.kvm_apic_ipi.connect<&TraceObserver::on_apic_ipi>(this);
  lapic.kvm_eoi.connect<&TraceObserver::on_eoi>(this);
  lapic.kvm_apic_write.connect<&TraceObserver::on_apic_write>(this);
  lapic.kvm_pv_eoi.connect<&TraceObserver::on_pv_eoi>(this);
  auto& sched = signals.get<SchedSignals>();
  sched.sched_switch.connect<&TraceObserver::on_sched_switch>(this);
  // sched_waking: fbd705a0c618 (v4.3), in try_to_wake_up() before the CPU is chosen.
  if (has_tracepoint({4, 3})) sched.sched_waking.connect<&TraceObserver::on_sched_waking>(this);
  sched.sched_wakeup.connect<&TraceObserver::on_sched_wakeup>(this);
  sched.sched_migrate_task.connect<&TraceObserver::on_sched_migrate>(this);
}

bool TraceObserver::has_tracepoint(const std::vector<int>& since) const {
  return host_kernel_.empty() || compare_kernel_versions(host_kernel_, since) >= 0;
}

TraceObserver::TraceObserver(const std::string& path, TscClock clock, std::vector<TraceTask> tasks,
                             std::vector<int> vcpu_apicid, int cpus, std::vector<int> host_kernel)
    : host_kernel_(std::move(host_kernel)),
      buffer_(1 << 20),
      clock_(clock),
      tasks_(std::move(tasks)),
      apicid_(std::move(vcpu_apicid)),
      pcpu_(tasks_.size(), 0),
      running_(static_cast<std::size_t>(cpus), TraceTask{"<idle>", 0}),
      last_rip_(tasks_.size(), 0),
      skip_entry_(tasks_.size(), 0),
      wait_delta_(tasks_.size(), 0),
      wait_pending_(tasks_.size(), 0),
      path_(path),
      writer_(out_) {
  out_.rdbuf()->pubsetbuf(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error("--trace: cannot write " + path);
  writer_.cpus_header(cpus);
}

TraceObserver::~TraceObserver() {
  out_.flush();
  out_.close();
  check();
}

void TraceObserver::check() {
  if (out_ || failed_) return;
  failed_ = true;
  output_failed(path_, "writing the trace failed", errno);
}

void TraceObserver::on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t) {
  if (!out_) check();  // the disk is full: stop the run instead of losing the rest
  const auto v = static_cast<std::size_t>(vcpu);
  pcpu_[v] = pcpu;
  last_rip_[v] = rip_for(reason);
  // intr_info for an external interrupt: valid | external | vector (the
  // host's LOCAL_TIMER_VECTOR 0xec for its hrtimer interrupt).
  const std::uint32_t intr = reason == ExitReason::EXTERNAL_INTERRUPT ? 0x800000ecU : 0;
  writer_.kvm_exit(ns(t), tasks_[v], pcpu, vcpu, reason, last_rip_[v], 0, 0, intr, 0);
}

void TraceObserver::on_vmentry(int vcpu, int pcpu, Tsc t) {
  const auto v = static_cast<std::size_t>(vcpu);
  pcpu_[v] = pcpu;
  if (skip_entry_[v]) {
    skip_entry_[v] = 0;
    return;
  }
  KvmEntry e;
  e.vcpu = vcpu;
  e.rip = last_rip_[v] ? last_rip_[v] : rip_for(ExitReason::EXCEPTION_NMI);
  writer_.kvm_entry(ns(t), tasks_[v], pcpu, e);
}

void TraceObserver::on_msr_write(int vcpu, std::uint32_t msr, std::uint64_t value, Tsc t) {
  KvmMsr e;
  e.write = true;
  e.msr = msr;
  e.data = value;
  writer_.kvm_msr(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

void TraceObserver::on_hv_timer_state(int vcpu, bool hv_timer, Tsc t) {
  KvmHvTimerState e;
  e.vcpu_id = static_cast<unsigned>(vcpu);
  e.hv_timer = hv_timer ? 1 : 0;
  writer_.kvm_hv_timer_state(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

void TraceObserver::on_wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t) {
  if (wait_after_exit_) {  // lapic_timer.advance_expire_delta, traced after the exit
    const auto v = static_cast<std::size_t>(vcpu);
    wait_delta_[v] = delta;
    wait_pending_[v] = 1;
    return;
  }
  KvmWaitLapicExpire e;
  e.vcpu = static_cast<unsigned>(vcpu);
  e.delta = delta;
  writer_.kvm_wait_lapic_expire(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

void TraceObserver::on_fastpath_reenter(int vcpu, Tsc /*t*/) {
  skip_entry_[static_cast<std::size_t>(vcpu)] = 1;
}

// vcpu_enter_guest() v5.3-v5.18: advance_expire_delta != S64_MIN -> trace it, reset.
void TraceObserver::on_before_handle_exit(int vcpu, Tsc t) {
  const auto v = static_cast<std::size_t>(vcpu);
  if (!wait_pending_[v]) return;
  wait_pending_[v] = 0;
  KvmWaitLapicExpire e;
  e.vcpu = static_cast<unsigned>(vcpu);
  e.delta = wait_delta_[v];
  writer_.kvm_wait_lapic_expire(ns(t), tasks_[v], cpu_of(vcpu), e);
}

// grow_ple_window() / shrink_ple_window(): kvm_ple_window on every call up
// to v5.3; kvm_ple_window_update, only when the window changed, from v5.4
// ("KVM: X86: Tune PLE Window tracepoint").
void TraceObserver::on_ple_window(int vcpu, bool grow, std::uint32_t new_window,
                                  std::uint32_t old_window, Tsc t) {
  const auto v = static_cast<std::size_t>(vcpu);
  if (has_tracepoint({5, 4})) {
    if (new_window == old_window) return;
    KvmPleWindowUpdate e;
    e.vcpu = static_cast<unsigned>(vcpu);
    e.old_window = old_window;
    e.new_window = new_window;
    writer_.kvm_ple_window_update(ns(t), tasks_[v], cpu_of(vcpu), e);
    return;
  }
  KvmPleWindow e;  // the kernel's fields are ints
  e.vcpu = static_cast<unsigned>(vcpu);
  e.grow = grow;
  e.new_window = static_cast<std::int32_t>(new_window);
  e.old_window = static_cast<std::int32_t>(old_window);
  writer_.kvm_ple_window(ns(t), tasks_[v], cpu_of(vcpu), e);
}

void TraceObserver::on_apic_accept_irq(int vcpu, std::uint8_t vector, Tsc t) {
  KvmApicAcceptIrq e;
  e.apicid = static_cast<unsigned>(apicid_[static_cast<std::size_t>(vcpu)]);
  e.vec = vector;
  writer_.kvm_apic_accept_irq(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

// __apic_accept_irq() of an IPI runs on the sender's thread and pCPU; the
// apicid is the target's.
void TraceObserver::on_apic_accept_ipi(int sender, int target, std::uint8_t vector, Tsc t) {
  KvmApicAcceptIrq e;
  e.apicid = static_cast<unsigned>(apicid_[static_cast<std::size_t>(target)]);
  e.vec = vector;
  writer_.kvm_apic_accept_irq(ns(t), tasks_[static_cast<std::size_t>(sender)], cpu_of(sender), e);
}

// kvm_pv_tlb_flush, from record_steal_time() on the vCPU's own thread.
void TraceObserver::on_pv_tlb_flush(int vcpu, bool need_flush_tlb, Tsc t) {
  KvmPvTlbFlush e;
  e.vcpu = static_cast<unsigned>(vcpu);
  e.need_flush_tlb = need_flush_tlb;
  writer_.kvm_pv_tlb_flush(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

// kvm_apic_ipi, from the sender's kvm_apic_send_ipi().
void TraceObserver::on_apic_ipi(int vcpu, std::uint32_t icr_low, std::uint32_t dest_id, Tsc t) {
  writer_.kvm_apic_ipi(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu),
                       KvmApicIpi{icr_low, dest_id});
}

// kvm_hypercall, from kvm_emulate_hypercall() on the calling vCPU's thread.
void TraceObserver::on_hypercall(int vcpu, std::uint64_t nr, std::uint64_t a0, std::uint64_t a1,
                                 Tsc t) {
  KvmHypercall e;
  e.nr = nr;
  e.a0 = a0;
  e.a1 = a1;
  writer_.kvm_hypercall(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

// kvm_inj_virq, from vmx_inject_irq() in vcpu_enter_guest()'s
// inject_pending_event(), before the entry. "irq %u" before v5.19.
void TraceObserver::on_inj_virq(int vcpu, std::uint8_t vector, bool reinjected, Tsc t) {
  KvmInjVirq e;
  e.vector = vector;
  e.reinjected = reinjected;
  e.legacy = !has_tracepoint({5, 19});
  writer_.kvm_inj_virq(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

// kvm_eoi, from apic_set_eoi() on the vCPU's own thread.
void TraceObserver::on_eoi(int vcpu, int vector, Tsc t) {
  writer_.kvm_eoi(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu),
                  eoi_fields(vcpu, vector));
}

// kvm_apic (apic_write), from kvm_lapic_reg_write() or the ICR fastpath on
// the vCPU's own thread.
void TraceObserver::on_apic_write(int vcpu, std::uint32_t reg, std::uint64_t val, Tsc t) {
  writer_.kvm_apic(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu),
                   KvmApic{true, reg, val});
}

// kvm_pv_eoi, from apic_sync_pv_eoi_from_guest() after its apic_set_eoi().
void TraceObserver::on_pv_eoi(int vcpu, int vector, Tsc t) {
  writer_.kvm_pv_eoi(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu),
                     KvmPvEoi{eoi_fields(vcpu, vector)});
}

}  // namespace kvmsim::trace

namespace kvmsim::trace {

// The sched_switch around a blocked vCPU comes from on_sched_switch().
void TraceObserver::on_vcpu_block(int vcpu, int pcpu, Tsc /*t*/) {
  pcpu_[static_cast<std::size_t>(vcpu)] = pcpu;
}

void TraceObserver::on_vcpu_wakeup(int vcpu, bool waited, std::int64_t block_ns, Tsc t) {
  const auto& task = tasks_[static_cast<std::size_t>(vcpu)];
  KvmVcpuWakeup e;
  e.waited = waited;
  e.ns = block_ns;
  e.valid = true;
  writer_.kvm_vcpu_wakeup(ns(t), task, cpu_of(vcpu), e);
}

void TraceObserver::on_halt_poll_ns(int vcpu, bool grow, std::uint32_t new_ns, std::uint32_t old_ns,
                                    Tsc t) {
  KvmHaltPollNs e;
  e.vcpu = static_cast<unsigned>(vcpu);
  e.grow = grow;
  e.new_ns = new_ns;
  e.old_ns = old_ns;
  writer_.kvm_halt_poll_ns(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

void TraceObserver::on_sched_switch(int pcpu, const std::string& prev_comm, int prev_pid,
                                    int prev_prio, bool prev_runnable, const std::string& next_comm,
                                    int next_pid, int next_prio, Tsc t) {
  SchedSwitch e;
  e.prev_comm = prev_comm;
  e.prev_pid = prev_pid;
  e.prev_prio = prev_prio;
  e.prev_state = prev_runnable ? "R" : "S";
  e.next_comm = next_comm;
  e.next_pid = next_pid;
  e.next_prio = next_prio;
  auto& cur = running_[static_cast<std::size_t>(pcpu)];
  writer_.sched_switch(ns(t), cur, pcpu, e);
  cur = next_pid ? TraceTask{next_comm, next_pid} : TraceTask{"<idle>", 0};
}

void TraceObserver::on_sched_wakeup(int waker_pcpu, const std::string& comm, int pid, int prio,
                                    int target, Tsc t) {
  SchedWakeup w;
  w.comm = comm;
  w.pid = pid;
  w.prio = prio;
  w.target_cpu = target;
  const int cpu = waker_pcpu >= 0 ? waker_pcpu : target;
  writer_.sched_wakeup(ns(t), running_[static_cast<std::size_t>(cpu)], cpu, w);
}

// sched_waking, on the waker's CPU (with no waking CPU, on the task's: the
// target is not chosen yet).
void TraceObserver::on_sched_waking(int waker_pcpu, const std::string& comm, int pid, int prio,
                                    int task_cpu, Tsc t) {
  const int cpu = waker_pcpu >= 0 ? waker_pcpu : std::max(task_cpu, 0);
  writer_.sched_waking(ns(t), running_[static_cast<std::size_t>(cpu)], cpu, comm, pid, prio,
                       task_cpu);
}

void TraceObserver::on_sched_migrate(const std::string& comm, int pid, int prio, int from, int to,
                                     Tsc t) {
  writer_.sched_migrate_task(ns(t), running_[static_cast<std::size_t>(to)], to, comm, pid, prio,
                             from, to);
}

}  // namespace kvmsim::trace
