// Scenario loading: includes, precedence, --set, and the location and key
// path in every kind of error. Fixtures live in tests/data/scenarios/.
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "sim/core/scenario.h"

using namespace kvmsim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::string kDir = std::string(KVMSIM_SOURCE_DIR) + "/tests/data/scenarios/";
const std::string kInline = "inline/test.yaml";  // path shown for load_scenario_text

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
const ParamRegistry& registry() {
  static const ParamRegistry reg = [] {
    ParamRegistry r;
    r.declare(make_decl("sim.seed", ParamType::Int, "1", "count", 0));
    r.declare(make_decl("sim.duration", ParamType::Int, "600000", "us", 1, 1e9));
    r.declare(make_decl("kvm.enable_hv_timer", ParamType::Bool, "true"));
    r.declare(make_decl("kvm.halt_poll_ns", ParamType::Int, "200000", "ns", 0, 1e7));
    ParamDecl mode = make_decl("guest.mode", ParamType::String, "oneshot");
    mode.choices = {"oneshot", "periodic", "tsc-deadline"};
    r.declare(mode);
    r.declare(make_decl("guest.load", ParamType::Double, "0.5", "", 0, 1));
    r.declare(make_decl("guest.cpus", ParamType::IntList, "[2, 3]", "", 0, 63));
    r.declare(make_decl("cost.vmexit", ParamType::Dist, "normal(300ns, 20ns)"));
    return r;
  }();
  return reg;
}

ParamSet load_inline(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return load_scenario_text(registry(), yaml, kInline, overrides);
}

// The ScenarioError message thrown by f().
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ScenarioError& e) {
    return e.what();
  }
  FAIL("expected a ScenarioError");
  return "";
}

std::string inline_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return error_of([&] { load_inline(yaml, overrides); });
}

std::string file_error(const std::string& name) {
  return error_of([&] { load_scenario(registry(), kDir + name); });
}

}  // namespace

// --- values and precedence -----------------------------------------------------

TEST_CASE("an empty scenario keeps every default") {
  const ParamSet set = load_inline("# nothing here\n");
  CHECK(set.i("sim.seed") == 1);
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{2, 3});
  CHECK(set.origin("sim.seed") == "default");
}

TEST_CASE("nested mappings and dotted keys name the same parameters") {
  const ParamSet set = load_inline(
      "description: ignored\n"
      "name: ignored too\n"
      "kvm:\n"
      "  enable_hv_timer: false\n"
      "guest.mode: periodic\n"
      "guest: {load: 0.25}\n"
      "sim:\n"
      "  seed: -0\n");
  CHECK_FALSE(set.b("kvm.enable_hv_timer"));
  CHECK(set.origin("kvm.enable_hv_timer") == kInline + ":4");
  CHECK(set.s("guest.mode") == "periodic");
  CHECK(set.d("guest.load") == 0.25);
  CHECK(set.origin("guest.load") == kInline + ":6");
  CHECK(set.origin("sim.duration") == "default");
}

TEST_CASE("YAML values: sequences for int lists, bare numbers for distributions") {
  const ParamSet set = load_inline(
      "guest:\n"
      "  cpus:\n"
      "    - 5\n"
      "    - 6\n"
      "cost.vmexit: 350\n"
      "sim.duration: 20\n");
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{5, 6});
  CHECK(set.origin("guest.cpus") == kInline + ":2");
  CHECK(set.dist("cost.vmexit").kind == DistKind::Constant);
  CHECK(set.dist("cost.vmexit").a.value == 350);
  CHECK(load_inline("guest.cpus: []\n").ints("guest.cpus").empty());
  CHECK(load_inline("cost.vmexit: uniform(1us, 2us)\n").dist("cost.vmexit").kind ==
        DistKind::Uniform);
}

TEST_CASE("an include is loaded first and the including file's keys override it") {
  const ParamSet set = load_scenario(registry(), kDir + "override.yaml");
  CHECK(set.i("sim.seed") == 7);
  CHECK(set.origin("sim.seed") == kDir + "base.yaml:3");
  CHECK_FALSE(set.b("kvm.enable_hv_timer"));
  CHECK(set.i("kvm.halt_poll_ns") == 50000);
  CHECK(set.origin("kvm.halt_poll_ns") == kDir + "override.yaml:4");
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{0, 2, 4});
  CHECK(set.text("cost.vmexit") == "normal(310ns, 25ns, min=240ns)");
  CHECK(set.origin("guest.load") == "default");
}

TEST_CASE("includes resolve relative to the including file and apply in list order") {
  const ParamSet set = load_scenario(registry(), kDir + "sub/child.yaml");
  CHECK(set.i("sim.duration") == 5000);   // base.yaml
  CHECK(set.i("kvm.halt_poll_ns") == 1);  // extra.yaml beats base.yaml
  CHECK(set.origin("kvm.halt_poll_ns") == kDir + "extra.yaml:3");
  CHECK(set.d("guest.load") == 0.75);
  CHECK(set.i("sim.seed") == 11);  // the file itself beats both
  CHECK(set.origin("sim.seed") == kDir + "sub/child.yaml:5");
}

TEST_CASE("overrides from --set are applied last and record origin --set") {
  const ParamSet set = load_scenario(registry(), kDir + "override.yaml",
                                     {"kvm.halt_poll_ns=7", "guest.cpus=[1, 9]", "guest.cpus=4,5",
                                      "cost.vmexit=exponential(2us)", "guest.mode = tsc-deadline"});
  CHECK(set.i("kvm.halt_poll_ns") == 7);
  CHECK(set.origin("kvm.halt_poll_ns") == "--set");
  CHECK(set.ints("guest.cpus") == std::vector<std::int64_t>{4, 5});
  CHECK(set.dist("cost.vmexit").kind == DistKind::Exponential);
  CHECK(set.s("guest.mode") == "tsc-deadline");
  CHECK(set.i("sim.seed") == 7);
  CHECK(set.origin("sim.seed") == kDir + "base.yaml:3");
}

// --- errors in files --------------------------------------------------------------

TEST_CASE("unknown key: file, line, column, full key path and a suggestion") {
  CHECK_THAT(file_error("unknown_key.yaml"),
             StartsWith(kDir + "unknown_key.yaml:3:3: unknown key 'kvm.enable_hv_timr'") &&
                 Contains("did you mean 'kvm.enable_hv_timer'?"));
  const std::string far = inline_error("sim:\n  seed: 1\n  zebra: 2\n");
  CHECK_THAT(far, StartsWith(kInline + ":3:3: unknown key 'sim.zebra'"));
  CHECK_THAT(far, !Contains("did you mean"));
  CHECK_THAT(inline_error("kvmm:\n  enable_hv_timer: true\n"),
             StartsWith(kInline + ":1:1: unknown key 'kvmm'; did you mean 'kvm'?"));
}

TEST_CASE("an error inside an included file names that file, not the includer") {
  CHECK_THAT(file_error("includes_bad.yaml"),
             StartsWith(kDir + "sub/bad_value.yaml:3:17: key 'kvm.halt_poll_ns': "
                               "expected an integer, got '1.5'"));
}

TEST_CASE("wrong scalar type: bool wants true or false, int rejects words") {
  CHECK_THAT(
      inline_error("kvm:\n  enable_hv_timer: 1\n"),
      StartsWith(kInline + ":2:20: key 'kvm.enable_hv_timer': expected true or false, got '1'"));
  CHECK_THAT(inline_error("kvm.enable_hv_timer: yes\n"),
             Contains("expected true or false, got 'yes'"));
  CHECK_THAT(inline_error("sim.seed: abc\n"),
             StartsWith(kInline + ":1:11: key 'sim.seed': expected an integer, got 'abc'"));
  CHECK_THAT(inline_error("guest.load: lots\n"),
             StartsWith(kInline + ":1:13: key 'guest.load': expected a number, got 'lots'"));
}

TEST_CASE("out of range states the range and the unit") {
  CHECK_THAT(inline_error("kvm:\n  halt_poll_ns: 20000000\n"),
             StartsWith(kInline + ":2:17: key 'kvm.halt_poll_ns': 20000000 is out of range: "
                                  "must be [0, 10000000] ns"));
  CHECK_THAT(inline_error("sim.duration: 0\n"), StartsWith(kInline + ":1:15: key 'sim.duration'") &&
                                                    Contains("must be [1, 1000000000] us"));
}

TEST_CASE("a string outside its choices lists the allowed values") {
  CHECK_THAT(inline_error("guest:\n  mode: deadline\n"),
             StartsWith(kInline + ":2:9: key 'guest.mode': 'deadline' is not allowed: "
                                  "must be one of oneshot, periodic, tsc-deadline"));
}

TEST_CASE("a bad distribution carries CostDist's own error text") {
  std::string why;
  REQUIRE_FALSE(CostDist::parse("normal(300ns)", &why));
  CHECK_THAT(
      inline_error("\ncost:\n  vmexit: normal(300ns)\n"),
      StartsWith(kInline + ":3:11: key 'cost.vmexit': bad distribution 'normal(300ns)': " + why));
}

TEST_CASE("int list errors point at the offending element") {
  CHECK_THAT(inline_error("guest:\n  cpus:\n    - 1\n    - 64\n"),
             StartsWith(kInline +
                        ":4:7: key 'guest.cpus': element 2: 64 is out of range: must be [0, 63]"));
  CHECK_THAT(
      inline_error("guest.cpus: [1, x]\n"),
      StartsWith(kInline + ":1:17: key 'guest.cpus': element 2: expected an integer, got 'x'"));
  CHECK_THAT(
      inline_error("guest.cpus: [1, [2]]\n"),
      StartsWith(kInline + ":1:17: key 'guest.cpus': element 2: expected an integer, got a list"));
  CHECK_THAT(
      inline_error("guest.cpus: 2\n"),
      StartsWith(kInline +
                 ":1:13: key 'guest.cpus': expected a list of integers such as [2, 3], got '2'"));
}

TEST_CASE("a mapping where a value is expected, and a value where a mapping is expected") {
  CHECK_THAT(
      inline_error("kvm:\n  halt_poll_ns:\n    low: 1\n"),
      StartsWith(kInline + ":3:5: key 'kvm.halt_poll_ns': expected an integer, got a mapping"));
  CHECK_THAT(inline_error("sim.seed: [1]\n"),
             StartsWith(kInline + ":1:11: key 'sim.seed': expected an integer, got a list"));
  CHECK_THAT(
      inline_error("kvm: true\n"),
      StartsWith(kInline +
                 ":1:6: key 'kvm': expected a mapping of its parameters (kvm.*), got 'true'"));
  CHECK_THAT(inline_error("sim:\n  seed:\n"),
             StartsWith(kInline + ":2:3: key 'sim.seed': expected an integer, got no value"));
  CHECK_THAT(inline_error("- sim.seed\n"),
             StartsWith(kInline +
                        ":1:1: expected a mapping of parameter keys at the top level, got a list"));
  CHECK_THAT(inline_error("description: [a, b]\n"),
             StartsWith(kInline + ":1:14: key 'description': expected a string, got a list"));
}

TEST_CASE(
    "a key set twice in one file is an error, in one mapping or via dotted and nested forms") {
  CHECK_THAT(
      inline_error("sim:\n  seed: 1\n  seed: 2\n"),
      StartsWith(kInline +
                 ":3:3: key 'sim.seed': duplicate key in the same mapping (first at line 2)"));
  CHECK_THAT(
      inline_error("sim:\n  seed: 1\nsim.seed: 2\n"),
      StartsWith(kInline + ":3:1: key 'sim.seed': set twice in this file (first at line 2)"));
  CHECK_THAT(
      inline_error("kvm: {}\nkvm: {}\n"),
      StartsWith(kInline + ":2:1: key 'kvm': duplicate key in the same mapping (first at line 1)"));
}

TEST_CASE("YAML syntax errors report file, line and column") {
  CHECK_THAT(file_error("syntax_error.yaml"),
             StartsWith(kDir + "syntax_error.yaml:4:") && Contains(": YAML syntax error: "));
  CHECK_THAT(inline_error("\n\nkvm: [1, 2\n"), StartsWith(kInline + ":4:1: YAML syntax error: "));
}

TEST_CASE("a missing scenario file is an error naming it") {
  CHECK_THAT(file_error("no_such_scenario.yaml"),
             StartsWith(kDir + "no_such_scenario.yaml: cannot read scenario file"));
}

TEST_CASE("a missing include names the including file and line and the missing path") {
  CHECK_THAT(
      file_error("missing_include.yaml"),
      StartsWith(kDir +
                 "missing_include.yaml:2:22: include 'no_such_file.yaml': cannot read file '" +
                 kDir + "no_such_file.yaml'"));
  CHECK_THAT(
      inline_error("include: {a: b}\n"),
      StartsWith(kInline +
                 ":1:10: include: expected a file path or a list of file paths, got a mapping"));
}

TEST_CASE("an include cycle is an error showing the chain") {
  CHECK_THAT(file_error("cycle_a.yaml"),
             StartsWith(kDir + "cycle_b.yaml:1:10: include cycle: " + kDir + "cycle_a.yaml -> " +
                        kDir + "cycle_b.yaml -> " + kDir + "cycle_a.yaml"));
}

// --- errors in --set ------------------------------------------------------------------

TEST_CASE("errors of --set start with '--set KEY=VALUE:' and name the key") {
  CHECK_THAT(inline_error("", {"sim.seed"}), StartsWith("--set sim.seed: expected KEY=VALUE"));
  CHECK_THAT(inline_error("", {"=3"}), StartsWith("--set =3: expected KEY=VALUE"));
  CHECK_THAT(inline_error("", {"sim.sed=3"}),
             StartsWith("--set sim.sed=3: unknown key 'sim.sed'; did you mean 'sim.seed'?"));
  CHECK_THAT(inline_error("", {"sim=3"}),
             StartsWith("--set sim=3: 'sim' is a group of parameters"));
  CHECK_THAT(inline_error("", {"sim.seed=1.5"}),
             StartsWith("--set sim.seed=1.5: key 'sim.seed': expected an integer, got '1.5'"));
  CHECK_THAT(
      inline_error("", {"guest.cpus=[1,99]"}),
      StartsWith("--set guest.cpus=[1,99]: key 'guest.cpus': element 2: 99 is out of range"));
  CHECK_THAT(inline_error("", {"cost.vmexit=normal(1us"}),
             StartsWith("--set cost.vmexit=normal(1us: key 'cost.vmexit': bad distribution"));
}
