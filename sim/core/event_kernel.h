// The pCPUs' event kernel: the scheduling of SystemC 2.3.4, for the one kind
// of process the model has (a method statically sensitive to one event of
// its own: Pcpu::dispatch on Pcpu::wake_), without SystemC's per-event costs.
//
// Why: in a many-pCPU run SystemC's timed-event queue was half the profile
// (each notification a heap node allocated, compared through a function
// pointer, triggered through the sensitivity lists). Here a notification is
// a 16-byte value in a flat heap and a trigger is a push on a vector.
//
// The order is SystemC's, step for step, so every output is the same as with
// SystemC's own kernel (`--systemc-kernel` runs that one; a test compares the
// two). Events due at one time fire in the order of SystemC's binary heap
// (sc_ppq), which depends on the heap's whole history, cancelled
// notifications included: they stay in the heap, dead, until they reach its
// top, as sc_event::cancel() leaves them. So the heap below is sc_ppq's
// algorithm on the same sequence of inserts and extractions:
//   - timed: sc_event::notify(t) (an earlier pending notification wins),
//     cancel() kills the pending node; at each time step every node due then
//     is extracted, in heap order, and a live one makes its process runnable
//     (sc_simcontext::simulate);
//   - delta (t == 0): appended to a list, cancel() swaps the last one in
//     (remove_delta_event); the list triggers from the back
//     (sc_simcontext::crunch's notification phase);
//   - runnable processes run first in, first out (sc_runnable), a process
//     queued once however often it is triggered;
//   - stop(): the rest of the current evaluation phase still runs
//     (SC_STOP_FINISH_DELTA), then the run ends at that time;
//   - run(until): sc_start(until) with SC_RUN_TO_TIME: nodes due at `until`
//     are extracted but their processes do not run; time ends at `until`
//     unless stopped.
//
// With --vcd the run needs SystemC's kernel (sc_trace samples at its time
// steps): then every call forwards to the process's sc_event and to SystemC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <systemc>

#include "sim/core/model_time.h"

namespace kvmsim {

class EventKernel {
 public:
  using Entry = void (*)(void* self);

  EventKernel();
  ~EventKernel();
  EventKernel(const EventKernel&) = delete;
  EventKernel& operator=(const EventKernel&) = delete;

  // Run on SystemC's own kernel (before any process is added).
  void use_systemc(bool on);
  [[nodiscard]] bool systemc() const { return systemc_; }

  // A process: `fn(self)` runs when `event` (used by SystemC's kernel only)
  // fires. Returns its handle.
  int add_process(void* self, Entry fn, sc_core::sc_event* event);

  // sc_event::notify(sc_time(delay)) and sc_event::cancel() of process p's event.
  void notify(int p, Tsc delay);
  void cancel(int p);

  // The kernel's time (SystemC's in SystemC mode).
  [[nodiscard]] static Tsc now() { return ModelTime::kernel_now(); }
  // sc_time_to_pending_activity(): 0 if anything can run at the current
  // time, else the time to the next live notification (max - now if none).
  // Like SystemC's, it drops dead nodes from the heap's top.
  [[nodiscard]] Tsc time_to_pending_activity();

  // sc_start(until) in the kernel's time; returns when the time reaches
  // `until` or after stop().
  void run(Tsc until);
  // sc_stop() / sc_get_simulator_status() != SC_SIM_OK / sc_is_running().
  void stop();
  [[nodiscard]] bool stopped() const;
  [[nodiscard]] bool running() const;

  // The kernel of the run in progress (nullptr outside a run's elaboration):
  // what sim_stop() and sim_running() act on.
  static EventKernel* current() { return current_; }

  // For KVMSIM_RUN_AHEAD_STATS: notifications queued, nodes extracted dead
  // (cancelled), the heap's largest size.
  struct Stats {
    std::uint64_t timed = 0, dead = 0, max_heap = 0;
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  enum class Pending : std::uint8_t { None, Delta, Timed };
  struct Process {
    void* self;
    Entry fn;
    sc_core::sc_event* event;
    Tsc timed_at = 0;          // when the pending timed notification is due
    std::uint64_t ticket = 0;  // the live timed node carries this ticket
    int delta_index = -1;
    Pending pending = Pending::None;
    bool runnable = false;
  };
  // sc_event_timed: its process (low 24 bits) and the process's ticket when
  // it was inserted (40 bits: a process would have to be re-armed 10^12
  // times while one node waits); dead when the ticket is no longer current.
  struct Node {
    Tsc at;
    std::uint64_t key;
    [[nodiscard]] std::uint32_t proc() const { return static_cast<std::uint32_t>(key & kProcMask); }
  };
  static constexpr std::uint64_t kProcBits = 24;
  static constexpr std::uint64_t kProcMask = (std::uint64_t{1} << kProcBits) - 1;
  static constexpr std::uint64_t kTicketMask = (std::uint64_t{1} << (64 - kProcBits)) - 1;

  [[nodiscard]] bool live(const Node& n) const {
    const Process& p = procs_[n.proc()];
    return p.pending == Pending::Timed && (p.ticket & kTicketMask) == (n.key >> kProcBits);
  }
  static void kill_timed(Process& p) { ++p.ticket; }
  void trigger(std::uint32_t p);
  void crunch();
  bool next_time(Tsc& t);
  // sc_ppq: a binary max-heap on "earlier", 1-based (heap_[0] unused).
  void heap_insert(Node n);
  Node heap_extract_top();
  void sift_down(Node n);
  [[nodiscard]] std::size_t heap_size() const { return heap_.size() - 1; }

  bool systemc_ = false;
  bool running_ = false;
  bool forced_stop_ = false;
  std::vector<Process> procs_;
  std::vector<Node> heap_;
  std::vector<std::uint32_t> delta_;
  std::vector<std::uint32_t> runq_;
  std::size_t runq_next_ = 0;  // the next process of runq_ to run
  Stats stats_;
  static inline EventKernel* current_ = nullptr;
};

// sc_stop() and sc_is_running() for the run in progress, whichever kernel
// runs it.
void sim_stop();
bool sim_running();

}  // namespace kvmsim
