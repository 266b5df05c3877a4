// Metric declarations: what each key of summary.json's "metrics" means.
//
// Every key a component or workload reports (metrics.h) is declared once, as
// a MetricDecl (key pattern, unit, meaning, emitter), in the folder of its
// emitter (sim/*/metrics.cpp, or beside a workload), and registers itself
// from a static initialiser:
//
//   KVMSIM_DECLARE_METRICS(halt, {
//       {"halt_poll.successful", "count", "kvm", "Halts that ended during polling ..."},
//   });
//
// A pattern's `<name>` parts stand for a dot-free part of the key: `<n>` for
// a decimal index, any other name for a word ("vcpu.<n>.steal_s",
// "exits.<reason>.count", "tlb.vm<n>.flushes").
// `kvmsim metrics`, docs/reference/metrics.md and the declaration test
// (every emitted key declared, every declaration emitted) read the registry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/core/metrics.h"

namespace kvmsim {

struct MetricDecl {
  std::string pattern;  // "vcpu.<n>.steal_s"
  std::string unit;     // "count", "s", "ns", "us", "cycles", "fraction", "per_s", "Hz", "id"
  std::string emitter;  // the component or workload that reports it: "kvm", "host", "ebizzy"
  std::string doc;      // what it counts, in the kernel's terms where they apply
};

// True if `key` is an instance of `pattern`: literal characters match
// themselves; `<n>` matches one or more decimal digits; any other `<word>`
// matches one or more characters other than '.'.
bool metric_pattern_matches(std::string_view pattern, std::string_view key);

class MetricRegistry {
 public:
  static MetricRegistry& instance();
  // Adds declarations; throws std::logic_error on a pattern declared twice,
  // an empty field or an unknown unit. Returns true (for static registration).
  bool add(const std::vector<MetricDecl>& decls);
  // Every declaration, sorted by pattern.
  [[nodiscard]] const std::vector<MetricDecl>& all() const { return decls_; }
  // The declaration `key` is an instance of, or nullptr; when several match,
  // the one with the fewest placeholders (then the longest pattern).
  [[nodiscard]] const MetricDecl* find(std::string_view key) const;
  // Declarations whose pattern starts with `prefix`, or that `prefix` (a
  // full key) is an instance of; all of them for an empty prefix.
  [[nodiscard]] std::vector<const MetricDecl*> select(std::string_view prefix) const;

 private:
  std::vector<MetricDecl> decls_;
};

// The keys of `m` no declaration matches (sorted).
std::vector<std::string> undeclared_metrics(const Metrics& m);

// The units a declaration may use, with their meaning, for listings.
const std::vector<std::pair<std::string, std::string>>& metric_units();

// Aligned text for `kvmsim metrics`: key pattern, unit, emitter, meaning.
std::string format_metric_table(const std::vector<const MetricDecl*>& decls);
// Markdown for docs/reference/metrics.md: one section per first key part,
// one table each.
std::string format_metric_markdown(const std::vector<const MetricDecl*>& decls);

}  // namespace kvmsim

#define KVMSIM_METRICS_CAT2(a, b) a##b
#define KVMSIM_METRICS_CAT(a, b) KVMSIM_METRICS_CAT2(a, b)
#define KVMSIM_DECLARE_METRICS(id, ...)                                          \
  namespace {                                                                    \
  [[maybe_unused]] const bool KVMSIM_METRICS_CAT(kvmsim_declared_metrics_, id) = \
      ::kvmsim::MetricRegistry::instance().add(__VA_ARGS__);                     \
  }
