// kvmsim-bench (bench/): the figures it reports, from short runs. Timings are
// never compared with a bound here (shared machines are noisy); what is
// pinned is that every figure is there, consistent with the runs' own
// summary.json, and that a bad scenario list is refused with its file and line.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

std::string bench_binary() {
  return std::filesystem::path(KVMSIM_BINARY).parent_path().string() + "/kvmsim-bench";
}

CliResult run_bench(const std::string& args) {
  const std::string cmd =
      std::string("cd ") + KVMSIM_SOURCE_DIR + " && " + bench_binary() + " " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_CASE("kvmsim-bench reports rate, ratio, x real time, RSS per scenario and the T1 pair sum",
          "[cli][bench]") {
  REQUIRE(std::filesystem::exists(bench_binary()));
  const auto dir = out_dir("bench");
  const auto json_file = dir.string() + "/bench.json";
  const auto r = run_bench(
      "--repeat 2 --only t1,t2 --raw-events 200000 --no-perf"
      " --set cyclictest.loops=2000 --set tscdeadline_latency.size=300"
      " --out " +
      dir.string() + " --json " + json_file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(json_file);
  CHECK(j.at("repeat") == 2);
  CHECK(j.at("raw").at("median").at("events") == 200000);
  CHECK(j.at("raw").at("rounds").size() == 2);
  const auto& sc = j.at("scenarios");
  for (const char* name : {"t1.hv_on", "t1.hv_off", "t2"}) {
    INFO(name);
    REQUIRE(sc.contains(name));
    const auto& m = sc.at(name).at("median");
    CHECK(m.at("events_per_s").get<double>() > 0);
    CHECK(m.at("ratio_to_raw").get<double>() > 0);
    for (const auto& round : sc.at(name).at("rounds")) {
      CHECK(round.at("x_real_time").get<double>() ==
            Approx(round.at("simulated_s").get<double>() / round.at("loop_wall_s").get<double>()));
      CHECK(round.at("x_real_time_cpu").get<double>() ==
            Approx(round.at("simulated_s").get<double>() / round.at("cpu_s").get<double>()));
    }
    CHECK(m.at("x_real_time").get<double>() > 0);
    CHECK(m.at("x_real_time_cpu").get<double>() > 0);
    CHECK(m.at("cpu_ns_per_event").get<double>() > 0);
    CHECK(m.at("max_rss_mb").get<double>() > 1);
    CHECK_FALSE(m.contains("cycles_per_event"));  // --no-perf
    CHECK(sc.at(name).at("rounds").size() == 2);
  }
  // The runs' own summaries: the events the bench reports are theirs.
  const auto on = read_json(dir / "t1.hv_on" / "summary.json").at("metrics");
  const auto off = read_json(dir / "t1.hv_off" / "summary.json").at("metrics");
  CHECK(sc.at("t1.hv_on").at("median").at("events") == on.at("sim.events"));
  CHECK(on.at("cyclictest.loops") == 2000);
  // The pair: summed per round.
  REQUIRE(sc.contains("t1 (sum)"));
  CHECK(sc.at("t1 (sum)").at("median").at("events").get<double>() ==
        on.at("sim.events").get<double>() + off.at("sim.events").get<double>());
  CHECK(sc.at("t1 (sum)").at("median").at("simulated_s").get<double>() ==
        Approx(on.at("sim.simulated_s").get<double>() + off.at("sim.simulated_s").get<double>()));
  CHECK_FALSE(sc.contains("t2 (sum)"));  // a group of one
  CHECK(j.at("targets").at("group") == "t1");
  CHECK(j.at("targets").at("x_real_time_min") == 1000);
  CHECK(r.output.find("T1 pair:") != std::string::npos);
}

TEST_CASE("kvmsim-bench refuses a bad scenario list or selection, naming the file and line",
          "[cli][bench]") {
  REQUIRE(std::filesystem::exists(bench_binary()));
  const auto dir = out_dir("bench-bad");
  std::filesystem::create_directories(dir);
  const auto list = dir / "list.txt";
  std::ofstream(list) << "# comment\nt2 scenarios/tscdeadline_latency.yaml\nlonely\n";
  auto r = run_bench("--list " + list.string() + " --out " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find(list.string() + ":3: 'lonely' needs a scenario file") != std::string::npos);
  std::ofstream(list) << "t2 scenarios/tscdeadline_latency.yaml size\n";
  r = run_bench("--list " + list.string() + " --out " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find(":1: 'size' is not key=value") != std::string::npos);
  std::ofstream(list) << "t9 scenarios/no_such.yaml\n";
  r = run_bench("--list " + list.string() + " --out " + dir.string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("t9: scenario not found: scenarios/no_such.yaml") != std::string::npos);
  r = run_bench("--only nothing --out " + dir.string());
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("no scenario of") != std::string::npos);
  r = run_bench("--repeat 0");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--repeat needs a positive integer") != std::string::npos);
}
