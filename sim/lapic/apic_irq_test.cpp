// The virtual APIC's vectors: IRR/ISR priority, EOI, the posted-interrupt
// descriptor (apic_irq.h).
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "sim/lapic/apic_irq.h"

using namespace kvmsim;

TEST_CASE("the highest vector is delivered first, a lower class waits for the EOI",
          "[lapic][irq]") {
  ApicIrqState s;
  CHECK(s.ack() == ApicIrqState::kNone);
  s.set_irr(0x20);
  s.set_irr(0xec);
  CHECK(s.highest_irr() == 0xec);
  CHECK(s.ack() == 0xec);  // timer first
  CHECK(s.isr_test(0xec));
  CHECK(s.ppr() == 0xe0);
  CHECK(s.deliverable() == ApicIrqState::kNone);  // 0x20 is below the in-service class
  CHECK(s.ack() == ApicIrqState::kNone);
  CHECK(s.eoi() == 0xec);
  CHECK(s.ack() == 0x20);
  CHECK(s.eoi() == 0x20);
  CHECK(s.eoi() == ApicIrqState::kNone);  // spurious EOI
}

TEST_CASE("a higher class nests over a lower one in service, EOI clears the highest ISR bit",
          "[lapic][irq]") {
  ApicIrqState s;
  s.set_irr(0x20);
  CHECK(s.ack() == 0x20);
  s.set_irr(0xec);
  CHECK(s.deliverable() == 0xec);  // class 0xe > PPR 0x20
  CHECK(s.ack() == 0xec);
  s.set_irr(0x2f);  // same class as the one in service: not deliverable
  CHECK(s.deliverable() == ApicIrqState::kNone);
  CHECK(s.eoi() == 0xec);
  CHECK(s.deliverable() == ApicIrqState::kNone);  // 0x20 still in service
  CHECK(s.eoi() == 0x20);
  CHECK(s.ack() == 0x2f);
}

TEST_CASE("edge interrupts to a vector already pending coalesce", "[lapic][irq]") {
  ApicIrqState s;
  CHECK(s.set_irr(0x30));
  CHECK_FALSE(s.set_irr(0x30));
  CHECK(s.ack() == 0x30);
  CHECK(s.ack() == ApicIrqState::kNone);
}

TEST_CASE("posted interrupts: only the first post asks for a notification, sync moves the PIR",
          "[lapic][irq][posted]") {
  ApicIrqState s;
  CHECK(s.post(0x20));
  CHECK_FALSE(s.post(0x21));  // ON already set
  CHECK(s.pir_pending());
  CHECK(s.highest_irr() == ApicIrqState::kNone);
  CHECK(s.sync_pir_to_irr() == 2);
  CHECK_FALSE(s.pir_pending());
  CHECK(s.sync_pir_to_irr() == 0);
  CHECK(s.ack() == 0x21);
  CHECK(s.post(0x22));  // ON was cleared by the sync: notify again
}

TEST_CASE("random post / sync / ack / EOI: every vector sent is delivered once, none twice",
          "[lapic][irq][posted]") {
  // Senders post distinct "messages" on a few vectors, waiting (as
  // on_cpu(wait) does) until the previous one on that vector was taken;
  // the target syncs, acks and EOIs at random moments.
  std::mt19937_64 rng(42);
  ApicIrqState s;
  const std::uint8_t vecs[] = {0x20, 0x21, 0xec, 0xfd};
  std::map<int, int> outstanding;
  std::map<int, int> sent;
  std::map<int, int> delivered;
  for (int step = 0; step < 200000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0) {
      const std::uint8_t v = vecs[rng() % 4];
      if (outstanding[v] == 0) {
        s.post(v);
        ++outstanding[v];
        ++sent[v];
      }
    } else if (op == 1) {
      s.sync_pir_to_irr();
    } else if (op == 2) {
      const int v = s.ack();
      if (v != ApicIrqState::kNone) {
        ++delivered[v];
        REQUIRE(outstanding[v] == 1);
        outstanding[v] = 0;
      }
    } else {
      s.eoi();
    }
  }
  // Drain.
  for (int i = 0; i < 16; ++i) {
    s.sync_pir_to_irr();
    const int v = s.ack();
    if (v != ApicIrqState::kNone) {
      ++delivered[v];
      outstanding[v] = 0;
    }
    s.eoi();
  }
  for (const auto v : vecs) {
    INFO("vector " << int(v));
    CHECK(sent[v] > 1000);
    CHECK(delivered[v] == sent[v]);
  }
}
