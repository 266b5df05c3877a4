// The steps a guest CPU's kernel context has queued before it continues
// (GuestKernel's process context, GuestIrq's handler): a first-in, first-out
// ring of GuestStep values. It replaces a std::deque there, whose push and
// pop check block boundaries and allocate 512-byte blocks as the queue walks
// through memory; the queue holds a few steps at a time, so one small ring
// that doubles when full stays in cache. Only what the two contexts use:
// push_back, front, pop_front, empty, size.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/vmx/guest_step.h"

namespace kvmsim {

class StepQueue {
 public:
  [[nodiscard]] bool empty() const { return head_ == tail_; }
  [[nodiscard]] std::size_t size() const { return tail_ - head_; }
  void push_back(const GuestStep& s) {
    if (tail_ - head_ == ring_.size()) grow();
    ring_[tail_++ & (ring_.size() - 1)] = s;
  }
  [[nodiscard]] const GuestStep& front() const { return ring_[head_ & (ring_.size() - 1)]; }
  void pop_front() { ++head_; }

 private:
  // Doubles the ring (a power of two), the queued steps in order at its start.
  [[gnu::noinline]] void grow() {
    std::vector<GuestStep> bigger(ring_.empty() ? 8 : 2 * ring_.size());
    for (std::size_t i = 0; head_ + i != tail_; ++i)
      bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    tail_ -= head_;
    head_ = 0;
    ring_.swap(bigger);
  }
  std::vector<GuestStep> ring_;
  std::size_t head_ = 0;  // steps ever popped (the front is at head_ mod the size)
  std::size_t tail_ = 0;  // steps ever pushed
};

}  // namespace kvmsim
