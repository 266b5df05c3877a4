// `kvmsim run --vcd FILE`: a waveform (VCD, for GTKWave) written through
// SystemC's own tracing (sc_create_vcd_trace_file + sc_trace on plain
// variables that this observer owns and updates from the model's events).
// Attached only when the option is given: without it there is no trace file,
// no sampling process, and nothing is computed.
//
// Signals, per vCPU N (scope vcpuN):
//   mode                   0 root (KVM handling an exit), 1 guest, 2 halted
//                          (asleep in kvm_vcpu_block()), 3 polling (halt
//                          polling in kvm_vcpu_halt(): see vcpu_mode.h)
//   preemption_timer       the VMX preemption-timer counter (32 bits)
//   preemption_timer_armed 1 when vmx_update_hv_timer() loaded a deadline,
//                          0 when it left the timer soft-disabled
//   hv_timer               the last kvm_hv_timer_state: 1 the LAPIC timer was
//                          armed on the preemption timer, 0 on a host hrtimer
//   latency_ns             the last latency sample the workload measured
//
// How the countdown is represented. The hardware counter decrements each
// time bit X of the TSC changes (X = the rate shift, IA32_VMX_MISC[4:0]) but
// only in VMX non-root mode. The model does not tick it; it computes when it
// reaches zero. This view recomputes the value the hardware would hold,
//   value(t) = max(0, V - ((t >> X) - (entry >> X))),
// from V (what vmx_update_hv_timer() loaded at the end of vmx_vcpu_run) and
// the entry time, at every segment boundary and every `sample_period` while
// the vCPU is in guest mode. The waveform is therefore a staircase that
// samples the real 2^X-cycle steps; it reaches 0 exactly when the
// PREEMPTION_TIMER exit happens. At a VM exit the value freezes (the counter
// does not count in root mode; KVM does not read it back), and the next entry
// shows the value reloaded from the absolute deadline. With no deadline it
// stays at 0xffffffff (soft-disabled) and preemption_timer_armed is 0.
//
// Time: the VCD timescale says 1 ps, which is one host TSC cycle (kvmsim's
// SystemC time unit); a comment in the file gives the TSC frequency.
// Nothing is recorded after `limit`: the file is closed there (or at the end
// of the run). SystemC writes PATH.systemc.vcd; finish() copies it to PATH
// with a fixed `$date` (the wall clock would make same-seed files differ) and
// checks every write (output_errors()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/observer.h"
#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/views/vcpu_mode.h"
#include "sim/vmx/exit_reason.h"

namespace sc_core {
class sc_trace_file;
}

namespace kvmsim {
class Vcpu;
}

namespace kvmsim::views {

class VcdSampler;

class VcdObserver : public Observer {
 public:
  // Must be constructed before sc_start() (SystemC traces are declared at
  // elaboration). `sample_period`: cycles between countdown samples (0: only
  // at segment boundaries). `vcpus[i]` has id i.
  VcdObserver(const std::string& path, TscClock clock, Tsc limit, Tsc sample_period,
              std::vector<const Vcpu*> vcpus);
  ~VcdObserver() override;
  VcdObserver(const VcdObserver&) = delete;
  VcdObserver& operator=(const VcdObserver&) = delete;

  void connect(SignalRegistry& signals) override;
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end);
  void on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t);
  void on_vmentry(int vcpu, int pcpu, Tsc t);
  void on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t, std::int64_t latency_ns);
  void on_vcpu_poll(int vcpu, int pcpu, Tsc t);
  void on_vcpu_block(int vcpu, int pcpu, Tsc t);
  void on_vcpu_wakeup(int vcpu, bool waited, std::int64_t ns, Tsc t);
  void on_hv_timer_state(int vcpu, bool hv_timer, Tsc t);

  // The vCPU enters `mode` at `t` (VM exits and entries, block and wake-up;
  // a future halt-polling hook).
  void set_vcpu_mode(int vcpu, VcpuMode mode, Tsc t);
  // Recomputes the countdown of every vCPU in guest mode (the sampling process calls it).
  void sample(Tsc now);
  // Closes the trace file and gives it its requested name. Idempotent.
  void finish();
  [[nodiscard]] bool closed() const { return tf_ == nullptr; }

 private:
  struct VcpuTrace {
    // Traced: SystemC reads these at every time step, so they live as long as
    // the observer (the vector is sized once, before the sc_trace calls).
    unsigned mode = 0;
    unsigned preemption_timer = 0xffffffffU;
    bool preemption_timer_armed = false;
    bool hv_timer = false;
    unsigned latency_ns = 0;
    // State of the countdown.
    const Vcpu* vcpu = nullptr;
    unsigned rate = 5;
    bool counting = false;  // guest mode with a deadline loaded
    Tsc entry = 0;
    std::uint32_t loaded = 0;
  };
  VcpuTrace* at(int vcpu);
  static void refresh(VcpuTrace& v, Tsc now);
  bool past_limit(Tsc t);
  static void copy_with_fixed_date(const std::string& from, const std::string& to);

  void check_size(Tsc t);

 public:
  // The file stops growing here (SystemC's buffered writer: checked every
  // 4096 events): a 10-minute run once wrote 36 GB, a 100 ms one at
  // --vcd-sample-ns 10 writes about 300 MB.
  static constexpr std::uintmax_t kMaxBytes = std::uintmax_t{64} << 20;

 private:
  std::string path_, written_path_;
  TscClock clock_;
  std::uint64_t events_ = 0;
  Tsc limit_;
  std::vector<VcpuTrace> vcpus_;
  sc_core::sc_trace_file* tf_ = nullptr;
  std::unique_ptr<VcdSampler> sampler_;
};

}  // namespace kvmsim::views
