#include "sim/core/advisory.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kvmsim {

AdvisoryRegistry& AdvisoryRegistry::instance() {
  static AdvisoryRegistry registry;
  return registry;
}

bool AdvisoryRegistry::add(std::string name, AdvisoryCheck check) {
  const auto at = std::lower_bound(checks_.begin(), checks_.end(), name,
                                   [](const auto& c, const std::string& n) { return c.first < n; });
  if (at != checks_.end() && at->first == name)
    throw std::logic_error("advisory '" + name + "' registered twice");
  checks_.emplace(at, std::move(name), std::move(check));
  return true;
}

std::vector<Advisory> AdvisoryRegistry::check(const ParamSet& p, const Metrics& m) const {
  std::vector<Advisory> out;
  for (const auto& [name, fn] : checks_) fn(p, m, out);
  return out;
}

std::vector<std::string> AdvisoryRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(checks_.size());
  for (const auto& c : checks_) out.push_back(c.first);
  return out;
}

double metric_or_zero(const Metrics& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? 0.0 : it->second;
}

}  // namespace kvmsim
