#include "sim/trace/trace_format.h"

#include <array>
#include <iterator>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

namespace kvmsim::trace {

namespace {

using Out = std::back_insert_iterator<std::string>;

void kvm_exit_payload(std::string& s, int vcpu, std::string_view reason, std::string_view flags,
                      std::uint64_t rip, std::uint64_t info1, std::uint64_t info2,
                      std::uint32_t intr_info, std::uint32_t error_code) {
  fmt::format_to(Out(s),
                 "vcpu {} reason {}{}{} rip 0x{:x} info1 0x{:016x} info2 0x{:016x} intr_info "
                 "0x{:08x} error_code 0x{:08x}",
                 vcpu, reason, flags.empty() ? "" : " ", flags, rip, info1, info2, intr_info,
                 error_code);
}

void payload(std::string& s, const KvmExit& e) {
  if (e.old_format) {
    fmt::format_to(Out(s), "reason {}{}{} rip 0x{:x} info {:x} {:x}", e.reason,
                   e.flags.empty() ? "" : " ", e.flags, e.rip, e.info1, e.info2);
    if (e.intr_info != 0) fmt::format_to(Out(s), " intr {:x}", e.intr_info);
    return;
  }
  kvm_exit_payload(s, e.vcpu, e.reason, e.flags, e.rip, e.info1, e.info2, e.intr_info,
                   e.error_code);
}

void payload(std::string& s, const KvmEntry& e) {
  fmt::format_to(Out(s), "vcpu {}", e.vcpu);
  if (e.rip) fmt::format_to(Out(s), ", rip 0x{:x}", *e.rip);
  if (e.immediate_exit) s += " [immediate exit]";
}

void payload(std::string& s, const KvmMsr& e) {
  fmt::format_to(Out(s), "msr_{} {:x} = 0x{:x}{}", e.write ? "write" : "read", e.msr, e.data,
                 e.gp ? " (#GP)" : "");
}

void payload(std::string& s, const KvmHvTimerState& e) {
  fmt::format_to(Out(s), "vcpu_id {:x} hv_timer {:x}", e.vcpu_id, e.hv_timer);
}

void payload(std::string& s, const KvmWaitLapicExpire& e) {
  fmt::format_to(Out(s), "vcpu {}: delta {} ({})", e.vcpu, e.delta, e.early() ? "early" : "late");
}

void payload(std::string& s, const KvmVcpuWakeup& e) {
  fmt::format_to(Out(s), "{} time {} ns, polling {}", e.waited ? "wait" : "poll", e.ns,
                 e.valid ? "valid" : "invalid");
}

void payload(std::string& s, const KvmHaltPollNs& e) {
  fmt::format_to(Out(s), "vcpu {}: halt_poll_ns {} ({} {})", e.vcpu, e.new_ns,
                 e.grow ? "grow" : "shrink", e.old_ns);
}

void payload(std::string& s, const KvmPleWindow& e) {
  fmt::format_to(Out(s), "vcpu {}: ple_window {} ({} {})", e.vcpu, e.new_window,
                 e.grow ? "grow" : "shrink", e.old_window);
}

void payload(std::string& s, const KvmPleWindowUpdate& e) {
  fmt::format_to(Out(s), "vcpu {} old {} new {} ({})", e.vcpu, e.old_window, e.new_window,
                 e.grew() ? "growed" : "shrinked");
}

void payload(std::string& s, const KvmApicAcceptIrq& e) {
  fmt::format_to(Out(s), "apicid {:x} vec {} ({}|{}){}", e.apicid, e.vec, e.delivery_mode,
                 e.level ? "level" : "edge", e.coalesced ? " (coalesced)" : "");
}

// The kernel's kvm_deliver_mode and kvm_apic_dst_shorthand tables.
void payload(std::string& s, const KvmApicIpi& e) {
  static constexpr std::array<const char*, 8> kMode = {"Fixed", "LowPrio", "SMI",  "Res3",
                                                       "NMI",   "INIT",    "SIPI", "ExtINT"};
  static constexpr std::array<const char*, 4> kShort = {"dst", "self", "all", "all-but-self"};
  fmt::format_to(Out(s), "dst {:x} vec {} ({}|{}|{}|{}|{})", e.dest_id, e.icr_low & 0xff,
                 kMode[(e.icr_low >> 8) & 7], (e.icr_low & (1U << 11)) ? "logical" : "physical",
                 (e.icr_low & (1U << 14)) ? "assert" : "de-assert",
                 (e.icr_low & (1U << 15)) ? "level" : "edge", kShort[(e.icr_low >> 18) & 3]);
}

void payload(std::string& s, const KvmPvTlbFlush& e) {
  fmt::format_to(Out(s), "vcpu {} need_flush_tlb {}", e.vcpu, e.need_flush_tlb ? "true" : "false");
}

void payload(std::string& s, const KvmHypercall& e) {
  fmt::format_to(Out(s), "nr 0x{:x} a0 0x{:x} a1 0x{:x} a2 0x{:x} a3 0x{:x}", e.nr, e.a0, e.a1,
                 e.a2, e.a3);
}

void payload(std::string& s, const KvmInjVirq& e) {
  if (e.legacy) {
    fmt::format_to(Out(s), "irq {}", e.vector);
    return;
  }
  fmt::format_to(Out(s), "{} 0x{:x}{}", e.soft ? "Soft/INTn" : "IRQ", e.vector,
                 e.reinjected ? " [reinjected]" : "");
}

void payload(std::string& s, const KvmEoi& e) {
  fmt::format_to(Out(s), "apicid {:x} vector {}", e.apicid, e.vector);
}

void payload(std::string& s, const KvmApic& e) {
  fmt::format_to(Out(s), "apic_{} ", e.write ? "write" : "read");
  if (const std::string_view name = apic_reg_name(e.reg); !name.empty()) {
    s += name;
  } else {
    fmt::format_to(Out(s), "0x{:x}", e.reg);  // __print_symbolic() of an unlisted value
  }
  fmt::format_to(Out(s), " = 0x{:x}", e.val);
}

void payload(std::string& s, const SchedSwitch& e) {
  fmt::format_to(Out(s), "{}:{} [{}] {} ==> {}:{} [{}]", e.prev_comm, e.prev_pid, e.prev_prio,
                 e.prev_state, e.next_comm, e.next_pid, e.next_prio);
}

void payload(std::string& s, const SchedWakeup& e) {
  fmt::format_to(Out(s), "{}:{} [{}]", e.comm, e.pid, e.prio);
  if (e.success) fmt::format_to(Out(s), " success={}", *e.success);
  fmt::format_to(Out(s), " CPU:{:03}", e.target_cpu);
}

void payload(std::string& /*s*/, const std::monostate& /*e*/) {}

void frame(std::string& s, std::int64_t ts_ns, const TraceTask& task, int cpu,
           std::string_view event, TsPrecision precision) {
  if (ts_ns < 0) ts_ns = 0;
  if (precision == TsPrecision::Ns) {
    fmt::format_to(Out(s), "{:>16}-{:<5} [{:03}] {:>5}.{:09}: {}:", task.comm, task.pid, cpu,
                   ts_ns / 1000000000, ts_ns % 1000000000, event);
  } else {
    const std::int64_t us = (ts_ns + 500) / 1000;
    fmt::format_to(Out(s), "{:>16}-{:<5} [{:03}] {:>5}.{:06}: {}:", task.comm, task.pid, cpu,
                   us / 1000000, us % 1000000, event);
  }
  // "<event>:" left-aligned in 21 columns, then one space.
  const std::size_t used = event.size() + 1;
  if (used < 21) s.append(21 - used, ' ');
  s += ' ';
}

// kvm_trace_symbol_apic: AREG(ID) ... AREG(ECTRL), the APIC_* offsets of
// apicdef.h.
constexpr std::pair<std::uint32_t, std::string_view> kApicRegs[] = {
    {0x20, "APIC_ID"},      {0x30, "APIC_LVR"},       {0x80, "APIC_TASKPRI"}, {0x90, "APIC_ARBPRI"},
    {0xa0, "APIC_PROCPRI"}, {0xb0, "APIC_EOI"},       {0xc0, "APIC_RRR"},     {0xd0, "APIC_LDR"},
    {0xe0, "APIC_DFR"},     {0xf0, "APIC_SPIV"},      {0x100, "APIC_ISR"},    {0x180, "APIC_TMR"},
    {0x200, "APIC_IRR"},    {0x280, "APIC_ESR"},      {0x300, "APIC_ICR"},    {0x310, "APIC_ICR2"},
    {0x320, "APIC_LVTT"},   {0x330, "APIC_LVTTHMR"},  {0x340, "APIC_LVTPC"},  {0x350, "APIC_LVT0"},
    {0x360, "APIC_LVT1"},   {0x370, "APIC_LVTERR"},   {0x380, "APIC_TMICT"},  {0x390, "APIC_TMCCT"},
    {0x3e0, "APIC_TDCR"},   {0x3f0, "APIC_SELF_IPI"}, {0x400, "APIC_EFEAT"},  {0x410, "APIC_ECTRL"},
};
}  // namespace

std::string_view apic_reg_name(std::uint32_t reg) {
  for (const auto& [r, name] : kApicRegs)
    if (r == reg) return name;
  return {};
}

std::optional<std::uint32_t> apic_reg_from_name(std::string_view name) {
  for (const auto& [r, n] : kApicRegs)
    if (n == name) return r;
  return std::nullopt;
}

std::string_view event_name(const TraceEventData& e) {
  return std::visit(
      [](const auto& v) -> std::string_view {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, KvmExit>) return "kvm_exit";
        if constexpr (std::is_same_v<T, KvmEntry>) return "kvm_entry";
        if constexpr (std::is_same_v<T, KvmMsr>) return "kvm_msr";
        if constexpr (std::is_same_v<T, KvmHvTimerState>) return "kvm_hv_timer_state";
        if constexpr (std::is_same_v<T, KvmWaitLapicExpire>) return "kvm_wait_lapic_expire";
        if constexpr (std::is_same_v<T, KvmVcpuWakeup>) return "kvm_vcpu_wakeup";
        if constexpr (std::is_same_v<T, KvmHaltPollNs>) return "kvm_halt_poll_ns";
        if constexpr (std::is_same_v<T, KvmApicAcceptIrq>) return "kvm_apic_accept_irq";
        if constexpr (std::is_same_v<T, KvmApicIpi>) return "kvm_apic_ipi";
        if constexpr (std::is_same_v<T, KvmPvTlbFlush>) return "kvm_pv_tlb_flush";
        if constexpr (std::is_same_v<T, KvmHypercall>) return "kvm_hypercall";
        if constexpr (std::is_same_v<T, KvmInjVirq>) return "kvm_inj_virq";
        if constexpr (std::is_same_v<T, KvmEoi>) return "kvm_eoi";
        if constexpr (std::is_same_v<T, KvmPvEoi>) return "kvm_pv_eoi";
        if constexpr (std::is_same_v<T, KvmApic>) return "kvm_apic";
        if constexpr (std::is_same_v<T, KvmPleWindow>) return "kvm_ple_window";
        if constexpr (std::is_same_v<T, KvmPleWindowUpdate>) return "kvm_ple_window_update";
        if constexpr (std::is_same_v<T, SchedSwitch>) return "sched_switch";
        if constexpr (std::is_same_v<T, SchedWakeup>) return "sched_wakeup";
        return "";
      },
      e);
}

std::string format_payload(const TraceEventData& e) {
  std::string s;
  std::visit([&s](const auto& v) { payload(s, v); }, e);
  return s;
}

std::string format_line(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event,
                        std::string_view payload_text, TsPrecision precision) {
  std::string s;
  frame(s, ts_ns, task, cpu, event, precision);
  s += payload_text;
  return s;
}

void TraceWriter::cpus_header(int ncpus) { out_ << "cpus=" << ncpus << '\n'; }

void TraceWriter::emit(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event) {
  line_.clear();
  frame(line_, ts_ns, task, cpu, event, precision_);
  line_ += payload_;
  line_ += '\n';
  out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
  ++lines_;
}

void TraceWriter::line(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event,
                       std::string_view payload_text) {
  payload_.assign(payload_text);
  emit(ts_ns, task, cpu, event);
}

void TraceWriter::write(std::int64_t ts_ns, const TraceTask& task, int cpu,
                        const TraceEventData& e) {
  if (std::holds_alternative<std::monostate>(e)) return;
  payload_.clear();
  std::visit([this](const auto& v) { payload(payload_, v); }, e);
  emit(ts_ns, task, cpu, event_name(e));
}

void TraceWriter::kvm_exit(std::int64_t ts_ns, const TraceTask& task, int cpu, int vcpu,
                           ExitReason reason, std::uint64_t rip, std::uint64_t info1,
                           std::uint64_t info2, std::uint32_t intr_info, std::uint32_t error_code) {
  payload_.clear();
  kvm_exit_payload(payload_, vcpu, exit_reason_name(reason), {}, rip, info1, info2, intr_info,
                   error_code);
  emit(ts_ns, task, cpu, "kvm_exit");
}

// One line: the payload formatted into the reused buffer, then the framing.
template <class Event>
void TraceWriter::put(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event,
                      const Event& e) {
  payload_.clear();
  payload(payload_, e);
  emit(ts_ns, task, cpu, event);
}

void TraceWriter::kvm_exit(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmExit& e) {
  put(ts_ns, task, cpu, "kvm_exit", e);
}

void TraceWriter::kvm_entry(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmEntry& e) {
  put(ts_ns, task, cpu, "kvm_entry", e);
}

void TraceWriter::kvm_msr(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmMsr& e) {
  put(ts_ns, task, cpu, "kvm_msr", e);
}

void TraceWriter::kvm_hv_timer_state(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                     const KvmHvTimerState& e) {
  put(ts_ns, task, cpu, "kvm_hv_timer_state", e);
}

void TraceWriter::kvm_wait_lapic_expire(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                        const KvmWaitLapicExpire& e) {
  put(ts_ns, task, cpu, "kvm_wait_lapic_expire", e);
}

void TraceWriter::kvm_vcpu_wakeup(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                  const KvmVcpuWakeup& e) {
  put(ts_ns, task, cpu, "kvm_vcpu_wakeup", e);
}

void TraceWriter::kvm_halt_poll_ns(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                   const KvmHaltPollNs& e) {
  put(ts_ns, task, cpu, "kvm_halt_poll_ns", e);
}

void TraceWriter::kvm_ple_window(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                 const KvmPleWindow& e) {
  put(ts_ns, task, cpu, "kvm_ple_window", e);
}

void TraceWriter::kvm_ple_window_update(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                        const KvmPleWindowUpdate& e) {
  put(ts_ns, task, cpu, "kvm_ple_window_update", e);
}

void TraceWriter::kvm_apic_ipi(std::int64_t ts_ns, const TraceTask& task, int cpu,
                               const KvmApicIpi& e) {
  put(ts_ns, task, cpu, "kvm_apic_ipi", e);
}

void TraceWriter::kvm_apic_accept_irq(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                      const KvmApicAcceptIrq& e) {
  put(ts_ns, task, cpu, "kvm_apic_accept_irq", e);
}

void TraceWriter::kvm_pv_tlb_flush(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                   const KvmPvTlbFlush& e) {
  put(ts_ns, task, cpu, "kvm_pv_tlb_flush", e);
}

void TraceWriter::kvm_hypercall(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                const KvmHypercall& e) {
  put(ts_ns, task, cpu, "kvm_hypercall", e);
}

void TraceWriter::kvm_inj_virq(std::int64_t ts_ns, const TraceTask& task, int cpu,
                               const KvmInjVirq& e) {
  put(ts_ns, task, cpu, "kvm_inj_virq", e);
}

void TraceWriter::kvm_eoi(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmEoi& e) {
  put(ts_ns, task, cpu, "kvm_eoi", e);
}

void TraceWriter::kvm_pv_eoi(std::int64_t ts_ns, const TraceTask& task, int cpu,
                             const KvmPvEoi& e) {
  put(ts_ns, task, cpu, "kvm_pv_eoi", e);
}

void TraceWriter::kvm_apic(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmApic& e) {
  put(ts_ns, task, cpu, "kvm_apic", e);
}

void TraceWriter::sched_switch(std::int64_t ts_ns, const TraceTask& task, int cpu,
                               const SchedSwitch& e) {
  put(ts_ns, task, cpu, "sched_switch", e);
}

void TraceWriter::sched_wakeup(std::int64_t ts_ns, const TraceTask& task, int cpu,
                               const SchedWakeup& e) {
  put(ts_ns, task, cpu, "sched_wakeup", e);
}

void TraceWriter::sched_waking(std::int64_t ts_ns, const TraceTask& task, int cpu,
                               const std::string& comm, int pid, int prio, int target_cpu) {
  payload_.clear();
  fmt::format_to(std::back_inserter(payload_), "comm={} pid={} prio={} target_cpu={:03}", comm, pid,
                 prio, target_cpu);
  emit(ts_ns, task, cpu, "sched_waking");
}

void TraceWriter::sched_migrate_task(std::int64_t ts_ns, const TraceTask& task, int cpu,
                                     const std::string& comm, int pid, int prio, int orig_cpu,
                                     int dest_cpu) {
  payload_.clear();
  fmt::format_to(std::back_inserter(payload_), "comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                 comm, pid, prio, orig_cpu, dest_cpu);
  emit(ts_ns, task, cpu, "sched_migrate_task");
}

}  // namespace kvmsim::trace
