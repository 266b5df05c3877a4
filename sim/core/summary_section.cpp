#include "sim/core/summary_section.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace kvmsim {

SummarySectionRegistry& SummarySectionRegistry::instance() {
  static SummarySectionRegistry registry;
  return registry;
}

bool SummarySectionRegistry::add(std::string name, int order, SummarySectionFn fn) {
  for (const auto& e : entries_)
    if (e.name == name) throw std::logic_error("summary section '" + name + "' registered twice");
  entries_.push_back({std::move(name), order, std::move(fn)});
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  return true;
}

std::vector<SummarySection> SummarySectionRegistry::sections(const ParamSet& p,
                                                             const Metrics& m) const {
  std::vector<SummarySection> out;
  for (const auto& e : entries_) {
    SummarySection s = e.fn(p, m);
    if (!s.stats.empty()) out.push_back(std::move(s));
  }
  return out;
}

std::string metric_count(const Metrics& m, const std::string& key) {
  const auto it = m.find(key);
  return fmt::format("{:.0f}", it == m.end() ? 0.0 : it->second);
}

std::string format_summary_sections(const std::vector<SummarySection>& sections) {
  std::string out;
  for (const auto& s : sections) {
    out += "\n" + s.title + ":\n";
    for (std::size_t i = 0; i < s.stats.size(); i += 4) {
      std::string line = " ";
      for (std::size_t j = i; j < std::min(i + 4, s.stats.size()); ++j)
        line +=
            fmt::format(" {} {}", s.stats[j].first, s.stats[j].second) + (j + 1 < i + 4 ? " " : "");
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace kvmsim
