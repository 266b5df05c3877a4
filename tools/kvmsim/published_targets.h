// The published figures (validation/targets.yaml) as data: parsed from the
// copy embedded at build time or from another file (validate --targets).
// validation_targets.cpp binds them to the checks that compare runs with
// them; the tests and the Python package read them here too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/kvmsim/validation.h"

namespace kvmsim::validate {

// A malformed targets file, or one that does not match validate's checks.
struct TargetsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where a target's figures were published.
struct Source {
  std::string reference, author, date, host, kernel, guest, notes;

  // "reference; Author, date; host H; kernel K; guest G" (empty parts left out).
  [[nodiscard]] std::string summary() const;
};

struct Figure {
  std::string id;       // unique within its target
  std::string setting;  // the runs it compares with (validate's switch/setting column)
  std::string metric, unit;
  double value = kNaN;                             // NaN when derived or not published
  std::optional<std::pair<double, double>> range;  // published as a range (value: its middle)
  std::string derived;                             // how validate computes it, when it does
  Tolerance tolerance;
  std::optional<Tolerance> quick_tolerance;
  std::string quick_note;
  bool calibration = false;
  std::string source;  // appended to the setting column
  std::string note;
};

// A published cyclictest -h histogram: printed buckets, per series.
struct PublishedHistogram {
  std::uint64_t loops = 0;
  std::vector<unsigned> bucket_us;                           // the printed buckets
  std::map<std::string, std::vector<std::uint64_t>> counts;  // per series, per printed bucket
  std::map<std::string, std::uint64_t> above;                // samples above the last bucket

  // Counts of buckets 0..last printed (unprinted buckets 0); throws TargetsError
  // for an unknown series.
  [[nodiscard]] std::vector<std::uint64_t> buckets(const std::string& series) const;
  [[nodiscard]] std::uint64_t above_last(const std::string& series) const;
};

struct Target {
  std::string id, title, scenario;
  bool gated = true;
  Source source;
  std::vector<Figure> figures;
  std::optional<PublishedHistogram> histogram;
  std::map<std::string, std::vector<double>> counters;  // published counter readings

  [[nodiscard]] const Figure* figure(const std::string& id) const;
};

struct PublishedTargets {
  std::string origin;  // the file it was read from ("validation/targets.yaml (built in)")
  std::vector<Target> targets;

  [[nodiscard]] const Target* find(const std::string& id) const;
};

// Parses a targets file; throws TargetsError naming `origin` and the entry.
PublishedTargets parse_targets(const std::string& text, const std::string& origin);

// Reads and parses a file (TargetsError when it cannot be read).
PublishedTargets load_targets_file(const std::string& path);

// validation/targets.yaml as it was when this binary was built.
const std::string& embedded_targets_text();
const PublishedTargets& embedded_targets();

}  // namespace kvmsim::validate
