// Unit tests for the run advisories (sim/core/advisory.h) and the checks the
// mechanisms register (sim/vmx/advisories.cpp, sim/sched/advisories.cpp).
#include "sim/core/advisory.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/model_params.h"

using namespace kvmsim;

namespace {

std::vector<Advisory> about(const ParamSet& p, const Metrics& m, const std::string& key) {
  std::vector<Advisory> out;
  for (auto& a : AdvisoryRegistry::instance().check(p, m))
    if (a.key == key) out.push_back(a);
  return out;
}

bool says(const std::vector<Advisory>& a, const std::string& text) {
  return a.size() == 1 && a[0].text.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("advisory: each mechanism's checks are registered once, by name", "[advisory]") {
  const auto names = AdvisoryRegistry::instance().names();
  for (const char* n : {"halt_poll_never_polled", "guest_haltpoll_unused",
                        "shared_pcpu_without_tick", "latency_max_is_a_slice"})
    CHECK(std::count(names.begin(), names.end(), n) == 1);
  CHECK_THROWS_AS(
      AdvisoryRegistry::instance().add(
          "halt_poll_never_polled", [](const ParamSet&, const Metrics&, std::vector<Advisory>&) {}),
      std::logic_error);
}

TEST_CASE(
    "advisory: halt polling configured but never attempted says why: no halt within the "
    "maximum, the guest turned it off, or the vCPU was never alone on its pCPU",
    "[advisory]") {
  ParamSet p(model_params());
  p.set_text("kvm.halt_poll_ns", "50000", "test");
  Metrics m{{"vcpu.halts", 100},
            {"vcpu.blocks", 100},
            {"vcpu.blocked_s", 0.1},
            {"halt_poll.attempted", 0}};
  CHECK(says(about(p, m, "kvm.halt_poll_ns"), "no halt ended within the maximum window (50 us)"));
  CHECK(says(about(p, m, "kvm.halt_poll_ns"), "1000 us per halt"));
  m["halt_poll.grow"] = 3;
  CHECK(says(about(p, m, "kvm.halt_poll_ns"), "alone on its pCPU"));
  p.set_text("guest.haltpoll_ns", "200000", "test");
  p.set_text("guest.idle", "hlt", "test");
  CHECK(says(about(p, m, "kvm.halt_poll_ns"), "MSR_KVM_POLL_CONTROL"));
  m["halt_poll.attempted"] = 1;  // polled once: nothing to say
  CHECK(about(p, m, "kvm.halt_poll_ns").empty());
  p.set_text("kvm.halt_poll_ns", "0", "test");  // not configured: nothing to say
  m["halt_poll.attempted"] = 0;
  CHECK(about(p, m, "kvm.halt_poll_ns").empty());
}

TEST_CASE("advisory: guest.haltpoll_ns with the idle=poll loop cannot act", "[advisory]") {
  ParamSet p(model_params());
  p.set_text("guest.haltpoll_ns", "200000", "test");
  p.set_text("guest.idle", "poll", "test");
  CHECK(says(about(p, {}, "guest.haltpoll_ns"), "never enters cpuidle"));
  p.set_text("guest.idle", "hlt", "test");
  CHECK(says(about(p, {{"vcpu.halts", 10}}, "guest.haltpoll_ns"), "never polled"));
  CHECK(about(p, {{"vcpu.halts", 10}, {"guest.haltpoll.polls", 2}}, "guest.haltpoll_ns").empty());
}

TEST_CASE(
    "advisory: vCPUs sharing a pCPU on the 1 Hz nohz_full residual tick are said to, a stock "
    "pCPU's CONFIG_HZ tick is not",
    "[advisory]") {
  ParamSet p(model_params());
  p.set_text("vm.vcpus", "4", "test");
  p.set_text("vm.pinning", "[2, 3, 2, 3]", "test");
  CHECK(about(p, {}, "host.tick_hz").empty());  // by context: 250 Hz on pCPUs 2 and 3
  p.set_text("host.isolcpus", "[2, 3]", "test");
  CHECK(says(about(p, {}, "host.tick_hz"), "share pCPU 2, 3 whose host tick is 1 Hz"));
  p.set_text("host.tick_hz", "0", "test");
  CHECK(says(about(p, {}, "host.tick_hz"), "until it halts"));
  p.set_text("vm.pinning", "[2, 3, 4, 5]", "test");  // nothing shared
  CHECK(about(p, {}, "host.tick_hz").empty());
  p.set_text("vm.pinning", "[]", "test");
  p.set_text("vm.affinity", "[2, 3]", "test");  // 4 threads over 2 pCPUs
  CHECK(says(about(p, {}, "host.tick_hz"), "until it halts"));
}

TEST_CASE(
    "advisory: a latency maximum of a scheduler slice in a run with steal time is said to be "
    "the host scheduler's",
    "[advisory]") {
  ParamSet p(model_params());
  p.set_text("vm.vcpus", "2", "test");
  p.set_text("vm.pinning", "[2, 2]", "test");
  p.set_text("host.tick_hz", "1", "test");
  Metrics m{{"cyclictest.max_us", 1000004}, {"vcpu.steal_s", 1.5}};
  CHECK(says(about(p, m, "cyclictest.max_us"), "is a scheduler slice"));
  m["cyclictest.max_us"] = 40;  // a timer-path tail
  CHECK(about(p, m, "cyclictest.max_us").empty());
  m["cyclictest.max_us"] = 1000004;
  m["vcpu.steal_s"] = 0;  // nobody waited for a pCPU
  CHECK(about(p, m, "cyclictest.max_us").empty());
}
