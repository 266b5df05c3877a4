// Guest TSC as KVM computes it: guest = (host * ratio >> frac_bits) + offset
// (kvm_read_l1_tsc / kvm_scale_tsc), and the inverse scaling of a guest delta
// to host cycles that vmx_set_hv_timer() does with u64_shl_div_u64().
#pragma once

#include <cstdint>
#include <optional>

#include "sim/core/time.h"

namespace kvmsim {

struct TscScaling {
  static constexpr unsigned kFracBits = 48;  // kvm_caps.tsc_scaling_ratio_frac_bits on VMX
  static constexpr std::uint64_t kDefaultRatio = 1ULL << kFracBits;

  std::uint64_t ratio = kDefaultRatio;  // guest_khz / host_khz in 16.48 fixed point
  std::int64_t offset = 0;              // VMCS TSC_OFFSET (guest cycles)

  // Ratio for a guest running at guest_khz on a host at host_khz.
  static std::uint64_t ratio_for(std::uint64_t guest_khz, std::uint64_t host_khz) {
    return static_cast<std::uint64_t>((static_cast<u128>(guest_khz) << kFracBits) / host_khz);
  }
  [[nodiscard]] bool scaled() const { return ratio != kDefaultRatio; }

  // kvm_scale_tsc(): host cycles -> guest cycles (no offset).
  [[nodiscard]] std::uint64_t scale(std::uint64_t host) const {
    if (!scaled()) return host;
    return static_cast<std::uint64_t>((static_cast<u128>(host) * ratio) >> kFracBits);
  }
  // kvm_read_l1_tsc(): guest TSC value at host TSC `host`.
  [[nodiscard]] std::uint64_t read_l1_tsc(Tsc host) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(scale(host)) + offset);
  }
  // Guest delta -> host delta, as vmx_set_hv_timer(): (delta << frac) / ratio,
  // nullopt when the 128-bit quotient does not fit in 64 bits (-ERANGE).
  [[nodiscard]] std::optional<std::uint64_t> guest_delta_to_host(std::uint64_t guest_delta) const {
    if (!scaled() || guest_delta == 0) return guest_delta;
    const u128 q = (static_cast<u128>(guest_delta) << kFracBits) / ratio;
    if (q >> 64) return std::nullopt;
    return static_cast<std::uint64_t>(q);
  }
  // Host TSC at which the guest TSC reaches `guest` (first host cycle with
  // read_l1_tsc(host) >= guest), for scheduling guest-visible deadlines.
  [[nodiscard]] Tsc host_tsc_at(std::uint64_t guest) const {
    const std::int64_t unscaled = static_cast<std::int64_t>(guest) - offset;
    if (unscaled <= 0) return 0;
    if (!scaled()) return static_cast<Tsc>(unscaled);
    const u128 g = static_cast<u128>(unscaled);
    Tsc h = static_cast<Tsc>(((g << kFracBits) + ratio - 1) / ratio);
    while (h > 0 && scale(h - 1) >= static_cast<std::uint64_t>(unscaled)) --h;
    while (scale(h) < static_cast<std::uint64_t>(unscaled)) ++h;
    return h;
  }
};

}  // namespace kvmsim
