// `kvmsim validate`: the accuracy table on quick runs ([validate]; every
// experiment's runs, and --experiment filtering) and the pure check
// evaluation behind it ([validate-unit]).
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/cli/cli_runner.h"
#include "tools/kvmsim/published_targets.h"
#include "tools/kvmsim/validation.h"

using namespace kvmsim;
using namespace kvmsim::validate;
using namespace kvmsim::test;

namespace {

// The table's data rows (lines starting with an experiment id "T<digit>...",
// e.g. T4 or T4L; the plain table pads the id with two or more spaces).
std::vector<std::string> table_rows(const std::string& output, bool markdown) {
  std::vector<std::string> rows;
  std::istringstream in(output);
  std::string line;
  const std::string prefix = markdown ? "| T" : "T";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0 || line.size() <= prefix.size() ||
        !std::isdigit(static_cast<unsigned char>(line[prefix.size()])))
      continue;
    const auto id_end = line.find(' ', prefix.size());
    if (markdown || (id_end != std::string::npos && line.compare(id_end, 2, "  ") == 0))
      rows.push_back(line);
  }
  return rows;
}

}  // namespace

// T4 (ebizzy) runs and is reported, but is not within tolerance
// yet (docs/validation.md, the T4 rows): its rows are not required to pass,
// and the exit code says whether every row passed. T4L (the 2019 light
// over-commit figure, not gated) is reported with them: its rate is outside
// T4's 25%.
static bool is_t4l(const std::string& row, bool markdown) {
  return row.rfind(markdown ? "| T4L " : "T4L ", 0) == 0;
}
static bool is_t4(const std::string& row, bool markdown) {
  return row.rfind(markdown ? "| T4 " : "T4 ", 0) == 0 || is_t4l(row, markdown);
}

TEST_CASE("validate --quick: T1, T2, T3 and T6 all within tolerance, T4 reported", "[validate]") {
  const auto r = run_cli("validate --quick");
  INFO(r.output);
  const auto rows = table_rows(r.output, false);
  CHECK(rows.size() >= 19 + 11);
  for (const char* id : {"T1", "T2", "T3", "T4", "T4L", "T6"}) {
    bool found = false;
    for (const auto& row : rows) found = found || row.rfind(std::string(id) + " ", 0) == 0;
    CHECK(found);
  }
  bool all_yes = true;
  for (const auto& row : rows) {
    INFO(row);
    CHECK(row.size() >= 3);
    const bool yes = row.substr(row.size() - 3) == "yes";
    if (!is_t4l(row, false)) all_yes = all_yes && yes;  // T4L is not gated
    if (!is_t4(row, false)) CHECK(yes);
  }
  CHECK(r.exit_code == (all_yes ? 0 : 1));
  CHECK(r.output.find("wall time") != std::string::npos);
  CHECK(r.output.find("skipped, scenario missing") == std::string::npos);
  // Two groups, each with its mean absolute errors; the calibration group first.
  const auto cal = r.output.find("\ncalibration: ");
  const auto val = r.output.find("\nvalidation: ");
  CHECK(cal != std::string::npos);
  CHECK(val != std::string::npos);
  CHECK(cal < val);
  CHECK(r.output.find("mean absolute error", val) != std::string::npos);
  // The extra published points (TL2, TL3) are in the table, not gated.
  CHECK(r.output.find("\nTL3 ") != std::string::npos);
  CHECK(r.output.find("more published points reported, not gated") != std::string::npos);
  // Child runs' libsystemc banners stay hidden: at most the parent's own.
  std::size_t banners = 0;
  for (auto p = r.output.find("ALL RIGHTS RESERVED"); p != std::string::npos;
       p = r.output.find("ALL RIGHTS RESERVED", p + 1))
    ++banners;
  CHECK(banners <= 1);
}

TEST_CASE("validate --quick --markdown: a Markdown table", "[validate]") {
  const auto r = run_cli("validate --quick --markdown --jobs 1");
  INFO(r.output);
  CHECK(r.output.find("\n| experiment | switch/setting | metric | published | simulated | error "
                      "| tolerance | within tolerance |\n|---|") != std::string::npos);
  const auto rows = table_rows(r.output, true);
  CHECK(rows.size() >= 19 + 11);
  bool all_yes = true;
  for (const auto& row : rows) {
    INFO(row);
    const bool yes = row.substr(row.size() - 8) == " | yes |";
    if (!is_t4l(row, true)) all_yes = all_yes && yes;  // T4L is not gated
    if (!is_t4(row, true)) CHECK(yes);
  }
  CHECK(r.exit_code == (all_yes ? 0 : 1));
}

TEST_CASE("validate --experiment: only the named experiments run, an unknown id is an error",
          "[validate]") {
  const auto r = run_cli("validate --quick --experiment T4");
  const auto rows = table_rows(r.output, false);
  REQUIRE(rows.size() == 11);  // T4: 8 values and 3 boosts
  for (const auto& row : rows) CHECK(is_t4(row, false));
  CHECK(r.output.find("only T4") != std::string::npos);
  CHECK(r.output.find("(8 runs,") != std::string::npos);
  const auto bad = run_cli("validate --quick --experiment T9");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--experiment T9: no such experiment (one of T1, T2, T3, T4") !=
        std::string::npos);
}

TEST_CASE("validate --bands: T4 runs once per CPU model, the legend names them, the band table",
          "[validate]") {
  const auto r = run_cli("validate --quick --experiment T4 --bands");
  INFO(r.output);
  CHECK(r.exit_code == 1);                                 // T4's rows are gated, and most are out
  CHECK(r.output.find("(16 runs,") != std::string::npos);  // 8 runs x 2 CPU models
  CHECK(r.output.find("configuration (chosen): c1 -cpu host") != std::string::npos);
  CHECK(r.output.find("configuration: c2 -cpu qemu64,+kvm-pv-tlb-flush (--set "
                      "vm.cpu_model=qemu64 --set guest.cpuid.pv_tlb_flush=true)") !=
        std::string::npos);
  CHECK(r.output.find("Bands of T4:") != std::string::npos);
  CHECK(r.output.find("run failed") == std::string::npos);
  // Without --bands: the chosen configuration in the legend, no band table.
  const auto plain = run_cli("validate --quick --experiment T3");
  CHECK(plain.output.find("Bands of") == std::string::npos);
}

TEST_CASE("validate --seeds: every run once per seed, the spread column, a bad list refused",
          "[validate]") {
  const auto r = run_cli("validate --quick --experiment T3 --seeds 1,2");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("seeds 1,2 (each row judged on the median over the seeds)") !=
        std::string::npos);
  CHECK(r.output.find("(4 runs,") != std::string::npos);  // T3: 2 runs x 2 seeds
  CHECK(r.output.find("seeds: min..max, within") != std::string::npos);
  CHECK(r.output.find("2/2 in") != std::string::npos);
  const auto bad = run_cli("validate --quick --experiment T3 --seeds 1,x");
  CHECK(bad.exit_code != 0);
}

// PVQ (the 2019 PV qspinlock figures on the 80-thread Skylake host) is
// reported and not gated: the exit status stays 0 whatever its rows say.
TEST_CASE("validate --experiment PVQ: fifteen rows, reported, not gated", "[validate]") {
  const auto r = run_cli("validate --quick --experiment PVQ");
  INFO(r.output);
  std::vector<std::string> rows;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("PVQ  ", 0) == 0) rows.push_back(line);
  CHECK(rows.size() == 15);  // 13 rates, the revert's gain, the early-wait share
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("(11 runs,") != std::string::npos);
  CHECK(r.output.find("early waits from vcpu_is_preempted() (%)") != std::string::npos);
  CHECK(r.output.find("15 more published points reported, not gated") != std::string::npos);
  // The 1-VM rate with d73eb57b80b is the calibration of cost.ebizzy.lock_hold.
  const auto cal = r.output.find("\ncalibration: 1 of 1 within tolerance");
  CHECK(cal != std::string::npos);
}

TEST_CASE("validate: a missing scenarios directory is an input error", "[validate]") {
  const auto r = run_cli("validate --quick --scenarios no/such/dir");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("scenarios directory 'no/such/dir' not found") != std::string::npos);
}

TEST_CASE("validate: tolerance kinds", "[validate-unit]") {
  SECTION("exact and offset") {
    CHECK(evaluate(Tolerance::exact(), 6, 6, "us", 0).pass);
    const auto v = evaluate(Tolerance::exact(), 5, 6, "us", 0);
    CHECK_FALSE(v.pass);
    CHECK(v.error == "+1");
    CHECK(v.tolerance == "exact");
    CHECK(evaluate(Tolerance::offset(0, 1), 5, 6, "us", 0).pass);
    CHECK_FALSE(evaluate(Tolerance::offset(0, 1), 5, 4, "us", 0).pass);
    CHECK(evaluate(Tolerance::offset(0, 1), 5, 6, "us", 0).tolerance == "0 to +1");
  }
  SECTION("absolute, in percentage points for %") {
    auto v = evaluate(Tolerance::absolute(0.3), 6.06, 6.03, "us", 2);
    CHECK(v.pass);
    CHECK(v.error == "-0.03 us");
    CHECK(v.tolerance == "+-0.3 us");
    CHECK_FALSE(evaluate(Tolerance::absolute(0.3), 6.0, 6.31, "us", 2).pass);
    v = evaluate(Tolerance::absolute(10), 63, 53, "%", 1);  // exactly at the limit passes
    CHECK(v.pass);
    CHECK(v.error == "-10 pp");
    CHECK(v.tolerance == "+-10 pp");
    CHECK_FALSE(evaluate(Tolerance::absolute(10), 63, 52.9, "%", 1).pass);
  }
  SECTION("relative") {
    auto v = evaluate(Tolerance::relative(0.15), 4450, 4461, "", 0);
    CHECK(v.pass);
    CHECK(v.error == "+0.2%");
    CHECK(v.tolerance == "+-15%");
    CHECK(evaluate(Tolerance::relative(0.15), 1000, 850, "", 0).pass);
    CHECK_FALSE(evaluate(Tolerance::relative(0.15), 1000, 849, "", 0).pass);
    CHECK_FALSE(evaluate(Tolerance::relative(0.10), 1000, 1101, "", 0).pass);
  }
  SECTION("at most, without a published value") {
    auto v = evaluate(Tolerance::at_most(0.3), kNaN, 0.021, "us", 3);
    CHECK(v.pass);
    CHECK(v.tolerance == "<= 0.3 us");
    CHECK_FALSE(evaluate(Tolerance::at_most(0.3), kNaN, 0.31, "us", 3).pass);
  }
  SECTION("factor, both ways") {
    auto v = evaluate(Tolerance::factor(3), 74, 101, "", 0);
    CHECK(v.pass);
    CHECK(v.error == "x1.36");
    CHECK(v.tolerance == "within x3");
    CHECK(evaluate(Tolerance::factor(3), 300, 100, "", 0).pass);
    CHECK_FALSE(evaluate(Tolerance::factor(3), 300, 99, "", 0).pass);
    CHECK_FALSE(evaluate(Tolerance::factor(3), 100, 301, "", 0).pass);
  }
  SECTION("a missing simulated value fails every kind") {
    for (const auto& t : {Tolerance::exact(), Tolerance::absolute(1), Tolerance::relative(1),
                          Tolerance::at_most(1), Tolerance::factor(3), Tolerance::offset(-1, 1)}) {
      const auto v = evaluate(t, 1, kNaN, "", 0);
      CHECK_FALSE(v.pass);
      CHECK(v.error == "-");
    }
  }
}

TEST_CASE("validate: number formatting", "[validate-unit]") {
  CHECK(format_number(3028.5, 2) == "3028.5");
  CHECK(format_number(2494.75, 2) == "2494.75");
  CHECK(format_number(4450, 0) == "4450");
  CHECK(format_number(-0.001, 2) == "0");
  CHECK(format_number(kNaN, 2) == "n/a");
  CHECK(format_signed(0.25, 2) == "+0.25");
  CHECK(format_signed(-1, 0) == "-1");
}

namespace {
// Experiment TX, the switch kvm.switch over `settings`, and a check of the
// metric m of its first run: published 100, within 10%.
Experiment tx_experiment(std::vector<std::string> settings, Check* m_check) {
  Experiment e;
  e.id = "TX";
  e.scenario = "x.yaml";
  e.runs = switch_runs("kvm.switch", std::move(settings));
  Check& a = *m_check;
  a.metric = "m";
  a.decimals = 0;
  a.runs = {0};
  a.published = 100;
  a.tolerance = Tolerance::relative(0.10);
  a.simulate = [](const RunRefs& r) { return r[0]->metric("m"); };
  return e;
}
}  // namespace

TEST_CASE("validate: an experiment's checks on its runs, with quick tolerances",
          "[validate-unit]") {
  Check a;
  Experiment e = tx_experiment({"false", "true"}, &a);
  Check b = a;
  b.runs = {1};
  b.published = 50;
  b.tolerance = Tolerance::exact();
  b.quick_tolerance = Tolerance::offset(0, 10);
  Check red;
  red.metric = "reduction";
  red.unit = "%";
  red.decimals = 1;
  red.runs = {0, 1};
  red.published = 50;
  red.tolerance = Tolerance::absolute(10);
  red.simulate = [](const RunRefs& r) { return 100 * (1 - r[1]->metric("m") / r[0]->metric("m")); };
  e.checks = {a, b, red};

  std::vector<RunOutput> out(2);
  out[0].ok = out[1].ok = true;
  out[0].metrics["m"] = 105;
  out[1].metrics["m"] = 55;

  auto rows = evaluate_experiment(e, out, false);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].experiment == "TX");
  CHECK(rows[0].setting == "kvm.switch=false");
  CHECK(rows[0].published == "100");
  CHECK(rows[0].simulated == "105");
  CHECK(rows[0].pass);
  CHECK(rows[1].setting == "kvm.switch=true");
  CHECK_FALSE(rows[1].pass);  // exact on a full run
  CHECK(rows[2].setting == "kvm.switch=false -> true");
  CHECK(rows[2].metric == "reduction (%)");
  CHECK(rows[2].simulated == "47.6");
  CHECK(rows[2].error == "-2.4 pp");
  CHECK(rows[2].pass);

  rows = evaluate_experiment(e, out, true);
  CHECK(rows[1].pass);  // the quick tolerance
  CHECK(rows[1].tolerance == "0 to +10");

  // A failed run: its checks fail, they do not throw.
  out[1] = RunOutput{};
  out[1].error = "exit code 2";
  rows = evaluate_experiment(e, out, false);
  CHECK(rows[0].pass);
  CHECK_FALSE(rows[1].pass);
  CHECK(rows[1].simulated == "n/a");
  CHECK_FALSE(rows[2].pass);

  const std::string md = format_table(rows, true);
  CHECK(md.rfind("| experiment | switch/setting | metric | published | simulated | error | "
                 "tolerance | within tolerance |\n",
                 0) == 0);
  CHECK(md.find("| TX | kvm.switch=false → true | reduction (%) |") != std::string::npos);
  const std::string text = format_table(rows, false);
  CHECK(text.rfind("experiment  switch/setting", 0) == 0);
}

TEST_CASE("validate --seeds: each row judged on the median over the seeds, with its spread",
          "[validate-unit]") {
  Check a;
  Experiment e = tx_experiment({"false"}, &a);
  e.checks = {a};
  auto seed_run = [](double m) {
    std::vector<RunOutput> out(1);
    out[0].ok = true;
    out[0].metrics["m"] = m;
    return out;
  };
  // Seeds 95, 130, 104, 80: the default seed's run alone (95) passes; the
  // median of the four (99.5) passes; two of the four are within 10%.
  const std::vector<std::vector<RunOutput>> seeds = {seed_run(95), seed_run(130), seed_run(104),
                                                     seed_run(80)};
  auto rows = evaluate_experiment(e, seeds[0], false, seeds);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].simulated == "100");  // 99.5, 0 decimals
  CHECK(rows[0].pass);
  CHECK(rows[0].seed_spread == "80..130, 2/4 in");
  // The median decides, not the first seed: 95, 130, 125 -> 125, out.
  rows = evaluate_experiment(e, seeds[0], false, {seed_run(95), seed_run(130), seed_run(125)});
  CHECK(rows[0].simulated == "125");
  CHECK_FALSE(rows[0].pass);
  CHECK(rows[0].seed_spread == "95..130, 1/3 in");
  // A failed seed's run: no number, counted as out, left out of the median.
  std::vector<RunOutput> failed(1);
  failed[0].error = "exit code 2";
  rows = evaluate_experiment(e, seeds[0], false, {seed_run(95), failed, seed_run(104)});
  CHECK(rows[0].simulated == "100");  // 99.5
  CHECK(rows[0].seed_spread == "95..104, 2/3 in");
  // The table gets the spread column only with seeds.
  CHECK(format_table(rows, false).find("seeds: min..max, within") != std::string::npos);
  CHECK(format_table(evaluate_experiment(e, seeds[0], false), false).find("seeds:") ==
        std::string::npos);
}

TEST_CASE(
    "validate --bands: each check under every configuration, the band over them and the "
    "configurations within tolerance",
    "[validate-unit]") {
  Check a;
  Experiment e = tx_experiment({"false"}, &a);
  e.checks = {a};  // published 100, 0 decimals
  // Three set-ups: 95 (chosen), 130, and one whose run failed (no number).
  auto rows = band_rows(e, {{95}, {130}, {kNaN}});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].values == std::vector<std::string>{"95", "130", "n/a"});
  CHECK(rows[0].band == "95..130");
  CHECK(rows[0].within == "c1");  // tolerance 10%: 95 in, 130 out
  // The band spans the published value, yet neither set-up is within.
  rows = band_rows(e, {{80}, {130}});
  CHECK(rows[0].band == "80..130");
  CHECK(rows[0].within == "none");
  rows = band_rows(e, {{101}, {95}});
  CHECK(rows[0].within == "c1, c2");
  rows = band_rows(e, {{kNaN}, {kNaN}});
  CHECK(rows[0].band == "n/a");
  CHECK(rows[0].within == "none");
  const std::string text = format_bands(band_rows(e, {{95}, {130}}), 2, false);
  CHECK(text.rfind("experiment  switch/setting", 0) == 0);
  CHECK(text.find("c1 (chosen)") != std::string::npos);
  CHECK(text.find("within tolerance") != std::string::npos);
  CHECK(format_bands(band_rows(e, {{95}, {130}}), 2, true).rfind("| experiment |", 0) == 0);
}

TEST_CASE("validate: transition labels", "[validate-unit]") {
  CHECK(transition_label("kvm.a=false", "kvm.a=true") == "kvm.a=false -> true");
  CHECK(transition_label("vm.vcpus=16 g.pv=false", "vm.vcpus=16 g.pv=true") ==
        "vm.vcpus=16 g.pv=false -> true");
  CHECK(transition_label("x=1", "y=2") == "x=1 -> y=2");
}

TEST_CASE("validate: calibration and validation groups, mean absolute errors", "[validate-unit]") {
  std::vector<Row> rows(4);
  rows[0].calibration = true;  // value: 10% off
  rows[0].pass = true;
  rows[0].abs_error = 10;
  rows[1].calibration = true;  // no published number: counted, no error
  rows[1].pass = true;
  rows[2].abs_error = 4;  // validation value, 4% off
  rows[3].change = true;  // validation change, 3 pp off, outside
  rows[3].abs_error = 3;
  const GroupSummary c = summarize(rows, true);
  CHECK(c.rows == 2);
  CHECK(c.passed == 2);
  CHECK(c.values == 1);
  CHECK(c.value_mae_pct == Approx(10));
  CHECK(c.changes == 0);
  const GroupSummary v = summarize(rows, false);
  CHECK(v.rows == 2);
  CHECK(v.passed == 0);
  CHECK(v.value_mae_pct == Approx(4));
  CHECK(v.change_mae_pp == Approx(3));
  CHECK(format_summary(v) ==
        "0 of 2 within tolerance; mean absolute error 4% over 1 values, 3 pp over 1 changes");

  // evaluate_experiment fills the errors: relative for values, pp for changes.
  Experiment e;
  e.id = "TX";
  e.runs = switch_runs("k", {"a", "b"});
  Check a;
  a.metric = "m";
  a.runs = {0};
  a.published = 200;
  a.tolerance = Tolerance::relative(0.1);
  a.calibration = true;
  a.simulate = [](const RunRefs& r) { return r[0]->metric("m"); };
  Check red;
  red.metric = "reduction";
  red.unit = "%";
  red.runs = {0, 1};
  red.published = 40;
  red.tolerance = Tolerance::absolute(5);
  red.gated = false;
  red.simulate = [](const RunRefs& r) { return 100 * (1 - r[1]->metric("m") / r[0]->metric("m")); };
  e.checks = {a, red};
  std::vector<RunOutput> out(2);
  out[0].ok = out[1].ok = true;
  out[0].metrics["m"] = 210;
  out[1].metrics["m"] = 105;
  const auto r = evaluate_experiment(e, out, false);
  CHECK(r[0].calibration);
  CHECK(r[0].abs_error == Approx(5));
  CHECK_FALSE(r[1].calibration);
  CHECK_FALSE(r[1].gated);
  CHECK(r[1].change);
  CHECK(r[1].abs_error == Approx(10));
}

TEST_CASE("validate --sensitivity: durations in a cost's text scale, weights and shapes do not",
          "[validate-unit]") {
  CHECK(scale_durations("normal(450ns, 40ns, min=330ns)", 1.1) == "normal(495ns, 44ns, min=363ns)");
  CHECK(scale_durations("mix(0.965: normal(1290ns, 80ns), 0.035: normal(350ns, 200ns))", 0.9) ==
        "mix(0.965: normal(1161ns, 72ns), 0.035: normal(315ns, 180ns))");
  CHECK(scale_durations("lognormal(9us, 0.6, max=80us)", 1.1) == "lognormal(9.9us, 0.6, max=88us)");
  CHECK(scale_durations("empirical(400cyc:3, 450cyc:5)", 0.5) == "empirical(200cyc:3, 225cyc:5)");
  CHECK(scale_durations("350", 1.1) == "385");
  SensitivityRow row;
  row.check.unit = "cycles";
  row.base = 1000;
  row.minus = 950;
  row.plus = 1050;
  CHECK(sensitivity_slope(row, 0.1) == Approx(0.5));
  CHECK(sensitivity_moves(row, 0.1));
  row.minus = 999;
  row.plus = 1001;
  CHECK_FALSE(sensitivity_moves(row, 0.1));
}

namespace {

// A copy of the built-in validation/targets.yaml with `from` replaced by `to`
// (which must occur), in the test's temp directory.
std::string targets_copy(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = embedded_targets_text();
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  const auto dir = out_dir(name);
  std::filesystem::create_directories(dir);
  const auto path = dir / "targets.yaml";
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

}  // namespace

TEST_CASE("validate --list: every published figure, each used by a check", "[cli][validate-unit]") {
  const auto r = run_cli("validate --list");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // One figure per row of the table (21 calibration, 40 validation).
  CHECK(r.output.find("\n61 published figures (validation/targets.yaml, built in)\n") !=
        std::string::npos);
  std::size_t figures = 0;
  for (const auto& e : validation_targets()) figures += e.checks.size();
  CHECK(figures == 61);
  std::size_t in_file = 0;
  for (const auto& t : embedded_targets().targets) in_file += t.figures.size();
  CHECK(in_file == figures);
  CHECK(r.output.find("    source: ") != std::string::npos);
  CHECK(r.output.find("exact (--quick: 0 to +1)") != std::string::npos);
}

TEST_CASE("validate --targets: a figure validate does not use, or lacks, is an error",
          "[cli][validate-unit]") {
  SECTION("a renamed figure: the old id missing, the new one unused") {
    const auto f = targets_copy("targets-renamed", "{id: advance,", "{id: advance2,");
    const auto r = run_cli("validate --list --targets " + f);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("does not match validate's checks"));
    CHECK_THAT(r.output, Catch::Contains("T2: figure advance missing"));
    CHECK_THAT(r.output, Catch::Contains("T2: figure advance2 is not used by validate"));
  }
  SECTION("a metric that is not the one compared") {
    const auto f = targets_copy("targets-metric", "metric: reduction of avg_cycles",
                                "metric: reduction of max_cycles");
    const auto r = run_cli("validate --list --targets " + f);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("T2: figure reduction: metric 'reduction of max_cycles'"));
  }
  SECTION("an unknown key, with its line") {
    const auto f = targets_copy("targets-key", "value: 4450,", "valeu: 4450,");
    const auto r = run_cli("validate --list --targets " + f);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("targets.yaml:"));
    CHECK_THAT(r.output, Catch::Contains("unknown key 'valeu'"));
  }
  SECTION("a file that cannot be read") {
    const auto r = run_cli("validate --list --targets no/such/targets.yaml");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("no/such/targets.yaml: cannot read"));
  }
}

TEST_CASE("validate --targets: a published value changed in the file changes the verdict",
          "[validate]") {
  const auto same = targets_copy("targets-same", "value: 4450,", "value: 4450,");
  const auto moved = targets_copy("targets-moved", "value: 4450,", "value: 2000,");
  const auto a = run_cli("validate --quick --experiment T2 --targets " + same);
  const auto b = run_cli("validate --quick --experiment T2 --targets " + moved);
  INFO(a.output << b.output);
  CHECK(a.exit_code == 0);
  CHECK(b.exit_code == 1);
  const auto row = [](const std::string& out) {
    for (const auto& r : table_rows(out, false))
      if (r.find("kvm.hv_timer_advance=false ") != std::string::npos &&
          r.find("avg_cycles") != std::string::npos)
        return r;
    return std::string();
  };
  CHECK_THAT(row(a.output), Catch::Contains("4450") && Catch::EndsWith("yes"));
  CHECK_THAT(row(b.output), Catch::Contains("2000") && Catch::EndsWith("no"));
}
