// `kvmsim validate`: the experiments that compare runs with the published
// figures (validation/targets.yaml), and the pure part of checking simulated
// runs against them.
//
// An Experiment is one scenario run once per RunSetting (the paired settings
// of the switch studied); each Check reads one or more of those runs,
// computes a simulated value and compares it with the published one under a
// Tolerance. The table of experiments is validation_targets()
// (validation_targets.cpp); running the children and printing is
// cmd_validate.cpp. Everything in this header is header-only so that the
// unit tests (which do not link the CLI) can use it.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/histogram.h"

namespace kvmsim::validate {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What one child `kvmsim run ... --out DIR` produced.
struct RunOutput {
  bool ok = false;                            // the run exited 0 and its summary was read
  std::string error;                          // why not, when !ok
  std::map<std::string, double> metrics;      // summary.json "metrics" (numbers only)
  std::optional<LatencyHistogram> histogram;  // histogram.txt, thread 0 (cyclictest only)

  // NaN when the run failed or the metric is absent.
  [[nodiscard]] double metric(const std::string& key) const {
    const auto it = metrics.find(key);
    return ok && it != metrics.end() ? it->second : kNaN;
  }
};

// How a simulated value may differ from the published one. A value equal to
// its limit passes (limits are widened by a relative 1e-9 against rounding).
struct Tolerance {
  enum class Kind {
    kExact,     // simulated == published
    kOffset,    // published + lo <= simulated <= published + hi
    kAbsolute,  // |simulated - published| <= lo (in the check's unit; "pp" for %)
    kRelative,  // |simulated - published| <= lo * |published|
    kAtMost,    // simulated <= lo (no published value: a distance to the published data)
    kFactor,    // published / lo <= simulated <= published * lo
  };
  Kind kind = Kind::kExact;
  double lo = 0, hi = 0;

  static Tolerance exact() { return {Kind::kExact, 0, 0}; }
  static Tolerance offset(double lo, double hi) { return {Kind::kOffset, lo, hi}; }
  static Tolerance absolute(double d) { return {Kind::kAbsolute, d, 0}; }
  static Tolerance relative(double fraction) { return {Kind::kRelative, fraction, 0}; }
  static Tolerance at_most(double limit) { return {Kind::kAtMost, limit, 0}; }
  static Tolerance factor(double f) { return {Kind::kFactor, f, 0}; }
};

// `decimals` fixed decimals, trailing zeros (and a bare '.') dropped, no "-0";
// "n/a" for NaN.
inline std::string format_number(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

inline std::string format_signed(double v, int decimals) {
  std::string s = format_number(v, decimals);
  if (s != "0" && s[0] != '-' && s != "n/a") s = "+" + s;
  return s;
}

struct Verdict {
  bool pass = false;
  std::string error;      // simulated vs published: "+1", "-0.03 us", "+0.2%", "x1.36", "-"
  std::string tolerance;  // "exact", "+-0.3 us", "+-15%", "<= 0.3 us", "within x3", ...
};

// unit: of the values ("us", "cycles", "%", ...); an absolute error on a
// percentage is in percentage points. decimals: as the values are printed.
inline Verdict evaluate(const Tolerance& t, double published, double simulated,
                        const std::string& unit, int decimals) {
  using K = Tolerance::Kind;
  const std::string abs_unit = unit == "%" ? "pp" : unit;
  const auto with_unit = [](const std::string& s, const std::string& u) {
    return u.empty() ? s : s + " " + u;
  };
  const auto slack = [](double limit) { return 1e-9 * std::max(1.0, std::fabs(limit)); };
  Verdict v;
  const double diff = simulated - published;
  switch (t.kind) {
    case K::kExact:
      v.tolerance = "exact";
      v.error = format_signed(diff, decimals);
      v.pass = std::fabs(diff) <= slack(published);
      break;
    case K::kOffset:
      v.tolerance = format_signed(t.lo, decimals) + " to " + format_signed(t.hi, decimals);
      v.error = format_signed(diff, decimals);
      v.pass = diff >= t.lo - slack(t.lo) && diff <= t.hi + slack(t.hi);
      break;
    case K::kAbsolute:
      v.tolerance = with_unit("+-" + format_number(t.lo, decimals + 2), abs_unit);
      v.error = with_unit(format_signed(diff, decimals), abs_unit);
      v.pass = std::fabs(diff) <= t.lo + slack(t.lo);
      break;
    case K::kRelative: {
      v.tolerance = "+-" + format_number(100 * t.lo, 1) + "%";
      const double rel = diff / std::fabs(published);
      v.error = format_signed(100 * rel, 1) + "%";
      v.pass = std::fabs(rel) <= t.lo + slack(t.lo);
      break;
    }
    case K::kAtMost:
      v.tolerance = with_unit("<= " + format_number(t.lo, decimals + 2), unit);
      v.error = "-";
      v.pass = simulated <= t.lo + slack(t.lo);
      break;
    case K::kFactor: {
      v.tolerance = "within x" + format_number(t.lo, 2);
      const double ratio = simulated / published;
      v.error = "x" + format_number(ratio, 2);
      v.pass = simulated >= published / t.lo - slack(published / t.lo) &&
               simulated <= published * t.lo + slack(published * t.lo);
      break;
    }
  }
  if (std::isnan(simulated) || (std::isnan(published) && t.kind != K::kAtMost)) {
    v.pass = false;
    v.error = "-";
  }
  return v;
}

// One run of an experiment: the --set overrides that distinguish it.
struct RunSetting {
  std::string label;              // "kvm.enable_hv_timer=true"
  std::vector<std::string> sets;  // {"kvm.enable_hv_timer=true"}
};

// A run of each value of `key`, labelled "key=value".
inline std::vector<RunSetting> switch_runs(const std::string& key,
                                           const std::vector<std::string>& values) {
  std::vector<RunSetting> r;
  r.reserve(values.size());
  for (const auto& v : values) {
    std::string set = key;
    set.append("=").append(v);
    r.push_back({set, {set}});
  }
  return r;
}

using RunRefs = std::vector<const RunOutput*>;

struct Check {
  std::string metric;             // row label ("mean over bins 3-12"); the unit is appended
  std::string unit;               // "us", "cycles", "%" (absolute errors then in pp), "" ...
  int decimals = 2;               // printed decimals (trailing zeros dropped)
  std::vector<std::size_t> runs;  // indices into Experiment::runs, in the order simulate gets them
  double published = kNaN;        // NaN: nothing published (kAtMost checks)
  Tolerance tolerance;
  // For --quick, where a shorter run cannot be held to the full-length
  // tolerance; the table says why in a comment.
  std::optional<Tolerance> quick_tolerance;
  std::function<double(const RunRefs&)> simulate;
  std::string setting;  // the table's setting column; empty: from the runs' labels
  // Calibration: this published figure set a cost (the platform file says
  // which); its row measures goodness of fit. Otherwise it is validation:
  // the model was not fitted on it.
  bool calibration = false;
  // Counts in validate's exit status (the targets of docs/validation.md);
  // false for the extra published points that are reported, not gated.
  bool gated = true;
};

// One set-up that a measurement's text leaves open (the guest's CPU model,
// the QEMU release, ...). The first of Experiment::configurations is the one
// its scenario chose; validate --bands runs them all.
struct Configuration {
  std::string name;               // "-cpu qemu64,+kvm-pv-tlb-flush"
  std::vector<std::string> sets;  // --set on top of the scenario's (the chosen one: none)
  std::string evidence;           // why chosen, or why plausible (one line)
};

struct Experiment {
  std::string id;        // "T1"
  std::string title;     // one line
  std::string source;    // where its figures were published (one line)
  std::string scenario;  // file name in the scenarios directory
  std::vector<RunSetting> runs;
  std::vector<std::string> full_sets;   // --set for every run of the full validation
  std::vector<std::string> quick_sets;  // --set for every run with --quick
  std::vector<Check> checks;
  std::vector<Configuration> configurations;  // empty: the text leaves nothing open
};

struct PublishedTargets;  // published_targets.h

// The experiments with the published figures of `targets` (validation/targets.yaml)
// bound to their checks (validation_targets.cpp, linked into the CLI only). Throws
// TargetsError listing every figure or target that is missing from `targets`, that
// validate does not use, or whose setting, metric, unit or scenario differs.
std::vector<Experiment> build_experiments(const PublishedTargets& targets);

// build_experiments() of the built-in copy of validation/targets.yaml.
const std::vector<Experiment>& validation_targets();

// The ids of the experiments, in table order, without reading any figure.
const std::vector<std::string>& validation_target_ids();

// "a=x -> y" when both labels share everything up to an '='; "A -> B" otherwise.
inline std::string transition_label(const std::string& a, const std::string& b) {
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  const std::size_t eq = a.rfind('=', common == 0 ? 0 : common - 1);
  if (common > 0 && eq != std::string::npos && eq < common) return a + " -> " + b.substr(eq + 1);
  return a + " -> " + b;
}

inline std::string setting_label(const Experiment& e, const Check& c) {
  if (!c.setting.empty()) return c.setting;
  std::string s;
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const std::string& l = e.runs.at(c.runs[i]).label;
    if (i == 0)
      s = l;
    else if (c.runs.size() == 2)
      s = transition_label(s, l);
    else
      s += ", " + l;
  }
  return s;
}

// One line of the accuracy table.
struct Row {
  std::string experiment, setting, metric, published, simulated, error, tolerance;
  bool pass = false;
  bool calibration = false;
  bool gated = true;
  bool change = false;      // a relative change in % (its error is in pp)
  double abs_error = kNaN;  // |simulated - published|: in pp for a change, else relative (%)
  // With several seeds (validate --seeds): "min..max, k/n in" over the seeds;
  // simulated is then their median.
  std::string seed_spread;
};

// The mean absolute errors of one group of rows: values (relative, %) and
// changes (pp), each over the rows that have a published and a simulated number.
struct GroupSummary {
  std::size_t rows = 0, passed = 0, values = 0, changes = 0;
  double value_mae_pct = kNaN, change_mae_pp = kNaN;
};

inline GroupSummary summarize(const std::vector<Row>& rows, bool calibration) {
  GroupSummary g;
  double vsum = 0, csum = 0;
  for (const Row& r : rows) {
    if (r.calibration != calibration) continue;
    ++g.rows;
    g.passed += r.pass ? 1 : 0;
    if (std::isnan(r.abs_error)) continue;
    if (r.change) {
      ++g.changes;
      csum += r.abs_error;
    } else {
      ++g.values;
      vsum += r.abs_error;
    }
  }
  if (g.values) g.value_mae_pct = vsum / static_cast<double>(g.values);
  if (g.changes) g.change_mae_pp = csum / static_cast<double>(g.changes);
  return g;
}

// "14 of 15 within tolerance; MAE 1.9% over 12 values, 0.8 pp over 3 changes"
inline std::string format_summary(const GroupSummary& g) {
  std::string s = std::to_string(g.passed) + " of " + std::to_string(g.rows) +
                  " within tolerance; mean absolute error ";
  s += g.values
           ? format_number(g.value_mae_pct, 1) + "% over " + std::to_string(g.values) + " values"
           : "- over 0 values";
  if (g.changes)
    s += ", " + format_number(g.change_mae_pp, 1) + " pp over " + std::to_string(g.changes) +
         " changes";
  return s;
}

// The simulated figure of each check of `e` (NaN where a run is missing or
// has no value), from its runs' outputs (outputs[i] is the run of e.runs[i]).
inline std::vector<double> simulate_checks(const Experiment& e,
                                           const std::vector<RunOutput>& outputs) {
  std::vector<double> values;
  for (const Check& c : e.checks) {
    RunRefs refs;
    bool have_all = true;
    for (std::size_t i : c.runs) {
      if (i < outputs.size())
        refs.push_back(&outputs[i]);
      else
        have_all = false;
    }
    values.push_back(have_all && c.simulate ? c.simulate(refs) : kNaN);
  }
  return values;
}

// The median of the numbers among `v` (NaN if none).
inline double median_of(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Evaluates every check of `e` on its runs' outputs (outputs[i] is the run of
// e.runs[i]); with per_seed (one outputs vector per seed, validate --seeds),
// each row is judged on the median over the seeds and shows their spread.
inline std::vector<Row> evaluate_experiment(
    const Experiment& e, const std::vector<RunOutput>& outputs, bool quick,
    const std::vector<std::vector<RunOutput>>& per_seed = {}) {
  std::vector<Row> rows;
  const std::vector<double> values = simulate_checks(e, outputs);
  std::vector<std::vector<double>> seed_values;
  for (const auto& o : per_seed) seed_values.push_back(simulate_checks(e, o));
  for (std::size_t k = 0; k < e.checks.size(); ++k) {
    const Check& c = e.checks[k];
    double sim = values[k];
    const Tolerance& tol = quick && c.quick_tolerance ? *c.quick_tolerance : c.tolerance;
    std::string spread;
    if (!seed_values.empty()) {
      std::vector<double> v;
      std::size_t in = 0;
      for (const auto& s : seed_values) {
        v.push_back(s[k]);
        in += evaluate(tol, c.published, s[k], c.unit, c.decimals).pass ? 1 : 0;
      }
      sim = median_of(v);
      const double lo = *std::min_element(v.begin(), v.end(), [](double a, double b) {
        return std::isnan(b) || (!std::isnan(a) && a < b);
      });
      const double hi = *std::max_element(v.begin(), v.end(), [](double a, double b) {
        return std::isnan(a) || (!std::isnan(b) && a < b);
      });
      spread = format_number(lo, c.decimals) + ".." + format_number(hi, c.decimals) + ", " +
               std::to_string(in) + "/" + std::to_string(v.size()) + " in";
    }
    const Verdict v = evaluate(tol, c.published, sim, c.unit, c.decimals);
    Row r;
    r.experiment = e.id;
    r.setting = setting_label(e, c);
    r.metric = c.unit.empty() ? c.metric : c.metric + " (" + c.unit + ")";
    r.published = std::isnan(c.published) ? "-" : format_number(c.published, c.decimals);
    r.simulated = format_number(sim, c.decimals);
    r.error = v.error;
    r.tolerance = v.tolerance;
    r.pass = v.pass;
    r.calibration = c.calibration;
    r.gated = c.gated;
    r.change = c.unit == "%";
    r.seed_spread = spread;
    if (!std::isnan(sim) && !std::isnan(c.published) && c.published != 0)
      r.abs_error = r.change ? std::fabs(sim - c.published)
                             : 100.0 * std::fabs(sim - c.published) / std::fabs(c.published);
    rows.push_back(std::move(r));
  }
  return rows;
}

// validate --bands: one check under every configuration of its experiment.
struct BandRow {
  std::string experiment, setting, metric, published;
  std::vector<std::string> values;  // per configuration, the chosen one first
  std::string band;                 // "min..max" over the configurations
  std::string within;               // the configurations within tolerance: "c1, c2", "none", "-"
};

// values[c][k]: check k of `e` under configuration c (simulate_checks(), or
// the median over seeds). NaN values stay out of the band; a band with no
// number is "n/a". `within` names the configurations whose value is within
// the check's tolerance (the quick one with `quick`): the band is a spread
// over a few discrete set-ups, not an interval a value between them would
// be in.
inline std::vector<BandRow> band_rows(const Experiment& e,
                                      const std::vector<std::vector<double>>& values,
                                      bool quick = false) {
  std::vector<BandRow> rows;
  for (std::size_t k = 0; k < e.checks.size(); ++k) {
    const Check& c = e.checks[k];
    BandRow r;
    r.experiment = e.id;
    r.setting = setting_label(e, c);
    r.metric = c.unit.empty() ? c.metric : c.metric + " (" + c.unit + ")";
    r.published = std::isnan(c.published) ? "-" : format_number(c.published, c.decimals);
    const Tolerance& tol = quick && c.quick_tolerance ? *c.quick_tolerance : c.tolerance;
    double lo = kNaN;
    double hi = kNaN;
    std::string within;
    for (std::size_t ci = 0; ci < values.size(); ++ci) {
      const double v = values[ci].at(k);
      r.values.push_back(format_number(v, c.decimals));
      if (std::isnan(v)) continue;
      if (evaluate(tol, c.published, v, c.unit, c.decimals).pass)
        within += (within.empty() ? "c" : ", c") + std::to_string(ci + 1);
      lo = std::isnan(lo) ? v : std::min(lo, v);
      hi = std::isnan(hi) ? v : std::max(hi, v);
    }
    r.band = std::isnan(lo) ? "n/a"
                            : format_number(lo, c.decimals) + ".." + format_number(hi, c.decimals);
    r.within = std::isnan(c.published) ? "-" : within.empty() ? "none" : within;
    rows.push_back(std::move(r));
  }
  return rows;
}

// A cost distribution's text with every duration scaled by `factor`
// ("normal(450ns, 40ns, min=330ns)" x1.1 -> "normal(495ns, 44ns, min=363ns)").
// Numbers with a unit (ns, us, ms, s, cyc) scale; bare numbers are weights,
// shapes or probabilities and stay, unless the whole text is one bare number
// (ns).
inline std::string scale_durations(const std::string& text, double factor) {
  const auto fmt_num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  bool bare = !text.empty();
  for (char c : text)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == ' ')) bare = false;
  if (bare) return fmt_num(std::stod(text) * factor);
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool starts = (std::isdigit(static_cast<unsigned char>(text[i])) != 0) &&
                        (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) != 0 ||
                                     text[i - 1] == '.'));
    if (!starts) {
      out += text[i++];
      continue;
    }
    std::size_t j = i;
    while (j < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[j])) != 0 || text[j] == '.' ||
            ((text[j] == 'e' || text[j] == 'E') && j + 1 < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[j + 1])) != 0 || text[j + 1] == '-'))))
      j += (text[j] == 'e' || text[j] == 'E') ? 2 : 1;
    std::size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k])) != 0) ++k;
    const std::string unit = text.substr(j, k - j);
    const std::string num = text.substr(i, j - i);
    if (unit == "ns" || unit == "us" || unit == "ms" || unit == "s" || unit == "cyc")
      out += fmt_num(std::stod(num) * factor) + unit;
    else
      out += num + unit;
    i = k;
  }
  return out;
}

// One line of validate --sensitivity: a cost key, a published figure, the
// figure with the key scaled down and up.
struct SensitivityRow {
  std::string key, experiment, setting;
  Check check;
  double base = kNaN, minus = kNaN, plus = kNaN;
};

// d ln(figure) / d ln(cost) from the two sides (NaN if a side is missing);
// for a change in % the slope in pp per % of the cost.
inline double sensitivity_slope(const SensitivityRow& r, double step) {
  if (std::isnan(r.minus) || std::isnan(r.plus) || std::isnan(r.base)) return kNaN;
  if (r.check.unit == "%") return (r.plus - r.minus) / (200.0 * step);
  if (r.base == 0) return kNaN;
  return (r.plus - r.minus) / (2.0 * step * r.base);
}

// A figure "moves" when either side differs from the base by more than
// 0.5% of it (0.2 pp for a change in %), or a side is missing.
inline bool sensitivity_moves(const SensitivityRow& r, double /*step*/) {
  if (std::isnan(r.minus) || std::isnan(r.plus)) return true;
  const double lim = r.check.unit == "%" ? 0.2 : 0.005 * std::fabs(r.base);
  return std::fabs(r.minus - r.base) > lim || std::fabs(r.plus - r.base) > lim;
}

// Markdown cells: arrows and comparison signs as in docs/validation.md.
inline std::string markdown_cell(std::string s) {
  const std::pair<const char*, const char*> repl[] = {
      {" -> ", " → "}, {"+-", "±"}, {"<= ", "≤ "}, {"within x", "within ×"}, {"|", "\\|"}};
  for (const auto& [from, to] : repl) {
    const std::string f = from;
    const std::string t = to;
    for (std::size_t p = s.find(f); p != std::string::npos; p = s.find(f, p + t.size()))
      s.replace(p, f.size(), t);
  }
  if (s.size() > 1 && s[0] == 'x' && (std::isdigit(static_cast<unsigned char>(s[1])) != 0))
    s = "×" + s.substr(1);
  return s;
}

// Renders cells (row 0 the header) as a Markdown table (cells after the
// header through markdown_cell()) or as aligned text, `right[k]` marking the
// right-aligned columns.
inline std::string render_cells(const std::vector<std::vector<std::string>>& cells,
                                const std::vector<bool>& right, bool markdown) {
  std::string out;
  if (markdown) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out += "|";
      for (const auto& c : cells[i]) out += " " + (i == 0 ? c : markdown_cell(c)) + " |";
      out += "\n";
      if (i == 0) {
        out += "|";
        for (const bool r : right) out += r ? "---:|" : "---|";
        out += "\n";
      }
    }
    return out;
  }
  std::vector<std::size_t> width(right.size(), 0);
  for (const auto& row : cells)
    for (std::size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t k = 0; k < row.size(); ++k) {
      const std::string pad(width[k] - row[k].size(), ' ');
      line += right[k] ? pad + row[k] : row[k] + (k + 1 < row.size() ? pad : "");
      if (k + 1 < row.size()) line += "  ";
    }
    out += line + "\n";
  }
  return out;
}

// The table: aligned plain text, or a Markdown table with the header row
// "| experiment | switch/setting | metric | published | simulated | error | tolerance |
// within tolerance |".
inline std::string format_table(const std::vector<Row>& rows, bool markdown) {
  const bool seeds =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.seed_spread.empty(); });
  std::vector<std::string> header = {"experiment",
                                     "switch/setting",
                                     "metric",
                                     "published",
                                     seeds ? "simulated (median)" : "simulated",
                                     "error",
                                     "tolerance",
                                     "within tolerance"};
  // Numbers right-aligned in the text form.
  std::vector<bool> right = {false, false, false, true, true, true, false, false};
  if (seeds) {
    header.emplace_back("seeds: min..max, within");
    right.push_back(false);
  }
  std::vector<std::vector<std::string>> cells{header};
  for (const Row& r : rows) {
    cells.push_back({r.experiment, r.setting, r.metric, r.published, r.simulated, r.error,
                     r.tolerance, r.pass ? "yes" : "no"});
    if (seeds) cells.back().push_back(r.seed_spread.empty() ? "-" : r.seed_spread);
  }
  return render_cells(cells, right, markdown);
}

// The --bands table of one experiment: a column per configuration (named
// in the legend as c1, c2, ...; c1 is the chosen one).
inline std::string format_bands(const std::vector<BandRow>& rows, std::size_t configurations,
                                bool markdown) {
  std::vector<std::string> header = {"experiment", "switch/setting", "metric", "published"};
  std::vector<bool> right = {false, false, false, true};
  for (std::size_t c = 0; c < configurations; ++c) {
    header.push_back("c" + std::to_string(c + 1) + (c == 0 ? " (chosen)" : ""));
    right.push_back(true);
  }
  header.insert(header.end(), {"band", "within tolerance"});
  right.insert(right.end(), {false, false});
  std::vector<std::vector<std::string>> cells{header};
  for (const BandRow& r : rows) {
    std::vector<std::string> row = {r.experiment, r.setting, r.metric, r.published};
    row.insert(row.end(), r.values.begin(), r.values.end());
    row.insert(row.end(), {r.band, r.within});
    cells.push_back(std::move(row));
  }
  return render_cells(cells, right, markdown);
}

inline std::string format_sensitivity(const std::vector<SensitivityRow>& rows, double step,
                                      bool markdown) {
  const std::string lo = "x" + format_number(1 - step, 2);
  const std::string hi = "x" + format_number(1 + step, 2);
  std::vector<std::vector<std::string>> cells{{"cost parameter", "experiment", "switch/setting",
                                               "figure", "published", lo, "as is", hi, "slope",
                                               "leaves tolerance"}};
  for (const auto& r : rows) {
    const Check& c = r.check;
    const std::string metric = c.unit.empty() ? c.metric : c.metric + " (" + c.unit + ")";
    const auto out = [&](double v) {
      return !evaluate(c.tolerance, c.published, v, c.unit, c.decimals).pass;
    };
    const bool base_in = !out(r.base);
    std::string leaves = "no";
    if (base_in && (out(r.minus) || out(r.plus)))
      leaves = out(r.minus) && out(r.plus) ? "both sides" : (out(r.minus) ? lo : hi);
    if (!base_in) leaves = "already out";
    cells.push_back({r.key, r.experiment, r.setting, metric, format_number(c.published, c.decimals),
                     format_number(r.minus, c.decimals), format_number(r.base, c.decimals),
                     format_number(r.plus, c.decimals),
                     format_number(sensitivity_slope(r, step), 2) + (c.unit == "%" ? " pp/%" : ""),
                     leaves});
  }
  if (rows.empty()) return "(no published figure moves)\n";
  const std::vector<bool> right = {false, false, false, false, true, true, true, true, true, false};
  return render_cells(cells, right, markdown);
}

}  // namespace kvmsim::validate
