// Bad input on the command line gets a clear error naming the file, line and
// key, and a non-zero exit; never a crash, never a silent default.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/model_params.h"
#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

TEST_CASE("an unknown --set key is an error that suggests the right key", "[cli][errors]") {
  const auto r = run_cli("run scenarios/cyclictest_pinned.yaml --set kvm.enable_hv_tmer=false");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown key 'kvm.enable_hv_tmer'") &&
                           Catch::Contains("did you mean 'kvm.enable_hv_timer'"));
}

TEST_CASE("a wrongly typed --set value is an error naming the key", "[cli][errors]") {
  const auto r = run_cli("run scenarios/cyclictest_pinned.yaml --set kvm.enable_hv_timer=1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("key 'kvm.enable_hv_timer'") &&
                           Catch::Contains("expected true or false"));
}

TEST_CASE("a misspelt subcommand is named and the subcommands are listed", "[cli][errors]") {
  const auto r = run_cli("rnu scenarios/cyclictest_pinned.yaml");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown subcommand 'rnu'") &&
                           Catch::Contains("run, params, metrics, trace-stats"));
  const auto none = run_cli("");
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.output, Catch::Contains("A subcommand is required"));
}

TEST_CASE("an out-of-range --set value is an error stating the range", "[cli][errors]") {
  const auto r =
      run_cli("run scenarios/cyclictest_pinned.yaml --set platform.preemption_timer_rate=40");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output,
             Catch::Contains("platform.preemption_timer_rate") && Catch::Contains("[0, 31]"));
}

TEST_CASE("an error inside a scenario file names file, line and key path", "[cli][errors]") {
  const auto dir = out_dir("badscen");
  std::filesystem::create_directories(dir);
  const auto f = dir / "bad.yaml";
  std::ofstream(f) << "include: " << KVMSIM_SOURCE_DIR
                   << "/scenarios/platforms/haswell-e5-2699v3.yaml\n"
                      "kvm:\n"
                      "  enable_hv_timer: true\n"
                      "  halt_pol_ns: 5\n";
  const auto r = run_cli("run " + f.string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("bad.yaml:4:") && Catch::Contains("kvm.halt_pol_ns"));
}

TEST_CASE("a bad cost distribution in a scenario is reported with its key", "[cli][errors]") {
  const auto r = run_cli("run scenarios/cyclictest_pinned.yaml --set 'cost.vmexit=normal(300ns)'");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("cost.vmexit") && Catch::Contains("normal("));
}

TEST_CASE("a missing scenario file is an error, not a crash", "[cli][errors]") {
  const auto r = run_cli("run scenarios/does-not-exist.yaml");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("does-not-exist.yaml"));
}

TEST_CASE("pinning a vCPU to a pCPU the host does not have is an error naming the key",
          "[cli][errors]") {
  const auto r = run_cli("run scenarios/cyclictest_pinned.yaml --set vm.pinning=[2,99] -q");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("vm.pinning") && Catch::Contains("pCPU 99"));
}

TEST_CASE("vm.pinning entries beyond the vCPUs are named in a warning, not dropped silently",
          "[cli][errors]") {
  const auto r = run_cli(
      "run scenarios/cyclictest_pinned.yaml --set cyclictest.loops=200 --set vm.vcpus=1 "
      "--set cyclictest.vcpu=0 -q");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("kvmsim: warning: vm.pinning: 2 pCPUs listed for 1 vCPU "
                                       "(vm.count x vm.vcpus); the last 1 (3) place no vCPU"));
  const auto exact = run_cli("run scenarios/cyclictest_pinned.yaml --set cyclictest.loops=200 -q");
  CHECK_THAT(exact.output, !Catch::Contains("pCPUs listed for"));
}

TEST_CASE("vm.pinning and vm.affinity together are refused", "[cli][errors]") {
  const auto r = run_cli(
      "run scenarios/cyclictest_pinned.yaml --set vm.pinning=[2,3] --set vm.affinity=[2,3] -q");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("vm.affinity"));
}

TEST_CASE("kvmsim params lists every contract key with its unit", "[cli][params]") {
  const auto r = run_cli("params");
  CHECK(r.exit_code == 0);
  for (const char* k : {"kvm.enable_hv_timer", "kvm.lapic_timer_advance_ns", "kvm.hv_timer_advance",
                        "vm.count", "vm.vcpus", "cyclictest.loops", "platform.tsc_khz"}) {
    INFO(k);
    CHECK_THAT(r.output, Catch::Contains(k));
  }
}

TEST_CASE(
    "params PREFIX lists only that subtree, one block per key, the doc wrapped to COLUMNS, and "
    "an unknown prefix is a usage error",
    "[cli]") {
  const auto r =
      run_cli_raw(std::string("COLUMNS=60 ") + KVMSIM_BINARY + " params kvm.halt_poll_ns 2>&1");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("kvm.halt_poll_ns  int, default 200000 ns") == 0);
  CHECK(r.output.find("kvm.halt_poll_ns_grow_start  int") != std::string::npos);
  CHECK(r.output.find("(version switch)") != std::string::npos);
  std::size_t start = 0;
  for (std::size_t end; (end = r.output.find('\n', start)) != std::string::npos; start = end + 1)
    if (r.output.compare(start, 4, "    ") == 0)
      CHECK(end - start <= 60);  // the doc, wrapped
    else
      CHECK(r.output.compare(start, 16, "kvm.halt_poll_ns") == 0);  // a key of the subtree
  const auto bad = run_cli("params no_such_prefix");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("no parameter key starts with 'no_such_prefix'") != std::string::npos);
}

TEST_CASE(
    "new-scenario writes a commented scenario for every workload that runs as written, with the "
    "workload's own keys, and refuses to overwrite or an unknown platform",
    "[cli]") {
  const auto dir = out_dir("new-scenario");
  std::filesystem::create_directories(dir);
  for (const auto& w : kvmsim::model_params().find("workload.type")->choices) {
    const auto file = (dir / (w + ".yaml")).string();
    const auto made =
        run_cli("new-scenario --platform skylake-sp-gold-6148 --workload " + w + " --out " + file);
    INFO(w << "\n" << made.output);
    REQUIRE(made.exit_code == 0);
    const std::string text = read_text(file);
    CHECK(text.find("include: ") != std::string::npos);
    CHECK(text.find("  type: \"" + w + "\"") != std::string::npos);
    CHECK(text.find("  # ") != std::string::npos);  // the docs as comments
    const auto r = run_cli("run " + file + " -q --set sim.max_simulated_s=0.02 --allow-partial");
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  const auto again = run_cli("new-scenario --platform skylake-sp-gold-6148 --workload busy --out " +
                             (dir / "busy.yaml").string());
  CHECK(again.exit_code == 2);
  CHECK(again.output.find("exists (--force replaces it)") != std::string::npos);
  const auto bad = run_cli("new-scenario --platform no-such-cpu --workload busy --out " +
                           (dir / "x.yaml").string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("platforms in scenarios/platforms: ") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "x.yaml"));
}

TEST_CASE("a scenario file with several bad entries reports every one, one error line each",
          "[cli][errors]") {
  const auto dir = out_dir("several_bad_entries");
  std::filesystem::create_directories(dir);
  const auto file = dir / "bad.yaml";
  {
    std::ofstream f(file);
    f << "include: " << std::filesystem::absolute("scenarios/platforms/haswell-e5-2699v3.yaml")
      << "\nvm:\n  vcpus: -3\n  bogus: 1\nguest:\n  hz: abc\nworkload:\n  type: idle\n";
  }
  const auto r = run_cli("run " + file.string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("bad.yaml:3:10: key 'vm.vcpus': -3 is out of range"));
  CHECK_THAT(r.output,
             Catch::Contains("kvmsim: error: " + file.string() + ":4:3: unknown key 'vm.bogus'"));
  CHECK_THAT(r.output, Catch::Contains("kvmsim: error: " + file.string() +
                                       ":6:7: key 'guest.hz': expected an integer"));
}
