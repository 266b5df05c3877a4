// Where the latency goes: for every measured wake-up, the time each stage
// occupied the measuring vCPU's pCPU between the timer deadline and the
// measurement, averaged over samples. Stages sum to the mean latency.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/observer.h"

namespace kvmsim {

class LatencyBreakdown : public ModelObserver {
 public:
  void on_timer_armed(int /*vcpu*/, int pcpu, Tsc deadline) override {
    auto& w = window(pcpu);
    w.deadline = deadline;
    w.open = true;
    w.acc.fill(0);
  }
  void on_segment(int pcpu, Stage stage, Tsc begin, Tsc end) override {
    if (static_cast<std::size_t>(pcpu) >= windows_.size()) return;
    auto& w = windows_[static_cast<std::size_t>(pcpu)];
    if (!w.open || end <= w.deadline) return;
    w.acc[static_cast<std::size_t>(stage)] += end - (begin > w.deadline ? begin : w.deadline);
  }
  // The segment that ends with the measurement was reported just before.
  void on_latency_sample(int /*vcpu*/, int pcpu, Tsc /*deadline*/, Tsc /*t*/,
                         std::int64_t /*ns*/) override {
    auto& w = window(pcpu);
    if (!w.open) return;
    w.open = false;
    for (std::size_t i = 0; i < w.acc.size(); ++i) total_[i] += static_cast<double>(w.acc[i]);
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
  };
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
class StageTotals : public ModelObserver {
 public:
  using Totals = std::array<Tsc, kStageCount>;
  void on_segment(int /*pcpu*/, Stage stage, Tsc begin, Tsc end) override {
    totals_[static_cast<std::size_t>(stage)] += end - begin;
  }
  [[nodiscard]] const Totals& totals() const { return totals_; }

 private:
  Totals totals_{};
};

}  // namespace kvmsim
