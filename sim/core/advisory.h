// Run advisories: what a finished run says beside its numbers when a setting
// could not act, or when one artefact dominates the result. They are what an
// experienced user would notice reading the summary ("halt polling never
// polled: every halt outlasted the window's maximum"), said every time.
//
// Each mechanism's folder registers its own checks from a static initialiser
// (sim/*/advisories.cpp), as metric declarations are registered:
//
//   KVMSIM_REGISTER_ADVISORY(halt_poll_idle, [](const ParamSet& p, const Metrics& m,
//                                               std::vector<Advisory>& out) { ... });
//
// A check reads the resolved parameters and the run's metrics only, so it
// runs the same for the CLI, the Python package and the tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/core/metrics.h"
#include "sim/core/params.h"

namespace kvmsim {

struct Advisory {
  std::string key;   // the parameter or metric it is about ("kvm.halt_poll_ns")
  std::string text;  // one sentence: what happened, why, what to change
};

using AdvisoryCheck =
    std::function<void(const ParamSet& p, const Metrics& m, std::vector<Advisory>& out)>;

class AdvisoryRegistry {
 public:
  static AdvisoryRegistry& instance();
  // Adds a check under a unique name; throws std::logic_error on a name
  // registered twice. Returns true (for static registration).
  bool add(std::string name, AdvisoryCheck check);
  // Every check's advisories for a finished run, in the checks' name order.
  [[nodiscard]] std::vector<Advisory> check(const ParamSet& p, const Metrics& m) const;
  [[nodiscard]] std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, AdvisoryCheck>> checks_;  // sorted by name
};

// A metric's value, 0 when the run did not report it.
double metric_or_zero(const Metrics& m, const std::string& key);

}  // namespace kvmsim

#define KVMSIM_ADVISORY_CAT2(a, b) a##b
#define KVMSIM_ADVISORY_CAT(a, b) KVMSIM_ADVISORY_CAT2(a, b)
#define KVMSIM_REGISTER_ADVISORY(id, ...)                                            \
  namespace {                                                                        \
  [[maybe_unused]] const bool KVMSIM_ADVISORY_CAT(kvmsim_registered_advisory_, id) = \
      ::kvmsim::AdvisoryRegistry::instance().add(#id, __VA_ARGS__);                  \
  }
