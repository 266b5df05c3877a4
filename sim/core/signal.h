// Open signals: a mechanism declares the events it emits as Signal members of
// its own struct (sim/vmx/kvm_signals.h, sim/lapic/lapic_signals.h,
// sim/sched/sched_signals.h, the core's model_signals.h); tracing,
// statistics, views and checks connect to the ones they need. The core knows
// none of KVM's names (SimGrid's s4u signals, gem5's probe points).
//
// A call with nothing connected costs one compare. A connected member
// function is called through one indirect call (a trampoline that calls the
// member directly), in the order of connection.
#pragma once

#include <functional>
#include <memory>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvmsim {

template <class... Args>
class Signal {
 public:
  // Connects obj->*Method; `obj` must outlive the run.
  template <auto Method, class T>
  void connect(T* obj) {
    slots_.push_back({obj, &call_member<Method, T>});
  }
  // Connects a callable (kept by the signal).
  template <class F>
  void connect(F&& f) {
    auto fn = std::make_unique<std::function<void(Args...)>>(std::forward<F>(f));
    slots_.push_back({fn.get(), &call_function});
    owned_.push_back(std::move(fn));
  }
  [[nodiscard]] bool connected() const { return !slots_.empty(); }
  [[nodiscard]] std::size_t slots() const { return slots_.size(); }

  void operator()(Args... args) const {
    for (const auto& s : slots_) s.fn(s.obj, args...);
  }

 private:
  template <auto Method, class T>
  static void call_member(void* obj, Args... args) {
    (static_cast<T*>(obj)->*Method)(args...);
  }
  static void call_function(void* fn, Args... args) {
    (*static_cast<std::function<void(Args...)>*>(fn))(args...);
  }
  struct Slot {
    void* obj;
    void (*fn)(void*, Args...);
  };
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<std::function<void(Args...)>>> owned_;
};

// One instance of each signal struct per simulation, created on first use.
// Emitters look theirs up once, at construction, and keep the reference.
class SignalRegistry {
 public:
  template <class S>
  S& get() {
    auto& p = structs_[std::type_index(typeid(S))];
    if (!p) p = std::make_shared<S>();
    return *static_cast<S*>(p.get());
  }

 private:
  std::unordered_map<std::type_index, std::shared_ptr<void>> structs_;
};

}  // namespace kvmsim
