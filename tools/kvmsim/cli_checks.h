// Argument checks shared by the subcommands: short range messages (CLI11's
// own validators print the full range of a double, 300 digits), the --seed
// check, and the exit codes every subcommand uses.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kvmsim::cli {

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed =
    1;  // the run failed, a check failed, an output could not be written
inline constexpr int kExitUsage = 2;  // bad arguments or bad input (scenario, trace, histogram)

// A finite number in [lo, hi] ("must be in [0, 1000] ms"); lo_open: (lo, hi].
CLI::Validator number_in(double lo, double hi, const std::string& unit, bool lo_open = false);

// --seed N: a whole number in sim.seed's declared range; returns "sim.seed=N"
// for the override list. Throws UsageError naming --seed.
std::string seed_override(const std::string& text);

// Thrown for a bad argument that CLI11 cannot see (exit 2, message as is).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace kvmsim::cli
