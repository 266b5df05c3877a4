// The in-kernel LAPIC's metric keys: IPI delivery (ipi.*) and the timer
// advance (lapic.*). Summed over vCPUs by VcpuMetrics::report() (sim/vmx/vm.cpp).
#include "sim/core/metric_decl.h"

// One declaration per row: kept compact by hand.
// clang-format off
KVMSIM_DECLARE_METRICS(lapic, {
    {"ipi.sent", "count", "lapic", "kvm_apic_send_ipi() calls: ICR writes that sent an IPI, all vCPUs."},
    {"ipi.accepted", "count", "lapic", "IPI vectors the target LAPICs accepted (__apic_accept_irq())."},
    {"ipi.posted", "count", "lapic", "IPI vectors delivered as posted interrupts: synced from the PIR on a posted-interrupt notification, with no VM exit of the target (APICv)."},
    {"lapic.wait_lapic_expire.calls", "count", "lapic", "__kvm_wait_lapic_expire() calls that acted: the early-expired TSC-deadline timer was the interrupt going into the guest and an advance was set."},
    {"lapic.wait_lapic_expire.early", "count", "lapic", "Of lapic.wait_lapic_expire.calls, entries before the guest's deadline (the kvm_wait_lapic_expire tracepoint's delta < 0: a busy-wait)."},
    {"lapic.wait_lapic_expire.late", "count", "lapic", "Of lapic.wait_lapic_expire.calls, entries at or after the deadline (delta >= 0: the advance was too short)."},
    {"lapic.wait_lapic_expire.avg_delta_cycles", "cycles", "lapic", "Mean of the tracepoint's delta: guest TSC at the call minus the deadline, in guest cycles (negative: early)."},
    {"lapic.wait_lapic_expire.spin_ns", "ns", "lapic", "Total time spent busy-waiting in __wait_lapic_expire() for the deadline."},
    {"lapic.timer_advance_ns", "ns", "lapic", "lapic_timer_advance_ns the measuring vCPU's LAPIC ended the run with (the adaptive value, or the fixed kvm.lapic_timer_advance_ns)."},
});
// clang-format on
