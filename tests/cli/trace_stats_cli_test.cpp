// kvmsim trace-stats: reads a real trace excerpt, prints counts per exit
// reason (text and JSON), reports malformed lines by number, exit code 2
// only when the file cannot be opened.
#include <catch2/catch.hpp>

#include <regex>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

const std::string kKrause =
    "tests/data/traces/ftrace_kvm_events_modern-format_nested-boot_krause-2023.txt";

// stdout and stderr are merged; libsystemc's banner goes to stderr first.
nlohmann::json json_of(const std::string& output) {
  const auto at = output.find("\n{");
  return nlohmann::json::parse(at == std::string::npos ? output : output.substr(at + 1));
}

}  // namespace

TEST_CASE("trace-stats prints exit counts of a real modern-format trace", "[cli][trace]") {
  const auto r = run_cli("trace-stats " + kKrause);
  REQUIRE(r.exit_code == 0);
  // 13 kvm_exit lines (grep -v '^#' FILE | grep -c 'kvm_exit:'), 4 of them EXTERNAL_INTERRUPT.
  CHECK(std::regex_search(r.output, std::regex("\n  EXTERNAL_INTERRUPT +4 ")));
  CHECK(std::regex_search(r.output, std::regex("\n  CR_ACCESS +3 ")));
  CHECK(std::regex_search(r.output, std::regex("\n  total +13 ")));
  CHECK(std::regex_search(r.output, std::regex("\n  kvm_entry +12 ")));
  CHECK_THAT(r.output, Catch::Contains("malformed lines: 0"));
}

TEST_CASE("trace-stats --json gives the same counts", "[cli][trace]") {
  const auto r = run_cli("trace-stats " + kKrause + " --json");
  REQUIRE(r.exit_code == 0);
  const auto j = json_of(r.output);
  CHECK(j["exits"]["total"] == 13);
  CHECK(j["exits"]["reasons"]["EXTERNAL_INTERRUPT"]["count"] == 4);
  CHECK(j["exits"]["reasons"]["MSR_WRITE"]["count"] == 2);
  CHECK(j["exits"]["paired"] == 12);
  CHECK(j["events"]["kvm_entry"]["count"] == 12);
  CHECK(j["lines"]["comments"] == 3);
  CHECK(j["malformed"]["count"] == 0);
}

TEST_CASE("trace-stats reports malformed lines by number and still exits 0", "[cli][trace]") {
  const auto dir = out_dir("trace-stats");
  std::filesystem::create_directories(dir);
  const auto f = dir / "broken.txt";
  std::ofstream(f) << "# a comment\n"
                      "cpus=2\n"
                      "87162647182125: kvm_halt_poll_ns: vcpu 0: halt_poll_ns 10000 (grow 0)\n"
                      "not a trace line\n"
                      "87162647637763: kvm_halt_poll_ns: vcpu 0: halt_poll_ns 20000 (grow 10000)\n";
  const auto r = run_cli("trace-stats " + f.string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("malformed lines: 1 (line 4)"));
  CHECK_THAT(r.output, Catch::Contains("kvm_halt_poll_ns: 2 grow, 0 shrink"));
}

TEST_CASE("trace-stats on a missing file exits 2 with a message", "[cli][trace]") {
  const auto r = run_cli("trace-stats tests/data/traces/does-not-exist.txt");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output,
             Catch::Contains("cannot open trace file") && Catch::Contains("does-not-exist.txt"));
}
