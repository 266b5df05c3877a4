#include "tools/kvmsim/published_targets.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace kvmsim::validate {

// Generated from validation/targets.yaml by CMake (cmake/embed_file.cmake).
extern const char kEmbeddedTargetsYaml[];

namespace {

std::string where(const std::string& origin, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? origin : origin + ":" + std::to_string(m.line + 1);
}

[[noreturn]] void fail(const std::string& origin, const YAML::Node& n, const std::string& what) {
  throw TargetsError(where(origin, n) + ": " + what);
}

// The keys a mapping may have; anything else is a typo.
void only_keys(const std::string& origin, const YAML::Node& n, const std::string& ctx,
               const std::set<std::string>& allowed) {
  if (!n.IsMap()) fail(origin, n, ctx + " must be a mapping");
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    if (allowed.count(key) == 0) fail(origin, kv.first, ctx + ": unknown key '" + key + "'");
  }
}

std::string text(const std::string& origin, const YAML::Node& parent, const std::string& key,
                 const std::string& ctx, bool required) {
  const YAML::Node n = parent[key];
  if (!n) {
    if (required) fail(origin, parent, ctx + ": '" + key + "' missing");
    return "";
  }
  if (!n.IsScalar()) fail(origin, n, ctx + ": '" + key + "' must be text");
  return n.as<std::string>();
}

double number(const std::string& origin, const YAML::Node& n, const std::string& ctx) {
  try {
    if (n.IsScalar()) return n.as<double>();
  } catch (const YAML::Exception&) {
  }
  fail(origin, n, ctx + " must be a number");
}

bool boolean(const std::string& origin, const YAML::Node& n, const std::string& ctx) {
  try {
    if (n.IsScalar()) return n.as<bool>();
  } catch (const YAML::Exception&) {
  }
  fail(origin, n, ctx + " must be true or false");
}

Tolerance tolerance(const std::string& origin, const YAML::Node& n, const std::string& ctx) {
  if (n.IsScalar() && n.as<std::string>() == "exact") return Tolerance::exact();
  if (!n.IsMap() || n.size() != 1)
    fail(origin, n,
         ctx +
             " must be exact or one of {relative: f}, {absolute: d}, {at_most: d}, "
             "{factor: f}, {offset: [lo, hi]}");
  const auto kind = n.begin()->first.as<std::string>();
  const YAML::Node v = n.begin()->second;
  if (kind == "offset") {
    if (!v.IsSequence() || v.size() != 2) fail(origin, v, ctx + ": offset must be [lo, hi]");
    return Tolerance::offset(number(origin, v[0], ctx), number(origin, v[1], ctx));
  }
  const double x = number(origin, v, ctx + ": " + kind);
  if (kind == "relative") return Tolerance::relative(x);
  if (kind == "absolute") return Tolerance::absolute(x);
  if (kind == "at_most") return Tolerance::at_most(x);
  if (kind == "factor") return Tolerance::factor(x);
  fail(origin, n, ctx + ": unknown tolerance '" + kind + "'");
}

Figure parse_figure(const std::string& origin, const YAML::Node& n, const std::string& tctx) {
  only_keys(origin, n, tctx + " figure",
            {"id", "setting", "metric", "unit", "value", "range", "derived", "tolerance",
             "quick_tolerance", "quick_note", "calibration", "source", "note"});
  Figure f;
  f.id = text(origin, n, "id", tctx + " figure", true);
  const std::string ctx = tctx + " figure " + f.id;
  f.setting = text(origin, n, "setting", ctx, true);
  f.metric = text(origin, n, "metric", ctx, true);
  f.unit = text(origin, n, "unit", ctx, true);
  f.derived = text(origin, n, "derived", ctx, false);
  f.source = text(origin, n, "source", ctx, false);
  f.note = text(origin, n, "note", ctx, false);
  f.quick_note = text(origin, n, "quick_note", ctx, false);
  const int given = (n["value"] ? 1 : 0) + (n["range"] ? 1 : 0) + (n["derived"] ? 1 : 0);
  if (given != 1) fail(origin, n, ctx + ": give exactly one of value, range, derived");
  if (n["value"]) f.value = number(origin, n["value"], ctx + ": value");
  if (n["range"]) {
    const YAML::Node r = n["range"];
    if (!r.IsSequence() || r.size() != 2) fail(origin, r, ctx + ": range must be [lo, hi]");
    f.range = std::make_pair(number(origin, r[0], ctx), number(origin, r[1], ctx));
    f.value = (f.range->first + f.range->second) / 2;
  }
  if (!n["tolerance"]) fail(origin, n, ctx + ": 'tolerance' missing");
  f.tolerance = tolerance(origin, n["tolerance"], ctx + ": tolerance");
  if (n["quick_tolerance"]) {
    f.quick_tolerance = tolerance(origin, n["quick_tolerance"], ctx + ": quick_tolerance");
    if (f.quick_note.empty()) fail(origin, n, ctx + ": a quick_tolerance needs a quick_note");
  }
  if (n["calibration"]) f.calibration = boolean(origin, n["calibration"], ctx + ": calibration");
  return f;
}

PublishedHistogram parse_histogram(const std::string& origin, const YAML::Node& n,
                                   const std::string& tctx) {
  const std::string ctx = tctx + " histogram";
  only_keys(origin, n, ctx, {"loops", "bucket_us", "counts", "above"});
  PublishedHistogram h;
  h.loops = static_cast<std::uint64_t>(number(origin, n["loops"], ctx + ": loops"));
  const YAML::Node b = n["bucket_us"];
  if (!b || !b.IsSequence() || b.size() == 0) fail(origin, n, ctx + ": bucket_us must be a list");
  for (const auto& x : b) {
    const double v = number(origin, x, ctx + ": bucket_us");
    if (v < 0 || v > 10000 || v != std::floor(v))
      fail(origin, x, ctx + ": bucket_us must be whole microseconds");
    if (!h.bucket_us.empty() && v <= h.bucket_us.back())
      fail(origin, x, ctx + ": bucket_us must increase");
    h.bucket_us.push_back(static_cast<unsigned>(v));
  }
  const YAML::Node c = n["counts"];
  if (!c || !c.IsMap()) fail(origin, n, ctx + ": counts must map series to lists");
  for (const auto& kv : c) {
    const auto series = kv.first.as<std::string>();
    if (!kv.second.IsSequence() || kv.second.size() != h.bucket_us.size())
      fail(origin, kv.second, ctx + ": counts of " + series + " must have one per bucket_us");
    std::uint64_t sum = 0;
    for (const auto& x : kv.second) {
      const double v = number(origin, x, ctx + ": counts");
      if (v < 0 || v != std::floor(v)) fail(origin, x, ctx + ": counts must be whole");
      h.counts[series].push_back(static_cast<std::uint64_t>(v));
      sum += static_cast<std::uint64_t>(v);
    }
    const YAML::Node a = n["above"] ? n["above"][series] : YAML::Node();
    if (!a) fail(origin, n, ctx + ": above: " + series + " missing");
    h.above[series] = static_cast<std::uint64_t>(number(origin, a, ctx + ": above"));
    if (sum + h.above[series] != h.loops)
      fail(origin, kv.second,
           ctx + ": " + series + ": the buckets and above do not add up to loops");
  }
  if (n["above"] && n["above"].size() != c.size())
    fail(origin, n["above"], ctx + ": above names a series without counts");
  return h;
}

Target parse_target(const std::string& origin, const YAML::Node& n) {
  only_keys(origin, n, "target",
            {"id", "title", "scenario", "gated", "source", "figures", "histogram", "counters"});
  Target t;
  t.id = text(origin, n, "id", "target", true);
  const std::string ctx = "target " + t.id;
  t.title = text(origin, n, "title", ctx, true);
  t.scenario = text(origin, n, "scenario", ctx, true);
  if (n["gated"]) t.gated = boolean(origin, n["gated"], ctx + ": gated");
  const YAML::Node s = n["source"];
  if (!s) fail(origin, n, ctx + ": 'source' missing");
  only_keys(origin, s, ctx + " source",
            {"reference", "author", "date", "host", "kernel", "guest", "notes"});
  const std::string sctx = ctx + " source";
  t.source.reference = text(origin, s, "reference", sctx, true);
  t.source.author = text(origin, s, "author", sctx, false);  // omitted: not recorded
  t.source.date = text(origin, s, "date", sctx, true);
  t.source.host = text(origin, s, "host", sctx, true);
  t.source.kernel = text(origin, s, "kernel", sctx, true);
  t.source.guest = text(origin, s, "guest", sctx, true);
  t.source.notes = text(origin, s, "notes", sctx, false);
  if (n["histogram"]) t.histogram = parse_histogram(origin, n["histogram"], ctx);
  if (n["counters"]) {
    const YAML::Node c = n["counters"];
    if (!c.IsMap()) fail(origin, c, ctx + ": counters must map names to lists of readings");
    for (const auto& kv : c) {
      const auto name = kv.first.as<std::string>();
      if (!kv.second.IsSequence()) fail(origin, kv.second, ctx + ": counters: " + name);
      for (const auto& x : kv.second)
        t.counters[name].push_back(number(origin, x, ctx + ": counters: " + name));
    }
  }
  const YAML::Node f = n["figures"];
  if (!f || !f.IsSequence() || f.size() == 0) fail(origin, n, ctx + ": 'figures' must be a list");
  for (const auto& x : f) {
    Figure fig = parse_figure(origin, x, ctx);
    if (t.figure(fig.id)) fail(origin, x, ctx + ": figure " + fig.id + " given twice");
    t.figures.push_back(std::move(fig));
  }
  return t;
}

}  // namespace

std::string Source::summary() const {
  std::string s = reference;
  const auto add = [&s](const std::string& label, const std::string& v) {
    if (v.empty()) return;
    s += (s.empty() ? "" : "; ") + label + v;
  };
  std::string who = author;
  if (!date.empty()) who += (who.empty() ? "" : ", ") + date;
  add("", who);
  add("host ", host);
  add("kernel ", kernel);
  add("guest ", guest);
  return s;
}

std::vector<std::uint64_t> PublishedHistogram::buckets(const std::string& series) const {
  const auto it = counts.find(series);
  if (it == counts.end()) throw TargetsError("no published histogram series '" + series + "'");
  std::vector<std::uint64_t> out(bucket_us.empty() ? 0 : bucket_us.back() + 1, 0);
  for (std::size_t i = 0; i < bucket_us.size(); ++i) out[bucket_us[i]] = it->second[i];
  return out;
}

std::uint64_t PublishedHistogram::above_last(const std::string& series) const {
  const auto it = above.find(series);
  if (it == above.end()) throw TargetsError("no published histogram series '" + series + "'");
  return it->second;
}

const Figure* Target::figure(const std::string& fid) const {
  const auto it =
      std::find_if(figures.begin(), figures.end(), [&](const Figure& f) { return f.id == fid; });
  return it == figures.end() ? nullptr : &*it;
}

const Target* PublishedTargets::find(const std::string& tid) const {
  const auto it =
      std::find_if(targets.begin(), targets.end(), [&](const Target& t) { return t.id == tid; });
  return it == targets.end() ? nullptr : &*it;
}

PublishedTargets parse_targets(const std::string& text_in, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text_in);
  } catch (const YAML::Exception& e) {
    throw TargetsError(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  PublishedTargets p;
  p.origin = origin;
  try {
    only_keys(origin, root, "the targets file", {"targets"});
    const YAML::Node list = root["targets"];
    if (!list || !list.IsSequence()) fail(origin, root, "'targets' must be a list");
    for (const auto& n : list) {
      Target t = parse_target(origin, n);
      if (p.find(t.id)) fail(origin, n, "target " + t.id + " given twice");
      p.targets.push_back(std::move(t));
    }
  } catch (const YAML::Exception& e) {
    throw TargetsError(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return p;
}

PublishedTargets load_targets_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TargetsError(path + ": cannot read");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_targets(ss.str(), path);
}

const std::string& embedded_targets_text() {
  static const std::string t = kEmbeddedTargetsYaml;
  return t;
}

const PublishedTargets& embedded_targets() {
  static const PublishedTargets p =
      parse_targets(embedded_targets_text(), "validation/targets.yaml (built in)");
  return p;
}

}  // namespace kvmsim::validate
