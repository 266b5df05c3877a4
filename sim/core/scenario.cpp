#include "sim/core/scenario.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace kvmsim {
namespace {

namespace fs = std::filesystem;

// Top-level keys that are not parameters. `sweep:` (a grid of parameter
// values and seeds) is read by `kvmsim sweep` / the Python package (bindings/).
bool is_meta_key(const std::string& name) {
  return name == "include" || name == "description" || name == "name" || name == "sweep";
}

std::string location(const std::string& path, const YAML::Mark& m) {
  if (m.is_null()) return path;
  return fmt::format("{}:{}:{}", path, m.line + 1, m.column + 1);
}

// What the user wrote, for "got ..." phrases.
std::string describe(const YAML::Node& n) {
  if (n.IsNull()) return "no value";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

std::string expected(const ParamDecl& d) {
  switch (d.type) {
    case ParamType::Bool:
      return "true or false";
    case ParamType::Int:
      return "an integer";
    case ParamType::Double:
      return "a number";
    case ParamType::String:
      return "a string";
    case ParamType::Dist:
      return "a time or distribution such as normal(300ns, 20ns)";
    case ParamType::IntList:
      return "a list of integers such as [2, 3]";
  }
  return "a value";
}

std::optional<std::string> read_text(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Identity of a file for include-cycle detection.
std::string file_identity(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

struct OpenFile {
  std::string identity;
  std::string shown;  // path as used in messages
};

// State shared by a file and everything it includes.
struct LoadState {
  explicit LoadState(const ParamRegistry& r) : reg(r), set(r) {}
  const ParamRegistry& reg;
  ParamSet set;
  std::vector<OpenFile> chain;  // files being loaded, outermost first
  // Errors of single entries (an unknown key, a bad value, a duplicate):
  // the load goes on to the next entry so that all of them are reported.
  std::vector<std::string> errors;
};

// At most this many entry errors are listed; the rest are counted.
constexpr std::size_t kMaxReportedErrors = 20;

// Loads one YAML document into the shared ParamSet.
class FileLoader {
 public:
  FileLoader(LoadState& st, std::string path) : st_(st), path_(std::move(path)) {}

  void run(const std::string& text) {
    const YAML::Node root = parse(text);
    if (root.IsNull()) return;
    if (!root.IsMap())
      fail(root.Mark(), fmt::format("expected a mapping of parameter keys at the top level, got {}",
                                    describe(root)));
    load_includes(root);
    walk(root, "");
  }

 private:
  [[noreturn]] void fail(const YAML::Mark& m, const std::string& what) const {
    throw ScenarioError(location(path_, m) + ": " + what);
  }
  [[noreturn]] void fail_key(const YAML::Mark& m, const std::string& key,
                             const std::string& problem) const {
    fail(m, fmt::format("key '{}': {}", key, problem));
  }

  YAML::Node parse(const std::string& text) const {
    try {
      return YAML::Load(text);
    } catch (const YAML::Exception& e) {
      fail(e.mark, "YAML syntax error: " + e.msg);
    }
  }

  // --- includes ------------------------------------------------------------

  void load_includes(const YAML::Node& root) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (!it->first.IsScalar() || it->first.Scalar() != "include") continue;
      // A copy: `it->` is a proxy that dies with the statement, so a reference
      // to its member would dangle (found by fuzz_scenario under ASan).
      const YAML::Node inc = it->second;
      if (inc.IsScalar()) {
        load_include(inc);
      } else if (inc.IsSequence()) {
        for (const auto& item : inc) load_include(item);
      } else {
        fail(inc.IsNull() ? it->first.Mark() : inc.Mark(),
             "include: expected a file path or a list of file paths, got " + describe(inc));
      }
    }
  }

  void load_include(const YAML::Node& item) {
    if (!item.IsScalar() || item.Scalar().empty())
      fail(item.Mark(), "include: expected a file path, got " + describe(item));
    const fs::path target = (fs::path(path_).parent_path() / item.Scalar()).lexically_normal();
    const OpenFile file{file_identity(target), target.string()};
    check_no_cycle(file, item.Mark());
    const auto text = read_text(target);
    if (!text)
      fail(item.Mark(),
           fmt::format("include '{}': cannot read file '{}'", item.Scalar(), file.shown));
    st_.chain.push_back(file);
    FileLoader(st_, file.shown).run(*text);
    st_.chain.pop_back();
  }

  void check_no_cycle(const OpenFile& file, const YAML::Mark& at) const {
    const auto same = [&](const OpenFile& f) { return f.identity == file.identity; };
    const auto first = std::find_if(st_.chain.begin(), st_.chain.end(), same);
    if (first == st_.chain.end()) return;
    std::string cycle;
    for (auto f = first; f != st_.chain.end(); ++f) cycle += f->shown + " -> ";
    fail(at, "include cycle: " + cycle + file.shown);
  }

  // --- parameters ----------------------------------------------------------

  // Visits every entry of a mapping whose keys live under `prefix`.
  void walk(const YAML::Node& map, const std::string& prefix) {
    std::map<std::string, YAML::Mark> here;  // literal keys of this mapping
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node k = it->first;  // a copy, see load_includes()
      if (!k.IsScalar()) fail(k.Mark(), "mapping keys must be plain names, got " + describe(k));
      const std::string full = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      try {
        const auto [first, fresh] = here.emplace(full, k.Mark());
        if (!fresh)
          fail_key(k.Mark(), full,
                   fmt::format("duplicate key in the same mapping (first at line {})",
                               first->second.line + 1));
        if (prefix.empty() && is_meta_key(k.Scalar())) {
          check_meta(k, it->second);
        } else {
          visit(full, k.Mark(), it->second);
        }
      } catch (const ScenarioError& e) {
        st_.errors.emplace_back(e.what());  // reported with the others at the end
      }
    }
  }

  void check_meta(const YAML::Node& key, const YAML::Node& value) const {
    if (key.Scalar() != "include" && key.Scalar() != "sweep" && !value.IsScalar())
      fail_key(value.IsNull() ? key.Mark() : value.Mark(), key.Scalar(),
               "expected a string, got " + describe(value));
  }

  void visit(const std::string& full, const YAML::Mark& key_mark, const YAML::Node& value) {
    if (const ParamDecl* d = st_.reg.find(full)) return assign(*d, key_mark, value);
    if (!st_.reg.is_prefix(full))
      fail(key_mark, fmt::format("unknown key '{}'{}", full, did_you_mean(st_.reg, full)));
    if (!value.IsMap())
      fail_key(value.IsNull() ? key_mark : value.Mark(), full,
               fmt::format("expected a mapping of its parameters ({}.*), got {}", full,
                           describe(value)));
    walk(value, full);
  }

  void assign(const ParamDecl& d, const YAML::Mark& key_mark, const YAML::Node& value) {
    const auto [first, fresh] = seen_.emplace(d.key, key_mark);
    if (!fresh)
      fail_key(key_mark, d.key,
               fmt::format("set twice in this file (first at line {})", first->second.line + 1));
    const YAML::Mark at = value.IsNull() ? key_mark : value.Mark();
    ParamValue v = d.type == ParamType::IntList ? int_list(d, value, at) : scalar(d, value, at);
    st_.set.set_value(d.key, std::move(v), fmt::format("{}:{}", path_, key_mark.line + 1));
  }

  ParamValue scalar(const ParamDecl& d, const YAML::Node& value, const YAML::Mark& at) const {
    if (!value.IsScalar())
      fail_key(at, d.key, fmt::format("expected {}, got {}", expected(d), describe(value)));
    std::string problem;
    auto v = parse_param_value(d, value.Scalar(), &problem);
    if (!v) fail_key(at, d.key, problem);
    return std::move(*v);
  }

  ParamValue int_list(const ParamDecl& d, const YAML::Node& value, const YAML::Mark& at) const {
    if (!value.IsSequence())
      fail_key(at, d.key, fmt::format("expected {}, got {}", expected(d), describe(value)));
    ParamDecl elem = d;  // same range and unit, one integer
    elem.type = ParamType::Int;
    std::vector<std::int64_t> out;
    for (const auto& item : value) {
      const std::size_t n = out.size() + 1;
      if (!item.IsScalar())
        fail_key(item.Mark(), d.key,
                 fmt::format("element {}: expected an integer, got {}", n, describe(item)));
      std::string problem;
      auto v = parse_param_value(elem, item.Scalar(), &problem);
      if (!v) fail_key(item.Mark(), d.key, fmt::format("element {}: {}", n, problem));
      out.push_back(std::get<std::int64_t>(*v));
    }
    return out;
  }

  LoadState& st_;
  std::string path_;
  std::map<std::string, YAML::Mark> seen_;  // parameters set by this file
};

void apply_override(ParamSet& set, const std::string& ov) {
  const std::string where = "--set " + ov;
  const auto eq = ov.find('=');
  const std::string key = trim(ov.substr(0, eq));
  if (eq == std::string::npos || key.empty()) throw ScenarioError(where + ": expected KEY=VALUE");
  const ParamRegistry& reg = set.registry();
  const ParamDecl* d = reg.find(key);
  if (!d && reg.is_prefix(key))
    throw ScenarioError(fmt::format("{}: '{}' is a group of parameters, not a key", where, key));
  if (!d)
    throw ScenarioError(fmt::format("{}: unknown key '{}'{}", where, key, did_you_mean(reg, key)));
  std::string problem;
  auto v = parse_param_value(*d, ov.substr(eq + 1), &problem);
  if (!v) throw ScenarioError(fmt::format("{}: key '{}': {}", where, key, problem));
  set.set_value(key, std::move(*v), "--set");
}

}  // namespace

void apply_overrides(ParamSet& set, const std::vector<std::string>& overrides) {
  for (const auto& ov : overrides) apply_override(set, ov);
}

ParamSet load_scenario_text(const ParamRegistry& reg, const std::string& text,
                            const std::string& path, const std::vector<std::string>& overrides) {
  LoadState st(reg);
  st.chain.push_back({file_identity(path), path});
  FileLoader(st, path).run(text);
  if (!st.errors.empty()) {
    // Every bad entry of the file (and its includes), one per line.
    std::string all;
    for (std::size_t i = 0; i < st.errors.size() && i < kMaxReportedErrors; ++i)
      all += (i ? "\n" : "") + st.errors[i];
    if (st.errors.size() > kMaxReportedErrors)
      all += fmt::format("\n{}: {} more errors not shown", path,
                         st.errors.size() - kMaxReportedErrors);
    throw ScenarioError(all);
  }
  apply_overrides(st.set, overrides);
  // host.kernel / guest.kernel fill the version switches nobody set.
  apply_kernel_eras(st.set);
  return std::move(st.set);
}

ParamSet load_scenario(const ParamRegistry& reg, const std::string& path,
                       const std::vector<std::string>& overrides) {
  const auto text = read_text(path);
  if (!text) throw ScenarioError(path + ": cannot read scenario file");
  return load_scenario_text(reg, *text, path, overrides);
}

}  // namespace kvmsim
