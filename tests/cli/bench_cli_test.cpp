// kvmsim-bench (bench/): the figures it reports, from short runs. Timings are
// never compared with a bound here (shared machines are noisy); what is
// pinned is that every figure is there, consistent with the runs' own
// summary.json, and that a bad scenario list is refused with its file and line.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
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

// --vs-scenarios DIR: the --vs CLI runs the list's file under DIR (an older tree's
// scenarios), this CLI its own. The other tree's copy of t2 asks for 150 latencies, so
// the two runs' summaries tell which file each ran.
TEST_CASE("kvmsim-bench --vs-scenarios runs the --vs CLI on the other tree's scenario files",
          "[cli][bench]") {
  REQUIRE(std::filesystem::exists(bench_binary()));
  const auto dir = out_dir("bench-vs-tree");
  const auto tree = dir / "tree";
  std::filesystem::create_directories(tree / "scenarios");
  std::filesystem::copy(
      std::string(KVMSIM_SOURCE_DIR) + "/scenarios/platforms", tree / "scenarios" / "platforms",
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  {
    std::ifstream in(std::string(KVMSIM_SOURCE_DIR) + "/scenarios/tscdeadline_latency.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const auto at = yaml.find("size: 10000");
    REQUIRE(at != std::string::npos);
    yaml.replace(at, 11, "size: 150");
    std::ofstream(tree / "scenarios" / "tscdeadline_latency.yaml") << yaml;
  }
  const auto r = run_bench("--repeat 1 --only t2 --raw-events 100000 --no-perf --vs " +
                           std::string(KVMSIM_BINARY) + " --vs-scenarios " + tree.string() +
                           " --out " + dir.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(read_json(dir / "t2" / "summary.json").at("metrics").at("tscdeadline_latency.samples") ==
        10000);
  CHECK(read_json(dir / "t2@vs" / "summary.json").at("metrics").at("tscdeadline_latency.samples") ==
        150);
  CHECK(r.output.find("against --vs") != std::string::npos);

  // A file the other tree lacks, and the option without --vs, are refused.
  std::filesystem::remove(tree / "scenarios" / "tscdeadline_latency.yaml");
  auto bad = run_bench("--only t2 --no-perf --vs " + std::string(KVMSIM_BINARY) +
                       " --vs-scenarios " + tree.string() + " --out " + dir.string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("t2@vs: scenario not found: " + tree.string() +
                        "/scenarios/tscdeadline_latency.yaml") != std::string::npos);
  bad = run_bench("--only t2 --vs-scenarios " + tree.string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--vs-scenarios needs --vs") != std::string::npos);
}

// --scale: the cost-growth law. Three small points at a short simulated time: a row
// per point, events growing with the vCPUs, the fitted exponent printed and finite (its
// value is not pinned: timings are noisy here). The sizes are 8, 32 and 128: at 0.05 s
// the 16-vCPU point (2 guests on 8 pCPUs) has fewer events than the 8-vCPU one.
TEST_CASE("kvmsim-bench --scale runs a row per size, events grow, the exponent is finite",
          "[cli][bench]") {
  REQUIRE(std::filesystem::exists(bench_binary()));
  const auto dir = out_dir("bench-scale");
  const auto json_file = dir.string() + "/scale.json";
  // 0.2 simulated s: in the first ~0.1 s (threads starting, PLE windows
  // growing) 4 guests can make fewer events than 1 (0.05 s: 53637 at 8
  // vCPUs, 41498 at 32).
  const auto r = run_bench("--scale 8,32,128 --set sim.max_simulated_s=0.2 --out " + dir.string() +
                           " --json " + json_file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = read_json(json_file);
  CHECK(j.at("mode") == "scale");
  CHECK(j.at("vm_vcpus") == 8);
  const auto& pts = j.at("points");
  REQUIRE(pts.size() == 3);
  const unsigned vcpus[] = {8, 32, 128};
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("point " << i);
    const auto& p = pts.at(i);
    CHECK(p.at("vcpus") == vcpus[i]);
    CHECK(p.at("pcpus") == vcpus[i] / 2);
    CHECK(p.at("vms") == vcpus[i] / 8);
    CHECK(p.at("simulated_s").get<double>() == Approx(0.2));
    CHECK(p.at("cpu_s_per_simulated_s").get<double>() ==
          Approx(p.at("cpu_s").get<double>() / p.at("simulated_s").get<double>()));
    CHECK(p.at("events_per_vcpu_s").get<double>() ==
          Approx(p.at("events").get<double>() / (vcpus[i] * 0.2)));
    CHECK(p.at("max_rss_mb").get<double>() > 1);
    CHECK(p.at("startup_cpu_s").get<double>() >= 0);
    // The events the bench reports are the run's own.
    const auto m = read_json(dir / "scale" / std::to_string(vcpus[i]) / "summary.json");
    CHECK(p.at("events") == m.at("metrics").at("sim.events"));
    // A row on stdout: vCPUs, pCPUs, VMs, then the figures.
    const std::string row_start = std::to_string(vcpus[i]) + " ";
    bool found = false;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      unsigned v = 0, pc = 0, vms = 0;
      if (words >> v >> pc >> vms && v == vcpus[i] && pc == vcpus[i] / 2 && vms == vcpus[i] / 8)
        found = true;
    }
    CHECK(found);
    if (i > 0) CHECK(p.at("events").get<double>() > pts.at(i - 1).at("events").get<double>());
  }
  const double b = j.at("fit").at("exponent").get<double>();
  CHECK(std::isfinite(b));
  CHECK(j.at("local_exponents").size() == 2);
  for (const auto& l : j.at("local_exponents"))
    CHECK(std::isfinite(l.at("exponent").get<double>()));
  const auto at = r.output.find("fitted exponent b = ");
  REQUIRE(at != std::string::npos);
  const double printed = std::stod(r.output.substr(at + 20));
  CHECK(std::isfinite(printed));
  CHECK(printed == Approx(b).margin(0.001));
  CHECK(r.output.find("local exponents (where the law bends): 8->32 ") != std::string::npos);
  // The fit net of start-up: printed, or n/a when a short run's CPU s did not exceed its
  // start-up run's (possible at this length).
  CHECK((r.output.find("without start-up (net CPU/sim): b = ") != std::string::npos ||
         r.output.find("without start-up: n/a") != std::string::npos));
  if (!j.at("net_fit").is_null())
    CHECK(std::isfinite(j.at("net_fit").at("exponent").get<double>()));
}

TEST_CASE("kvmsim-bench --scale: a size that cannot run or a run that times out is an error",
          "[cli][bench]") {
  REQUIRE(std::filesystem::exists(bench_binary()));
  const auto dir = out_dir("bench-scale-bad");
  // Not a whole two-socket host: refused before any run.
  auto r = run_bench("--scale 8,12 --out " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("12 vCPUs: not a multiple of 8") != std::string::npos);
  CHECK(r.output.find("scale/8") == std::string::npos);  // nothing ran
  // A size beyond the model's host (4096 vCPUs: 2 x 512 cores, more than 256 per socket):
  // the start-up run fails with kvmsim's own message, not a missing row.
  r = run_bench("--scale 8,4096 --out " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("4096 vCPUs (start-up run): kvmsim failed") != std::string::npos);
  CHECK(r.output.find("out of range") != std::string::npos);
  // A run that outlives --timeout is killed and reported.
  r = run_bench("--scale 8,16 --timeout 3 --set sim.max_simulated_s=200 --out " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("8 vCPUs (measured run): timed out after 3 s") != std::string::npos);
  // Keys the scale sets itself, options it does not take, one size only.
  r = run_bench("--scale 8,16 --set vm.count=2 --out " + dir.string());
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--scale sets vm.count itself") != std::string::npos);
  r = run_bench("--scale 8,16 --repeat 2");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--scale does not take --repeat") != std::string::npos);
  r = run_bench("--scale 8");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("at least two vCPU counts") != std::string::npos);
  r = run_bench("--timeout 5");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--timeout needs --scale") != std::string::npos);
}
