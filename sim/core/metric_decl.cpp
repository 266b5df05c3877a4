#include "sim/core/metric_decl.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace kvmsim {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Matches pattern[pi..] against key[ki..]; a placeholder tries every length.
bool match_from(std::string_view p, std::size_t pi, std::string_view k, std::size_t ki) {
  while (pi < p.size()) {
    if (p[pi] == '<') {
      const std::size_t close = p.find('>', pi);
      if (close == std::string_view::npos) return false;
      const bool digits = p.substr(pi + 1, close - pi - 1) == "n";
      std::size_t end = ki;
      while (end < k.size() && k[end] != '.' && (!digits || is_digit(k[end]))) {
        ++end;
        if (match_from(p, close + 1, k, end)) return true;
      }
      return false;
    }
    if (ki >= k.size() || p[pi] != k[ki]) return false;
    ++pi;
    ++ki;
  }
  return ki == k.size();
}

int placeholders(std::string_view pattern) {
  return static_cast<int>(std::count(pattern.begin(), pattern.end(), '<'));
}

// '|' escaped everywhere (table cells); '<' escaped outside `code` spans
// (Markdown would read "<n>" as HTML).
std::string escape_markdown(const std::string& s) {
  std::string out;
  bool code = false;
  for (char c : s) {
    if (c == '`') code = !code;
    if (c == '|' || (c == '<' && !code)) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

bool metric_pattern_matches(std::string_view pattern, std::string_view key) {
  return match_from(pattern, 0, key, 0);
}

const std::vector<std::pair<std::string, std::string>>& metric_units() {
  static const std::vector<std::pair<std::string, std::string>> units = {
      {"count", "a number of events or items"},
      {"s", "seconds of simulated time"},
      {"ns", "nanoseconds of simulated time"},
      {"us", "microseconds of simulated time"},
      {"cycles", "TSC cycles (the guest's TSC for kvm-unit-tests figures)"},
      {"fraction", "a share between 0 and 1"},
      {"per_s", "events per second of simulated time"},
      {"Hz", "a rate in events per second"},
      {"id", "an identifier or setting, not a quantity"},
      {"bool", "1 or 0"},
  };
  return units;
}

MetricRegistry& MetricRegistry::instance() {
  static MetricRegistry reg;
  return reg;
}

bool MetricRegistry::add(const std::vector<MetricDecl>& decls) {
  for (const auto& d : decls) {
    if (d.pattern.empty() || d.unit.empty() || d.emitter.empty() || d.doc.empty())
      throw std::logic_error("metric declaration '" + d.pattern + "': an empty field");
    const auto& units = metric_units();
    if (std::none_of(units.begin(), units.end(), [&](const auto& u) { return u.first == d.unit; }))
      throw std::logic_error("metric declaration '" + d.pattern + "': unknown unit '" + d.unit +
                             "'");
    const auto at = std::lower_bound(
        decls_.begin(), decls_.end(), d.pattern,
        [](const MetricDecl& a, const std::string& pattern) { return a.pattern < pattern; });
    if (at != decls_.end() && at->pattern == d.pattern)
      throw std::logic_error("metric '" + d.pattern + "' declared twice");
    decls_.insert(at, d);
  }
  return true;
}

const MetricDecl* MetricRegistry::find(std::string_view key) const {
  const MetricDecl* best = nullptr;
  for (const auto& d : decls_) {
    if (!metric_pattern_matches(d.pattern, key)) continue;
    if (!best || placeholders(d.pattern) < placeholders(best->pattern) ||
        (placeholders(d.pattern) == placeholders(best->pattern) &&
         d.pattern.size() > best->pattern.size()))
      best = &d;
  }
  return best;
}

std::vector<const MetricDecl*> MetricRegistry::select(std::string_view prefix) const {
  std::vector<const MetricDecl*> out;
  for (const auto& d : decls_)
    if (d.pattern.compare(0, prefix.size(), prefix) == 0 ||
        metric_pattern_matches(d.pattern, prefix))
      out.push_back(&d);
  return out;
}

std::vector<std::string> undeclared_metrics(const Metrics& m) {
  std::vector<std::string> out;
  for (const auto& [key, value] : m)
    if (!MetricRegistry::instance().find(key)) out.push_back(key);
  return out;
}

std::string format_metric_table(const std::vector<const MetricDecl*>& decls) {
  std::vector<std::vector<std::string>> rows = {{"KEY", "UNIT", "EMITTER", "MEANING"}};
  for (const auto* d : decls) rows.push_back({d->pattern, d->unit, d->emitter, d->doc});
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c + 1 < r.size(); ++c) line += fmt::format("{:<{}}  ", r[c], width[c]);
    out += line + r.back() + "\n";
  }
  return out;
}

std::string format_metric_markdown(const std::vector<const MetricDecl*>& decls) {
  std::string out;
  std::string group;
  for (const auto* d : decls) {
    const std::string first = d->pattern.substr(0, d->pattern.find('.'));
    if (first != group) {
      group = first;
      std::vector<std::string> emitters;
      for (const auto* e : decls)
        if (e->pattern.substr(0, e->pattern.find('.')) == group &&
            std::find(emitters.begin(), emitters.end(), e->emitter) == emitters.end())
          emitters.push_back(e->emitter);
      std::sort(emitters.begin(), emitters.end());
      std::string by;
      for (const auto& e : emitters) by += (by.empty() ? "" : ", ") + e;
      out += fmt::format("{}## `{}.*`\n\nEmitted by: {}.\n\n", out.empty() ? "" : "\n", group, by);
      out += "| Key | Unit | Emitter | Meaning |\n|---|---|---|---|\n";
    }
    out += fmt::format("| `{}` | {} | {} | {} |\n", d->pattern, d->unit,
                       escape_markdown(d->emitter), escape_markdown(d->doc));
  }
  return out;
}

}  // namespace kvmsim
