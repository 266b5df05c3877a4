// Parameter declarations and values.
//
// Every tunable is declared once, as a ParamDecl (key, type, default, unit,
// range, doc). The scenario loader, `--set` overrides, error messages, the
// `kvmsim params` listing and docs/reference/parameters.md all read that declaration.
// A ParamSet holds one value per declared key plus where it came from.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/core/dist.h"

namespace kvmsim {

enum class ParamType { Bool, Int, Double, String, Dist, IntList };

// "bool", "int", "double", "string", "dist", "int-list".
const char* param_type_name(ParamType t);

// One row of a kernel-version table: from kernel `since` on, the key's
// default is `value`, for the reason `why` (the commit or release that
// changed it). The first row applies to every older kernel too.
struct EraValue {
  std::string since;  // "4.20", "5.8"; the first row's is the oldest kernel the table names
  std::string value;  // same syntax as --set values
  std::string why;    // "v5.8: apic_timer_expired() injects from the exit path (2020 series)"
};

class ParamSet;

// A default computed from other keys (ParamRegistry::set_derived()): the
// value text (same syntax as --set values) and why, e.g.
// {"false", "vm.cpu_model=qemu64 has no kvm-pv-unhalt"}.
struct DerivedValue {
  std::string value;
  std::string why;
};

struct DerivedDefault {
  std::vector<std::string> from;  // the keys the rule reads
  std::string doc;                // the rule in words, for the docs
  std::function<DerivedValue(const ParamSet&)> rule;
  // Bool keys only, optional: what the rest of the configuration allows. An
  // explicit true where the cap gives false cannot act and is an error that
  // says why (a guest cannot use a CPUID feature its VM does not have, QEMU
  // cannot pass a feature the host's KVM does not offer).
  std::function<DerivedValue(const ParamSet&)> cap = {};
};

struct ParamDecl {
  std::string key;  // dotted, e.g. "kvm.enable_hv_timer"
  ParamType type;
  std::string default_text;  // same syntax as --set values: "true", "600000", "normal(300ns,
                             // 20ns)", "[2, 3]"
  std::string unit;          // "ns", "us", "cycles", "kHz", "Hz", "count", "" ...
  double min =
      -std::numeric_limits<double>::infinity();  // range for Int/Double and each IntList element
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // for String: allowed values (empty = any string)
  std::string doc;                   // one sentence
  // Version switch: the default comes from the kernel named by era_key
  // ("host.kernel" or "guest.kernel") through `eras`; empty = a plain
  // parameter. Set with ParamRegistry::set_eras(), not by hand.
  std::string era_key = {};
  std::vector<EraValue> eras = {};
  // Derived default (set with ParamRegistry::set_derived()); null = none.
  std::shared_ptr<const DerivedDefault> derived = {};
};

// "4.9" -> {4, 9}; nullopt unless dot-separated decimal numbers with a major
// version of 2..9.
std::optional<std::vector<int>> parse_kernel_version(const std::string& text);
// <0, 0, >0 like strcmp; missing trailing components count as 0.
int compare_kernel_versions(const std::vector<int>& a, const std::vector<int>& b);
// The row of d.eras that applies to kernel `version` (parsed).
const EraValue& era_row(const ParamDecl& d, const std::vector<int>& version);
// "param", "kernel" (host.kernel, guest.kernel: they choose the version
// switches' defaults), "version switch" or "derived".
std::string param_kind(const ParamDecl& d);

using ParamValue =
    std::variant<bool, std::int64_t, double, std::string, CostDist, std::vector<std::int64_t>>;

// Parses `text` as a value of d.type and checks range/choices. On failure
// returns nullopt and sets *problem to a phrase such as
// "expected an integer, got '1.5'" (no location, no key).
std::optional<ParamValue> parse_param_value(const ParamDecl& d, const std::string& text,
                                            std::string* problem);
// Canonical text of a value (parses back to the same value).
std::string param_value_text(const ParamValue& v);
// "[0, 64] count", ">= 0 ns", "one of: a, b", or "" when unconstrained.
std::string param_range_text(const ParamDecl& d);

class ParamRegistry {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Throws std::logic_error on a duplicate key, a key that clashes with a
  // group (declaring both "a" and "a.b"), or a default that does not parse.
  void declare(ParamDecl d);
  [[nodiscard]] const ParamDecl* find(std::string_view key) const;
  // Position of `key` in all(), or npos.
  [[nodiscard]] std::size_t index_of(std::string_view key) const;
  [[nodiscard]] const std::vector<ParamDecl>& all() const { return decls_; }
  // True if some key starts with prefix + ".".
  [[nodiscard]] bool is_prefix(std::string_view prefix) const;
  // Up to three declared keys or groups close to `key`, best first.
  [[nodiscard]] std::vector<std::string> suggest(std::string_view key) const;
  // Default values, parsed, in declaration order.
  [[nodiscard]] const std::vector<ParamValue>& defaults() const { return defaults_; }
  // Makes `key` a version switch of the String key `era_key`: its default
  // becomes the row for era_key's default kernel. Throws std::logic_error on
  // an unknown key, an empty table, a bad version or value, or rows out of
  // order.
  void set_eras(std::string_view key, std::string_view era_key, std::vector<EraValue> rows);
  // Declared keys naming a kernel version (the era_key of some switch).
  [[nodiscard]] std::vector<std::string> era_keys() const;
  // Gives `key` a default derived from other keys (their resolved values,
  // after the kernel eras and the derived keys set before this one). The
  // registry's default becomes the rule applied to the defaults. Throws
  // std::logic_error on an unknown key, a version switch, a key already
  // derived, an unknown `from` key, or a rule value that does not parse.
  void set_derived(std::string_view key, DerivedDefault rule);
  // Positions in all() of the derived keys, in the order they were set.
  [[nodiscard]] const std::vector<std::size_t>& derived_order() const { return derived_; }

 private:
  std::vector<ParamDecl> decls_;
  std::vector<ParamValue> defaults_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::set<std::string, std::less<>> groups_;
  std::vector<std::size_t> derived_;
};

// " did you mean 'a' or 'b'?" or "" — ready to append to an "unknown key" message.
std::string did_you_mean(const ParamRegistry& reg, std::string_view key);

struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ParamSet {
 public:
  explicit ParamSet(const ParamRegistry& reg);            // all defaults; keeps a pointer to reg
  explicit ParamSet(const ParamRegistry&& reg) = delete;  // the registry must outlive the set

  // Typed getters. Throw std::logic_error for an undeclared key or the wrong
  // type (a programming error, not a user error).
  [[nodiscard]] bool b(std::string_view key) const;
  [[nodiscard]] std::int64_t i(std::string_view key) const;
  [[nodiscard]] double d(std::string_view key) const;  // Int params also readable as double
  [[nodiscard]] const std::string& s(std::string_view key) const;
  [[nodiscard]] const CostDist& dist(std::string_view key) const;
  [[nodiscard]] const std::vector<std::int64_t>& ints(std::string_view key) const;

  // "default", "path/file.yaml:12", or "--set".
  [[nodiscard]] std::string origin(std::string_view key) const;
  // A scenario file or --set chose the value (not the default, a kernel era
  // or a derived default's rule).
  [[nodiscard]] bool chosen(std::string_view key) const;
  // Canonical text of the current value.
  [[nodiscard]] std::string text(std::string_view key) const;
  // Parses and validates; throws ScenarioError "<origin>: key 'k': <problem>"
  // (or "<origin>: unknown key 'k'...").
  void set_text(std::string_view key, const std::string& text, const std::string& origin);
  // Stores an already parsed value. Throws std::logic_error for an undeclared
  // key or a value of the wrong type, ScenarioError if out of range/choices.
  void set_value(std::string_view key, ParamValue value, const std::string& origin);

  [[nodiscard]] std::vector<std::string> keys() const;  // declaration order
  [[nodiscard]] const ParamRegistry& registry() const { return *reg_; }

 private:
  [[nodiscard]] std::size_t slot(std::string_view key) const;
  template <typename T>
  const T& get(std::string_view key, ParamType want) const;

  const ParamRegistry* reg_;
  std::vector<ParamValue> values_;
  std::vector<std::string> origins_;
};

// True if the kernel version held by `key` (host.kernel, guest.kernel) is
// `version` or newer; for the rules of derived defaults.
bool kernel_at_least(const ParamSet& set, std::string_view key, const char* version);

// Origin text of a value a kernel era chose: "host.kernel=5.4 (era)".
std::string era_origin(const std::string& era_key, const std::string& version);
// Origin text of a value a derived default's rule chose: "<why> (derived)";
// derived_why() gives the why back, nullopt for any other origin.
std::string derived_origin(const std::string& why);
std::optional<std::string> derived_why(const std::string& origin);
// Sets every version switch that no file or --set chose (origin "default",
// or an earlier era's) to the row of its kernel key's current value, then
// every derived key nobody chose to its rule's value (origin "<why>
// (derived)"). Idempotent; call it after the last override. Throws
// ScenarioError if a kernel key does not hold a version ("<origin>: key
// 'host.kernel': ...") or an explicit true of a capped derived key cannot
// act ("<origin>: key 'guest.pv_spinlock': true cannot act: <why>").
void apply_kernel_eras(ParamSet& set);

// Aligned text for `kvmsim params`: key, type, default, unit, range/choices, doc.
std::string format_param_table(const ParamRegistry& reg);
// Markdown table for docs/reference/parameters.md.
std::string format_param_markdown(const ParamRegistry& reg);
// `text` as lines of at most `width` columns (words longer than that stay
// whole), each after `indent` (counted in the width): parameter docs for a
// terminal, or as YAML comments with indent "  # ".
std::string wrap_words(const std::string& text, std::size_t width, const std::string& indent);
// `kvmsim params PREFIX`: the parameters whose key starts with `prefix`, one
// block each (key, type, default, unit, range, kind; then the doc wrapped to
// `width` columns); "" when none does.
std::string format_param_blocks(const ParamRegistry& reg, std::string_view prefix,
                                std::size_t width);

// The core's own keys (platform identity, simulation control: params_decl.cpp);
// every other folder declares its keys in its params.cpp (sim/model_params.h).
void declare_core_params(ParamRegistry& r);

}  // namespace kvmsim
