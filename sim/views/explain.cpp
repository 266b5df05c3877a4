#include "sim/views/explain.h"

#include "sim/core/model_signals.h"
#include "sim/lapic/lapic_signals.h"
#include "sim/sched/sched_signals.h"
#include "sim/vmx/kvm_signals.h"

#include <algorithm>

#include "sim/core/context.h"

namespace kvmsim::views {
namespace {
// A window that never sees its sample (a timer armed and never measured)
// stops buffering here.
constexpr std::size_t kMaxItems = std::size_t{1} << 20;
}  // namespace

void ExplainObserver::connect(SignalRegistry& signals) {
  auto& model = signals.get<ModelSignals>();
  model.segment.connect<&ExplainObserver::on_segment>(this);
  model.timer_armed.connect<&ExplainObserver::on_timer_armed>(this);
  model.latency_sample.connect<&ExplainObserver::on_latency_sample>(this);
  auto& kvm = signals.get<KvmSignals>();
  kvm.kvm_exit.connect<&ExplainObserver::on_vmexit>(this);
  kvm.kvm_entry.connect<&ExplainObserver::on_vmentry>(this);
  kvm.vcpu_block.connect<&ExplainObserver::on_vcpu_block>(this);
  kvm.kvm_vcpu_wakeup.connect<&ExplainObserver::on_vcpu_wakeup>(this);
  kvm.kvm_msr_write.connect<&ExplainObserver::on_msr_write>(this);
  auto& lapic = signals.get<LapicSignals>();
  lapic.kvm_hv_timer_state.connect<&ExplainObserver::on_hv_timer_state>(this);
  lapic.kvm_wait_lapic_expire.connect<&ExplainObserver::on_wait_lapic_expire>(this);
  lapic.kvm_apic_accept_irq.connect<&ExplainObserver::on_apic_accept_irq>(this);
  lapic.kvm_apic_accept_ipi.connect<&ExplainObserver::on_apic_accept_ipi>(this);
  auto& sched = signals.get<SchedSignals>();
  sched.sched_switch.connect<&ExplainObserver::on_sched_switch>(this);
  sched.sched_wakeup.connect<&ExplainObserver::on_sched_wakeup>(this);
}

void ExplainObserver::note_vcpu(int vcpu, int pcpu) {
  if (vcpu < 0) return;
  if (static_cast<std::size_t>(vcpu) >= vcpu_pcpu_.size())
    vcpu_pcpu_.resize(static_cast<std::size_t>(vcpu) + 1, -1);
  vcpu_pcpu_[static_cast<std::size_t>(vcpu)] = pcpu;
}

ExplainObserver::Window* ExplainObserver::window_of_pcpu(int pcpu) {
  if (pcpu < 0 || static_cast<std::size_t>(pcpu) >= windows_.size()) return nullptr;
  Window& w = windows_[static_cast<std::size_t>(pcpu)];
  return w.open ? &w : nullptr;
}

ExplainObserver::Window* ExplainObserver::window_of_vcpu(int vcpu) {
  if (vcpu < 0 || static_cast<std::size_t>(vcpu) >= vcpu_pcpu_.size()) return nullptr;
  return window_of_pcpu(vcpu_pcpu_[static_cast<std::size_t>(vcpu)]);
}

void ExplainObserver::add(Window* w, const ExplainItem& it) {
  if (!w) return;
  if (w->items.size() >= kMaxItems) {
    w->open = false;
    w->items = {};
    return;
  }
  w->items.push_back(it);
}

void ExplainObserver::on_segment(int pcpu, Stage stage, Tsc begin, Tsc end) {
  if (capture_.captured) return;
  ExplainItem it;
  it.kind = ExplainItem::Kind::Segment;
  it.stage = stage;
  it.t = begin;
  it.end = end;
  add(window_of_pcpu(pcpu), it);
}

void ExplainObserver::on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t) {
  if (capture_.captured) return;
  note_vcpu(vcpu, pcpu);
  ExplainItem it;
  it.kind = ExplainItem::Kind::VmExit;
  it.reason = reason;
  it.t = t;
  add(window_of_pcpu(pcpu), it);
}

void ExplainObserver::on_vmentry(int vcpu, int pcpu, Tsc t) {
  if (capture_.captured) return;
  note_vcpu(vcpu, pcpu);
  ExplainItem it;
  it.kind = ExplainItem::Kind::VmEntry;
  it.t = t;
  add(window_of_pcpu(pcpu), it);
}

void ExplainObserver::on_timer_armed(int vcpu, int pcpu, Tsc deadline) {
  if (capture_.captured || pcpu < 0) return;
  note_vcpu(vcpu, pcpu);
  if (static_cast<std::size_t>(pcpu) >= windows_.size())
    windows_.resize(static_cast<std::size_t>(pcpu) + 1);
  Window& w = windows_[static_cast<std::size_t>(pcpu)];
  w.open = true;
  w.armed_at = now_tsc();
  w.deadline = deadline;
  w.items.clear();  // only what follows the last arming is kept
}

void ExplainObserver::on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t,
                                        std::int64_t latency_ns) {
  if (capture_.captured) return;
  note_vcpu(vcpu, pcpu);
  ++samples_;
  Window* w = window_of_pcpu(pcpu);
  if (samples_ != want_) {
    if (w) {
      w->open = false;
      w->items.clear();
    }
    return;
  }
  capture_.captured = true;
  capture_.sample = samples_;
  capture_.vcpu = vcpu;
  capture_.pcpu = pcpu;
  capture_.deadline = deadline;
  capture_.measured_at = t;
  capture_.latency_ns = latency_ns;
  if (w) {
    capture_.armed_at = w->armed_at;
    capture_.items = std::move(w->items);
  } else {
    capture_.armed_at = t;
  }
  // Segments are reported when they end and events when they happen: order
  // by start, keeping report order among equal times (an event at a
  // segment's start was reported before that segment ended).
  std::stable_sort(capture_.items.begin(), capture_.items.end(),
                   [](const ExplainItem& a, const ExplainItem& b) { return a.t < b.t; });
  windows_ = {};
  if (stop_) sim_stop();
}

void ExplainObserver::on_vcpu_block(int vcpu, int pcpu, Tsc t) {
  if (capture_.captured) return;
  note_vcpu(vcpu, pcpu);
  ExplainItem it;
  it.kind = ExplainItem::Kind::VcpuBlock;
  it.t = t;
  add(window_of_pcpu(pcpu), it);
}

// A vCPU event with one value, kept in that vCPU's pCPU window.
void ExplainObserver::add_vcpu_event(int vcpu, ExplainItem::Kind kind, Tsc t, std::int64_t value) {
  if (capture_.captured) return;
  ExplainItem it;
  it.kind = kind;
  it.t = t;
  it.value = value;
  add(window_of_vcpu(vcpu), it);
}

void ExplainObserver::on_vcpu_wakeup(int vcpu, bool /*waited*/, std::int64_t ns, Tsc t) {
  add_vcpu_event(vcpu, ExplainItem::Kind::VcpuWakeup, t, ns);
}

void ExplainObserver::on_hv_timer_state(int vcpu, bool hv_timer, Tsc t) {
  add_vcpu_event(vcpu, ExplainItem::Kind::HvTimerState, t, hv_timer ? 1 : 0);
}

void ExplainObserver::on_wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t) {
  add_vcpu_event(vcpu, ExplainItem::Kind::WaitLapicExpire, t, delta);
}

void ExplainObserver::on_apic_accept_irq(int vcpu, std::uint8_t vector, Tsc t) {
  add_vcpu_event(vcpu, ExplainItem::Kind::ApicAcceptIrq, t, vector);
}

void ExplainObserver::on_msr_write(int vcpu, std::uint32_t msr, std::uint64_t value, Tsc t) {
  if (capture_.captured) return;
  ExplainItem it;
  it.kind = ExplainItem::Kind::MsrWrite;
  it.t = t;
  it.msr = msr;
  it.value = static_cast<std::int64_t>(value);
  add(window_of_vcpu(vcpu), it);
}

void ExplainObserver::on_sched_switch(int pcpu, const std::string& prev_comm, int /*prev_pid*/,
                                      int /*prev_prio*/, bool prev_runnable,
                                      const std::string& next_comm, int /*next_pid*/,
                                      int /*next_prio*/, Tsc t) {
  if (capture_.captured) return;
  ExplainItem it;
  it.kind = ExplainItem::Kind::SchedSwitch;
  it.t = t;
  it.value = prev_runnable ? 1 : 0;
  it.comm = next_comm;
  it.prev_comm = prev_comm;
  add(window_of_pcpu(pcpu), it);
}

void ExplainObserver::on_sched_wakeup(int /*waker_pcpu*/, const std::string& comm, int /*pid*/,
                                      int /*prio*/, int target_pcpu, Tsc t) {
  if (capture_.captured) return;
  ExplainItem it;
  it.kind = ExplainItem::Kind::SchedWakeup;
  it.t = t;
  it.comm = comm;
  add(window_of_pcpu(target_pcpu), it);
}

}  // namespace kvmsim::views
