// Where the latency goes: for every measured wake-up, the time each stage
// occupied the measuring vCPU's pCPU between the timer deadline and the
// measurement, averaged over samples. Stages sum to the mean latency.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/model_signals.h"
#include "sim/core/observer.h"

namespace kvmsim {

class LatencyBreakdown final : public Observer {
 public:
  void connect(SignalRegistry& signals) override {
    auto& model = signals.get<ModelSignals>();
    model.timer_armed.connect<&LatencyBreakdown::on_timer_armed>(this);
    model.segment.connect<&LatencyBreakdown::on_segment>(this);
    model.latency_sample.connect<&LatencyBreakdown::on_latency_sample>(this);
  }
  void on_timer_armed(int /*vcpu*/, int pcpu, Tsc deadline) {
    auto& w = window(pcpu);
    w.deadline = deadline;
    w.open = true;
    for (std::uint64_t m = w.touched; m; m &= m - 1)
      w.acc[static_cast<std::size_t>(__builtin_ctzll(m))] = 0;
    w.touched = 0;
  }
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end) {
    if (static_cast<std::size_t>(pcpu) >= windows_.size()) return;
    auto& w = windows_[static_cast<std::size_t>(pcpu)];
    if (!w.open || end <= w.deadline) return;
    w.acc[static_cast<std::size_t>(stage)] += end - (begin > w.deadline ? begin : w.deadline);
    w.touched |= std::uint64_t{1} << static_cast<unsigned>(stage);
  }
  // The segment that ends with the measurement was reported just before.
  void on_latency_sample(int /*vcpu*/, int pcpu, Tsc /*deadline*/, Tsc /*t*/, std::int64_t /*ns*/) {
    auto& w = window(pcpu);
    if (!w.open) return;
    w.open = false;
    // Only the stages the window saw (the others would add 0).
    for (std::uint64_t m = w.touched; m; m &= m - 1) {
      const auto i = static_cast<std::size_t>(__builtin_ctzll(m));
      total_[i] += static_cast<double>(w.acc[i]);
    }
    ++samples_;
  }
  [[nodiscard]] std::uint64_t samples() const { return samples_; }
  // Mean cycles per sample spent in `s` after the deadline.
  [[nodiscard]] double mean_cycles(Stage s) const {
    return samples_ ? total_[static_cast<std::size_t>(s)] / static_cast<double>(samples_) : 0;
  }

 private:
  struct Window {
    Tsc deadline = 0;
    bool open = false;
    std::array<Tsc, kStageCount> acc{};
    std::uint64_t touched = 0;  // stages with acc != 0 possible (one bit each)
  };
  static_assert(kStageCount <= 64, "one bit per stage in Window::touched");
  Window& window(int pcpu) {
    if (static_cast<std::size_t>(pcpu) >= windows_.size())
      windows_.resize(static_cast<std::size_t>(pcpu) + 1);
    return windows_[static_cast<std::size_t>(pcpu)];
  }
  std::vector<Window> windows_;
  std::array<double, kStageCount> total_{};
  std::uint64_t samples_ = 0;
};

// Time per stage over the whole run (all pCPUs), for workloads that report
// per-iteration costs (vmexit.flat): snapshot before and after a batch.
class StageTotals : public Observer {
 public:
  void connect(SignalRegistry& signals) override {
    signals.get<ModelSignals>().segment.connect<&StageTotals::on_segment>(this);
  }
  using Totals = std::array<Tsc, kStageCount>;
  void on_segment(int /*pcpu*/, Stage stage, Tsc begin, Tsc end) {
    totals_[static_cast<std::size_t>(stage)] += end - begin;
  }
  [[nodiscard]] const Totals& totals() const { return totals_; }

 private:
  Totals totals_{};
};

}  // namespace kvmsim
