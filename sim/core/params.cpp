#include "sim/core/params.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace kvmsim {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k) out += sep;
    out += items[k];
  }
  return out;
}

std::string unit_suffix(const ParamDecl& d) { return d.unit.empty() ? "" : " " + d.unit; }

std::string format_number(double v) { return fmt::format("{}", v); }

// Choices or numeric range, followed by `unit` (" ns" or "").
std::string range_text(const ParamDecl& d, const std::string& unit) {
  if (!d.choices.empty()) return "one of: " + join(d.choices, ", ");
  if (d.type == ParamType::Dist) return "each value <= 1 s";  // CostDist::parse checks it
  const bool lo = std::isfinite(d.min);
  const bool hi = std::isfinite(d.max);
  if (lo && hi) return fmt::format("[{}, {}]{}", format_number(d.min), format_number(d.max), unit);
  if (lo) return fmt::format(">= {}{}", format_number(d.min), unit);
  if (hi) return fmt::format("<= {}{}", format_number(d.max), unit);
  return "";
}

// "" if v is inside [d.min, d.max], else a phrase saying so with the range and unit.
std::string range_problem(const ParamDecl& d, double v, std::string_view shown) {
  if (v >= d.min && v <= d.max) return "";
  return fmt::format("{} is out of range: must be {}", shown, param_range_text(d));
}

std::optional<bool> parse_bool(const std::string& t, std::string* problem) {
  if (t == "true") return true;
  if (t == "false") return false;
  *problem = fmt::format("expected true or false, got '{}'", t);
  return std::nullopt;
}

// True if t is [+-]digits, or 0x followed by hex digits.
bool is_int_literal(const std::string& t, bool hex) {
  const bool sign = !t.empty() && (t[0] == '-' || t[0] == '+');
  const std::size_t first = hex ? 2 : (sign ? 1 : 0);
  const auto is_digit = [hex](char c) {
    const auto u = static_cast<unsigned char>(c);
    return hex ? std::isxdigit(u) != 0 : std::isdigit(u) != 0;
  };
  return t.size() > first &&
         std::all_of(t.begin() + static_cast<std::ptrdiff_t>(first), t.end(), is_digit);
}

// Decimal integer, optionally signed, or 0x hex.
std::optional<std::int64_t> parse_int(const std::string& t, std::string* problem) {
  const bool hex = t.rfind("0x", 0) == 0 || t.rfind("0X", 0) == 0;
  if (!is_int_literal(t, hex)) {
    *problem = fmt::format("expected an integer, got '{}'", t);
    return std::nullopt;
  }
  errno = 0;
  const long long v = std::strtoll(t.c_str(), nullptr, hex ? 16 : 10);
  if (errno == ERANGE) {
    *problem = fmt::format("'{}' does not fit in a 64-bit integer", t);
    return std::nullopt;
  }
  return static_cast<std::int64_t>(v);
}

std::optional<double> parse_double(const std::string& t, std::string* problem) {
  char* end = nullptr;
  const double v = t.empty() ? 0 : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) {
    *problem = fmt::format("expected a number, got '{}'", t);
    return std::nullopt;
  }
  return v;
}

std::optional<std::int64_t> parse_ranged_int(const ParamDecl& d, const std::string& t,
                                             std::string* problem) {
  auto v = parse_int(t, problem);
  if (!v) return std::nullopt;
  *problem = range_problem(d, static_cast<double>(*v), t);
  if (!problem->empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_ranged_double(const ParamDecl& d, const std::string& t,
                                          std::string* problem) {
  auto v = parse_double(t, problem);
  if (!v) return std::nullopt;
  *problem = range_problem(d, *v, t);
  if (!problem->empty()) return std::nullopt;
  return v;
}

std::optional<std::string> parse_choice(const ParamDecl& d, const std::string& t,
                                        std::string* problem) {
  if (d.choices.empty() || std::find(d.choices.begin(), d.choices.end(), t) != d.choices.end())
    return t;
  *problem = fmt::format("'{}' is not allowed: must be one of {}", t, join(d.choices, ", "));
  return std::nullopt;
}

std::optional<CostDist> parse_dist(const std::string& t, std::string* problem) {
  std::string why;
  auto dist = CostDist::parse(t, &why);
  if (!dist) *problem = fmt::format("bad distribution '{}': {}", t, why);
  return dist;
}

// "[2, 3]", "2,3", "[]" or "" (empty list).
std::optional<std::vector<std::int64_t>> parse_int_list(const ParamDecl& d, const std::string& t,
                                                        std::string* problem) {
  std::string body = t;
  if (!body.empty() && body.front() == '[') {
    if (body.back() != ']') {
      *problem = fmt::format("missing ']' in '{}'", t);
      return std::nullopt;
    }
    body = trim(std::string_view(body).substr(1, body.size() - 2));
  }
  std::vector<std::int64_t> out;
  if (body.empty()) return out;
  std::size_t start = 0;
  while (start <= body.size()) {
    const std::size_t comma = std::min(body.find(',', start), body.size());
    auto v =
        parse_ranged_int(d, trim(std::string_view(body).substr(start, comma - start)), problem);
    if (!v) {
      *problem = fmt::format("element {}: {}", out.size() + 1, *problem);
      return std::nullopt;
    }
    out.push_back(*v);
    start = comma + 1;
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string_view last_segment(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

bool valid_key(std::string_view key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  if (key.find("..") != std::string_view::npos) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
  });
}

template <typename T>
struct TypeOf;
template <>
struct TypeOf<bool> {
  static constexpr ParamType value = ParamType::Bool;
};
template <>
struct TypeOf<std::int64_t> {
  static constexpr ParamType value = ParamType::Int;
};
template <>
struct TypeOf<double> {
  static constexpr ParamType value = ParamType::Double;
};
template <>
struct TypeOf<std::string> {
  static constexpr ParamType value = ParamType::String;
};
template <>
struct TypeOf<CostDist> {
  static constexpr ParamType value = ParamType::Dist;
};
template <>
struct TypeOf<std::vector<std::int64_t>> {
  static constexpr ParamType value = ParamType::IntList;
};

ParamType type_of(const ParamValue& v) {
  return std::visit([](const auto& x) { return TypeOf<std::decay_t<decltype(x)>>::value; }, v);
}

}  // namespace

const char* param_type_name(ParamType t) {
  switch (t) {
    case ParamType::Bool:
      return "bool";
    case ParamType::Int:
      return "int";
    case ParamType::Double:
      return "double";
    case ParamType::String:
      return "string";
    case ParamType::Dist:
      return "dist";
    case ParamType::IntList:
      return "int-list";
  }
  return "?";
}

std::optional<ParamValue> parse_param_value(const ParamDecl& d, const std::string& text,
                                            std::string* problem) {
  const std::string t = trim(text);
  auto wrap = [](auto v) { return v ? std::optional<ParamValue>(std::move(*v)) : std::nullopt; };
  switch (d.type) {
    case ParamType::Bool:
      return wrap(parse_bool(t, problem));
    case ParamType::Int:
      return wrap(parse_ranged_int(d, t, problem));
    case ParamType::Double:
      return wrap(parse_ranged_double(d, t, problem));
    case ParamType::String:
      return wrap(parse_choice(d, t, problem));
    case ParamType::Dist:
      return wrap(parse_dist(t, problem));
    case ParamType::IntList:
      return wrap(parse_int_list(d, t, problem));
  }
  *problem = "unknown parameter type";
  return std::nullopt;
}

std::string param_value_text(const ParamValue& v) {
  struct Visitor {
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(std::int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return format_number(x); }
    std::string operator()(const std::string& x) const { return x; }
    std::string operator()(const CostDist& x) const { return x.str(); }
    std::string operator()(const std::vector<std::int64_t>& x) const {
      return fmt::format("[{}]", fmt::join(x, ", "));
    }
  };
  return std::visit(Visitor{}, v);
}

std::string param_range_text(const ParamDecl& d) { return range_text(d, unit_suffix(d)); }

// ---------------------------------------------------------------------------
// ParamRegistry

void ParamRegistry::declare(ParamDecl d) {
  auto fail = [&](const std::string& why) {
    throw std::logic_error(fmt::format("declaring parameter '{}': {}", d.key, why));
  };
  // A range only means something for numbers; aggregate-initialised
  // declarations of other types leave {} (0, 0) there.
  if (d.type != ParamType::Int && d.type != ParamType::Double && d.type != ParamType::IntList) {
    d.min = -std::numeric_limits<double>::infinity();
    d.max = std::numeric_limits<double>::infinity();
  }
  if (!valid_key(d.key)) fail("keys are dotted names of [A-Za-z0-9_-]");
  if (index_.count(d.key)) fail("declared twice");
  if (groups_.count(d.key)) fail("already used as a group of other keys");
  for (std::size_t dot = d.key.find('.'); dot != std::string::npos; dot = d.key.find('.', dot + 1))
    if (index_.count(std::string_view(d.key).substr(0, dot)) != 0)
      fail(fmt::format("'{}' is already a parameter, so it cannot be a group",
                       d.key.substr(0, dot)));
  if (!d.choices.empty() && d.type != ParamType::String) fail("choices are only for string params");
  std::string problem;
  auto def = parse_param_value(d, d.default_text, &problem);
  if (!def) fail(fmt::format("bad default '{}': {}", d.default_text, problem));

  for (std::size_t dot = d.key.find('.'); dot != std::string::npos; dot = d.key.find('.', dot + 1))
    groups_.insert(d.key.substr(0, dot));
  index_.emplace(d.key, decls_.size());
  decls_.push_back(std::move(d));
  defaults_.push_back(std::move(*def));
}

const ParamDecl* ParamRegistry::find(std::string_view key) const {
  const std::size_t k = index_of(key);
  return k == npos ? nullptr : &decls_[k];
}

std::size_t ParamRegistry::index_of(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? npos : it->second;
}

bool ParamRegistry::is_prefix(std::string_view prefix) const { return groups_.count(prefix) > 0; }

std::vector<std::string> ParamRegistry::suggest(std::string_view key) const {
  const std::size_t limit = std::max<std::size_t>(1, key.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  auto consider = [&](const std::string& cand) {
    const std::size_t dist = edit_distance(key, cand);
    if (dist <= limit) {
      scored.emplace_back(dist, cand);
    } else if (last_segment(key) == last_segment(cand)) {
      scored.emplace_back(limit + 1, cand);  // right name, wrong group
    }
  };
  for (const auto& d : decls_) consider(d.key);
  for (const auto& g : groups_) consider(g);
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& sc : scored)
    if (out.size() < 3) out.push_back(sc.second);
  return out;
}

std::string did_you_mean(const ParamRegistry& reg, std::string_view key) {
  auto s = reg.suggest(key);
  if (s.empty()) return "";
  for (auto& x : s) x.insert(0, "'").append("'");
  const std::string last = s.back();
  s.pop_back();
  return s.empty() ? "; did you mean " + last + "?"
                   : "; did you mean " + join(s, ", ") + " or " + last + "?";
}

std::vector<std::string> ParamRegistry::era_keys() const {
  std::vector<std::string> out;
  for (const auto& d : decls_)
    if (!d.era_key.empty() && std::find(out.begin(), out.end(), d.era_key) == out.end())
      out.push_back(d.era_key);
  return out;
}

void ParamRegistry::set_eras(std::string_view key, std::string_view era_key,
                             std::vector<EraValue> rows) {
  auto fail = [&](const std::string& why) {
    throw std::logic_error(fmt::format("kernel-version table of '{}': {}", key, why));
  };
  const std::size_t k = index_of(key);
  const std::size_t ek = index_of(era_key);
  if (k == npos) fail("no such parameter");
  if (ek == npos || decls_[ek].type != ParamType::String) fail("the era key must be a string key");
  if (rows.empty()) fail("empty table");
  std::vector<int> prev;
  for (const auto& row : rows) {
    const auto v = parse_kernel_version(row.since);
    if (!v) fail(fmt::format("'{}' is not a kernel version", row.since));
    if (!prev.empty() && compare_kernel_versions(prev, *v) >= 0) fail("rows out of order");
    prev = *v;
    std::string problem;
    if (!parse_param_value(decls_[k], row.value, &problem)) fail(problem);
    if (row.why.empty()) fail("each row needs its reason");
  }
  const auto def_version = parse_kernel_version(decls_[ek].default_text);
  if (!def_version) fail("the era key's default is not a kernel version");
  if (decls_[k].derived) fail("the key has a derived default");
  ParamDecl& d = decls_[k];
  d.era_key = std::string(era_key);
  d.eras = std::move(rows);
  d.default_text = era_row(d, *def_version).value;
  std::string problem;
  defaults_[k] = *parse_param_value(d, d.default_text, &problem);
}

void ParamRegistry::set_derived(std::string_view key, DerivedDefault rule) {
  auto fail = [&](const std::string& why) {
    throw std::logic_error(fmt::format("derived default of '{}': {}", key, why));
  };
  const std::size_t k = index_of(key);
  if (k == npos) fail("no such parameter");
  if (!decls_[k].era_key.empty()) fail("the key is a version switch");
  if (decls_[k].derived) fail("already derived");
  if (rule.cap && decls_[k].type != ParamType::Bool) fail("only a bool key can be capped");
  if (!rule.rule || rule.doc.empty()) fail("needs a rule and its doc");
  for (const auto& f : rule.from)
    if (index_of(f) == npos) fail(fmt::format("reads undeclared key '{}'", f));
  // The rule applied to the defaults (the eras' and the earlier derived keys').
  const ParamSet defaults(*this);
  const DerivedValue v = rule.rule(defaults);
  ParamDecl& d = decls_[k];
  std::string problem;
  const auto value = parse_param_value(d, v.value, &problem);
  if (!value) fail(problem);
  d.default_text = v.value;
  defaults_[k] = *value;
  d.derived = std::make_shared<const DerivedDefault>(std::move(rule));
  derived_.push_back(k);
}

std::optional<std::vector<int>> parse_kernel_version(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t dot = std::min(text.find('.', start), text.size());
    const std::string part = text.substr(start, dot - start);
    if (part.empty() || part.size() > 3 || !std::all_of(part.begin(), part.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0;
        }))
      return std::nullopt;
    out.push_back(std::stoi(part));
    start = dot + 1;
  }
  if (out.empty() || out.size() > 3 || out[0] < 2 || out[0] > 9) return std::nullopt;
  return out;
}

int compare_kernel_versions(const std::vector<int>& a, const std::vector<int>& b) {
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? a[i] : 0;
    const int y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

const EraValue& era_row(const ParamDecl& d, const std::vector<int>& version) {
  if (d.eras.empty()) throw std::logic_error("parameter '" + d.key + "' has no kernel table");
  const EraValue* row = &d.eras.front();
  for (const auto& r : d.eras)
    if (compare_kernel_versions(*parse_kernel_version(r.since), version) <= 0) row = &r;
  return *row;
}

std::string param_kind(const ParamDecl& d) {
  if (!d.era_key.empty()) return "version switch";
  if (d.derived) return "derived";
  if (d.key == "host.kernel" || d.key == "guest.kernel") return "kernel";
  return "param";
}

bool kernel_at_least(const ParamSet& set, std::string_view key, const char* version) {
  const auto have = parse_kernel_version(set.s(key));
  const auto want = parse_kernel_version(version);
  if (!want) throw std::logic_error(fmt::format("'{}' is not a kernel version", version));
  // apply_kernel_eras() checked the kernel keys before any rule runs.
  if (!have) throw std::logic_error(fmt::format("key '{}' holds no kernel version", key));
  return compare_kernel_versions(*have, *want) >= 0;
}

namespace {
constexpr std::string_view kDerivedSuffix = " (derived)";
constexpr std::string_view kEraSuffix = " (era)";

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

std::string derived_origin(const std::string& why) { return why + std::string(kDerivedSuffix); }

std::optional<std::string> derived_why(const std::string& origin) {
  if (!ends_with(origin, kDerivedSuffix)) return std::nullopt;
  return origin.substr(0, origin.size() - kDerivedSuffix.size());
}

std::string era_origin(const std::string& era_key, const std::string& version) {
  return fmt::format("{}={}{}", era_key, version, kEraSuffix);
}

void apply_kernel_eras(ParamSet& set) {
  const ParamRegistry& reg = set.registry();
  for (const auto& ek : reg.era_keys()) {
    const std::string& text = set.s(ek);
    if (!parse_kernel_version(text))
      throw ScenarioError(
          fmt::format("{}: key '{}': '{}' is not a kernel version (e.g. 4.9, 5.4, 6.6)",
                      set.origin(ek), ek, text));
  }
  for (const auto& d : reg.all()) {
    if (d.era_key.empty()) continue;
    if (set.chosen(d.key)) continue;
    const std::string& version = set.s(d.era_key);
    set.set_text(d.key, era_row(d, *parse_kernel_version(version)).value,
                 era_origin(d.era_key, version));
  }
  for (const std::size_t k : reg.derived_order()) {
    const ParamDecl& d = reg.all()[k];
    const std::string origin = set.origin(d.key);
    const DerivedValue v = d.derived->rule(set);
    if (origin == "default" || derived_why(origin)) {
      set.set_text(d.key, v.value, derived_origin(v.why));
    } else if (d.derived->cap && set.b(d.key)) {
      const DerivedValue cap = d.derived->cap(set);
      if (cap.value == "false")
        throw ScenarioError(
            fmt::format("{}: key '{}': true cannot act: {}", origin, d.key, cap.why));
    }
  }
}

// ---------------------------------------------------------------------------
// ParamSet

ParamSet::ParamSet(const ParamRegistry& reg)
    : reg_(&reg), values_(reg.defaults()), origins_(reg.all().size(), "default") {}

bool ParamSet::chosen(std::string_view key) const {
  const std::string& o = origins_[slot(key)];
  return o != "default" && !ends_with(o, kEraSuffix) && !derived_why(o);
}

std::size_t ParamSet::slot(std::string_view key) const {
  const std::size_t k = reg_->index_of(key);
  if (k == ParamRegistry::npos || k >= values_.size())
    throw std::logic_error(fmt::format("parameter '{}' is not declared", key));
  return k;
}

template <typename T>
const T& ParamSet::get(std::string_view key, ParamType want) const {
  const std::size_t k = slot(key);
  const T* v = std::get_if<T>(&values_[k]);
  if (!v)
    throw std::logic_error(fmt::format("parameter '{}' is {}, not {}", key,
                                       param_type_name(reg_->all()[k].type),
                                       param_type_name(want)));
  return *v;
}

bool ParamSet::b(std::string_view key) const { return get<bool>(key, ParamType::Bool); }
std::int64_t ParamSet::i(std::string_view key) const {
  return get<std::int64_t>(key, ParamType::Int);
}
const std::string& ParamSet::s(std::string_view key) const {
  return get<std::string>(key, ParamType::String);
}
const CostDist& ParamSet::dist(std::string_view key) const {
  return get<CostDist>(key, ParamType::Dist);
}
const std::vector<std::int64_t>& ParamSet::ints(std::string_view key) const {
  return get<std::vector<std::int64_t>>(key, ParamType::IntList);
}

double ParamSet::d(std::string_view key) const {
  if (const auto* v = std::get_if<std::int64_t>(&values_[slot(key)]))
    return static_cast<double>(*v);
  return get<double>(key, ParamType::Double);
}

std::string ParamSet::origin(std::string_view key) const { return origins_[slot(key)]; }

std::string ParamSet::text(std::string_view key) const {
  return param_value_text(values_[slot(key)]);
}

void ParamSet::set_text(std::string_view key, const std::string& text, const std::string& origin) {
  const ParamDecl* decl = reg_->find(key);
  if (!decl)
    throw ScenarioError(
        fmt::format("{}: unknown key '{}'{}", origin, key, did_you_mean(*reg_, key)));
  std::string problem;
  auto v = parse_param_value(*decl, text, &problem);
  if (!v) throw ScenarioError(fmt::format("{}: key '{}': {}", origin, key, problem));
  set_value(key, std::move(*v), origin);
}

void ParamSet::set_value(std::string_view key, ParamValue value, const std::string& origin) {
  const std::size_t k = slot(key);
  const ParamDecl& decl = reg_->all()[k];
  if (type_of(value) != decl.type)
    throw std::logic_error(fmt::format("parameter '{}' is {}, not {}", key,
                                       param_type_name(decl.type),
                                       param_type_name(type_of(value))));
  // Re-validate through the text form so range and choice checks live in one place.
  std::string problem;
  if (!parse_param_value(decl, param_value_text(value), &problem))
    throw ScenarioError(fmt::format("{}: key '{}': {}", origin, key, problem));
  values_[k] = std::move(value);
  origins_[k] = origin;
}

std::vector<std::string> ParamSet::keys() const {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < values_.size(); ++k) out.push_back(reg_->all()[k].key);
  return out;
}

// ---------------------------------------------------------------------------
// Listings

namespace {

// The unit has its own column, so ranges are shown without it.
// A version switch's doc ends with its table:
// " [host.kernel: before 5.4: until_done (...); 5.4+: spin_then_tune (...); ...]".
std::string doc_with_eras(const ParamDecl& d) {
  if (d.derived) return d.doc + " [default: " + d.derived->doc + "]";
  if (d.eras.empty()) return d.doc;
  std::string out = d.doc + " [" + d.era_key + ":";
  for (std::size_t k = 0; k < d.eras.size(); ++k) {
    const std::string when =
        k ? d.eras[k].since + "+" : (d.eras.size() > 1 ? "before " + d.eras[1].since : "all");
    out += fmt::format("{} {}: {} ({})", k ? ";" : "", when, d.eras[k].value, d.eras[k].why);
  }
  return out + "]";
}

std::vector<std::string> table_row(const ParamDecl& d) {
  return {d.key,  param_kind(d),     param_type_name(d.type), d.default_text,
          d.unit, range_text(d, ""), doc_with_eras(d)};
}

std::string escape_markdown(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string format_param_table(const ParamRegistry& reg) {
  std::vector<std::vector<std::string>> rows = {
      {"KEY", "KIND", "TYPE", "DEFAULT", "UNIT", "RANGE", "DOC"}};
  for (const auto& d : reg.all()) rows.push_back(table_row(d));
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c + 1 < r.size(); ++c) line += fmt::format("{:<{}}  ", r[c], width[c]);
    line += r.back();
    out += trim(line) + "\n";
  }
  return out;
}

std::string format_param_markdown(const ParamRegistry& reg) {
  std::string out = "| Key | Kind | Type | Default | Unit | Range | Description |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const auto& d : reg.all()) {
    auto code = [](const std::string& s) {
      return s.empty() ? "" : "`" + escape_markdown(s) + "`";
    };
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", code(d.key), param_kind(d),
                       param_type_name(d.type), code(d.default_text), escape_markdown(d.unit),
                       escape_markdown(range_text(d, "")), escape_markdown(doc_with_eras(d)));
  }
  return out;
}

std::string wrap_words(const std::string& text, std::size_t width, const std::string& indent) {
  std::string out;
  std::string line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t sp = std::min(text.find(' ', pos), text.size());
    const std::string word = text.substr(pos, sp - pos);
    pos = sp + 1;
    if (word.empty()) continue;
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

std::string format_param_blocks(const ParamRegistry& reg, std::string_view prefix,
                                std::size_t width) {
  std::string out;
  for (const auto& d : reg.all()) {
    if (d.key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string head = d.key + "  " + param_type_name(d.type) + ", default " +
                       (d.default_text.empty() ? "(empty)" : d.default_text);
    if (!d.unit.empty()) head += " " + d.unit;
    const std::string range = range_text(d, "");
    if (!range.empty()) head += ", " + range;
    if (param_kind(d) != "param") head += " (" + param_kind(d) + ")";
    out += head + "\n" + wrap_words(doc_with_eras(d), std::max<std::size_t>(width, 40), "    ");
  }
  return out;
}

}  // namespace kvmsim
