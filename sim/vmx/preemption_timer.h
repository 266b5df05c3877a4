// The VMX preemption timer: a 32-bit down-counter that decrements every time
// bit X (the IA32_VMX_MISC rate shift) of the TSC changes while the CPU is in
// VMX non-root mode, and causes a PREEMPTION_TIMER exit at zero.
//
// KVM keeps an absolute host-TSC deadline (vmx->hv_deadline_tsc) set by
// vmx_set_hv_timer() and rewrites the counter from it on every VM entry
// (vmx_update_hv_timer()), so the fire time is quantised to 2^X cycles and the
// counter starts only when the guest actually runs.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/core/time.h"
#include "sim/vmx/tsc.h"

namespace kvmsim {

inline constexpr Tsc kHvDeadlineNone = kTscNever;  // "-1": timer cancelled

struct SetHvTimerResult {
  bool ok = false;       // false: -ERANGE, caller falls back to the hrtimer
  bool expired = false;  // delta was 0 (deadline passed, or within the advance)
  Tsc hv_deadline_tsc = kHvDeadlineNone;
};

// vmx_set_hv_timer(): called with the host TSC `tscl` read at arming time.
// `advance_cycles` is nsec_to_cycles(timer_advance_ns) in guest cycles (0 when
// the kernel does not apply the advance to the hv timer).
inline SetHvTimerResult vmx_set_hv_timer(const TscScaling& tsc, unsigned rate_shift, Tsc tscl,
                                         std::uint64_t guest_deadline_tsc,
                                         std::uint64_t advance_cycles) {
  SetHvTimerResult r;
  const std::uint64_t guest_tscl = tsc.read_l1_tsc(tscl);
  std::uint64_t delta_tsc =
      (guest_deadline_tsc > guest_tscl ? guest_deadline_tsc : guest_tscl) - guest_tscl;
  // Subtract the timer advance; a delta within the advance means "expired".
  delta_tsc = delta_tsc > advance_cycles ? delta_tsc - advance_cycles : 0;
  if (delta_tsc && tsc.scaled()) {
    auto host = tsc.guest_delta_to_host(delta_tsc);
    if (!host) return r;  // u64_shl_div_u64 overflow
    delta_tsc = *host;
  }
  // Must fit in 32 bits after the shift: not rechecked on every entry.
  if (delta_tsc >> (rate_shift + 32)) return r;
  r.ok = true;
  r.hv_deadline_tsc = tscl + delta_tsc;
  r.expired = delta_tsc == 0;
  return r;
}

// vmx_update_hv_timer(): the 32-bit value written to the VMCS at host TSC
// `now` (just before entry). Deadline passed -> 0 (exit right after entry);
// no deadline -> 0xffffffff ("soft disabled").
inline std::uint32_t vmx_preemption_timer_value(Tsc hv_deadline_tsc, Tsc now, unsigned rate_shift) {
  if (hv_deadline_tsc == kHvDeadlineNone) return 0xffffffffU;
  if (hv_deadline_tsc <= now) return 0;
  return static_cast<std::uint32_t>((hv_deadline_tsc - now) >> rate_shift);
}

// Host TSC at which a counter loaded with `value` and starting to count at
// `entry_tsc` (first cycle in non-root mode) reaches zero: it decrements on
// each change of TSC bit `rate_shift`, i.e. at multiples of 2^rate_shift.
inline Tsc vmx_preemption_timer_fire_tsc(Tsc entry_tsc, std::uint32_t value, unsigned rate_shift) {
  if (value == 0) return entry_tsc;
  const Tsc tick = Tsc{1} << rate_shift;
  return ((entry_tsc >> rate_shift) + value) * tick;
}

// hardware_setup(): KVM refuses the timer when its rate is too high for the
// 0xffffffff "soft disable" value to last 10 s (cpu_preemption_timer_multi).
inline bool vmx_preemption_timer_usable(std::uint64_t tsc_khz, unsigned rate_shift) {
  const std::uint64_t use_timer_freq = (tsc_khz * 1000) >> rate_shift;
  return use_timer_freq <= 0xffffffffULL / 10;
}

}  // namespace kvmsim
