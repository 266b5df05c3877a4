// `kvmsim trace-stats --kvm-stat`: the kvm_stat table of a real trace
// excerpt, and the options that go with it.
#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

TEST_CASE("trace-stats --kvm-stat on a real ftrace excerpt: its kvm events and their rate",
          "[cli][kvm_stat]") {
  // 9 kvm_msr lines over 309 us (tests/data/traces/, source in its header).
  const auto r = run_cli(
      "trace-stats 'tests/data/traces/"
      "kvm_stat+perf-kvm-stat+ftrace_idle-openeuler-guest_4.19.ftrace-part.txt' --kvm-stat");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("\n Event                                         Total %Total CurAvg/s\n") !=
        std::string::npos);
  // 9 / 0.000309 s = 29126/s.
  CHECK(r.output.find("\n kvm_msr                                           9  100.0    29126\n") !=
        std::string::npos);
  CHECK(r.output.find("\n Total                                             9           29126\n") !=
        std::string::npos);
}

TEST_CASE("trace-stats --kvm-stat options: --drilldown needs it, --json excludes it",
          "[cli][kvm_stat]") {
  CHECK(run_cli("trace-stats x --drilldown").exit_code == 2);
  CHECK(run_cli("trace-stats x --kvm-stat --json").exit_code == 2);
  CHECK(run_cli("trace-stats x --kvm-stat --kvm-stat-reasons 2023").exit_code == 2);
}
