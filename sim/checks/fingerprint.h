// sim.fingerprint: a hash of the event trajectory (simulated time, component,
// event kind and its arguments) of the model events RunGuard feeds it, as
// OMNeT++'s fingerprints: any change in behaviour changes it, not only changes
// that reach the final numbers. It is reported as an integer below 2^53 so
// that summary.json's numbers (doubles) hold it exactly.
#pragma once

#include <cstdint>

#include "sim/core/stage.h"
#include "sim/core/time.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim {

class FingerprintObserver {
 public:
  void on_segment(int pcpu, Stage s, Tsc b, Tsc e) { mix(1, pcpu, b, e, int(s)); }
  void on_vmexit(int v, int pcpu, ExitReason r, Tsc t) { mix(2, v, t, pcpu, int(r)); }
  void on_vmentry(int v, int pcpu, Tsc t) { mix(3, v, t, pcpu, 0); }
  void on_timer_armed(int v, int pcpu, Tsc d) { mix(4, v, d, pcpu, 0); }
  void on_latency_sample(int v, int pcpu, Tsc d, Tsc t, std::int64_t ns) {
    mix(5, v, t, d, static_cast<std::uint64_t>(ns) ^ (std::uint64_t(pcpu) << 48));
  }
  void on_vcpu_block(int v, int pcpu, Tsc t) { mix(6, v, t, pcpu, 0); }
  void on_vcpu_wakeup(int v, bool waited, std::int64_t ns, Tsc t) {
    mix(7, v, t, static_cast<std::uint64_t>(ns), static_cast<std::uint64_t>(waited));
  }
  void on_hv_timer_state(int v, bool on, Tsc t) { mix(8, v, t, static_cast<std::uint64_t>(on), 0); }
  void on_wait_lapic_expire(int v, std::int64_t delta, Tsc t) {
    mix(9, v, t, static_cast<std::uint64_t>(delta), 0);
  }
  void on_apic_accept_irq(int v, std::uint8_t vec, Tsc t) { mix(10, v, t, vec, 0); }
  void on_msr_write(int v, std::uint32_t msr, std::uint64_t value, Tsc t) {
    mix(11, v, t, value, msr);
  }
  // Only runs with guest.pv_tlb_flush emit it, so other fingerprints stay.
  void on_pv_tlb_flush(int v, bool need, Tsc t) {
    mix(12, v, t, static_cast<std::uint64_t>(need), 0);
  }

  // The hash so far, in [0, 2^53).
  [[nodiscard]] std::uint64_t value() const { return fold(h_) >> 11; }

 private:
  // Two multiply-rotate steps per event (cheap: this runs on every event);
  // splitmix64's finaliser once at the end.
  static std::uint64_t fold(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  void mix(std::uint64_t kind, int component, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    h_ = (((h_ << 23) | (h_ >> 41)) ^ a) * 0x9e3779b97f4a7c15ULL;
    h_ = (h_ ^ b ^ (kind << 58) ^ (std::uint64_t(std::uint32_t(component)) << 40) ^ (c << 8)) *
         0xbf58476d1ce4e5b9ULL;
  }
  std::uint64_t h_ = 0x6b766d73696d0001ULL;  // "kvmsim" 1
};

}  // namespace kvmsim
