#include "sim/trace/trace_observer.h"

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
      return 0xffffffff81a3c4e2ULL;  // guest loop
    case ExitReason::EXTERNAL_INTERRUPT:
      return 0xffffffff81a3c4e2ULL;
    case ExitReason::HLT:
      return 0xffffffff81a3c6f1ULL;
    default:
      return 0xffffffff81000000ULL;
  }
}

}  // namespace

TraceObserver::TraceObserver(const std::string& path, TscClock clock, std::vector<TraceTask> tasks,
                             std::vector<int> vcpu_apicid, int cpus)
    : buffer_(1 << 20),
      clock_(clock),
      tasks_(std::move(tasks)),
      apicid_(std::move(vcpu_apicid)),
      pcpu_(tasks_.size(), 0),
      last_rip_(tasks_.size(), 0),
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
  KvmWaitLapicExpire e;
  e.vcpu = static_cast<unsigned>(vcpu);
  e.delta = delta;
  writer_.kvm_wait_lapic_expire(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

void TraceObserver::on_apic_accept_irq(int vcpu, std::uint8_t vector, Tsc t) {
  KvmApicAcceptIrq e;
  e.apicid = static_cast<unsigned>(apicid_[static_cast<std::size_t>(vcpu)]);
  e.vec = vector;
  writer_.kvm_apic_accept_irq(ns(t), tasks_[static_cast<std::size_t>(vcpu)], cpu_of(vcpu), e);
}

}  // namespace kvmsim::trace

namespace kvmsim::trace {

void TraceObserver::on_vcpu_block(int vcpu, int pcpu, Tsc t) {
  const auto& task = tasks_[static_cast<std::size_t>(vcpu)];
  pcpu_[static_cast<std::size_t>(vcpu)] = pcpu;
  SchedSwitch e;
  e.prev_comm = task.comm;
  e.prev_pid = task.pid;
  e.prev_prio = 120;
  e.prev_state = "S";
  e.next_comm = "swapper/" + std::to_string(pcpu);
  e.next_pid = 0;
  e.next_prio = 120;
  writer_.sched_switch(ns(t), task, pcpu, e);
}

void TraceObserver::on_vcpu_wakeup(int vcpu, bool waited, std::int64_t block_ns, Tsc t) {
  const auto& task = tasks_[static_cast<std::size_t>(vcpu)];
  const int cpu = cpu_of(vcpu);
  const TraceTask idle{"<idle>", 0};
  // Seen from the host: the wake-up happened in the hrtimer interrupt on the
  // idle CPU; the thread then runs and kvm_vcpu_block() returns.
  SchedWakeup w;
  w.comm = task.comm;
  w.pid = task.pid;
  w.prio = 120;
  w.target_cpu = cpu;
  writer_.sched_wakeup(ns(t), idle, cpu, w);
  SchedSwitch sw;
  sw.prev_comm = "swapper/" + std::to_string(cpu);
  sw.prev_pid = 0;
  sw.prev_prio = 120;
  sw.prev_state = "R";
  sw.next_comm = task.comm;
  sw.next_pid = task.pid;
  sw.next_prio = 120;
  writer_.sched_switch(ns(t), idle, cpu, sw);
  KvmVcpuWakeup e;
  e.waited = waited;
  e.ns = block_ns;
  e.valid = true;
  writer_.kvm_vcpu_wakeup(ns(t), task, cpu, e);
}

}  // namespace kvmsim::trace
