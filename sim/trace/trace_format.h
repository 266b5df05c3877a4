// KVM and scheduler tracepoints as text, in `trace-cmd report` form: the
// payload structs shared by the writer (here) and the parser (trace_parse.h),
// and TraceWriter, which streams one line per event to a std::ostream.
//
// Payload formats are the kernel's TP_printk formats of the modern era (about
// v5.18 to v6.x: arch/x86/kvm/trace.h, include/trace/events/kvm.h):
//   kvm_exit              vcpu %u reason %s%s%s rip 0x%lx info1 0x%016llx info2 0x%016llx
//                         intr_info 0x%08x error_code 0x%08x
//                         (the two %s after the name: " " and the flag names, e.g.
//                         VM_ENTRY_FAILURE, only when flags are set)
//   kvm_entry             vcpu %u, rip 0x%lx          (+ " [immediate exit]", ≈6.9+)
//   kvm_msr               msr_%s %x = 0x%llx%s        (read/write, " (#GP)")
//   kvm_hv_timer_state    vcpu_id %x hv_timer %x      (hex)
//   kvm_wait_lapic_expire vcpu %u: delta %lld (%s)    (early if delta < 0, else late)
//   kvm_vcpu_wakeup       %s time %lld ns, polling %s (wait/poll, valid/invalid)
//   kvm_halt_poll_ns      vcpu %u: halt_poll_ns %u (%s %u)  (new, grow/shrink, old)
//   kvm_apic_accept_irq   apicid %x vec %u (%s|%s)    (delivery mode, level/edge)
//   kvm_apic_ipi          dst %x vec %u (%s|%s|%s|%s|%s)  (arch/x86/kvm/trace.h: icr_low's
//                         delivery mode, logical/physical, assert/de-assert, level/edge,
//                         shorthand dst/self/all/all-but-self; dst = dest_id)
//   kvm_pv_tlb_flush      vcpu %u need_flush_tlb %s   (true/false)
//   kvm_hypercall         nr 0x%lx a0 0x%lx a1 0x%lx a2 0x%lx a3 0x%lx
//   kvm_inj_virq          %s 0x%x%s                   (IRQ / Soft/INTn, the vector, "
//   [reinjected]":
//                         v5.19+; before, "irq %u")
//   kvm_eoi               apicid %x vector %d
//   kvm_apic              apic_%s %s = 0x%x           (read/write, the register's
//                         kvm_trace_symbol_apic name, e.g. APIC_ICR; unknown: 0x%x;
//                         val u64 and 0x%llx from v5.18, a57a31684d7b: the x2APIC ICR's
//                         64 bits)
//   kvm_pv_eoi            apicid %x vector %d
//   kvm_ple_window_update vcpu %u old %u new %u (%s)  (growed if old < new, else shrinked;
//                         v5.4+, only when the window changes)
//   kvm_ple_window        vcpu %u: ple_window %d (%s %d)  (new, grow/shrink, old: the
//                         event up to v5.3, on every grow or shrink call)
// sched_switch and sched_wakeup are printed as trace-cmd's sched plugin prints
// them (not the raw kernel `prev_comm=...` form):
//   sched_switch          %s:%d [%d] %s ==> %s:%d [%d]    (prev comm:pid [prio] state
//                                                          ==> next comm:pid [prio])
//   sched_wakeup          %s:%d [%d] CPU:%03d              (comm:pid [prio] target cpu;
//                                                          " success=%d" before CPU: only
//                                                          if set, as older kernels had it)
//
// Line framing is trace-cmd report's (no latency columns):
//   %16s-%-5d [%03d] %5llu.%09llu: <event>: <payload>     (`trace-cmd report -t`)
//   %16s-%-5d [%03d] %5llu.%06llu: <event>: <payload>     (default `trace-cmd report`)
// comm right-aligned in 16 columns, pid left-aligned in 5, cpu 3 digits,
// seconds right-aligned in 5 columns and nanoseconds (or microseconds), then
// "<event>:" left-aligned in 21 columns and one space (the event names line up
// the payloads as trace-cmd does). Timestamps are given in nanoseconds; the
// writer prints all nine digits by default (service times computed from the
// trace then agree with the run's summary); in microsecond precision they are
// rounded to the nearest microsecond (as the kernel's ns2usecs does). The
// parser reads any number of fraction digits.
//
// Note: real `trace-cmd report` with libtraceevent's kvm plugin loaded
// re-prints kvm_exit in the old form (`reason %s rip 0x%llx info %llx %llx`);
// the parser reads both forms. The writer prints the kernel's own format.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>

#include "sim/vmx/exit_reason.h"

namespace kvmsim::trace {

// The thread an event is attributed to (ftrace's common_pid and its comm).
struct TraceTask {
  std::string comm;
  int pid = 0;
};

// kvm_exit. The old format (`reason %s rip 0x%lx info %llx %llx`, optionally
// ` intr %x`) has no vcpu and no error code: the parser sets vcpu = -1 and
// old_format = true, and puts `intr` (if printed) in intr_info.
struct KvmExit {
  int vcpu = 0;
  std::string reason;  // as the kernel prints it (VMX_EXIT_REASONS), e.g. "HLT"
  std::uint64_t rip = 0;
  std::uint64_t info1 = 0;
  std::uint64_t info2 = 0;
  std::uint32_t intr_info = 0;
  std::uint32_t error_code = 0;
  std::string flags;  // exit-reason flag names after the reason (space-separated), usually ""
  bool old_format = false;
};

// kvm_entry. No rip in the old format (`vcpu %u`).
struct KvmEntry {
  int vcpu = 0;
  std::optional<std::uint64_t> rip;
  bool immediate_exit = false;  // " [immediate exit]" (≈6.9+)
};

struct KvmMsr {
  bool write = false;
  std::uint32_t msr = 0;
  std::uint64_t data = 0;
  bool gp = false;  // " (#GP)": the access faulted
};

struct KvmHvTimerState {
  unsigned vcpu_id = 0;
  unsigned hv_timer = 0;  // 1: the VMX preemption timer backs the LAPIC timer
};

struct KvmWaitLapicExpire {
  unsigned vcpu = 0;
  std::int64_t delta = 0;  // guest TSC cycles; < 0 is "early", otherwise "late"
  [[nodiscard]] bool early() const { return delta < 0; }
};

struct KvmVcpuWakeup {
  bool waited = false;  // "wait" (blocked) or "poll" (halt polling caught it)
  std::int64_t ns = 0;
  bool valid = true;  // "polling valid" / "polling invalid"
};

struct KvmHaltPollNs {
  unsigned vcpu = 0;
  unsigned new_ns = 0;
  bool grow = true;  // "grow" or "shrink"
  unsigned old_ns = 0;
};

// kvm_ple_window (up to v5.3): every grow_ple_window() / shrink_ple_window()
// call, whether the window changed or not; the kernel's fields are ints.
struct KvmPleWindow {
  unsigned vcpu = 0;
  bool grow = true;  // "grow" or "shrink"
  std::int32_t new_window = 0;
  std::int32_t old_window = 0;
};

// kvm_ple_window_update (v5.4+, "KVM: X86: Tune PLE Window tracepoint"):
// only when grow_ple_window() / shrink_ple_window() changed the window.
struct KvmPleWindowUpdate {
  unsigned vcpu = 0;
  std::uint32_t old_window = 0;
  std::uint32_t new_window = 0;
  [[nodiscard]] bool grew() const { return old_window < new_window; }  // "growed"
};

struct KvmApicAcceptIrq {
  unsigned apicid = 0;
  unsigned vec = 0;
  std::string delivery_mode = "Fixed";  // Fixed, LowPrio, SMI, NMI, INIT, SIPI, ExtINT...
  bool level = false;                   // "level" or "edge"
  bool coalesced = false;  // " (coalesced)": older kernels only; modern ones never print it
};

// kvm_apic_ipi(icr_low, dest_id): the fields; the text is decoded from icr_low.
struct KvmApicIpi {
  std::uint32_t icr_low = 0;
  std::uint32_t dest_id = 0;
};

struct KvmPvTlbFlush {
  unsigned vcpu = 0;
  bool need_flush_tlb = false;
};

// kvm_hypercall (kvm_emulate_hypercall(): the number and four arguments;
// KVM_HC_KICK_CPU is nr 5, a0 flags 0, a1 the target's APIC ID).
struct KvmHypercall {
  std::uint64_t nr = 0, a0 = 0, a1 = 0, a2 = 0, a3 = 0;
};

// kvm_inj_virq (vmx_inject_irq(): an interrupt injected through the VMCS
// entry fields, i.e. without APICv's virtual-interrupt delivery). `legacy`:
// the "irq %u" format before v5.19 (2d61391270a3 added soft / reinjected).
struct KvmInjVirq {
  unsigned vector = 0;
  bool soft = false;
  bool reinjected = false;
  bool legacy = false;
};

// kvm_eoi (apic_set_eoi() / kvm_apic_set_eoi_accelerated(): the EOI that
// KVM sees: a trapped EOI write, a PV EOI read back at the next exit, an
// EOI-induced exit).
struct KvmEoi {
  unsigned apicid = 0;
  int vector = 0;
};

// kvm_pv_eoi (apic_sync_pv_eoi_from_guest(): a PV EOI that KVM read back,
// right after that EOI's kvm_eoi): kvm_eoi's fields and format, another
// event. Payload printing, parsing, == and the Python columns are kvm_eoi's.
struct KvmPvEoi : KvmEoi {};

// kvm_apic (trace_kvm_apic_write() at the top of kvm_lapic_reg_write(), and
// the x2APIC ICR fastpath's own call; trace_kvm_apic_read() for reads): the
// APIC register offset (APIC_ICR = 0x300, ...) and the value (32 bits, or
// the x2APIC ICR's 64 from v5.18).
struct KvmApic {
  bool write = true;
  std::uint32_t reg = 0;
  std::uint64_t val = 0;
};

struct SchedSwitch {
  std::string prev_comm;
  int prev_pid = 0;
  int prev_prio = 120;
  std::string prev_state = "S";  // as printed: R, S, D, R+, ...
  std::string next_comm;
  int next_pid = 0;
  int next_prio = 120;
};

struct SchedWakeup {
  std::string comm;
  int pid = 0;
  int prio = 120;
  int target_cpu = 0;
  std::optional<int> success;  // older kernels only
};

// One parsed or to-be-written payload; monostate for events not listed above.
using TraceEventData =
    std::variant<std::monostate, KvmExit, KvmEntry, KvmMsr, KvmHvTimerState, KvmWaitLapicExpire,
                 KvmVcpuWakeup, KvmHaltPollNs, KvmApicAcceptIrq, KvmPvTlbFlush, SchedSwitch,
                 SchedWakeup, KvmApicIpi, KvmHypercall, KvmPleWindow, KvmPleWindowUpdate,
                 KvmInjVirq, KvmEoi, KvmPvEoi, KvmApic>;

// kvm_trace_symbol_apic (arch/x86/kvm/trace.h): the name kvm_apic prints for
// an APIC register offset ("APIC_ICR" for 0x300), "" for an unlisted one;
// and back (nullopt for a name not in the list).
std::string_view apic_reg_name(std::uint32_t reg);
std::optional<std::uint32_t> apic_reg_from_name(std::string_view name);

// The tracepoint name of a payload ("kvm_exit", ...); "" for monostate.
std::string_view event_name(const TraceEventData& e);

// The payload text exactly as the kernel (or the trace-cmd sched plugin)
// prints it; "" for monostate.
std::string format_payload(const TraceEventData& e);

// The trace-cmd report framing of one line, without the trailing newline.
enum class TsPrecision { Ns, Us };

std::string format_line(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event,
                        std::string_view payload, TsPrecision precision = TsPrecision::Ns);

// Streams `trace-cmd report`-style lines. Each call formats one line into a
// reused buffer and writes it; nothing else is kept, so memory is bounded
// whatever the trace length. The stream's own buffering applies (no flush per
// line). Timestamps are ns (>= 0; negative values are printed as 0).
class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out, TsPrecision precision = TsPrecision::Ns)
      : out_(out), precision_(precision) {}

  // trace-cmd report's first line, "cpus=N" (optional).
  void cpus_header(int ncpus);

  void kvm_exit(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmExit& e);
  // Same, from the model's enum (no string allocation per exit).
  void kvm_exit(std::int64_t ts_ns, const TraceTask& task, int cpu, int vcpu, ExitReason reason,
                std::uint64_t rip, std::uint64_t info1 = 0, std::uint64_t info2 = 0,
                std::uint32_t intr_info = 0, std::uint32_t error_code = 0);
  void kvm_entry(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmEntry& e);
  void kvm_msr(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmMsr& e);
  void kvm_hv_timer_state(std::int64_t ts_ns, const TraceTask& task, int cpu,
                          const KvmHvTimerState& e);
  void kvm_wait_lapic_expire(std::int64_t ts_ns, const TraceTask& task, int cpu,
                             const KvmWaitLapicExpire& e);
  void kvm_vcpu_wakeup(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmVcpuWakeup& e);
  void kvm_halt_poll_ns(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmHaltPollNs& e);
  void kvm_ple_window(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmPleWindow& e);
  void kvm_ple_window_update(std::int64_t ts_ns, const TraceTask& task, int cpu,
                             const KvmPleWindowUpdate& e);
  void kvm_apic_accept_irq(std::int64_t ts_ns, const TraceTask& task, int cpu,
                           const KvmApicAcceptIrq& e);
  void kvm_apic_ipi(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmApicIpi& e);
  void kvm_pv_tlb_flush(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmPvTlbFlush& e);
  void kvm_hypercall(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmHypercall& e);
  void kvm_inj_virq(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmInjVirq& e);
  void kvm_eoi(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmEoi& e);
  void kvm_pv_eoi(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmPvEoi& e);
  void kvm_apic(std::int64_t ts_ns, const TraceTask& task, int cpu, const KvmApic& e);
  void sched_switch(std::int64_t ts_ns, const TraceTask& task, int cpu, const SchedSwitch& e);
  void sched_wakeup(std::int64_t ts_ns, const TraceTask& task, int cpu, const SchedWakeup& e);

  // Any payload above (monostate writes nothing).
  void write(std::int64_t ts_ns, const TraceTask& task, int cpu, const TraceEventData& e);
  // Any other event, with a payload the caller formatted.
  void line(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event,
            std::string_view payload);

  // sched_migrate_task, printed raw as the kernel's format has it:
  //   comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d
  // sched_waking (v4.3+), in the kernel's own format (trace-cmd's sched
  // plugin prints only sched_switch and sched_wakeup[_new]):
  // "comm=%s pid=%d prio=%d target_cpu=%03d", target_cpu = task_cpu().
  void sched_waking(std::int64_t ts_ns, const TraceTask& task, int cpu, const std::string& comm,
                    int pid, int prio, int target_cpu);
  void sched_migrate_task(std::int64_t ts_ns, const TraceTask& task, int cpu,
                          const std::string& comm, int pid, int prio, int orig_cpu, int dest_cpu);
  [[nodiscard]] std::uint64_t lines_written() const { return lines_; }

 private:
  void emit(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event);
  template <class Event>
  void put(std::int64_t ts_ns, const TraceTask& task, int cpu, std::string_view event,
           const Event& e);

  std::ostream& out_;
  TsPrecision precision_;
  std::string payload_;  // reused per line
  std::string line_;     // reused per line
  std::uint64_t lines_ = 0;
};

// Field-wise equality (used by the round-trip tests).
inline bool operator==(const KvmExit& a, const KvmExit& b) {
  return std::tie(a.vcpu, a.reason, a.rip, a.info1, a.info2, a.intr_info, a.error_code, a.flags,
                  a.old_format) == std::tie(b.vcpu, b.reason, b.rip, b.info1, b.info2, b.intr_info,
                                            b.error_code, b.flags, b.old_format);
}
inline bool operator==(const KvmEntry& a, const KvmEntry& b) {
  return std::tie(a.vcpu, a.rip, a.immediate_exit) == std::tie(b.vcpu, b.rip, b.immediate_exit);
}
inline bool operator==(const KvmMsr& a, const KvmMsr& b) {
  return std::tie(a.write, a.msr, a.data, a.gp) == std::tie(b.write, b.msr, b.data, b.gp);
}
inline bool operator==(const KvmHvTimerState& a, const KvmHvTimerState& b) {
  return a.vcpu_id == b.vcpu_id && a.hv_timer == b.hv_timer;
}
inline bool operator==(const KvmWaitLapicExpire& a, const KvmWaitLapicExpire& b) {
  return a.vcpu == b.vcpu && a.delta == b.delta;
}
inline bool operator==(const KvmVcpuWakeup& a, const KvmVcpuWakeup& b) {
  return std::tie(a.waited, a.ns, a.valid) == std::tie(b.waited, b.ns, b.valid);
}
inline bool operator==(const KvmHaltPollNs& a, const KvmHaltPollNs& b) {
  return std::tie(a.vcpu, a.new_ns, a.grow, a.old_ns) ==
         std::tie(b.vcpu, b.new_ns, b.grow, b.old_ns);
}
inline bool operator==(const KvmPleWindow& a, const KvmPleWindow& b) {
  return std::tie(a.vcpu, a.grow, a.new_window, a.old_window) ==
         std::tie(b.vcpu, b.grow, b.new_window, b.old_window);
}
inline bool operator==(const KvmPleWindowUpdate& a, const KvmPleWindowUpdate& b) {
  return std::tie(a.vcpu, a.old_window, a.new_window) ==
         std::tie(b.vcpu, b.old_window, b.new_window);
}
inline bool operator==(const KvmApicIpi& a, const KvmApicIpi& b) {
  return a.icr_low == b.icr_low && a.dest_id == b.dest_id;
}
inline bool operator==(const KvmApicAcceptIrq& a, const KvmApicAcceptIrq& b) {
  return std::tie(a.apicid, a.vec, a.delivery_mode, a.level, a.coalesced) ==
         std::tie(b.apicid, b.vec, b.delivery_mode, b.level, b.coalesced);
}
inline bool operator==(const KvmHypercall& a, const KvmHypercall& b) {
  return std::tie(a.nr, a.a0, a.a1, a.a2, a.a3) == std::tie(b.nr, b.a0, b.a1, b.a2, b.a3);
}
inline bool operator==(const KvmInjVirq& a, const KvmInjVirq& b) {
  return std::tie(a.vector, a.soft, a.reinjected, a.legacy) ==
         std::tie(b.vector, b.soft, b.reinjected, b.legacy);
}
inline bool operator==(const KvmEoi& a, const KvmEoi& b) {
  return a.apicid == b.apicid && a.vector == b.vector;
}
inline bool operator==(const KvmApic& a, const KvmApic& b) {
  return a.write == b.write && a.reg == b.reg && a.val == b.val;
}
inline bool operator==(const KvmPvTlbFlush& a, const KvmPvTlbFlush& b) {
  return a.vcpu == b.vcpu && a.need_flush_tlb == b.need_flush_tlb;
}
inline bool operator==(const SchedSwitch& a, const SchedSwitch& b) {
  return std::tie(a.prev_comm, a.prev_pid, a.prev_prio, a.prev_state, a.next_comm, a.next_pid,
                  a.next_prio) == std::tie(b.prev_comm, b.prev_pid, b.prev_prio, b.prev_state,
                                           b.next_comm, b.next_pid, b.next_prio);
}
inline bool operator==(const SchedWakeup& a, const SchedWakeup& b) {
  return std::tie(a.comm, a.pid, a.prio, a.target_cpu, a.success) ==
         std::tie(b.comm, b.pid, b.prio, b.target_cpu, b.success);
}

}  // namespace kvmsim::trace
