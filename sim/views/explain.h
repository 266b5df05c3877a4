// `kvmsim explain`: follow ONE timer interrupt from the guest arming its
// timer to the workload's measurement, segment by segment on the pCPU that
// runs the measuring vCPU, with what each stage models.
//
// ExplainObserver keeps, per pCPU, only what happened since the last timer
// arming there (segments, VM exits and entries, the LAPIC timer's
// tracepoints); at the N-th latency sample it keeps that window and stops
// collecting (and, if asked, stops the simulation: nothing later matters).
// format_explanation() prints it: every segment with its start relative to
// the deadline (ns, negative before) and its duration; the part after the
// deadline adds up to the printed total, which is the sample's latency as
// the host sees it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/observer.h"
#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim::views {

struct ExplainItem {
  enum class Kind : std::uint8_t {
    Segment,
    VmExit,
    VmEntry,
    MsrWrite,
    WaitLapicExpire,
    HvTimerState,
    ApicAcceptIrq,
    VcpuBlock,
    VcpuWakeup,
    SchedSwitch,  // comm: the next task, prev_comm: the previous one, value: prev runnable
    SchedWakeup   // comm: the woken task
  };
  Kind kind = Kind::Segment;
  Stage stage = Stage::HostIdle;                  // Segment
  ExitReason reason = ExitReason::EXCEPTION_NMI;  // VmExit
  Tsc t = 0;                                      // segment begin, or the event's time
  Tsc end = 0;                                    // segment end
  std::uint32_t msr = 0;                          // MsrWrite
  std::int64_t value = 0;       // MSR value, delta, hv_timer flag, vector, wait ns
  std::string comm, prev_comm;  // SchedSwitch, SchedWakeup
};

struct ExplainCapture {
  bool captured = false;
  std::uint64_t sample = 0;  // 1-based index among all latency samples
  int vcpu = 0, pcpu = 0;
  Tsc armed_at = 0, deadline = 0, measured_at = 0;
  std::int64_t latency_ns = 0;     // what the workload measured
  std::vector<ExplainItem> items;  // in time order
};

class ExplainObserver : public Observer {
 public:
  // `sample`: which latency sample to keep (1-based). `stop`: call
  // sc_stop() once it is captured.
  explicit ExplainObserver(std::uint64_t sample, bool stop = true) : want_(sample), stop_(stop) {}

  void connect(SignalRegistry& signals) override;
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end);
  void on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t);
  void on_vmentry(int vcpu, int pcpu, Tsc t);
  void on_timer_armed(int vcpu, int pcpu, Tsc deadline);
  void on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t, std::int64_t latency_ns);
  void on_vcpu_block(int vcpu, int pcpu, Tsc t);
  void on_vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t);
  void on_hv_timer_state(int vcpu, bool hv_timer, Tsc t);
  void on_wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t);
  void on_apic_accept_irq(int vcpu, std::uint8_t vector, Tsc t);
  // An IPI accepted into `target`: the same as any accepted vector.
  void on_apic_accept_ipi(int /*sender*/, int target, std::uint8_t vector, Tsc t) {
    on_apic_accept_irq(target, vector, t);
  }
  void on_msr_write(int vcpu, std::uint32_t msr, std::uint64_t value, Tsc t);
  // The host scheduler on the window's pCPU: who held it while the vCPU waited.
  void on_sched_switch(int pcpu, const std::string& prev_comm, int prev_pid, int prev_prio,
                       bool prev_runnable, const std::string& next_comm, int next_pid,
                       int next_prio, Tsc t);
  void on_sched_wakeup(int waker_pcpu, const std::string& comm, int pid, int prio, int target_pcpu,
                       Tsc t);

  [[nodiscard]] const ExplainCapture& capture() const { return capture_; }
  [[nodiscard]] std::uint64_t samples_seen() const { return samples_; }

 private:
  void add_vcpu_event(int vcpu, ExplainItem::Kind kind, Tsc t, std::int64_t value);
  struct Window {
    bool open = false;
    Tsc armed_at = 0, deadline = 0;
    std::vector<ExplainItem> items;
  };
  Window* window_of_pcpu(int pcpu);
  Window* window_of_vcpu(int vcpu);
  void note_vcpu(int vcpu, int pcpu);
  static void add(Window* w, const ExplainItem& it);

  std::uint64_t want_;
  bool stop_;
  std::uint64_t samples_ = 0;
  std::vector<Window> windows_;  // by pCPU id
  std::vector<int> vcpu_pcpu_;   // last pCPU each vCPU ran on
  ExplainCapture capture_;
};

// The explanation as text. Segment rows are
//   <start ns, signed> <duration ns> <stage> <what it models>
// and event rows start with their time and ">>"; the rows after the
// "deadline" line add up to the "total" line.
std::string format_explanation(const ExplainCapture& c, const TscClock& clock);

}  // namespace kvmsim::views
