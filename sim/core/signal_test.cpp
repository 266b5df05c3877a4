// Open signals (sim/core/signal.h): a signal calls what is connected to it,
// in the order of connection, and nothing else; the registry holds one
// instance of each signal struct.
#include "sim/core/signal.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

using kvmsim::Signal;
using kvmsim::SignalRegistry;

namespace {
struct Recorder {
  std::vector<std::string>* log;
  std::string name;
  void on_event(int a, const std::string& s) const {
    log->push_back(name + ":" + std::to_string(a) + s);
  }
};
struct Demo {
  Signal<int, const std::string&> event;
  Signal<> other;
};
}  // namespace

TEST_CASE("signal: connected members and callables are called in connection order", "[signal]") {
  std::vector<std::string> log;
  Recorder a{&log, "a"};
  Recorder b{&log, "b"};
  Signal<int, const std::string&> sig;
  CHECK_FALSE(sig.connected());
  sig(1, "x");  // nothing connected: nothing happens
  sig.connect<&Recorder::on_event>(&a);
  sig.connect([&log](int n, const std::string& s) { log.push_back("f:" + std::to_string(n) + s); });
  sig.connect<&Recorder::on_event>(&b);
  CHECK(sig.connected());
  CHECK(sig.slots() == 3);
  sig(2, "y");
  sig(3, "z");
  CHECK(log == std::vector<std::string>{"a:2y", "f:2y", "b:2y", "a:3z", "f:3z", "b:3z"});
}

TEST_CASE("signal registry: one instance per struct, shared by emitter and observers", "[signal]") {
  SignalRegistry reg;
  Demo& emitter_side = reg.get<Demo>();
  int calls = 0;
  reg.get<Demo>().other.connect([&calls] { ++calls; });
  CHECK(&emitter_side == &reg.get<Demo>());
  emitter_side.other();
  emitter_side.other();
  CHECK(calls == 2);
  CHECK_FALSE(emitter_side.event.connected());  // connecting `other` leaves `event` alone
}
