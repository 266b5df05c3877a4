// Parameter declarations (ParamRegistry), values (ParamSet) and listings.
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include <catch2/catch.hpp>

#include "sim/core/params.h"

using namespace kvmsim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

ParamDecl make_decl(std::string key, ParamType type, std::string def, std::string unit = "",
                    double min = -kInf, double max = kInf) {
  ParamDecl d{};
  d.key = std::move(key);
  d.type = type;
  d.default_text = std::move(def);
  d.unit = std::move(unit);
  d.min = min;
  d.max = max;
  d.doc = "Doc for " + d.key + ".";
  return d;
}

// A small registry with every type; independent of the model's declarations.
ParamRegistry test_registry() {
  ParamRegistry reg;
  reg.declare(make_decl("sim.seed", ParamType::Int, "1", "count", 0));
  reg.declare(make_decl("kvm.enable_hv_timer", ParamType::Bool, "true"));
  reg.declare(make_decl("kvm.halt_poll_ns", ParamType::Int, "200000", "ns", 0, 1e7));
  ParamDecl mode = make_decl("kvm.lapic.timer_mode", ParamType::String, "tsc-deadline");
  mode.choices = {"oneshot", "periodic", "tsc-deadline"};
  reg.declare(mode);
  reg.declare(make_decl("guest.name", ParamType::String, "linux"));
  reg.declare(make_decl("guest.load", ParamType::Double, "0.5", "", 0, 1));
  reg.declare(make_decl("guest.cpus", ParamType::IntList, "[2, 3]", "", 0, 63));
  reg.declare(make_decl("cost.vmexit", ParamType::Dist, "normal(300ns, 20ns)"));
  return reg;
}

// The problem text of set_text(key, text), or "" if it was accepted.
std::string problem_of(const std::string& key, const std::string& text) {
  const ParamRegistry reg = test_registry();
  ParamSet set(reg);
  try {
    set.set_text(key, text, "here");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a fresh ParamSet holds every declared default with origin 'default'") {
  const ParamRegistry reg = test_registry();
  const ParamSet set(reg);
  CHECK(set.i("sim.seed") == 1);
  CHECK(set.b("kvm.enable_hv_timer"));
  CHECK(set.i("kvm.halt_poll_ns") == 200000);
  CHECK(set.s("kvm.lapic.timer_mode") == "tsc-deadline");
  CHECK(set.s("guest.name") == "linux");
  CHECK(set.d("guest.load") == 0.5);
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{2, 3});
  CHECK(set.dist("cost.vmexit").kind == DistKind::Normal);
  CHECK(set.dist("cost.vmexit").a.value == 300);
  for (const auto& key : set.keys()) CHECK(set.origin(key) == "default");
  CHECK(set.keys().front() == "sim.seed");
  CHECK(set.keys().size() == reg.all().size());
  CHECK(&set.registry() == &reg);
  static_assert(!std::is_constructible_v<ParamSet, ParamRegistry>,
                "a ParamSet must not point at a temporary registry");
}

TEST_CASE("declare rejects duplicate keys, key/group clashes, bad keys and bad defaults") {
  ParamRegistry reg = test_registry();
  CHECK_THROWS_AS(reg.declare(make_decl("sim.seed", ParamType::Int, "2")), std::logic_error);
  CHECK_THROWS_AS(reg.declare(make_decl("kvm", ParamType::Bool, "true")), std::logic_error);
  CHECK_THROWS_AS(reg.declare(make_decl("sim.seed.low", ParamType::Int, "0")), std::logic_error);
  CHECK_THROWS_AS(reg.declare(make_decl("bad..key", ParamType::Int, "0")), std::logic_error);
  CHECK_THROWS_WITH(reg.declare(make_decl("x.n", ParamType::Int, "1.5")),
                    Contains("x.n") && Contains("expected an integer"));
  CHECK_THROWS_AS(reg.declare(make_decl("x.r", ParamType::Int, "5", "", 10, 20)), std::logic_error);
  CHECK_THROWS_AS(reg.declare(make_decl("x.d", ParamType::Dist, "gauss(1ns)")), std::logic_error);
  ParamDecl bad_choice = make_decl("x.s", ParamType::String, "c");
  bad_choice.choices = {"a", "b"};
  CHECK_THROWS_AS(reg.declare(bad_choice), std::logic_error);
  CHECK(reg.find("x.n") == nullptr);  // failed declarations leave no trace
  CHECK(reg.all().size() == test_registry().all().size());
}

TEST_CASE("find, is_prefix and all reflect the declarations in order") {
  const ParamRegistry reg = test_registry();
  REQUIRE(reg.find("kvm.halt_poll_ns") != nullptr);
  CHECK(reg.find("kvm.halt_poll_ns")->unit == "ns");
  CHECK(reg.find("kvm") == nullptr);
  CHECK(reg.is_prefix("kvm"));
  CHECK(reg.is_prefix("kvm.lapic"));
  CHECK_FALSE(reg.is_prefix("kvm.halt_poll_ns"));
  CHECK_FALSE(reg.is_prefix("kv"));
  CHECK(reg.all()[1].key == "kvm.enable_hv_timer");
  CHECK(reg.index_of("guest.name") == 4);
  CHECK(reg.index_of("nope") == ParamRegistry::npos);
}

TEST_CASE("getters throw logic_error for undeclared keys and wrong types, d() reads ints") {
  const ParamRegistry reg = test_registry();
  const ParamSet set(reg);
  CHECK_THROWS_AS(set.i("sim.nope"), std::logic_error);
  CHECK_THROWS_AS(set.b("sim.seed"), std::logic_error);
  CHECK_THROWS_WITH(set.s("guest.load"), Contains("guest.load") && Contains("double"));
  CHECK_THROWS_AS(set.i("guest.load"), std::logic_error);
  CHECK_THROWS_AS(set.ints("cost.vmexit"), std::logic_error);
  CHECK(set.d("kvm.halt_poll_ns") == 200000.0);
}

TEST_CASE("set_text parses each type, replaces the value and records the origin") {
  const ParamRegistry reg = test_registry();
  ParamSet set(reg);
  set.set_text("kvm.enable_hv_timer", "false", "a.yaml:3");
  set.set_text("sim.seed", "-0", "a.yaml:4");
  set.set_text("kvm.halt_poll_ns", "0x10", "a.yaml:5");
  set.set_text("guest.load", "1e-1", "--set");
  set.set_text("guest.name", "windows", "--set");
  set.set_text("cost.vmexit", "350", "--set");
  CHECK_FALSE(set.b("kvm.enable_hv_timer"));
  CHECK(set.origin("kvm.enable_hv_timer") == "a.yaml:3");
  CHECK(set.i("sim.seed") == 0);
  CHECK(set.i("kvm.halt_poll_ns") == 16);
  CHECK(set.d("guest.load") == 0.1);
  CHECK(set.s("guest.name") == "windows");
  CHECK(set.origin("guest.name") == "--set");
  CHECK(set.dist("cost.vmexit").kind == DistKind::Constant);
  CHECK(set.text("cost.vmexit") == "350ns");
}

TEST_CASE("set_text errors start with the origin and name the key") {
  CHECK_THAT(problem_of("kvm.halt_poll_ns", "abc"),
             StartsWith("here: key 'kvm.halt_poll_ns': expected an integer, got 'abc'"));
  CHECK_THAT(problem_of("kvm.halt_poll", "1"), StartsWith("here: unknown key 'kvm.halt_poll'") &&
                                                   Contains("did you mean 'kvm.halt_poll_ns'?"));
}

TEST_CASE("Bool accepts only true and false") {
  CHECK(problem_of("kvm.enable_hv_timer", "true").empty());
  CHECK(problem_of("kvm.enable_hv_timer", "false").empty());
  for (const char* bad : {"1", "0", "yes", "no", "True", ""})
    CHECK_THAT(problem_of("kvm.enable_hv_timer", bad), Contains("expected true or false"));
}

TEST_CASE("Int accepts signed integers, rejects fractions and words, and checks the range") {
  CHECK(problem_of("kvm.halt_poll_ns", "10000000").empty());
  CHECK(problem_of("guest.cpus", "[0]").empty());
  CHECK_THAT(problem_of("kvm.halt_poll_ns", "1.5"), Contains("expected an integer, got '1.5'"));
  CHECK_THAT(problem_of("kvm.halt_poll_ns", "1e3"), Contains("expected an integer, got '1e3'"));
  CHECK_THAT(problem_of("kvm.halt_poll_ns", "12ns"), Contains("expected an integer"));
  CHECK_THAT(problem_of("kvm.halt_poll_ns", "99999999999999999999"),
             Contains("does not fit in a 64-bit integer"));
  CHECK_THAT(problem_of("kvm.halt_poll_ns", "-1"),
             Contains("-1 is out of range: must be [0, 10000000] ns"));
  CHECK_THAT(problem_of("sim.seed", "-1"), Contains("must be >= 0 count"));

  ParamRegistry reg;
  reg.declare(make_decl("x.neg", ParamType::Int, "-1"));
  CHECK(ParamSet(reg).i("x.neg") == -1);
}

TEST_CASE("Double accepts any finite number inside its range") {
  CHECK(problem_of("guest.load", "1").empty());
  CHECK(problem_of("guest.load", ".25").empty());
  CHECK_THAT(problem_of("guest.load", "half"), Contains("expected a number, got 'half'"));
  CHECK_THAT(problem_of("guest.load", "nan"), Contains("expected a number"));
  CHECK_THAT(problem_of("guest.load", "1.5"), Contains("1.5 is out of range: must be [0, 1]"));
}

TEST_CASE("String choices are enforced and listed in the error") {
  CHECK(problem_of("kvm.lapic.timer_mode", "periodic").empty());
  CHECK(problem_of("guest.name", "anything at all").empty());
  CHECK_THAT(problem_of("kvm.lapic.timer_mode", "deadline"),
             Contains("'deadline' is not allowed: must be one of oneshot, periodic, tsc-deadline"));
}

TEST_CASE("IntList accepts a YAML list, a,b and an empty list and range-checks every element") {
  const ParamRegistry reg = test_registry();
  ParamSet set(reg);
  set.set_text("guest.cpus", "[0, 5,7]", "--set");
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{0, 5, 7});
  set.set_text("guest.cpus", "4,1", "--set");
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{4, 1});
  set.set_text("guest.cpus", "[]", "--set");
  CHECK(set.ints("guest.cpus").empty());
  set.set_text("guest.cpus", " 9 ", "--set");
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{9});
  CHECK(set.text("guest.cpus") == "[9]");

  CHECK_THAT(problem_of("guest.cpus", "[1, x]"),
             Contains("element 2: expected an integer, got 'x'"));
  CHECK_THAT(problem_of("guest.cpus", "[1, 64]"),
             Contains("element 2: 64 is out of range: must be [0, 63]"));
  CHECK_THAT(problem_of("guest.cpus", "[1, 2"), Contains("missing ']'"));
  CHECK_THAT(problem_of("guest.cpus", "1,,2"), Contains("element 2: expected an integer, got ''"));
}

TEST_CASE("Dist values parse with CostDist and report its error text") {
  const ParamRegistry reg = test_registry();
  ParamSet set(reg);
  set.set_text("cost.vmexit", "lognormal(6us, 0.5, shift=2us, max=80us)", "--set");
  CHECK(set.dist("cost.vmexit").kind == DistKind::LogNormal);
  CHECK(set.dist("cost.vmexit").sigma == 0.5);
  set.set_text("cost.vmexit", "empirical(400cyc:3, 700cyc:1)", "--set");
  CHECK(set.dist("cost.vmexit").points.size() == 2);

  for (const std::string bad : {"gauss(1ns, 2ns)", "normal(300ns)", "12 parsecs", "-5ns"}) {
    std::string why;
    REQUIRE_FALSE(CostDist::parse(bad, &why));
    CHECK_THAT(
        problem_of("cost.vmexit", bad),
        StartsWith("here: key 'cost.vmexit': bad distribution '" + bad + "'") && Contains(why));
  }
}

TEST_CASE("text() is canonical and parses back to the same value") {
  const ParamRegistry reg = test_registry();
  ParamSet set(reg);
  CHECK(set.text("kvm.enable_hv_timer") == "true");
  CHECK(set.text("guest.cpus") == "[2, 3]");
  CHECK(set.text("guest.load") == "0.5");
  CHECK(set.text("cost.vmexit") == "normal(300ns, 20ns)");
  ParamSet copy(reg);
  for (const auto& key : set.keys()) {
    copy.set_text(key, set.text(key), "copy");
    CHECK(copy.text(key) == set.text(key));
  }
}

TEST_CASE("set_value type-checks and range-checks an already parsed value") {
  const ParamRegistry reg = test_registry();
  ParamSet set(reg);
  set.set_value("guest.load", 0.25, "code");
  CHECK(set.d("guest.load") == 0.25);
  CHECK(set.origin("guest.load") == "code");
  CHECK_THROWS_AS(set.set_value("guest.load", std::int64_t{1}, "code"), std::logic_error);
  CHECK_THROWS_WITH(set.set_value("guest.load", 2.0, "code"),
                    StartsWith("code: key 'guest.load': 2 is out of range"));
}

TEST_CASE("suggest proposes close keys and the same name in another group") {
  const ParamRegistry reg = test_registry();
  CHECK(reg.suggest("kvm.enable_hv_timr") == std::vector<std::string>{"kvm.enable_hv_timer"});
  CHECK(reg.suggest("kvmm") == std::vector<std::string>{"kvm"});
  CHECK(reg.suggest("lapic.timer_mode") == std::vector<std::string>{"kvm.lapic.timer_mode"});
  CHECK(reg.suggest("completely.different").empty());
  CHECK(did_you_mean(reg, "sim.sed") == "; did you mean 'sim.seed'?");
  CHECK(did_you_mean(reg, "zzz").empty());
}

TEST_CASE("format_param_table lists every key with its type, default, unit, range and doc") {
  const ParamRegistry reg = test_registry();
  const std::string table = format_param_table(reg);
  CHECK_THAT(table, StartsWith("KEY"));
  for (const auto& d : reg.all()) {
    CHECK_THAT(table, Contains(d.key));
    CHECK_THAT(table, Contains(d.doc));
  }
  const auto row_start = table.find("kvm.halt_poll_ns");
  const std::string row = table.substr(row_start, table.find('\n', row_start) - row_start);
  CHECK_THAT(row, Contains("  int  ") && Contains("  200000  ") && Contains("  ns  ") &&
                      Contains("  [0, 10000000]  "));  // the unit has its own column
  CHECK_THAT(table, Contains("one of: oneshot, periodic, tsc-deadline"));
  CHECK_THAT(table, Contains("normal(300ns, 20ns)"));
  // Columns are aligned: every row's doc starts at the same offset.
  const auto doc_col =
      table.find("Doc for sim.seed.") - table.rfind('\n', table.find("Doc for sim.seed."));
  const auto pos = table.find("Doc for guest.name.");
  CHECK(pos - table.rfind('\n', pos) == doc_col);
}

TEST_CASE("format_param_markdown emits a header and one table row per key") {
  const ParamRegistry reg = test_registry();
  const std::string md = format_param_markdown(reg);
  CHECK_THAT(md, StartsWith("| Key | Kind | Type | Default | Unit | Range | Description |\n|---"));
  CHECK_THAT(md, Contains("| `kvm.halt_poll_ns` | param | int | `200000` | ns | [0, 10000000] |"));
  CHECK(static_cast<std::size_t>(std::count(md.begin(), md.end(), '\n')) == reg.all().size() + 2);
}

// ---------------------------------------------------------------- kernel eras

namespace {

// The test registry plus a host kernel key and two version switches.
ParamRegistry era_registry(const std::string& default_kernel = "5.4") {
  ParamRegistry reg = test_registry();
  reg.declare(make_decl("host.kernel", ParamType::String, default_kernel));
  reg.declare(make_decl("kvm.fast", ParamType::Bool, "false"));
  reg.set_eras("kvm.fast", "host.kernel",
               {{"4.0", "false", "none yet"}, {"5.8", "true", "v5.8 series"}});
  reg.set_eras("kvm.halt_poll_ns", "host.kernel",
               {{"4.0", "0", "off"}, {"4.3", "200000", "dynamic"}, {"6.11", "400000", "made up"}});
  return reg;
}

}  // namespace

TEST_CASE("kernel versions parse and compare component by component", "[params][era]") {
  CHECK(parse_kernel_version("4.9") == std::vector<int>{4, 9});
  CHECK(parse_kernel_version("4.20") == std::vector<int>{4, 20});
  CHECK(parse_kernel_version("6.6.1") == std::vector<int>{6, 6, 1});
  for (const char* bad : {"", "4.", ".4", "4.x", "v5.4", "1.0", "10.1", "5.4.1.2"}) {
    INFO(bad);
    CHECK_FALSE(parse_kernel_version(bad));
  }
  CHECK(compare_kernel_versions({4, 20}, {4, 9}) > 0);  // not a string compare
  CHECK(compare_kernel_versions({5, 8}, {5, 8, 0}) == 0);
  CHECK(compare_kernel_versions({5, 7}, {5, 8}) < 0);
}

TEST_CASE(
    "a version switch takes the row of its kernel, its declared default follows the kernel key's "
    "default",
    "[params][era]") {
  const ParamRegistry reg = era_registry("5.4");
  CHECK(reg.find("kvm.fast")->default_text == "false");
  CHECK(reg.find("kvm.halt_poll_ns")->default_text == "200000");
  CHECK(param_kind(*reg.find("kvm.fast")) == "version switch");
  CHECK(param_kind(*reg.find("host.kernel")) == "kernel");
  CHECK(param_kind(*reg.find("sim.seed")) == "param");
  CHECK(reg.era_keys() == std::vector<std::string>{"host.kernel"});
  const ParamDecl& d = *reg.find("kvm.halt_poll_ns");
  CHECK(era_row(d, {3, 10}).value == "0");  // older than the table: its first row
  CHECK(era_row(d, {4, 3}).value == "200000");
  CHECK(era_row(d, {6, 10}).value == "200000");
  CHECK(era_row(d, {6, 11}).value == "400000");
  CHECK(era_row(d, {6, 12}).value == "400000");
  // A registry whose default kernel is newer has other declared defaults.
  CHECK(era_registry("5.8").find("kvm.fast")->default_text == "true");
}

TEST_CASE("apply_kernel_eras fills only the switches no file or --set chose", "[params][era]") {
  const ParamRegistry reg = era_registry();
  ParamSet set(reg);
  set.set_text("host.kernel", "5.8", "a.yaml:3");
  set.set_text("kvm.halt_poll_ns", "0", "--set");  // explicit: stays
  apply_kernel_eras(set);
  CHECK(set.b("kvm.fast"));
  CHECK(set.origin("kvm.fast") == "host.kernel=5.8 (era)");
  CHECK(set.i("kvm.halt_poll_ns") == 0);
  CHECK(set.origin("kvm.halt_poll_ns") == "--set");
  // Idempotent, and a later kernel change re-applies to era-chosen values.
  set.set_text("host.kernel", "4.9", "--set");
  apply_kernel_eras(set);
  CHECK_FALSE(set.b("kvm.fast"));
  CHECK(set.origin("kvm.fast") == "host.kernel=4.9 (era)");
}

TEST_CASE("a kernel key that is not a version is an input error naming it", "[params][era]") {
  const ParamRegistry reg = era_registry();
  ParamSet set(reg);
  set.set_text("host.kernel", "latest", "s.yaml:7");
  try {
    apply_kernel_eras(set);
    FAIL("accepted");
  } catch (const ScenarioError& e) {
    CHECK_THAT(e.what(),
               StartsWith("s.yaml:7: key 'host.kernel': 'latest' is not a kernel version"));
  }
}

TEST_CASE("set_eras refuses tables out of order, without reasons, or with bad values",
          "[params][era]") {
  ParamRegistry reg = era_registry();
  CHECK_THROWS_AS(reg.set_eras("kvm.fast", "host.kernel", {}), std::logic_error);
  CHECK_THROWS_AS(
      reg.set_eras("kvm.fast", "host.kernel", {{"5.8", "true", "a"}, {"5.4", "false", "b"}}),
      std::logic_error);
  CHECK_THROWS_AS(reg.set_eras("kvm.fast", "host.kernel", {{"5.8", "true", ""}}), std::logic_error);
  CHECK_THROWS_AS(reg.set_eras("kvm.fast", "host.kernel", {{"5.8", "maybe", "a"}}),
                  std::logic_error);
  CHECK_THROWS_AS(reg.set_eras("kvm.fast", "sim.seed", {{"5.8", "true", "a"}}), std::logic_error);
  CHECK_THROWS_AS(reg.set_eras("kvm.nope", "host.kernel", {{"5.8", "true", "a"}}),
                  std::logic_error);
}

TEST_CASE("kvmsim params lists a version switch with its kind and its table", "[params][era]") {
  const ParamRegistry reg = era_registry();
  const std::string table = format_param_table(reg);
  CHECK_THAT(table, StartsWith("KEY"));
  CHECK_THAT(table, Contains("KIND"));
  const auto line_of = [&](const std::string& key) {
    const auto p = table.find("\n" + key + " ");
    return table.substr(p + 1, table.find('\n', p + 1) - p - 1);
  };
  CHECK_THAT(line_of("kvm.fast"), Contains("version switch"));
  CHECK_THAT(line_of("kvm.fast"),
             Contains("[host.kernel: before 5.8: false (none yet); 5.8+: true (v5.8 series)]"));
  CHECK_THAT(line_of("sim.seed"), Contains(" param "));
}

// ------------------------------------------------------------ derived defaults

namespace {

// The era registry plus a feature the host offers from 5.8 (kvm.fast) and a
// guest switch derived from it, capped by it.
ParamRegistry derived_registry() {
  ParamRegistry reg = era_registry("5.4");
  reg.declare(make_decl("guest.uses_fast", ParamType::Bool, "false"));
  DerivedDefault d;
  d.from = {"kvm.fast"};
  d.doc = "true when the host is fast";
  d.rule = [](const ParamSet& p) {
    return p.b("kvm.fast") ? DerivedValue{"true", "kvm.fast=true"}
                           : DerivedValue{"false", "kvm.fast=false: the host is slow"};
  };
  d.cap = d.rule;
  reg.set_derived("guest.uses_fast", std::move(d));
  return reg;
}

}  // namespace

TEST_CASE(
    "a derived key follows the keys it reads after the eras, keeps an explicit value, and an "
    "explicit true its cap forbids is an error saying why",
    "[params][derived]") {
  const ParamRegistry reg = derived_registry();
  CHECK(reg.find("guest.uses_fast")->default_text == "false");  // the rule on 5.4's defaults
  CHECK(param_kind(*reg.find("guest.uses_fast")) == "derived");
  ParamSet set(reg);
  set.set_text("host.kernel", "5.8", "--set");
  apply_kernel_eras(set);
  CHECK(set.b("guest.uses_fast"));
  CHECK(set.origin("guest.uses_fast") == "kvm.fast=true (derived)");
  // A later change re-derives it; idempotent.
  set.set_text("host.kernel", "5.4", "--set");
  apply_kernel_eras(set);
  apply_kernel_eras(set);
  CHECK_FALSE(set.b("guest.uses_fast"));
  // An explicit false always stands; an explicit true needs the cap.
  ParamSet off(reg);
  off.set_text("guest.uses_fast", "false", "a.yaml:2");
  off.set_text("host.kernel", "5.8", "--set");
  apply_kernel_eras(off);
  CHECK_FALSE(off.b("guest.uses_fast"));
  CHECK(off.origin("guest.uses_fast") == "a.yaml:2");
  ParamSet on(reg);
  on.set_text("guest.uses_fast", "true", "a.yaml:2");
  try {
    apply_kernel_eras(on);
    FAIL("accepted");
  } catch (const ScenarioError& e) {
    CHECK_THAT(e.what(), StartsWith("a.yaml:2: key 'guest.uses_fast': true cannot act: "
                                    "kvm.fast=false: the host is slow"));
  }
  on.set_text("host.kernel", "5.8", "--set");
  CHECK_NOTHROW(apply_kernel_eras(on));
}

TEST_CASE("set_derived refuses a version switch, a second rule, unknown keys and bad values",
          "[params][derived]") {
  ParamRegistry reg = derived_registry();
  const auto rule = [](const char* value) {
    DerivedDefault d;
    d.doc = "x";
    d.rule = [value](const ParamSet&) { return DerivedValue{value, "y"}; };
    return d;
  };
  CHECK_THROWS_AS(reg.set_derived("kvm.fast", rule("true")), std::logic_error);  // era
  CHECK_THROWS_AS(reg.set_derived("guest.uses_fast", rule("true")), std::logic_error);
  CHECK_THROWS_AS(reg.set_derived("kvm.nope", rule("true")), std::logic_error);
  CHECK_THROWS_AS(reg.set_derived("sim.seed", rule("many")), std::logic_error);
  DerivedDefault reads_nothing_declared = rule("1");
  reads_nothing_declared.from = {"kvm.nope"};
  CHECK_THROWS_AS(reg.set_derived("sim.seed", reads_nothing_declared), std::logic_error);
  // A derived key cannot become a version switch either.
  CHECK_THROWS_AS(reg.set_eras("guest.uses_fast", "host.kernel", {{"4.0", "true", "a"}}),
                  std::logic_error);
  const std::string blocks = format_param_blocks(reg, "guest.uses_fast", 100);
  CHECK_THAT(blocks, Contains("(derived)"));
  CHECK_THAT(blocks, Contains("[default: true when the host is fast]"));
}
