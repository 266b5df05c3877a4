// Hostile inputs and hostile environments (docs/guide/errors-and-outputs.md): each
// gives a clear message and a non-zero exit, or a correct result; outputs are
// complete or absent whatever happens to the run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;
namespace fs = std::filesystem;

namespace {

const std::string kShortT1 = "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=300";

bool has(const CliResult& r, const std::string& s) { return r.output.find(s) != std::string::npos; }

// No output file and no temporary left in `dir`.
std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      (void)e;
      ++n;
    }
  return n;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

const char* kHistogram =
    "# Histogram\n000000 000000\n000001 000003\n000002 000001\n"
    "# Total: 000000004\n# Min Latencies: 00001\n# Avg Latencies: 00001\n"
    "# Max Latencies: 00002\n# Histogram Overflows: 00000\n";

}  // namespace

TEST_CASE("a stage cost above one simulated second is an error naming the key",
          "[cli][reliability]") {
  const auto r = run_cli("run " + kShortT1 + " -q --set cost.vmexit=1e10s");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(has(r, "cost.vmexit"));
  CHECK(has(r, "above one simulated second"));
  // In a distribution's parameters too, and in cycles.
  CHECK(run_cli("run " + kShortT1 + " -q --set 'cost.vmexit=normal(2s, 1us)'").exit_code == 2);
  CHECK(run_cli("run " + kShortT1 + " -q --set cost.vmexit=2e10cyc").exit_code == 2);
  CHECK(run_cli("run " + kShortT1 + " -q --set 'cost.vmexit=lognormal(1us, 5)'").exit_code == 2);
}

TEST_CASE("a run cut by sim.max_simulated_s fails unless --allow-partial", "[cli][reliability]") {
  const auto d = out_dir("rel-cut");
  const std::string cut =
      "run " + kShortT1 + " -q --set sim.max_simulated_s=0.1 --out " + d.string();
  const auto r = run_cli(cut);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(has(r, "before its workload finished (cyclictest "));
  CHECK(has(r, "/300 loops)"));
  CHECK(files_in(d) == 0);

  const auto p = run_cli(cut + " --allow-partial");
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK(has(p, "warning: partial result"));
  const auto m = read_json(d / "summary.json").at("metrics");
  CHECK(m.at("sim.partial") == 1);
  CHECK(m.at("cyclictest.loops").get<double>() < 300);
  CHECK(files_in(d) == 2);  // summary.json, histogram.txt; no temporary left
}

TEST_CASE("host noise that saturates the pCPUs is refused before the run, heavy noise warned",
          "[cli][reliability]") {
  // Was: minutes of silence, then "0 loops, avg nan" with exit 0.
  auto r = run_cli("run " + kShortT1 + " -q --set noise.irq.rate_hz=1e5");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(has(r, "key 'noise.irq.rate_hz': host noise takes 108% of every pCPU"));
  CHECK(has(r, "can never finish"));
  r = run_cli("run " + kShortT1 + " -q --set noise.irq.rate_hz=5e4");
  CHECK(r.exit_code == 0);
  CHECK(has(r, "warning: host noise takes 54% of every pCPU"));
}

TEST_CASE("a full disk on any output fails the run with the path, and leaves nothing",
          "[cli][reliability]") {
  for (const char* opt : {"--trace", "--perfetto", "--vcd"}) {
    const auto d = out_dir(std::string("rel-full") + opt);
    const auto r =
        run_cli("run " + kShortT1 + " -q --out " + d.string() + " " + opt + " /dev/full");
    INFO(opt << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r, "/dev/full"));
    CHECK(has(r, "No space left on device"));
    CHECK(files_in(d) == 0);  // no summary of a run whose outputs failed
  }
  // stdout too.
  const auto s = run_cli_raw(KVMSIM_BINARY " run " + kShortT1 + " 2>&1 >/dev/full");
  CHECK(s.exit_code == 1);
  CHECK(has(s, "stdout"));
}

TEST_CASE("SIGINT and SIGTERM leave complete outputs or none, and exit 130 / 143",
          "[cli][reliability][signal]") {
  for (const auto& [sig, code] : {std::pair<std::string, int>{"INT", 130}, {"TERM", 143}}) {
    const auto d = out_dir("rel-sig-" + sig);
    fs::create_directories(d);
    const std::string outputs = " --out " + d.string() + " --trace " + (d / "t.txt").string() +
                                " --perfetto " + (d / "p.json").string() + " --vcd " +
                                (d / "w.vcd").string();
    // The full T1 run takes seconds; the signal comes after one.
    const std::string cmd = "timeout --preserve-status -s " + sig +
                            " 1.5 " KVMSIM_BINARY " run scenarios/cyclictest_pinned.yaml -q";
    const auto r = run_cli_raw(cmd + outputs + " 2>&1");
    INFO(r.output);
    CHECK(r.exit_code == code);
    CHECK(has(r, "interrupted by SIG" + sig + " at "));
    CHECK(has(r, "no output written"));
    CHECK(files_in(d) == 0);

    // --allow-partial keeps them: every one complete and valid.
    const auto k = run_cli_raw(cmd + outputs + " --allow-partial 2>&1");
    INFO(k.output);
    CHECK(k.exit_code == code);
    REQUIRE(fs::exists(d / "summary.json"));
    CHECK(read_json(d / "summary.json").at("metrics").at("sim.partial") == 1);
    CHECK_NOTHROW(nlohmann::json::parse(read_text(d / "p.json")));
    const std::string trace = read_text(d / "t.txt");
    REQUIRE(!trace.empty());
    CHECK(trace.back() == '\n');
    const std::string vcd = read_text(d / "w.vcd");
    CHECK(vcd.find("$enddefinitions") != std::string::npos);
    CHECK(vcd.back() == '\n');
    CHECK(files_in(d) == 5);  // no temporaries
    const auto st = run_cli("trace-stats " + (d / "t.txt").string() + " --json");
    CHECK(st.exit_code == 0);
    CHECK(has(st, "\"malformed\": {\n    \"count\": 0"));
  }
}

TEST_CASE("output paths are checked before the run", "[cli][reliability]") {
  const auto d = out_dir("rel-out");
  write_file(d / "afile", "x");
  // The full T1 run would take seconds: these must fail at once, exit 2.
  const std::string t1 = "run scenarios/cyclictest_pinned.yaml -q ";
  auto r = run_cli(t1 + "--out " + (d / "afile").string());
  CHECK(r.exit_code == 2);
  CHECK(has(r, "exists and is not a directory"));
  r = run_cli(t1 + "--out ''");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "--out: the directory name is empty"));
  r = run_cli(t1 + "--out /proc/kvmsim-no/out");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "--out /proc/kvmsim-no/out: cannot create the directory"));
  r = run_cli(t1 + "--trace " + d.string());
  CHECK(r.exit_code == 2);
  CHECK(has(r, "is a directory, not a file"));
  r = run_cli(t1 + "--vcd /proc/kvmsim.vcd");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "--vcd /proc/kvmsim.vcd"));
  CHECK(files_in(d) == 1);  // only afile
}

TEST_CASE("usage errors and a bad --seed exit 2 with a short message", "[cli][reliability]") {
  auto r = run_cli("run " + kShortT1 + " -q --seed -3");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "--seed -3: must be a whole number in [0, 9000000000000000]"));
  r = run_cli("run " + kShortT1 + " -q --seed 99999999999999999999");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "--seed 99999999999999999999"));
  CHECK(!has(r, "--set"));
  r = run_cli("explain " + kShortT1 + " --sample 0");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(has(r, "must be in [1, 1e+09]"));
  CHECK(r.output.size() < 300);
  CHECK(run_cli("run").exit_code == 2);
  CHECK(run_cli("run " + kShortT1 + " --no-such-option").exit_code == 2);
  CHECK(run_cli("frobnicate").exit_code == 2);
  r = run_cli("run " + kShortT1 + " --vcd x.vcd --vcd-limit-ms 600000");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "must be in (0, 1000] ms"));
  CHECK(run_cli("run " + kShortT1 + " --perfetto x.json --perfetto-limit-ms nan").exit_code == 2);
  CHECK(run_cli("run " + kShortT1 + " --vcd x.vcd --vcd-sample-ns 0.001").exit_code == 2);
}

TEST_CASE("the SystemC banner is shown by --version only", "[cli][reliability]") {
  const auto h = run_cli("--help");
  CHECK(h.exit_code == 0);
  CHECK(!has(h, "Copyright"));
  CHECK(!has(run_cli("params"), "Copyright"));
  const auto v = run_cli("--version");
  CHECK(v.exit_code == 0);
  CHECK(has(v, "SystemC 2.3"));
}

TEST_CASE("the version kvmsim --version prints first is the top of CHANGELOG.md",
          "[cli][reliability]") {
  std::ifstream changelog(std::string(KVMSIM_SOURCE_DIR) + "/CHANGELOG.md");
  REQUIRE(changelog);
  std::string line, top;
  const std::regex heading(R"(^## ([0-9]+\.[0-9]+(\.[0-9]+)?)\b.*)");
  std::smatch m;
  while (std::getline(changelog, line))
    if (std::regex_match(line, m, heading)) {
      top = m[1];
      break;
    }
  REQUIRE(!top.empty());
  const auto v = run_cli("--version");
  CHECK(v.exit_code == 0);
  CHECK(v.output.rfind("kvmsim " + top + "\n", 0) == 0);
}

TEST_CASE("compare refuses cut, inconsistent, binary and directory input, and bad tolerances",
          "[cli][reliability][compare]") {
  const auto d = out_dir("rel-compare");
  const std::string good = (d / "good.txt").string();
  write_file(good, kHistogram);
  REQUIRE(run_cli("compare " + good + " " + good).exit_code == 0);
  const std::string text = kHistogram;
  write_file(d / "cut.txt", text.substr(0, text.find("000002 0000") + 10));
  write_file(d / "rows-only.txt", text.substr(0, text.find("# Total")));
  std::string bad_total = text;
  bad_total.replace(bad_total.find("000000004"), 9, "000000005");
  write_file(d / "total.txt", bad_total);
  write_file(d / "binary.txt", std::string("# Histogram\n\0\1\2\3", 16));
  for (const auto& [file, why] :
       {std::pair<std::string, std::string>{"cut.txt", "cut in the middle of a histogram row"},
        {"rows-only.txt", "no summary line"},
        {"total.txt", "'# Total:' says 5 for thread 0 but its histogram rows add up to 4"},
        {"binary.txt", "binary data"},
        {"", "a directory without histogram.txt"}}) {
    const auto r = run_cli("compare " + good + " " + (d / file).string());
    INFO(file << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r, why));
  }
  for (const char* tol : {"--tolerance-w1 nan", "--tolerance-ks -1", "--tolerance-avg inf",
                          "--tolerance-p99 1e999", "--tolerance-ks 2"}) {
    const auto r = run_cli("compare " + good + " " + good + " " + tol);
    INFO(tol << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.size() < 300);
  }
}

TEST_CASE("trace-stats refuses a directory, a binary file and a file without events",
          "[cli][reliability][trace]") {
  const auto d = out_dir("rel-trace-stats");
  write_file(d / "bin", std::string("\x7f"
                                    "ELF\0\0\0\1",
                                    8));
  write_file(d / "prose.txt", "this is not\na trace\n");
  auto r = run_cli("trace-stats " + d.string());
  CHECK(r.exit_code == 2);
  CHECK(has(r, "is a directory"));
  r = run_cli("trace-stats " + (d / "bin").string());
  CHECK(r.exit_code == 2);
  CHECK(has(r, "binary data"));
  r = run_cli("trace-stats " + (d / "prose.txt").string());
  CHECK(r.exit_code == 2);
  CHECK(has(r, "no trace event in 2 lines"));
}

TEST_CASE("same seed, byte-identical VCD and Perfetto files (no wall-clock date)",
          "[cli][reliability][determinism]") {
  const auto a = out_dir("rel-vcd-a"), b = out_dir("rel-vcd-b");
  for (const auto& d : {a, b})
    REQUIRE(run_cli("run " + kShortT1 + " -q --vcd " + (d / "w.vcd").string() + " --perfetto " +
                    (d / "p.json").string() + " --trace " + (d / "t.txt").string())
                .exit_code == 0);
  const std::string vcd = read_text(a / "w.vcd");
  CHECK(vcd.find("$date\n    kvmsim (no wall-clock date") != std::string::npos);
  CHECK(vcd.find("$date") == vcd.rfind("$date"));
  CHECK(vcd == read_text(b / "w.vcd"));
  CHECK(read_text(a / "p.json") == read_text(b / "p.json"));
  CHECK(read_text(a / "t.txt") == read_text(b / "t.txt"));
}

TEST_CASE("traces carry nanosecond timestamps: trace-stats service times match the summary",
          "[cli][reliability][trace]") {
  const auto d = out_dir("rel-ns");
  REQUIRE(
      run_cli("run " + kShortT1 + " -q --out " + d.string() + " --trace " + (d / "t.txt").string())
          .exit_code == 0);
  const std::string trace = read_text(d / "t.txt");
  CHECK(std::regex_search(trace, std::regex(R"(\] +\d+\.\d{9}: kvm_exit: )")));
  const auto m = read_json(d / "summary.json").at("metrics");
  const auto st = run_cli("trace-stats --json " + (d / "t.txt").string());
  REQUIRE(st.exit_code == 0);
  const auto j = nlohmann::json::parse(st.output.substr(st.output.find('{')));
  const double trace_avg_us =
      j.at("exits").at("reasons").at("MSR_WRITE").at("service_us").at("avg").get<double>();
  CHECK(trace_avg_us * 1e3 == Approx(m.at("exits.MSR_WRITE.avg_ns").get<double>()).epsilon(0.002));
}

TEST_CASE("run prints the numbers the kvm-unit-tests programs print", "[cli][reliability]") {
  auto r = run_cli("run scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=300");
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(
      r.output,
      std::regex(R"(tscdeadline_latency: 300 samples  min -?\d+  avg -?\d+  max -?\d+ cycles)")));
  r = run_cli("run scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=2000000");
  REQUIRE(r.exit_code == 0);
  CHECK(
      std::regex_search(r.output, std::regex(R"(\n  tscdeadline_immed \d+  \(\d+ iterations\))")));
  CHECK(std::regex_search(r.output, std::regex(R"(\n  tscdeadline \d+  \(\d+ iterations\))")));
}

TEST_CASE("a Perfetto file stops at its size cap as valid JSON, with a warning",
          "[cli][reliability][views]") {
  // vmexit at the default 50 ms wrote about 100 MB.
  const auto d = out_dir("rel-perfetto-cap");
  const auto r = run_cli(
      "run scenarios/vmexit_tscdeadline.yaml -q --set vmexit.goal_cycles=67108864 "
      "--perfetto " +
      (d / "p.json").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(has(r, "warning: --perfetto: the file reached its size cap of 64 MiB at "));
  CHECK(fs::file_size(d / "p.json") < (65u << 20));
  CHECK_NOTHROW(nlohmann::json::parse(read_text(d / "p.json")));
}

TEST_CASE("an injected vector is acknowledged once: every EOI ends a vector in service",
          "[cli][reliability][invariants]") {
  // Without APICv (the Haswell desktop of T2 and T5) the handler's EOI write
  // exits, and a timer vector that became pending in the handler is taken on
  // IRET: both go through the one acknowledge path, so every EOI finds it in
  // the ISR.
  for (const char* s : {"scenarios/tscdeadline_latency.yaml", "scenarios/halt_poll_timer.yaml"}) {
    const auto r =
        run_cli(std::string("run ") + s +
                " -q --set tscdeadline_latency.size=2000 --set tscdeadline_latency.delta=3000");
    INFO(s << "\n" << r.output);
    CHECK(r.exit_code == 0);
  }
  // A vector that leaves the IRR without entering the ISR (a second
  // acknowledge path bypassing apic_set_isr()): its EOI finds the ISR empty.
  const auto r = run_cli_raw(std::string("KVMSIM_FAULT=ack_without_isr ") + KVMSIM_BINARY +
                             " run scenarios/tscdeadline_latency.yaml -q "
                             "--set tscdeadline_latency.size=50 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(has(r, "invariant violated at simulated cycle "));
  CHECK(has(r, "in CPU 0/KVM: EOI with an empty ISR (1 vectors acknowledged, 0 EOIs)"));
}

TEST_CASE("an armed TSC deadline is delivered once, whichever back end held it",
          "[cli][reliability][invariants]") {
  // Preemption timer (T2), hrtimer (hv timer off), and switched between the
  // two around every HLT (T5 scenario).
  for (const char* args : {"scenarios/tscdeadline_latency.yaml",
                           "scenarios/tscdeadline_latency.yaml --set kvm.enable_hv_timer=false",
                           "scenarios/halt_poll_timer.yaml"}) {
    const auto r = run_cli(std::string("run ") + args + " -q --set tscdeadline_latency.size=2000");
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code == 0);
  }
  const auto r = run_cli_raw(std::string("KVMSIM_FAULT=timer_delivered_twice ") + KVMSIM_BINARY +
                             " run scenarios/tscdeadline_latency.yaml -q "
                             "--set tscdeadline_latency.size=50 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(
      has(r, "in CPU 0/KVM: LAPIC timer interrupt delivered for a TSC deadline already consumed"));
}

TEST_CASE("run prints each workload's own numbers, not only summary.json", "[cli][reliability]") {
  auto r = run_cli("run scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=500");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(
      r.output,
      std::regex(R"(ipi_pingpong: 500 round trips  min \d+\.\d+  avg \d+\.\d+  max \d+\.\d+ us)")));
  CHECK(std::regex_search(r.output, std::regex(R"(Pipe latency: \d+\.\d{4} microseconds)")));
  r = run_cli(
      "run scenarios/vmexit_ipi.yaml --set workload.type=smp_call --set smp_call.calls=300");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(
      r.output,
      std::regex(
          R"(smp_call: 300 calls to 1 target \(wait on\)  avg \d+\.\d+ us per call  functions run 300  early returns 0)")));
  r = run_cli("run scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(
      r.output,
      std::regex(
          R"(overcommit: 8 CPU-bound vCPUs  run \d+\.\d+ s  steal \d+\.\d+ s  \(%st \d+\.\d\))")));
}

TEST_CASE("a progress line for every workload on a terminal, none when piped",
          "[cli][reliability]") {
  // script(1) gives the run a terminal; stdout goes to /dev/null, the
  // progress line (stderr) reaches script's output.
  if (run_cli_raw("command -v script >/dev/null").exit_code != 0) {
    WARN("script(1) (util-linux) is not installed: no terminal to test the progress line on");
    return;
  }
  const struct {
    const char* args;
    const char* line;
  } runs[] = {
      {"scenarios/cyclictest_pinned.yaml --set cyclictest.loops=300",
       "[kvmsim] cyclictest 300/300 samples (100%)"},
      {"scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=300",
       "[kvmsim] tscdeadline_latency 300/300 samples"},
      {"scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=67108864", "[kvmsim] vmexit "},
      {"scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=30000", "[kvmsim] ipi_pingpong "},
      {"scenarios/vmexit_ipi.yaml --set workload.type=smp_call --set smp_call.calls=30000",
       "[kvmsim] smp_call "},
      {"scenarios/overcommit_busy.yaml --set sim.max_simulated_s=1", "[kvmsim] overcommit "},
      {"scenarios/cyclictest_pinned.yaml --set workload.type=busy --set sim.max_simulated_s=20",
       "[kvmsim] busy "},
  };
  for (const auto& run : runs) {
    const auto r = run_cli_raw(std::string("script -qec '") + KVMSIM_BINARY + " run " + run.args +
                               " >/dev/null' /dev/null");
    INFO(run.args << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(has(r, run.line));
  }
  // Not a terminal: no progress line.
  const auto r = run_cli("run scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=30000 -q");
  CHECK(r.exit_code == 0);
  CHECK_FALSE(has(r, "[kvmsim]"));
}

TEST_CASE("a run that would take more than ten minutes says so, with the estimate",
          "[cli][reliability]") {
  // 1e9 cyclictest loops (inside the declared range): about half an hour.
  // The estimate comes after 5 s of wall time; SIGINT then stops the run.
  const auto r =
      run_cli_raw(std::string("timeout --preserve-status -s INT 9 ") + KVMSIM_BINARY +
                  " run scenarios/cyclictest_pinned.yaml -q "
                  "--set cyclictest.loops=1000000000 --set sim.max_simulated_s=1000000 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 130);
  CHECK(std::regex_search(
      r.output,
      std::regex(
          R"(warning: cyclictest is \d+\.\d+% done after \d+ s: at this pace the run takes about \d+ minutes in all)")));
  CHECK(has(r, "interrupted by SIGINT"));
}

TEST_CASE("a VCD stops at its size cap as a complete file, with a warning",
          "[cli][reliability][views]") {
  // 100 ms sampled every 10 ns is about 300 MB (a 10-minute run once wrote
  // 36 GB); the file ends at 64 MiB, where the cap was reached.
  const auto d = out_dir("rel-vcd-cap");
  const auto r = run_cli(
      "run scenarios/tscdeadline_latency.yaml -q --set tscdeadline_latency.size=100000 "
      "--vcd-limit-ms 100 --vcd-sample-ns 10 --vcd " +
      (d / "w.vcd").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::regex_search(
      r.output,
      std::regex(
          R"(warning: --vcd: the file reached its size cap of 64 MiB at \d+\.\d+ ms simulated)")));
  const auto size = fs::file_size(d / "w.vcd");
  CHECK(size >= (64u << 20));
  CHECK(size < (65u << 20));
  const std::string vcd = read_text(d / "w.vcd");
  CHECK(vcd.find("$enddefinitions") != std::string::npos);
  CHECK(vcd.back() == '\n');
  CHECK(vcd.find(".systemc") == std::string::npos);
  CHECK(files_in(d) == 1);  // SystemC's own file is gone
}

TEST_CASE("every command's stdout to a full disk is an error, not exit 0", "[cli][reliability]") {
  const auto d = out_dir("rel-stdout-full");
  write_file(d / "h.txt", kHistogram);
  const std::string h = (d / "h.txt").string();
  for (const std::string& c :
       {"compare " + h + " " + h, "compare --json " + h + " " + h, std::string("params"),
        std::string("params --markdown"), "explain " + kShortT1, std::string("--version"),
        std::string("--help"),
        std::string("trace-stats tests/data/traces/") +
            "ftrace_kvm_events_modern-format_nested-boot_krause-2023.txt",
        "run " + kShortT1}) {
    const auto r = run_cli_raw(std::string(KVMSIM_BINARY) + " " + c + " 2>&1 >/dev/full");
    INFO(c << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(has(r, "kvmsim: error: stdout: write failed"));
  }
}

TEST_CASE("readers refuse devices, empty input and an empty --seed", "[cli][reliability]") {
  const auto d = out_dir("rel-devices");
  write_file(d / "h.txt", kHistogram);
  write_file(d / "empty.txt", "");
  // /dev/zero: was an endless read (the whole device into memory).
  auto r = run_cli("compare " + (d / "h.txt").string() + " /dev/zero");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(has(r, "/dev/zero: binary data (a NUL byte)"));
  // An empty trace (or /dev/null): was exit 0 with "0 events".
  for (const std::string& f : {(d / "empty.txt").string(), std::string("/dev/null")}) {
    r = run_cli("trace-stats " + f);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(has(r, "no trace event: the input is empty"));
  }
  // --seed '': was the default seed, silently.
  r = run_cli("run " + kShortT1 + " -q --seed ''");
  CHECK(r.exit_code == 2);
  CHECK(has(r, "--seed : must be a whole number"));
  CHECK(run_cli("explain " + kShortT1 + " --seed ''").exit_code == 2);
}

TEST_CASE("compare takes a histogram of exactly 100000 buckets, the largest -h",
          "[cli][reliability]") {
  // kvmsim's own largest histogram (cyclictest.histogram_us = 100000: rows
  // 0..99999) is read and compared; a row 100000 is one too many.
  const auto d = out_dir("rel-100k");
  auto r = run_cli("run " + kShortT1 + " -q --set cyclictest.histogram_us=100000 --out " +
                   (d / "run").string());
  REQUIRE(r.exit_code == 0);
  const std::string h = (d / "run" / "histogram.txt").string();
  r = run_cli("compare " + h + " " + h);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(has(r, "(1 thread, 100000 buckets)"));
  std::string text = read_text(d / "run" / "histogram.txt");
  const auto at = text.find("099999 ");
  REQUIRE(at != std::string::npos);
  text.insert(text.find('\n', at) + 1, "100000 000000\n");
  write_file(d / "over.txt", text);
  r = run_cli("compare " + (d / "over.txt").string() + " " + h);
  CHECK(r.exit_code == 2);
  CHECK(has(r, "bucket index 100000 is not below 100000"));
}

TEST_CASE(
    "run --out: a failed run leaves no previous result looking current and no empty directory "
    "it created, and keeps the user's other files",
    "[cli]") {
  const auto dir = out_dir("stale-out");
  const std::string ok =
      "run scenarios/cyclictest_pinned.yaml --set cyclictest.loops=200 -q --out ";
  const std::string cut =
      "run scenarios/cyclictest_pinned.yaml --set cyclictest.loops=2000000 "
      "--set sim.max_simulated_s=0.01 -q --out ";
  REQUIRE(run_cli(ok + dir.string()).exit_code == 0);
  REQUIRE(std::filesystem::exists(dir / "summary.json"));
  { std::ofstream(dir / "notes.txt") << "mine\n"; }
  CHECK(run_cli(cut + dir.string()).exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(dir / "summary.json"));
  CHECK_FALSE(std::filesystem::exists(dir / "histogram.txt"));
  CHECK(std::filesystem::exists(dir / "notes.txt"));
  // A bad setting found after the directory was prepared: the same.
  REQUIRE(run_cli(ok + dir.string()).exit_code == 0);
  CHECK(run_cli(ok + dir.string() + " --set vm.pinning=[99,99]").exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "summary.json"));
  const auto fresh = out_dir("stale-out-new");
  CHECK(run_cli(cut + fresh.string()).exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(fresh));
}
