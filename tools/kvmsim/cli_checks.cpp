#include "tools/kvmsim/cli_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "sim/model_params.h"

namespace kvmsim::cli {

namespace {
std::string number_text(double v) { return fmt::format("{:g}", v); }
}  // namespace

CLI::Validator number_in(double lo, double hi, const std::string& unit, bool lo_open) {
  const std::string range = fmt::format("{}{}, {}]{}", lo_open ? "(" : "[", number_text(lo),
                                        number_text(hi), unit.empty() ? "" : " " + unit);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
          return fmt::format("'{}' is not a finite number", s);
        if (v < lo || v > hi || (lo_open && v == lo))
          return fmt::format("{} is out of range: must be in {}", s, range);
        return {};
      },
      range, "RANGE");
}

std::string seed_override(const std::string& text) {
  const auto* d = model_params().find("sim.seed");
  const double hi = d ? d->max : 9.0e15;
  const std::string msg = fmt::format("--seed {}: must be a whole number in [0, {:.0f}]", text, hi);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(msg);
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || static_cast<double>(v) > hi) throw UsageError(msg);
  return "sim.seed=" + std::to_string(v);
}

}  // namespace kvmsim::cli
