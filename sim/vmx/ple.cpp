#include "sim/vmx/ple.h"

#include <algorithm>

#include "sim/core/params.h"
#include "sim/vmx/exit_handlers.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim {

PleConfig PleConfig::from(const ParamSet& p) {
  PleConfig c;
  c.gap = static_cast<std::uint32_t>(p.i("kvm.ple_gap"));
  c.window = static_cast<std::uint32_t>(p.i("kvm.ple_window"));
  c.window_grow = static_cast<std::uint32_t>(p.i("kvm.ple_window_grow"));
  c.window_shrink = static_cast<std::uint32_t>(p.i("kvm.ple_window_shrink"));
  c.window_max = static_cast<std::uint32_t>(p.i("kvm.ple_window_max"));
  return c;
}

Tsc PleWindow::bounded_spin(Tsc now, Tsc cycles) {
  spin_bounded_ = true;
  spin_end_ = now + cycles;
  if (enabled()) {
    const Tsc deadline = window_end(now);
    if (deadline < spin_end_) {
      armed_ = true;
      deadline_ = deadline;
      return deadline - now;
    }
  }
  return cycles;
}

Tsc PleWindow::window_end(Tsc now) {
  if (!window_cur_) window_cur_ = cfg_.window;
  if (pause_loop_since_ == kTscNever) pause_loop_since_ = now;
  return std::max(now, pause_loop_since_ + window_cur_);
}

PleWindow::Update PleWindow::grow_ple_window() {
  ++stats_.pause_exits;
  const std::uint32_t old = window_cur_;
  window_cur_ = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(std::uint64_t{window_cur_} * cfg_.window_grow, cfg_.window_max));
  if (window_cur_ > old) ++stats_.ple_window_grows;
  stats_.ple_window_peak = std::max(stats_.ple_window_peak, window_cur_);
  return {old, window_cur_};
}

std::optional<PleWindow::Update> PleWindow::shrink_ple_window() {
  if (!cfg_.gap) return std::nullopt;
  // Not yet set (no spin so far): vmx->ple_window is ple_window from vCPU
  // creation, and every shrink gives ple_window again.
  if (!window_cur_) return Update{cfg_.window, cfg_.window};
  const std::uint32_t old = window_cur_;
  const std::uint32_t s = cfg_.window_shrink;
  const std::uint32_t v = s == 0            ? cfg_.window
                          : s < cfg_.window ? window_cur_ / s
                                            : window_cur_ - std::min(window_cur_, s);
  window_cur_ = std::max(v, cfg_.window);
  return Update{old, window_cur_};
}

// handle_pause() (v4.16): grow_ple_window(), then kvm_vcpu_on_spin(vcpu,
// true); the guest's PAUSE loop resumes after.
KVMSIM_EXIT_HANDLER(PAUSE_INSTRUCTION, "cost.handle_pause", [](Vcpu& v, Tsc now, Tsc /*cost*/) {
  const PleWindow::Update u = v.ple().grow_ple_window();
  v.kvm_signals().kvm_ple_window(v.id(), true, u.new_window, u.old_window, now);
  return v.directed_yield().kvm_vcpu_on_spin(now);
});

}  // namespace kvmsim
