#include "sim/workload.h"

#include <stdexcept>

namespace kvmsim {

WorkloadRegistry& WorkloadRegistry::instance() {
  static WorkloadRegistry r;
  return r;
}

bool WorkloadRegistry::add(WorkloadInfo info) {
  const std::string name = info.name;
  if (!by_name_.emplace(name, std::move(info)).second)
    throw std::logic_error("workload '" + name + "' registered twice");
  return true;
}

const WorkloadInfo* WorkloadRegistry::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

std::vector<std::string> WorkloadRegistry::names() const {
  std::vector<std::string> n;
  for (const auto& [k, v] : by_name_) n.push_back(k);
  return n;
}

}  // namespace kvmsim
