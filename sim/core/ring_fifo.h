// A first-in, first-out queue of small values in one ring that doubles when
// full (a power of two): what the hot paths queue a few values at a time in
// (the guest contexts' steps, the deadlines a vCPU armed). std::deque there
// checks block boundaries on every push and pop and allocates 512-byte blocks
// as the queue walks through memory; the ring stays where it is, in cache.
#pragma once

#include <cstddef>
#include <vector>

namespace kvmsim {

template <class T>
class RingFifo {
 public:
  [[nodiscard]] bool empty() const { return head_ == tail_; }
  [[nodiscard]] std::size_t size() const { return tail_ - head_; }
  // By value: `v` may be a value of this ring, which grow() moves.
  void push_back(T v) {
    if (tail_ - head_ == ring_.size()) grow();
    ring_[tail_++ & (ring_.size() - 1)] = v;
  }
  [[nodiscard]] const T& front() const { return ring_[head_ & (ring_.size() - 1)]; }
  // The i-th value from the front (i < size()).
  [[nodiscard]] const T& operator[](std::size_t i) const {
    return ring_[(head_ + i) & (ring_.size() - 1)];
  }
  void pop_front() { ++head_; }
  // Drops the first n values (n <= size()).
  void drop_front(std::size_t n) { head_ += n; }

 private:
  // Doubles the ring, the queued values in order at its start.
  [[gnu::noinline]] void grow() {
    std::vector<T> bigger(ring_.empty() ? 8 : 2 * ring_.size());
    for (std::size_t i = 0; head_ + i != tail_; ++i) bigger[i] = (*this)[i];
    tail_ -= head_;
    head_ = 0;
    ring_.swap(bigger);
  }
  std::vector<T> ring_;
  std::size_t head_ = 0;  // values ever popped (the front is at head_ mod the size)
  std::size_t tail_ = 0;  // values ever pushed
};

}  // namespace kvmsim
