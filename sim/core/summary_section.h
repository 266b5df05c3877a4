// Summary sections: what each mechanism did in a run, printed by `kvmsim run`
// after the latency figures, as the real tools show the same counters (KVM's
// halt_* stats, schedstat, kvm_stat). A section appears only when its
// mechanism was in play.
//
// Each mechanism's folder registers its own section from a static
// initialiser (sim/*/summary_sections.cpp):
//
//   KVMSIM_REGISTER_SUMMARY_SECTION(halt_polling, 10, [](const ParamSet& p, const Metrics& m) {
//     return SummarySection{"halt polling (KVM's halt_* stats)", {{"halt_exits", "5003"}}};
//   });
//
// The order number sorts the sections; an empty `stats` leaves it out.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/metrics.h"
#include "sim/core/params.h"

namespace kvmsim {

struct SummarySection {
  std::string title;                                       // "halt polling (KVM's halt_* stats)"
  std::vector<std::pair<std::string, std::string>> stats;  // {"halt_attempted_poll", "4999"}
};

using SummarySectionFn = std::function<SummarySection(const ParamSet& p, const Metrics& m)>;

class SummarySectionRegistry {
 public:
  static SummarySectionRegistry& instance();
  // Throws std::logic_error on a name registered twice. Returns true.
  bool add(std::string name, int order, SummarySectionFn fn);
  // The sections with stats for this run, in order.
  [[nodiscard]] std::vector<SummarySection> sections(const ParamSet& p, const Metrics& m) const;

 private:
  struct Entry {
    std::string name;
    int order;
    SummarySectionFn fn;
  };
  std::vector<Entry> entries_;  // sorted by (order, name)
};

// A count metric as a stat's value: a whole number, 0 when the run did not
// report the key.
std::string metric_count(const Metrics& m, const std::string& key);

// The sections as text: a title line each, then "  stat value" pairs, four to
// a line, the values right of their stats.
std::string format_summary_sections(const std::vector<SummarySection>& sections);

}  // namespace kvmsim

#define KVMSIM_SUMMARY_CAT2(a, b) a##b
#define KVMSIM_SUMMARY_CAT(a, b) KVMSIM_SUMMARY_CAT2(a, b)
#define KVMSIM_REGISTER_SUMMARY_SECTION(id, order, ...)                          \
  namespace {                                                                    \
  [[maybe_unused]] const bool KVMSIM_SUMMARY_CAT(kvmsim_summary_section_, id) =  \
      ::kvmsim::SummarySectionRegistry::instance().add(#id, order, __VA_ARGS__); \
  }
