// _kvmsim: the parts of kvmsim that need no SystemC elaboration, for the
// Python package (bindings/kvmsim). Runs happen in a child process (the CLI);
// everything here is pure computation over the same C++ code the CLI uses:
// parameter declarations and override validation (sim/core/params.h,
// scenario.h), cyclictest histograms and their comparison
// (sim/core/histogram.h, histogram_compare.h), trace parsing and statistics
// (sim/trace/trace_parse.h, trace_stats.h).
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "sim/core/histogram.h"
#include "sim/core/histogram_compare.h"
#include "sim/core/metric_decl.h"
#include "sim/core/scenario.h"
#include "sim/core/stage.h"
#include "sim/core/summary_section.h"
#include "sim/model_params.h"
#include "sim/trace/trace_parse.h"
#include "sim/trace/trace_stats.h"
#include "tools/kvmsim/published_targets.h"

namespace py = pybind11;
using namespace kvmsim;

namespace {

py::list param_declarations() {
  py::list rows;
  for (const auto& d : model_params().all()) {
    py::dict r;
    r["key"] = d.key;
    r["type"] = param_type_name(d.type);
    r["default"] = d.default_text;
    r["unit"] = d.unit;
    r["min"] = d.min;
    r["max"] = d.max;
    r["choices"] = d.choices;
    r["range"] = param_range_text(d);
    r["doc"] = d.doc;
    r["kind"] = param_kind(d);
    r["era_key"] = d.era_key;
    py::list eras;
    for (const auto& e : d.eras) eras.append(py::make_tuple(e.since, e.value, e.why));
    r["eras"] = eras;
    rows.append(r);
  }
  return rows;
}

// The metric declarations whose pattern starts with `prefix`, or that the key
// `prefix` is an instance of (kvmsim metrics PREFIX).
py::list metric_declarations(const std::string& prefix) {
  py::list rows;
  for (const auto* d : MetricRegistry::instance().select(prefix)) {
    py::dict r;
    r["key"] = d->pattern;
    r["unit"] = d->unit;
    r["emitter"] = d->emitter;
    r["doc"] = d->doc;
    rows.append(r);
  }
  return rows;
}

// Resolved parameters of a scenario (or of the defaults when `scenario` is
// empty) with `overrides` ("key=value") applied; ScenarioError with the CLI's
// message on bad input. Returns [(key, canonical text, origin)].
std::vector<std::tuple<std::string, std::string, std::string>> resolve(
    const std::string& scenario, const std::vector<std::string>& overrides) {
  const auto& reg = model_params();
  // As the CLI: the file, then the overrides, then the eras and derived
  // defaults once (an override may be what makes a file's value possible).
  ParamSet set = ParamSet(reg);
  if (scenario.empty()) {
    apply_overrides(set, overrides);
    apply_kernel_eras(set);
  } else {
    set = load_scenario(reg, scenario, overrides);
  }
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const auto& k : set.keys()) out.emplace_back(k, set.text(k), set.origin(k));
  return out;
}

// The summary's per-mechanism sections (sim/core/summary_section.h) of a
// finished run, from its resolved parameters and metrics (summary.json).
std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
summary_sections(const std::map<std::string, std::string>& params,
                 const std::map<std::string, double>& metrics) {
  ParamSet set(model_params());
  for (const auto& [k, v] : params)
    if (model_params().find(k)) set.set_text(k, v, "summary.json");
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> out;
  for (auto& s :
       SummarySectionRegistry::instance().sections(set, Metrics(metrics.begin(), metrics.end())))
    out.emplace_back(std::move(s.title), std::move(s.stats));
  return out;
}

py::dict thread_to_dict(const CyclictestThread& t) {
  py::dict d;
  d["counts"] = t.counts;
  d["total"] = t.total;
  d["overflows"] = t.overflows;
  d["min_us"] = t.min_us;
  d["avg_us"] = t.avg_us;
  d["max_us"] = t.max_us;
  d["overflow_cycles"] = t.overflow_cycles;
  d["overflow_others"] = t.overflow_others;
  return d;
}

CyclictestThread thread_from_dict(const py::dict& d) {
  CyclictestThread t;
  t.counts = d["counts"].cast<std::vector<std::uint64_t>>();
  t.total = d["total"].cast<std::uint64_t>();
  t.overflows = d["overflows"].cast<std::uint64_t>();
  t.min_us = d["min_us"].cast<std::int64_t>();
  t.avg_us = d["avg_us"].cast<std::int64_t>();
  t.max_us = d["max_us"].cast<std::int64_t>();
  t.overflow_cycles = d["overflow_cycles"].cast<std::vector<std::uint64_t>>();
  t.overflow_others = d["overflow_others"].cast<std::uint64_t>();
  return t;
}

CyclictestReport report_from(const py::list& threads, std::size_t buckets) {
  CyclictestReport r;
  r.buckets = buckets;
  for (const auto& t : threads) r.threads.push_back(thread_from_dict(t.cast<py::dict>()));
  return r;
}

// {"threads": [thread dicts], "buckets": N}; ValueError "LINE N: ..." on bad text.
py::dict parse_histogram_text(const std::string& text) {
  const CyclictestReport r = parse_cyclictest(text);
  py::list threads;
  for (const auto& t : r.threads) threads.append(thread_to_dict(t));
  py::dict d;
  d["threads"] = threads;
  d["buckets"] = r.buckets;
  return d;
}

py::dict stats_dict(const HistogramStats& s) {
  py::dict d;
  const auto put = [&](const char* name, const HistogramStats::Value& v) {
    d[name] = v.us;
    d[(std::string(name) + "_lower_bound").c_str()] = v.lower_bound;
  };
  put("min_us", s.min);
  put("avg_us", s.avg);
  put("max_us", s.max);
  put("p50_us", s.p50);
  put("p90_us", s.p90);
  put("p99_us", s.p99);
  put("p999_us", s.p999);
  d["samples"] = s.samples;
  d["overflows"] = s.overflows;
  d["buckets"] = s.buckets;
  return d;
}

py::dict thread_stats(const py::list& threads, std::size_t buckets, std::size_t thread) {
  return stats_dict(histogram_stats(histogram_from_report(report_from(threads, buckets), thread)));
}

// comparison_json() of `kvmsim compare`, as text (the package loads it).
std::string compare_json(const py::list& a_threads, std::size_t a_buckets,
                         const py::list& b_threads, std::size_t b_buckets,
                         std::optional<double> w1_us, std::optional<double> ks,
                         std::optional<double> avg_us, std::optional<double> p99_us, bool merge,
                         const std::string& name_a, const std::string& name_b) {
  CompareTolerances tol;
  tol.w1_us = w1_us;
  tol.ks = ks;
  tol.avg_us = avg_us;
  tol.p99_us = p99_us;
  CompareOptions opts;
  opts.merge_threads = merge;
  opts.name_a = name_a;
  opts.name_b = name_b;
  const auto c = compare_histograms(report_from(a_threads, a_buckets),
                                    report_from(b_threads, b_buckets), tol, opts);
  return comparison_json(c, name_a, name_b);
}

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw py::value_error("cannot read trace file '" + path + "'");
  return in;
}

// The payload fields of the listed tracepoints, as (name, value) columns.
struct PayloadColumns {
  py::dict& row;
  void operator()(const std::monostate&) const {}
  void operator()(const trace::KvmExit& e) const {
    row["vcpu"] = e.vcpu;
    row["reason"] = e.reason;
    row["rip"] = e.rip;
    row["info1"] = e.info1;
    row["info2"] = e.info2;
    row["intr_info"] = e.intr_info;
    row["error_code"] = e.error_code;
  }
  void operator()(const trace::KvmEntry& e) const {
    row["vcpu"] = e.vcpu;
    if (e.rip) row["rip"] = *e.rip;
    row["immediate_exit"] = e.immediate_exit;
  }
  void operator()(const trace::KvmMsr& e) const {
    row["write"] = e.write;
    row["msr"] = e.msr;
    row["data"] = e.data;
    row["gp"] = e.gp;
  }
  void operator()(const trace::KvmHvTimerState& e) const {
    row["vcpu"] = e.vcpu_id;
    row["hv_timer"] = e.hv_timer;
  }
  void operator()(const trace::KvmWaitLapicExpire& e) const {
    row["vcpu"] = e.vcpu;
    row["delta"] = e.delta;
  }
  void operator()(const trace::KvmVcpuWakeup& e) const {
    row["waited"] = e.waited;
    row["wakeup_ns"] = e.ns;
    row["valid"] = e.valid;
  }
  // A per-vCPU window that grew or shrank (halt polling, PLE).
  void grow_shrink(unsigned vcpu, bool grow, std::int64_t new_value, std::int64_t old_value,
                   const char* new_key, const char* old_key) const {
    row["vcpu"] = vcpu;
    row["grow"] = grow;
    row[new_key] = new_value;
    row[old_key] = old_value;
  }
  void operator()(const trace::KvmHaltPollNs& e) const {
    grow_shrink(e.vcpu, e.grow, e.new_ns, e.old_ns, "new_ns", "old_ns");
  }
  void operator()(const trace::KvmApicAcceptIrq& e) const {
    row["apicid"] = e.apicid;
    row["vec"] = e.vec;
    row["delivery_mode"] = e.delivery_mode;
  }
  void operator()(const trace::KvmPvTlbFlush& e) const {
    row["vcpu"] = e.vcpu;
    row["need_flush_tlb"] = e.need_flush_tlb;
  }
  void operator()(const trace::SchedSwitch& e) const {
    row["prev_comm"] = e.prev_comm;
    row["prev_pid"] = e.prev_pid;
    row["prev_state"] = e.prev_state;
    row["next_comm"] = e.next_comm;
    row["next_pid"] = e.next_pid;
  }
  void operator()(const trace::SchedWakeup& e) const {
    row["wake_comm"] = e.comm;
    row["wake_pid"] = e.pid;
    row["target_cpu"] = e.target_cpu;
  }
  void operator()(const trace::KvmApicIpi& e) const {
    row["icr_low"] = e.icr_low;
    row["dest_id"] = e.dest_id;
    row["vec"] = e.icr_low & 0xffU;
  }
  void operator()(const trace::KvmHypercall& e) const {
    row["nr"] = e.nr;
    row["a0"] = e.a0;
    row["a1"] = e.a1;
    row["a2"] = e.a2;
    row["a3"] = e.a3;
  }
  void operator()(const trace::KvmInjVirq& e) const {
    row["vec"] = e.vector;
    row["soft"] = e.soft;
    row["reinjected"] = e.reinjected;
  }
  void operator()(const trace::KvmEoi& e) const {
    row["apicid"] = e.apicid;
    row["vec"] = e.vector;
  }
  void operator()(const trace::KvmApic& e) const {
    row["write"] = e.write;
    row["reg"] = e.reg;
    row["val"] = e.val;
  }
  void operator()(const trace::KvmPleWindow& e) const {
    grow_shrink(e.vcpu, e.grow, e.new_window, e.old_window, "new_window", "old_window");
  }
  void operator()(const trace::KvmPleWindowUpdate& e) const {
    grow_shrink(e.vcpu, e.grew(), e.new_window, e.old_window, "new_window", "old_window");
  }
};

// One dict per event line (framing understood); malformed lines are skipped
// and counted in the second element, with the first few (line, why).
py::tuple trace_events(const std::string& path) {
  auto in = open_or_throw(path);
  py::list rows;
  std::uint64_t malformed = 0;
  py::list first_malformed;
  trace::parse_trace(in, [&](const trace::TraceRecord& r) {
    if (r.kind == trace::LineKind::Malformed) {
      if (malformed++ < 10) first_malformed.append(py::make_tuple(r.line_no, r.error));
      return;
    }
    if (r.kind != trace::LineKind::Event) return;
    py::dict row;
    row["line"] = r.line_no;
    row["comm"] = r.comm;
    row["pid"] = r.pid;
    row["cpu"] = r.cpu;
    row["flags"] = r.flags;
    row["ts"] = r.ts;
    row["raw_clock"] = r.raw_clock;
    row["event"] = r.event;
    row["payload"] = r.payload;
    row["payload_error"] = r.error;
    std::visit(PayloadColumns{row}, r.data);
    rows.append(row);
  });
  return py::make_tuple(rows, malformed, first_malformed);
}

std::string trace_stats_text_json(const std::string& path, double raw_ticks_per_s) {
  auto in = open_or_throw(path);
  const auto s = trace::trace_stats(in, raw_ticks_per_s);
  return trace::trace_stats_json(s, path).dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace);
}

}  // namespace

// libsystemc's own main() calls sc_main. Once the model code this module uses
// links libsystemc in, Python's dlopen (RTLD_NOW) needs that symbol resolved.
// The package never elaborates (runs go to the CLI in a child), so this is
// never called.
extern "C" __attribute__((visibility("default"))) int sc_main(int /*argc*/, char* /*argv*/[]) {
  return 1;
}

PYBIND11_MODULE(_kvmsim, m) {
  m.doc() = "kvmsim internals without SystemC elaboration (use the kvmsim package)";
  m.attr("BUILD_BINARY") = KVMSIM_BUILD_BINARY;
  m.attr("SOURCE_DIR") = KVMSIM_SOURCE_DIR;
  py::register_exception<ScenarioError>(m, "ScenarioError", PyExc_ValueError);
  py::register_exception<HistogramCompareError>(m, "HistogramCompareError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const HistogramParseError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def(
      "targets_yaml", [] { return kvmsim::validate::embedded_targets_text(); },
      "validation/targets.yaml as built into this package (the published figures)");
  m.def("param_declarations", &param_declarations, "Every declared parameter, as dicts");
  m.def("metric_declarations", &metric_declarations, py::arg("prefix") = "",
        "The metric declarations (pattern, unit, emitter, doc) under a prefix, as dicts");
  m.def("summary_sections", &summary_sections, py::arg("params"), py::arg("metrics"),
        "[(title, [(stat, value)])]: what each mechanism in play did, as kvmsim run prints it");
  m.def("resolve", &resolve, py::arg("scenario"), py::arg("overrides"),
        "[(key, text, origin)] of a scenario ('' = defaults) with key=value overrides");
  m.def("parse_histogram_text", &parse_histogram_text, py::arg("text"));
  m.def("thread_stats", &thread_stats, py::arg("threads"), py::arg("buckets"),
        py::arg("thread") = 0);
  m.def("compare_json", &compare_json, py::arg("a_threads"), py::arg("a_buckets"),
        py::arg("b_threads"), py::arg("b_buckets"), py::arg("w1_us") = py::none(),
        py::arg("ks") = py::none(), py::arg("avg_us") = py::none(), py::arg("p99_us") = py::none(),
        py::arg("merge") = false, py::arg("name_a") = "A", py::arg("name_b") = "B");
  m.def(
      "stage_names",
      [] {
        // Path order, as summary.json's breakdown: the host stages (the ones
        // appended after the guest's, halt_poll and vcpu_run, included),
        // then the guest stages.
        const auto is_guest = [](int i) {
          return i >= static_cast<int>(Stage::Guest) && i <= static_cast<int>(Stage::GuestUser);
        };
        std::vector<std::string> names;
        for (const bool guest : {false, true})
          for (int i = 0; i < kStageCount; ++i)
            if (is_guest(i) == guest) names.emplace_back(stage_name(static_cast<Stage>(i)));
        return names;
      },
      "Latency-breakdown stages in path order: host stages, then guest stages (sim/core/stage.h)");
  m.def("trace_events", &trace_events, py::arg("path"));
  m.def("trace_stats_json", &trace_stats_text_json, py::arg("path"),
        py::arg("raw_ticks_per_s") = 1e9);
}
