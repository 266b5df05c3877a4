#include "sim/core/invariants.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "sim/core/context.h"

namespace kvmsim {
namespace {
std::string& first_violation() {
  static std::string v;
  return v;
}
}  // namespace

void invariant_failed(const std::string& component, const std::string& what) {
  if (!first_violation().empty()) return;
  first_violation() =
      fmt::format("invariant violated at simulated cycle {} in {}: {}", now_tsc(), component, what);
  if (sim_running()) sim_stop();
}

const std::string& invariant_violation() { return first_violation(); }

bool fault_injected(const char* fault) {
  static const std::string env = [] {
    const char* e = std::getenv("KVMSIM_FAULT");
    return std::string(e ? e : "");
  }();
  return !env.empty() && env == fault;
}

}  // namespace kvmsim
