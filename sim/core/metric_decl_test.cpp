#include "sim/core/metric_decl.h"

#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>

using namespace kvmsim;

TEST_CASE("metric patterns: <n> is a decimal index, other placeholders one dot-free part") {
  CHECK(metric_pattern_matches("vcpu.<n>.steal_s", "vcpu.12.steal_s"));
  CHECK_FALSE(metric_pattern_matches("vcpu.<n>.steal_s", "vcpu.x.steal_s"));
  CHECK_FALSE(metric_pattern_matches("vcpu.<n>.steal_s", "vcpu..steal_s"));
  CHECK_FALSE(metric_pattern_matches("vcpu.<n>.steal_s", "vcpu.1.2.steal_s"));
  CHECK(metric_pattern_matches("tlb.vm<n>.flushes", "tlb.vm3.flushes"));
  CHECK_FALSE(metric_pattern_matches("tlb.vm<n>.flushes", "tlb.flushes"));
  CHECK(metric_pattern_matches("host.cpu.<n>.cpuidle.<state>.usage",
                               "host.cpu.7.cpuidle.C1E-HSW.usage"));
  CHECK_FALSE(metric_pattern_matches("exits.<reason>.count", "exits.HLT.count.x"));
  CHECK(metric_pattern_matches("lat_ctx.<config>.us", "lat_ctx.16p_64K.us"));
  CHECK_FALSE(metric_pattern_matches("lat_ctx.<config>.us", "lat_ctx.16p_64K.hop_us"));
  CHECK(metric_pattern_matches("sim.seed", "sim.seed"));
  CHECK_FALSE(metric_pattern_matches("sim.seed", "sim.seeds"));
}

TEST_CASE("metric registry: sorted, the most specific declaration wins, prefix selection") {
  const auto& reg = MetricRegistry::instance();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < reg.all().size(); ++i) {
    if (i) CHECK(reg.all()[i - 1].pattern < reg.all()[i].pattern);
    CHECK(seen.insert(reg.all()[i].pattern).second);
  }
  REQUIRE(reg.find("breakdown.total.avg_ns") != nullptr);
  CHECK(reg.find("breakdown.total.avg_ns")->pattern == "breakdown.total.avg_ns");
  CHECK(reg.find("breakdown.vmexit.avg_ns")->pattern == "breakdown.<stage>.avg_ns");
  CHECK(reg.find("no.such.key") == nullptr);
  for (const auto* d : reg.select("halt_poll.")) CHECK(d->pattern.rfind("halt_poll.", 0) == 0);
  REQUIRE(reg.select("vcpu.3.steal_s").size() == 1);
  CHECK(reg.select("vcpu.3.steal_s")[0]->pattern == "vcpu.<n>.steal_s");
  CHECK(reg.select("").size() == reg.all().size());
}

TEST_CASE("metric registry: a duplicate pattern or an unknown unit is a programming error") {
  MetricRegistry r;
  r.add({{"a.b", "count", "x", "doc"}});
  CHECK_THROWS_AS(r.add({{"a.b", "count", "x", "doc"}}), std::logic_error);
  CHECK_THROWS_AS(r.add({{"a.c", "furlongs", "x", "doc"}}), std::logic_error);
  CHECK_THROWS_AS(r.add({{"a.d", "count", "x", ""}}), std::logic_error);
}

TEST_CASE("metric listing: the Markdown escapes placeholders outside code spans") {
  const MetricDecl d{"vcpu.<n>.run_s", "s", "kvm", "Of vCPU `<n>`, not <n> | x."};
  const std::string md = format_metric_markdown({&d});
  CHECK(md.find("## `vcpu.*`") != std::string::npos);
  CHECK(md.find("| `vcpu.<n>.run_s` | s | kvm | Of vCPU `<n>`, not \\<n> \\| x. |") !=
        std::string::npos);
  const std::string text = format_metric_table({&d});
  CHECK(text.find("vcpu.<n>.run_s  s     kvm      Of vCPU") != std::string::npos);
}
