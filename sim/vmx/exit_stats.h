// `perf kvm stat`-style exit statistics, as an observer: per exit reason the
// number of exits and the time from each kvm_exit to the next kvm_entry of
// the same vCPU (the time the vCPU spent out of the guest for it).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/observer.h"
#include "sim/vmx/exit_reason.h"
#include "sim/vmx/kvm_signals.h"

namespace kvmsim {

struct ExitReasonStats {
  std::uint64_t count = 0;
  Tsc total = 0, min = kTscNever, max = 0;
};

class ExitStats final : public Observer {
 public:
  void connect(SignalRegistry& signals) override {
    auto& kvm = signals.get<KvmSignals>();
    kvm.kvm_exit.connect<&ExitStats::on_vmexit>(this);
    kvm.kvm_entry.connect<&ExitStats::on_vmentry>(this);
  }
  void on_vmexit(int vcpu, int /*pcpu*/, ExitReason r, Tsc t) {
    auto& s = slot(vcpu);
    s.reason = static_cast<int>(r);
    s.at = t;
    s.open = true;
  }
  void on_vmentry(int vcpu, int /*pcpu*/, Tsc t) {
    auto& s = slot(vcpu);
    if (!s.open) return;
    s.open = false;
    auto& r = by_reason_[static_cast<std::size_t>(s.reason)];
    const Tsc d = t - s.at;
    ++r.count;
    r.total += d;
    r.min = d < r.min ? d : r.min;
    r.max = d > r.max ? d : r.max;
  }
  [[nodiscard]] const ExitReasonStats& reason(ExitReason r) const {
    return by_reason_[static_cast<std::size_t>(r)];
  }
  [[nodiscard]] const std::array<ExitReasonStats, kMaxExitReason>& all() const {
    return by_reason_;
  }

 private:
  struct Open {
    int reason = 0;
    Tsc at = 0;
    bool open = false;
  };

 public:
  // slot() without growing: whether vcpu has one (see CoreObservers).
  [[nodiscard]] bool has_slot(int vcpu) const {
    return static_cast<std::size_t>(vcpu) < open_.size();
  }
  [[gnu::noinline]] void add_slot(int vcpu) { slot(vcpu); }

 private:
  Open& slot(int vcpu) {
    if (static_cast<std::size_t>(vcpu) >= open_.size())
      open_.resize(static_cast<std::size_t>(vcpu) + 1);
    return open_[static_cast<std::size_t>(vcpu)];
  }
  std::array<ExitReasonStats, kMaxExitReason> by_reason_{};
  std::vector<Open> open_;
};

}  // namespace kvmsim
