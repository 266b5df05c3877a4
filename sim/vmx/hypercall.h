// handle_vmcall() -> kvm_emulate_hypercall() (x86.c): the KVM hypercalls by
// number. Each registers itself from its own file (hc_*.cpp):
//
//   KVMSIM_HYPERCALL(KVM_HC_KICK_CPU, "KVM_HC_KICK_CPU", "cost.handle_kick_cpu", fn);
//
// `cost_key` names the hypercall's cost parameter (drawn when the VMCALL exit
// is handled); `fn(caller, a1, at)` applies its effects at `at` and returns
// the cycles it adds to the handler. A VMCALL of a number nobody registered
// is a modelling error (no modelled guest makes one).
#pragma once

#include <array>
#include <cstdint>

#include "sim/core/counters.h"
#include "sim/core/dist.h"
#include "sim/core/time.h"

namespace kvmsim {

class ParamSet;
class Vcpu;

inline constexpr std::size_t kMaxHypercall = 16;

struct Hypercall {
  Tsc (*fn)(Vcpu& caller, std::uint64_t a1, Tsc at) = nullptr;
  const char* name = nullptr;
  const char* cost_key = nullptr;
};

inline std::array<Hypercall, kMaxHypercall> g_kvm_hypercalls{};

struct RegisterHypercall {
  RegisterHypercall(std::uint32_t nr, const char* name, const char* cost_key,
                    Tsc (*fn)(Vcpu&, std::uint64_t, Tsc));
};

#define KVMSIM_HYPERCALL(nr, name, cost_key, fn) \
  static const ::kvmsim::RegisterHypercall hypercall_##nr(nr, name, cost_key, fn)

struct HypercallConfig {
  // 266e85a5ec9 (v5.3): KVM_HC_KICK_CPU is followed by kvm_sched_yield() to
  // the kicked vCPU when it is vcpu->ready (the kicker gives up its pCPU).
  bool kick_cpu_yield = false;
  std::array<Sampler, kMaxHypercall> cost;  // by number, from each Hypercall::cost_key
  static HypercallConfig from(const ParamSet& p, const TscClock& clk);
};

struct HypercallStats {
  std::uint64_t pv_kicks = 0;         // KVM_HC_KICK_CPU hypercalls this vCPU made
  std::uint64_t pv_kick_wakeups = 0;  // ... that woke the target from a halt it slept in
  // KVM_HC_KICK_CPU followed by a yield_to() the kicked vCPU
  // (kvm.kick_cpu_yield, 266e85a5ec9).
  std::uint64_t kick_yields = 0;
  // KVM_HC_SCHED_YIELD hypercalls (PV sched yield) and those that yielded.
  std::uint64_t sched_yield_calls = 0, sched_yields = 0;
  using Fields = CounterFields<HypercallStats, &HypercallStats::pv_kicks,
                               &HypercallStats::pv_kick_wakeups, &HypercallStats::kick_yields,
                               &HypercallStats::sched_yield_calls, &HypercallStats::sched_yields>;
};

// The vCPU a hypercall names (a1: the APIC ID, the model's vCPU index in the
// VM); an error if the VM has none such.
Vcpu& hypercall_target(Vcpu& caller, std::uint64_t a1, const char* hypercall);

}  // namespace kvmsim
