#include "sim/core/output_errors.h"

#include <algorithm>
#include <cstring>

#include "sim/core/event_kernel.h"

namespace kvmsim {
namespace {
std::vector<std::string>& errors() {
  static std::vector<std::string> e;
  return e;
}
std::vector<std::string>& paths() {
  static std::vector<std::string> p;
  return p;
}
}  // namespace

void output_failed(const std::string& path, const std::string& what, int err) {
  if (std::find(paths().begin(), paths().end(), path) != paths().end()) return;
  paths().push_back(path);
  errors().push_back(path + ": " + what +
                     (err ? std::string(" (") + std::strerror(err) + ")" : ""));
  if (sim_running()) sim_stop();
}

const std::vector<std::string>& output_errors() { return errors(); }

}  // namespace kvmsim
