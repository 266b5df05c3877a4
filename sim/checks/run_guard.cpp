#include "sim/checks/run_guard.h"

#include <chrono>
#include <cstdio>

#include <unistd.h>

#include "sim/core/event_kernel.h"

#include "sim/core/model_signals.h"
#include "sim/lapic/lapic_signals.h"
#include "sim/vmx/kvm_signals.h"

namespace kvmsim {

volatile std::sig_atomic_t detail::g_stop_requested = 0;

void RunGuard::connect(SignalRegistry& signals) {
  auto& model = signals.get<ModelSignals>();
  model.segment.connect<&RunGuard::on_segment>(this);
  model.timer_armed.connect<&RunGuard::on_timer_armed>(this);
  model.latency_sample.connect<&RunGuard::on_latency_sample>(this);
  auto& kvm = signals.get<KvmSignals>();
  kvm.kvm_exit.connect<&RunGuard::on_vmexit>(this);
  kvm.kvm_entry.connect<&RunGuard::on_vmentry>(this);
  connect_tracepoints(signals);
}

void RunGuard::connect_tracepoints(SignalRegistry& signals) {
  auto& kvm = signals.get<KvmSignals>();
  kvm.vcpu_block.connect<&RunGuard::on_vcpu_block>(this);
  kvm.kvm_vcpu_wakeup.connect<&RunGuard::on_vcpu_wakeup>(this);
  kvm.kvm_msr_write.connect<&RunGuard::on_msr_write>(this);
  auto& lapic = signals.get<LapicSignals>();
  lapic.kvm_hv_timer_state.connect<&RunGuard::on_hv_timer_state>(this);
  lapic.kvm_wait_lapic_expire.connect<&RunGuard::on_wait_lapic_expire>(this);
  lapic.kvm_apic_accept_irq.connect<&RunGuard::on_apic_accept_irq>(this);
  lapic.kvm_apic_accept_ipi.connect<&RunGuard::on_apic_accept_ipi>(this);
}

void RunGuard::stop() {
  if (stopped_) return;
  stopped_ = true;
  sim_stop();
}

// Wall-clock pace, checked every 2^18 segments (a few times per wall second).
void RunGuard::check_pace() {
  if (pace_warned_) return;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (wall0_ < 0) {
    wall0_ = wall;  // the first check: the clock starts (elaboration excluded)
    return;
  }
  const double elapsed = wall - wall0_;
  if (elapsed < 5) return;
  const double done = pace_();
  if (!(done > 0) || done >= 1) return;
  const double total = elapsed / done;
  if (total <= 600) return;
  pace_warned_ = true;
  if (isatty(STDERR_FILENO)) std::fputc('\n', stderr);  // after a progress line
  std::fprintf(stderr,
               "kvmsim: warning: %s is %.2f%% done after %.0f s: at this pace the run takes "
               "about %.0f minutes in all (SIGINT stops it; --allow-partial keeps what ran)\n",
               pace_what_.c_str(), 100 * done, elapsed, total / 60);
}

}  // namespace kvmsim
