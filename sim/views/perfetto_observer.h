// `kvmsim run --perfetto FILE`: the model's events as a Chrome trace-event
// JSON file ({"traceEvents":[...]}), which ui.perfetto.dev and
// chrome://tracing open. It is an observer, attached only when the option is
// given, and it streams to disk: memory stays bounded (a few values per pCPU
// and vCPU, one output buffer) however long the run.
//
// Track layout:
//   process "pCPU N" (pid 100+N), one thread track "pCPU N": every segment the
//     pCPU ran, as a complete event ("ph":"X") named after its stage, cat
//     "host" or "guest", args.kernel = what the stage models.
//   process "vCPU N (CPU N/KVM)" (pid 1000+N, the vCPU thread's pid in
//   `--trace` output), two thread tracks:
//     "mode" (tid 1000+N): the vCPU's mode as slices "guest", "root" (KVM
//       handling an exit; args.exit_reason) and "halted" (the thread sleeps
//       in kvm_vcpu_block() after a HLT exit); "polling" once the model has
//       halt polling (see vcpu_mode.h); instant events kvm_exit
//       (args.reason), kvm_entry, kvm_vcpu_block and kvm_vcpu_wakeup;
//     "timer" (tid 2000+N): "timer armed" from the guest's arming to the
//       deadline, "wake-up latency" from the deadline to the measurement
//       (args.latency_ns), instants for the TSC-deadline WRMSR,
//       kvm_wait_lapic_expire (delta) and kvm_hv_timer_state.
//   flow events ("ph":"s" / "f", cat "timer", name "timer interrupt", id n):
//     one arrow per latency sample, from the pCPU segment that armed the timer
//     to the pCPU segment that ended with the measurement.
//
// Times: "ts"/"dur" in microseconds with three decimals (exact nanoseconds:
// cycles_to_ns() of the segment boundaries, so adjacent slices abut exactly).
// Events after `limit` (simulated) are not written; the file is completed as
// soon as the limit is passed, or by finish() / the destructor. The file is
// also completed (valid JSON, a warning on stderr) once it reaches kMaxBytes:
// Perfetto's UI slows to a crawl well before that. A write error is recorded
// in output_errors() and stops the run.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/observer.h"
#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/sched/pids.h"
#include "sim/views/vcpu_mode.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim::views {

// A vCPU as the views name it.
struct ViewVcpu {
  int id = 0;
  int pcpu = 0;      // the pCPU its thread is pinned to
  std::string comm;  // its host thread, "CPU n/KVM"
};

class PerfettoObserver : public Observer {
 public:
  static constexpr int kPcpuPidBase = 100;
  static constexpr int kVcpuPidBase = pids::kVcpuBase;
  static constexpr int kVcpuTimerTidBase = 2000;
  static constexpr std::uint64_t kMaxBytes = 64ULL << 20;

  // `limit`: simulated host cycles after which nothing more is written.
  PerfettoObserver(const std::string& path, TscClock clock, Tsc limit,
                   const std::vector<int>& pcpus, const std::vector<ViewVcpu>& vcpus);
  ~PerfettoObserver() override;
  PerfettoObserver(const PerfettoObserver&) = delete;
  PerfettoObserver& operator=(const PerfettoObserver&) = delete;

  void connect(SignalRegistry& signals) override;
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end);
  void on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t);
  void on_vmentry(int vcpu, int pcpu, Tsc t);
  void on_timer_armed(int vcpu, int pcpu, Tsc deadline);
  void on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t, std::int64_t latency_ns);
  void on_vcpu_poll(int vcpu, int pcpu, Tsc t);
  void on_vcpu_block(int vcpu, int pcpu, Tsc t);
  void on_vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t);
  void on_hv_timer_state(int vcpu, bool hv_timer, Tsc t);
  void on_wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t);
  void on_msr_write(int vcpu, std::uint32_t msr, std::uint64_t value, Tsc t);

  // The vCPU enters `mode` at `t`: closes the current mode slice, opens the
  // next one. VM exits and entries call it; future halted/polling hooks will.
  void set_vcpu_mode(int vcpu, VcpuMode mode, Tsc t, std::string_view why = {});
  // Closes the open slices at min(end, limit) and completes the JSON. Idempotent.
  void finish(Tsc end);
  // The size cap stopped the file before `limit` (simulated cycle where it did).
  [[nodiscard]] bool capped() const { return capped_; }

  [[nodiscard]] std::uint64_t events_written() const { return events_; }
  [[nodiscard]] std::uint64_t flows_written() const { return flows_; }

 private:
  struct PcpuState {
    int id = 0;
    Tsc last_begin = 0, last_end = 0;
    bool has_last = false;
    int flow_start_vcpu = -1;  // a vCPU armed its timer; its flow starts on the next segment
  };
  struct VcpuState {
    int id = 0, pcpu = 0;
    VcpuMode mode = VcpuMode::Root;
    Tsc mode_begin = 0;
    std::string_view mode_why;
    bool armed = false;
    Tsc arm_t = 0, arm_deadline = 0;
    std::int64_t flow_start_ns = -1;  // where the flow arrow starts (-1: not known yet)
    std::uint64_t samples = 0;
  };

  [[nodiscard]] std::uint64_t ns(Tsc t) const { return clock_.cycles_to_ns(t); }
  PcpuState* pcpu_state(int pcpu);
  VcpuState* vcpu_state(int vcpu);
  // Past the limit: completes the file once, then every hook returns at once.
  bool past_limit(Tsc t);
  // Midpoint (ns) of the pCPU's last segment: a flow event placed there binds to it.
  [[nodiscard]] std::int64_t last_segment_mid_ns(const PcpuState& p) const;

  // Event writing (one reused buffer, flushed to the file in large blocks).
  void vcpu_instant(int vcpu, int pcpu, const char* name, Tsc t);
  void begin_event(char ph, std::string_view name, std::string_view cat, int pid, int tid,
                   std::uint64_t ts_ns);
  void put_dur(std::uint64_t dur_ns);
  void put_ts_value(std::uint64_t v);
  void end_event();
  void complete(std::string_view name, std::string_view cat, int pid, int tid, Tsc b, Tsc e);
  void metadata(std::string_view what, int pid, int tid, std::string_view key,
                std::string_view value);
  void flush_if_full();
  void write_buffer();

  std::string path_;
  std::ofstream out_;
  std::string buf_;
  TscClock clock_;
  Tsc limit_;
  std::vector<PcpuState> pcpus_;
  std::vector<int> pcpu_index_;  // pCPU id -> index in pcpus_ (-1: not a vCPU's pCPU)
  std::vector<VcpuState> vcpus_;
  bool first_event_ = true;
  bool done_ = false;
  bool capped_ = false;
  std::uint64_t bytes_ = 0;
  std::uint64_t events_ = 0, flows_ = 0;
};

}  // namespace kvmsim::views
