#include "sim/core/event_kernel.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace kvmsim {

EventKernel::EventKernel() : heap_(1) {
  current_ = this;  // SystemC elaborates one simulation per process: so does the model
  ModelTime::systemc_ = false;
  ModelTime::kernel_now_ = 0;
}

void EventKernel::use_systemc(bool on) {
  if (!procs_.empty()) throw std::logic_error("EventKernel::use_systemc() after add_process()");
  systemc_ = on;
  ModelTime::systemc_ = on;
}

EventKernel::~EventKernel() {
  if (current_ == this) current_ = nullptr;
  ModelTime::systemc_ = true;
}

int EventKernel::add_process(void* self, Entry fn, sc_core::sc_event* event) {
  if (procs_.size() > kProcMask) throw std::length_error("EventKernel: too many processes");
  procs_.push_back(Process{self, fn, event});
  return static_cast<int>(procs_.size() - 1);
}

void EventKernel::notify(int p, Tsc delay) {
  if (systemc_) {
    procs_[static_cast<std::size_t>(p)].event->notify(cycles(delay));
    return;
  }
  Process& proc = procs_[static_cast<std::size_t>(p)];
  if (proc.pending == Pending::Delta) return;  // a delta notification wins over any other
  if (delay == 0) {
    if (proc.pending == Pending::Timed) kill_timed(proc);
    proc.delta_index = static_cast<int>(delta_.size());
    delta_.push_back(static_cast<std::uint32_t>(p));
    proc.pending = Pending::Delta;
    return;
  }
  const Tsc at = ModelTime::kernel_now_ + delay;
  if (proc.pending == Pending::Timed) {
    if (proc.timed_at <= at) return;  // SystemC keeps the earlier notification
    kill_timed(proc);
  }
  ++proc.ticket;
  heap_insert(Node{at, ((proc.ticket & kTicketMask) << kProcBits) | static_cast<std::uint64_t>(p)});
  proc.timed_at = at;
  proc.pending = Pending::Timed;
}

void EventKernel::cancel(int p) {
  if (systemc_) {
    procs_[static_cast<std::size_t>(p)].event->cancel();
    return;
  }
  Process& proc = procs_[static_cast<std::size_t>(p)];
  switch (proc.pending) {
    case Pending::Delta: {  // sc_simcontext::remove_delta_event()
      const auto i = static_cast<std::size_t>(proc.delta_index);
      const std::size_t last = delta_.size() - 1;
      if (i != last) {
        delta_[i] = delta_[last];
        procs_[delta_[i]].delta_index = static_cast<int>(i);
      }
      delta_.pop_back();
      proc.delta_index = -1;
      break;
    }
    case Pending::Timed:
      kill_timed(proc);
      break;
    case Pending::None:
      break;
  }
  proc.pending = Pending::None;
}

// sc_event::trigger() -> sc_method_process::trigger_static(): queued once.
void EventKernel::trigger(std::uint32_t p) {
  Process& proc = procs_[p];
  proc.pending = Pending::None;
  proc.delta_index = -1;
  if (proc.runnable) return;
  proc.runnable = true;
  runq_.push_back(p);
}

// sc_simcontext::crunch(): evaluation (the runnable processes in order; a
// process that stop()s lets the others of this phase run), then the delta
// notifications, from the last one notified, until nothing is runnable.
void EventKernel::crunch() {
  for (;;) {
    while (runq_next_ < runq_.size()) {
      Process& proc = procs_[runq_[runq_next_++]];
      proc.runnable = false;
      proc.fn(proc.self);
    }
    runq_.clear();
    runq_next_ = 0;
    if (forced_stop_) return;
    for (std::size_t i = delta_.size(); i-- > 0;) trigger(delta_[i]);
    delta_.clear();
    if (runq_.empty()) return;
  }
}

// sc_simcontext::next_time(): the time of the first live node; dead nodes at
// the top are dropped on the way.
bool EventKernel::next_time(Tsc& t) {
  while (heap_size() > 0) {
    if (live(heap_[1])) {
      t = heap_[1].at;
      return true;
    }
    heap_extract_top();
    ++stats_.dead;
  }
  return false;
}

Tsc EventKernel::time_to_pending_activity() {
  if (systemc_) return sc_core::sc_time_to_pending_activity().value();
  if (!delta_.empty() || runq_next_ < runq_.size()) return 0;
  Tsc t = std::numeric_limits<Tsc>::max();  // sc_max_time()
  next_time(t);
  return t - ModelTime::kernel_now_;
}

namespace {
struct Running {  // running_ for the scope of run(), also when a process throws
  explicit Running(bool& flag) : flag_(flag) { flag_ = true; }
  ~Running() { flag_ = false; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
  bool& flag_;
};
}  // namespace

// sc_start(until, SC_RUN_TO_TIME) -> sc_simcontext::simulate().
void EventKernel::run(Tsc until) {
  if (systemc_) {
    sc_core::sc_start(cycles(until));
    return;
  }
  if (forced_stop_) return;
  const Running guard(running_);
  Tsc& now = ModelTime::kernel_now_;
  Tsc t = 0;
  do {
    crunch();
    if (forced_stop_) return;
    t = now;
    do {
      if (!next_time(t) || t > until) {
        now = until;  // SC_RUN_TO_TIME
        return;
      }
      now = t;
      do {
        const Node n = heap_extract_top();
        if (live(n)) {
          trigger(n.proc());
        } else {
          ++stats_.dead;
        }
      } while (heap_size() > 0 && heap_[1].at == t);
    } while (runq_.empty());
  } while (t < until);
  // Processes due at `until` are runnable but do not run (SystemC holds off
  // that delta cycle).
}

void EventKernel::stop() {
  if (systemc_) {
    sc_core::sc_stop();
    return;
  }
  forced_stop_ = true;
}

bool EventKernel::stopped() const {
  if (systemc_) return sc_core::sc_get_simulator_status() != sc_core::SC_SIM_OK;
  return forced_stop_;
}

bool EventKernel::running() const { return systemc_ ? sc_core::sc_is_running() : running_; }

// sc_ppq_base::insert(): sift up while the parent is due later.
void EventKernel::heap_insert(Node n) {
  heap_.push_back(n);
  ++stats_.timed;
  stats_.max_heap = std::max<std::uint64_t>(stats_.max_heap, heap_size());
  std::size_t i = heap_size();
  while (i > 1 && heap_[i / 2].at > n.at) {
    heap_[i] = heap_[i / 2];
    i /= 2;
  }
  heap_[i] = n;
}

// sc_ppq_base::extract_top(): the last node to the top, then heapify(1).
EventKernel::Node EventKernel::heap_extract_top() {
  const Node top = heap_[1];
  const Node last = heap_.back();
  heap_.pop_back();
  if (heap_size() > 0) sift_down(last);
  return top;
}

// sc_ppq_base::heapify(1) for the node `n` put at the top: it swaps down with
// the earlier child (the left one on a tie) while that child is due strictly
// before it. Done here bottom-up (one comparison per level): the hole at the
// top follows the earlier children to the bottom, then `n` rises while the
// node above it is due at its time or later. Both place `n` below exactly the
// path nodes due strictly before it, so the heap is the same node for node.
void EventKernel::sift_down(Node n) {
  const std::size_t size = heap_size();
  std::size_t hole = 1;
  std::size_t c = 2;
  for (; c < size; c = 2 * hole) {  // both children there: no branch on which
    c += static_cast<std::size_t>(heap_[c + 1].at < heap_[c].at);
    heap_[hole] = heap_[c];
    hole = c;
  }
  if (c == size) {  // a left child alone
    heap_[hole] = heap_[c];
    hole = c;
  }
  while (hole > 1 && heap_[hole / 2].at >= n.at) {
    heap_[hole] = heap_[hole / 2];
    hole /= 2;
  }
  heap_[hole] = n;
}

void sim_stop() {
  if (EventKernel* k = EventKernel::current()) {
    k->stop();
  } else {
    sc_core::sc_stop();
  }
}

bool sim_running() {
  if (const EventKernel* k = EventKernel::current()) return k->running();
  return sc_core::sc_is_running();
}

}  // namespace kvmsim
