// The event kernel must run processes in exactly SystemC 2.3.4's order: the
// same random script of notifications (timed, with many at one time, and
// delta), cancellations, run-ahead horizon queries and a stop, played once on
// SystemC's kernel (EventKernel in SystemC mode, as --systemc-kernel runs
// the model) and once on the model's own, must give the same log of (time,
// process) activations. A few fixed cases pin the rules one by one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "sim/core/event_kernel.h"
#include "sim/core/random.h"

using kvmsim::EventKernel;
using kvmsim::Tsc;

namespace {

// N processes; each activation logs itself and plays the next few steps of
// the script, drawn from one random stream in the order the processes run.
struct Script {
  EventKernel& kernel;
  kvmsim::Rng rng;
  int n;
  std::uint64_t stop_after;  // stop() at this activation (0: never)
  std::vector<std::string> log;
  std::uint64_t activations = 0;

  void activate(int p) {
    ++activations;
    log.push_back(std::to_string(EventKernel::now()) + ":" + std::to_string(p) + ":" +
                  std::to_string(kernel.time_to_pending_activity()));
    const int actions = 1 + static_cast<int>(rng.next_u64() % 3);
    for (int a = 0; a < actions; ++a) {
      const int q = static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(n));
      const std::uint64_t r = rng.next_u64() % 10;
      if (r < 2) {
        kernel.cancel(q);
      } else if (r < 4) {
        kernel.notify(q, 0);  // delta
      } else {
        // Few distinct delays: many notifications fall due at one time.
        kernel.notify(q, 10 * (1 + rng.next_u64() % 4));
      }
    }
    // Re-armed on its way out, as a pCPU is (mostly): the script lives on.
    if (rng.next_u64() % 10 != 0) kernel.notify(p, 10 * (rng.next_u64() % 4));
    if (activations == stop_after) kernel.stop();
  }
};

struct Proc {
  Script* script;
  int id;
};

// SystemC's side: a method statically sensitive to its own event.
class ScProc : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ScProc);
  explicit ScProc(const sc_core::sc_module_name& name) : sc_module(name) {
    SC_METHOD(run);
    sensitive << event;
    dont_initialize();
  }
  sc_core::sc_event event;
  Proc* proc = nullptr;

 private:
  // An SC_METHOD cannot be const.
  // NOLINTNEXTLINE(readability-make-member-function-const)
  void run() { proc->script->activate(proc->id); }
};

constexpr int kProcs = 7;

std::vector<std::string> play(bool systemc, std::uint64_t seed, Tsc until, std::uint64_t stop_after,
                              Tsc* end) {
  EventKernel kernel;
  kernel.use_systemc(systemc);
  Script script{kernel, kvmsim::Rng(seed, "event-kernel-test"), kProcs, stop_after, {}};
  std::vector<Proc> procs(kProcs);
  std::vector<std::unique_ptr<ScProc>> sc;
  for (int i = 0; i < kProcs; ++i) {
    procs[static_cast<std::size_t>(i)] = Proc{&script, i};
    sc_core::sc_event* ev = nullptr;
    if (systemc) {
      sc.push_back(std::make_unique<ScProc>(("p" + std::to_string(i)).c_str()));
      sc.back()->proc = &procs[static_cast<std::size_t>(i)];
      ev = &sc.back()->event;
    }
    kernel.add_process(
        &procs[static_cast<std::size_t>(i)],
        [](void* self) {
          auto* p = static_cast<Proc*>(self);
          p->script->activate(p->id);
        },
        ev);
  }
  // Before the run: a delta and timed notifications, some at one time.
  kernel.notify(0, 0);
  kernel.notify(1, 10);
  kernel.notify(2, 10);
  kernel.notify(3, 0);
  kernel.notify(4, 20);
  kernel.run(until);
  *end = EventKernel::now();
  return script.log;
}

}  // namespace

TEST_CASE("event kernel: the same activations in the same order as SystemC's kernel",
          "[core][event_kernel]") {
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  // One SystemC run per process: the long script, stopped at activation 20000
  // (the rest of that evaluation phase still runs) before its limit.
  Tsc end_sc = 0;
  Tsc end_native = 0;
  const auto sc_log = play(true, 7, 1000000, 20000, &end_sc);
  const auto native_log = play(false, 7, 1000000, 20000, &end_native);
  REQUIRE(sc_log.size() >= 20000);
  REQUIRE(native_log.size() == sc_log.size());
  for (std::size_t i = 0; i < sc_log.size(); ++i) {
    INFO("activation " << i);
    REQUIRE(native_log[i] == sc_log[i]);
  }
  CHECK(end_native == end_sc);
  CHECK(end_native < 1000000);  // the stop ended the run
}

TEST_CASE("event kernel: the run ends at its limit, processes due then do not run",
          "[core][event_kernel]") {
  Tsc end = 0;
  const auto log = play(false, 11, 35, 0, &end);
  CHECK(end == 35);
  REQUIRE(!log.empty());
  for (const auto& line : log) CHECK(std::stoull(line.substr(0, line.find(':'))) < 35);
}

TEST_CASE("event kernel: delta notifications fire from the last notified, timed ones by time",
          "[core][event_kernel]") {
  EventKernel kernel;
  std::vector<int> order;
  struct P {
    std::vector<int>* order;
    int id;
  };
  std::vector<P> ps{{&order, 0}, {&order, 1}, {&order, 2}, {&order, 3}};
  for (auto& p : ps)
    kernel.add_process(
        &p, [](void* self) { static_cast<P*>(self)->order->push_back(static_cast<P*>(self)->id); },
        nullptr);
  kernel.notify(3, 5);
  kernel.notify(0, 0);
  kernel.notify(1, 0);
  kernel.notify(2, 0);
  kernel.cancel(0);     // 2 takes 0's place in the delta list: [2, 1]
  kernel.notify(3, 2);  // an earlier notification replaces the pending one
  kernel.notify(3, 9);  // a later one does not
  kernel.run(100);
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(EventKernel::now() == 100);
}
