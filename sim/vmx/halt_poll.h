// The per-halt window rule of kvm_vcpu_halt() (virt/kvm/kvm_main.c):
// grow_halt_poll_ns() / shrink_halt_poll_ns() and the keep / shrink / grow
// decision after each halt, in the shape each kernel era gave it. The Vcpu
// calls this after every halt (Vcpu::finish_halt); the replay test of the
// published grow/shrink trace drives the same function.
#pragma once

#include <cstdint>

namespace kvmsim {

// Eras of the rule, named by the first kernel that had it:
//  V4_0 "kvm: add halt_poll_ns module parameter" (Paolo Bonzini, 2015,
//       v4.0-v4.2): every halt polls for the full halt_poll_ns, no
//       per-vCPU window (the "always-poll" of the dynamic polling commit).
//  V4_3 "KVM: dynamic halt-polling" (aca6ff29c406, 2015): the first grow is
//       a hard-coded 10000 ns, a shrink may leave any value, grow is not
//       capped, no notion of an invalid wake-up.
//  V4_7 "KVM: halt_polling: provide a way to qualify wakeups during poll"
//       (Christian Borntraeger, 2016): an invalid wake-up that ended after
//       the window shrinks it; grow is capped at halt_poll_ns (the cap is
//       already in ~v4.4 sources: this era merges the two changes).
//  V5_2 halt_poll_ns_grow_start (Nir Weiner, 2019): the first step is
//       grow_start (any val*grow below it becomes grow_start); a shrink may
//       still leave a window below it; capped inside grow.
//  V5_15 "KVM: do not shrink halt_poll_ns below grow_start" (Sergey
//       Senozhatsky, 2021, also in stable kernels): a shrink below
//       grow_start goes to 0.
//  V6_2 "KVM: Obey kvm.halt_poll_ns in VMs not using KVM_CAP_HALT_POLL"
//       (David Matlack, 2022): the cap moved from grow to the start of
//       kvm_vcpu_halt(). This is the rule of ~v6.6, the trace's era.
// Since V5_2 a grow with halt_poll_ns_grow = 0 leaves the window unchanged
// but still emits the tracepoint (old -> old).
enum class HaltPollRule : std::uint8_t { V4_0, V4_3, V4_7, V5_2, V5_15, V6_2 };

struct HaltPollParams {
  std::uint32_t max_ns = 0;  // halt_poll_ns (the maximum); 0 = no polling
  std::uint32_t grow = 2;
  std::uint32_t grow_start = 10000;
  std::uint32_t shrink = 0;  // 0 = reset to 0
  HaltPollRule rule = HaltPollRule::V6_2;
};

// What one halt did to vcpu->halt_poll_ns: the tracepoint kvm_halt_poll_ns
// fires for Grow and Shrink (old -> new), not for Keep.
struct HaltPollUpdate {
  enum class Kind : std::uint8_t { Keep, Grow, Shrink } kind = Kind::Keep;
  std::uint32_t old_ns = 0, new_ns = 0;
};

// The window the next halt polls for: kvm_vcpu_halt() since V6_2 caps
// vcpu->halt_poll_ns at the maximum first (earlier eras capped inside grow,
// V4_3 not at all: the poll loop then runs for the grown value).
std::uint32_t halt_poll_window(const HaltPollParams& p, std::uint32_t& halt_poll_ns);

// After a halt that lasted `halt_ns` (from the start of kvm_vcpu_halt(),
// polling included) with a valid (`valid`) or invalid wake-up: updates
// `halt_poll_ns` by the era's rule and says what it did.
HaltPollUpdate halt_poll_update(const HaltPollParams& p, std::uint32_t& halt_poll_ns,
                                std::uint64_t halt_ns, bool valid = true);

std::uint32_t grow_halt_poll_ns(const HaltPollParams& p, std::uint32_t old);
std::uint32_t shrink_halt_poll_ns(const HaltPollParams& p, std::uint32_t old);

}  // namespace kvmsim
