// The interrupt state of a (virtual) local APIC: the 256-bit IRR and ISR of
// arch/x86/kvm/lapic.c (apic_set_irr, apic_find_highest_irr/isr,
// kvm_apic_has_interrupt / kvm_get_apic_interrupt, apic_set_eoi) and the
// posted-interrupt descriptor of VMX (struct pi_desc: PIR + the ON bit,
// vmx_deliver_posted_interrupt, vmx_sync_pir_to_irr). TPR is 0 in every
// modelled guest, so the processor priority is the ISR's priority class.
#pragma once

#include <cstdint>

namespace kvmsim {

class ApicIrqState {
 public:
  static constexpr int kNone = -1;

  // apic_set_irr(): true if the vector was not already pending (an edge
  // interrupt to a vector already in the IRR coalesces into it).
  bool set_irr(std::uint8_t v) {
    const bool was = irr_.test(v);
    irr_.set(v);
    return !was;
  }
  [[nodiscard]] bool irr_test(std::uint8_t v) const { return irr_.test(v); }
  [[nodiscard]] bool isr_test(std::uint8_t v) const { return isr_.test(v); }
  [[nodiscard]] int highest_irr() const { return highest(irr_); }
  [[nodiscard]] int highest_isr() const { return highest(isr_); }
  // apic_update_ppr() with TPR 0: PPR = the ISR's priority class.
  [[nodiscard]] int ppr() const {
    const int isr = highest_isr();
    return isr == kNone ? 0 : isr & 0xf0;
  }
  // apic_has_interrupt_for_ppr(): the highest IRR vector if its priority
  // class is above the PPR, else none.
  [[nodiscard]] int deliverable() const {
    const int v = highest_irr();
    return v != kNone && (v & 0xf0) > ppr() ? v : kNone;
  }
  // kvm_get_apic_interrupt() / virtual-interrupt delivery: the deliverable
  // vector moves from IRR to ISR.
  int ack() {
    const int v = deliverable();
    if (v == kNone) return kNone;
    irr_.reset(static_cast<unsigned>(v));
    isr_.set(static_cast<unsigned>(v));
    return v;
  }
  // apic_set_eoi() (or the virtualized EOI with APICv): clear the highest
  // ISR vector; returns it (kNone for a spurious EOI).
  int eoi() {
    const int v = highest_isr();
    if (v != kNone) isr_.reset(static_cast<unsigned>(v));
    return v;
  }

  // Posted interrupts: pi_test_and_set_pir() + pi_test_and_set_on(). Returns
  // true if the ON bit was clear, i.e. a notification is needed.
  bool post(std::uint8_t v) {
    pir_.set(v);
    const bool notify = !on_;
    on_ = true;
    return notify;
  }
  [[nodiscard]] bool pir_pending() const { return on_; }
  // vmx_sync_pir_to_irr() (or the CPU's posted-interrupt processing on a
  // notification in non-root mode): PIR bits move to the IRR, ON clears.
  // Returns how many vectors were new in the IRR.
  int sync_pir_to_irr() {
    if (!on_) return 0;
    on_ = false;
    int n = 0;
    for (int w = 0; w < 4; ++w) {  // word by word, as vmx_sync_pir_to_irr() does
      // (a library call without POPCNT in the target ISA: skip empty words)
      if (const std::uint64_t fresh = pir_.w[w] & ~irr_.w[w]) n += __builtin_popcountll(fresh);
      irr_.w[w] |= pir_.w[w];
      pir_.w[w] = 0;
    }
    return n;
  }

 private:
  // A 256-bit register as four 64-bit words (the highest set bit found with
  // one count-leading-zeros per word instead of a 256-step scan).
  struct Bits256 {
    std::uint64_t w[4] = {0, 0, 0, 0};
    [[nodiscard]] bool test(unsigned v) const { return ((w[v >> 6] >> (v & 63)) & 1u) != 0u; }
    void set(unsigned v) { w[v >> 6] |= std::uint64_t{1} << (v & 63); }
    void reset(unsigned v) { w[v >> 6] &= ~(std::uint64_t{1} << (v & 63)); }
  };
  static int highest(const Bits256& b) {
    for (int i = 3; i >= 0; --i)
      if (b.w[i]) return i * 64 + 63 - __builtin_clzll(b.w[i]);
    return kNone;
  }
  Bits256 irr_, isr_, pir_;
  bool on_ = false;
};

}  // namespace kvmsim
