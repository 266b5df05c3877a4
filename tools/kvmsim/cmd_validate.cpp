// kvmsim validate [--quick] [--markdown] [--jobs N] [--scenarios DIR] [--targets FILE] [--list]
// The simulator's accuracy statement: runs every experiment of
// build_experiments() (the published figures of validation/targets.yaml)
// whose scenario exists, each paired setting as a child
// `kvmsim run SCENARIO --set ... -q --out DIR` (SystemC elaborates once per
// process), and prints one table of published vs simulated values with the
// verdict of each check. Exit status: 0 every check within tolerance, 1 a
// check outside it (or a run failed), 2 no scenarios to run.
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/histogram.h"
#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"
#include "tools/kvmsim/published_targets.h"
#include "tools/kvmsim/validation.h"

namespace kvmsim::cli {

namespace {

namespace fs = std::filesystem;
using validate::Experiment;
using validate::RunOutput;

constexpr const char* kValidateFooter = R"(
Runs each published experiment (docs/validation.md) whose scenario file is in the
scenarios directory, once per paired setting of the switch studied, with the
scenario's default seed, as child processes of this binary (up to --jobs at a
time). Full runs use the scenarios as they are (the published setups); --quick
shortens them (fewer loops, samples or cycles) and keeps the tolerances, except
where a shorter run cannot see the published value (the hrtimer path's minimum).

Prints two tables, each row: experiment, switch/setting, metric, published,
simulated, error, tolerance, within tolerance. The calibration group holds the
published figures a cost was fitted on (goodness of fit, the platform files
say which); the validation group the others. Each group ends with its mean
absolute error: relative (%) over the values, in percentage points over the
changes. Then the experiments skipped because their scenario is missing, and
the wall time. The TL* rows (more points of the T2 family) are reported, not
gated.

The published figures (values, tolerances, sources) are those of
validation/targets.yaml as built into this binary; --targets reads another
copy of that file (same targets and figures, other numbers). --list prints
every target's source and figures without running anything.

Exit status: 0 every check within tolerance, 1 a check outside it or a run
failed, 2 the scenarios directory or every scenario is missing, or the
targets file does not match validate's checks.)";

struct ValidateOptions {
  bool quick = false;
  bool markdown = false;
  int jobs = 2;
  std::string scenarios = "scenarios";
  bool sensitivity = false;
  std::vector<std::string> only;  // experiment ids (empty = all)
  double step = 0.10;
  std::string targets;  // a targets file instead of the built-in one
  bool list = false;
  // --seeds: every run once per seed; rows judged on the median, with the
  // spread (empty: the scenarios' default seeds, once).
  std::vector<std::uint64_t> seeds;
  // --bands: every configuration an experiment's text leaves open, and a
  // band table per experiment.
  bool bands = false;
};

// The experiments with the published figures of --targets, or of the
// built-in file; nullptr (after the error) when the file does not match.
const std::vector<Experiment>* load_experiments(const ValidateOptions& o) {
  static std::vector<Experiment> loaded;
  try {
    if (o.targets.empty()) return &validate::validation_targets();
    loaded = validate::build_experiments(validate::load_targets_file(o.targets));
    return &loaded;
  } catch (const validate::TargetsError& e) {
    std::cerr << "kvmsim: error: " << e.what() << "\n";
    return nullptr;
  }
}

struct Job {
  std::size_t experiment = 0;  // index into the experiments that run
  std::size_t run = 0;         // index into Experiment::runs
  std::size_t pass = 0;        // index into --seeds
  std::size_t config = 0;      // index into Experiment::configurations (0: the chosen one)
  std::vector<std::string> args;
  fs::path dir;
  int status = 0;       // waitpid status
  std::string failure;  // could not start
};

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A child's stderr without libsystemc's banner and blank lines.
std::string filtered_stderr(const fs::path& p) {
  std::istringstream in(read_text(p));
  std::string line;
  std::string out;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.find("SystemC 2.") != std::string::npos ||
        line.find("Copyright (c) 1996") != std::string::npos ||
        line.find("ALL RIGHTS RESERVED") != std::string::npos)
      continue;
    out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

std::string command_line(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

// fork + exec of this binary; stdout and stderr to files in the job's dir.
pid_t spawn(Job& job) {
  std::vector<char*> argv;
  argv.reserve(job.args.size() + 1);
  for (auto& a : job.args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = (job.dir / "stdout.txt").string();
  const std::string err_path = (job.dir / "stderr.txt").string();
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    job.failure = "cannot create " + job.dir.string() + ": " + std::strerror(errno);
    if (out >= 0) ::close(out);
    if (err >= 0) ::close(err);
    return -1;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {  // child: only async-signal-safe calls until exec
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  if (pid < 0) job.failure = std::string("fork: ") + std::strerror(errno);
  ::close(out);
  ::close(err);
  return pid;
}

void run_jobs(std::vector<Job>& jobs, int parallel) {
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0;
  std::size_t done = 0;
  const auto report = [&] {
    if (progress)
      std::cerr << "\rkvmsim validate: " << done << "/" << jobs.size() << " runs" << std::flush;
  };
  report();
  while (done < jobs.size()) {
    while (running.size() < static_cast<std::size_t>(parallel) && next < jobs.size()) {
      const pid_t pid = spawn(jobs[next]);
      if (pid > 0)
        running[pid] = next;
      else
        ++done;
      ++next;
    }
    if (running.empty()) continue;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      for (auto& [p, i] : running)
        jobs[i].failure = std::string("waitpid: ") + std::strerror(errno);
      break;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    jobs[it->second].status = status;
    running.erase(it);
    ++done;
    report();
  }
  if (progress) std::cerr << "\r\033[K" << std::flush;
}

RunOutput read_run(const Job& job) {
  RunOutput r;
  const std::string cmd = command_line(job.args);
  if (!job.failure.empty()) {
    r.error = job.failure;
    return r;
  }
  if (!WIFEXITED(job.status) || WEXITSTATUS(job.status) != 0) {
    r.error = (WIFEXITED(job.status) ? "exit code " + std::to_string(WEXITSTATUS(job.status))
                                     : "killed by signal " + std::to_string(WTERMSIG(job.status))) +
              " from `" + cmd + "`";
    const std::string err = filtered_stderr(job.dir / "stderr.txt");
    if (!err.empty()) r.error += ":\n" + err;
    return r;
  }
  try {
    const auto summary = nlohmann::json::parse(read_text(job.dir / "summary.json"));
    for (const auto& [key, value] : summary.at("metrics").items())
      if (value.is_number()) r.metrics[key] = value.get<double>();
    const fs::path hist = job.dir / "histogram.txt";
    if (fs::exists(hist)) {
      const CyclictestReport rep = parse_cyclictest(read_text(hist));
      if (!rep.threads.empty() && rep.buckets > 0) r.histogram = histogram_from_report(rep, 0);
    }
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = "cannot read the output of `" + cmd + "`: " + e.what();
  }
  return r;
}

// Removes the temp directory on every way out.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string legend_line(const Experiment& e, const std::string& scenario,
                        const std::vector<std::string>& sets, bool markdown, bool bands) {
  std::string cmd = scenario;
  for (const auto& s : sets) cmd += " --set " + s;
  std::string runs;
  for (const auto& r : e.runs) runs += (runs.empty() ? "" : ", ") + r.label;
  std::string out = markdown ? "- **" + e.id + "** " + e.title + ": `" + cmd + "`, runs " + runs +
                                   "\n  - source: " + e.source + "\n"
                             : e.id + ": " + e.title + "\n    " + cmd + "\n    runs: " + runs +
                                   "\n    source: " + e.source + "\n";
  // The set-ups the text leaves open: the chosen one always, the others
  // (--bands) with what they set.
  const std::size_t shown =
      bands ? e.configurations.size() : std::min<std::size_t>(1, e.configurations.size());
  for (std::size_t c = 0; c < shown; ++c) {
    const auto& cf = e.configurations[c];
    std::string extra;
    for (const auto& s : cf.sets) extra += " --set " + s;
    const std::string head = bands ? "c" + std::to_string(c + 1) + " " : "";
    out += (markdown ? "  - " : "    ") +
           std::string(c == 0 ? "configuration (chosen): " : "configuration: ") + head + cf.name +
           (extra.empty() ? "" : " (" + extra.substr(1) + ")") + ": " + cf.evidence + "\n";
  }
  return out;
}

// --experiment: the experiments asked for (all when none is named).
bool wanted(const ValidateOptions& o, const Experiment& e) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), e.id) != o.only.end();
}

// Every --experiment names an experiment of validate; an unknown one is an
// error, not an empty table.
std::string experiment_ids() {
  std::string ids;
  for (const std::string& id : validate::validation_target_ids())
    ids += (ids.empty() ? "" : ", ") + id;
  return ids;
}

bool check_experiment_ids(const ValidateOptions& o) {
  const auto& all = validate::validation_target_ids();
  for (const std::string& id : o.only) {
    if (std::find(all.begin(), all.end(), id) == all.end()) {
      std::cerr << "kvmsim: error: --experiment " << id << ": no such experiment (one of "
                << experiment_ids() << ")\n";
      return false;
    }
  }
  return true;
}

int run_validate(const ValidateOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Experiment>* all = load_experiments(o);
  if (!all) return 2;
  const fs::path dir = o.scenarios;
  if (!fs::is_directory(dir)) {
    std::cerr << "kvmsim: error: scenarios directory '" << o.scenarios
              << "' not found (run from the kvmsim source directory or pass --scenarios DIR)\n";
    return 2;
  }
  std::vector<const Experiment*> experiments;
  std::vector<std::string> skipped;
  for (const Experiment& e : *all) {
    if (!wanted(o, e)) continue;
    if (fs::is_regular_file(dir / e.scenario))
      experiments.push_back(&e);
    else
      skipped.push_back(e.id + " (" + (dir / e.scenario).string() + " not found)");
  }
  if (experiments.empty()) {
    std::cerr << "kvmsim: error: no scenario of " << (o.only.empty() ? "any" : "the named")
              << " experiment" << (o.only.empty() ? "" : "s") << " in '" << o.scenarios << "'\n";
    return 2;
  }

  TempDir tmp{fs::temp_directory_path() / ("kvmsim-validate-" + std::to_string(::getpid()))};
  fs::remove_all(tmp.path);
  fs::create_directories(tmp.path);

  // One pass per seed of --seeds (one pass with the default seeds without
  // it); with --bands, each pass once per configuration.
  const std::size_t passes = o.seeds.empty() ? 1 : o.seeds.size();
  const auto configs_of = [&](const Experiment& e) -> std::size_t {
    return o.bands && !e.configurations.empty() ? e.configurations.size() : 1;
  };
  std::vector<Job> jobs;
  for (std::size_t p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < experiments.size(); ++i) {
      const Experiment& e = *experiments[i];
      const auto& common = o.quick ? e.quick_sets : e.full_sets;
      for (std::size_t c = 0; c < configs_of(e); ++c) {
        for (std::size_t k = 0; k < e.runs.size(); ++k) {
          Job j;
          j.experiment = i;
          j.run = k;
          j.pass = p;
          j.config = c;
          j.dir = tmp.path / (e.id + "-" + std::to_string(k) + "-" + std::to_string(p) + "-" +
                              std::to_string(c));
          fs::create_directories(j.dir);
          j.args = {"kvmsim", "run", (dir / e.scenario).string(), "-q", "--out", j.dir.string()};
          if (!o.seeds.empty()) j.args.insert(j.args.end(), {"--seed", std::to_string(o.seeds[p])});
          for (const auto& s : common) j.args.insert(j.args.end(), {"--set", s});
          if (c < e.configurations.size())
            for (const auto& s : e.configurations[c].sets)
              j.args.insert(j.args.end(), {"--set", s});
          for (const auto& s : e.runs[k].sets) j.args.insert(j.args.end(), {"--set", s});
          jobs.push_back(std::move(j));
        }
      }
    }
  }
  std::cout << std::flush;
  run_jobs(jobs, o.jobs);

  // outputs[experiment][configuration][pass][run]
  std::vector<std::vector<std::vector<std::vector<RunOutput>>>> outputs(experiments.size());
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    outputs[i].resize(configs_of(*experiments[i]));
    for (auto& per_config : outputs[i]) {
      per_config.resize(passes);
      for (auto& per_pass : per_config) per_pass.resize(experiments[i]->runs.size());
    }
  }
  std::vector<std::string> failures;
  for (const Job& j : jobs) {
    RunOutput r = read_run(j);
    const Experiment& e = *experiments[j.experiment];
    if (!r.ok)
      failures.push_back(e.id + " " + e.runs[j.run].label +
                         (j.config > 0 ? " (" + e.configurations[j.config].name + ")" : "") +
                         (o.seeds.empty() ? "" : " seed " + std::to_string(o.seeds[j.pass])) +
                         ": " + r.error);
    outputs[j.experiment][j.config][j.pass][j.run] = std::move(r);
  }
  std::vector<validate::Row> rows;
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    const auto& chosen = outputs[i][0];
    auto r = validate::evaluate_experiment(
        *experiments[i], chosen[0], o.quick,
        o.seeds.empty() ? std::vector<std::vector<RunOutput>>{} : chosen);
    rows.insert(rows.end(), r.begin(), r.end());
  }

  std::string text = "kvmsim validate: ";
  text += o.quick ? "quick (shortened) runs" : "full runs (the scenarios as published)";
  if (o.seeds.empty()) {
    text += ", default seeds";
  } else {
    text += ", seeds";
    for (std::size_t p = 0; p < o.seeds.size(); ++p)
      text += (p ? "," : " ") + std::to_string(o.seeds[p]);
    text += " (each row judged on the median over the seeds)";
  }
  if (!o.only.empty()) {
    text += "; only";
    for (const Experiment* e : experiments) text += " " + e->id;
  }
  text += "\n\n";
  for (const Experiment* e : experiments)
    text += legend_line(*e, (dir / e->scenario).string(), o.quick ? e->quick_sets : e->full_sets,
                        o.markdown, o.bands);
  // Two groups: the published figures that set a cost (goodness of fit) and
  // the others (out of sample), each with its mean absolute errors.
  const std::string bullet = o.markdown ? "- " : "";
  for (const bool calibration : {true, false}) {
    std::vector<validate::Row> group;
    for (const auto& r : rows)
      if (r.calibration == calibration) group.push_back(r);
    text += "\n";
    text += o.markdown ? "**" : "";
    text += calibration ? "Calibration group (published figures that set a cost; goodness of fit)"
                        : "Validation group (published figures no cost was fitted on)";
    text += o.markdown ? "**\n\n" : ":\n";
    text += validate::format_table(group, o.markdown) + "\n";
    text += bullet + (calibration ? "calibration: " : "validation: ") +
            validate::format_summary(validate::summarize(rows, calibration)) + "\n";
  }
  if (o.bands) {
    // Per experiment, each check under every configuration its text leaves
    // open (the median over the seeds with --seeds), and the band.
    for (std::size_t i = 0; i < experiments.size(); ++i) {
      const Experiment& e = *experiments[i];
      text += "\n";
      text += o.markdown ? "**Bands of " + e.id + "**\n\n" : "Bands of " + e.id + ":\n";
      if (e.configurations.empty()) {
        text += bullet + "its text leaves no set-up open: one configuration\n";
        continue;
      }
      std::vector<std::vector<double>> values;
      for (const auto& per_config : outputs[i]) {
        std::vector<std::vector<double>> per_pass;
        for (const auto& run_outputs : per_config)
          per_pass.push_back(validate::simulate_checks(e, run_outputs));
        std::vector<double> median(e.checks.size());
        for (std::size_t k = 0; k < e.checks.size(); ++k) {
          std::vector<double> v;
          for (const auto& pp : per_pass) v.push_back(pp[k]);
          median[k] = validate::median_of(v);
        }
        values.push_back(std::move(median));
      }
      text += validate::format_bands(validate::band_rows(e, values, o.quick), values.size(),
                                     o.markdown);
    }
  }
  text += "\n";
  std::size_t passed = 0;
  std::size_t gated = 0;
  std::size_t reported = 0;
  for (const auto& r : rows) {
    if (!r.gated) {
      ++reported;
      continue;
    }
    ++gated;
    passed += r.pass ? 1 : 0;
  }
  for (const auto& s : skipped)
    text.append(bullet).append("skipped, scenario missing: ").append(s) += "\n";
  for (const auto& f : failures) text.append(bullet).append("run failed: ").append(f) += "\n";
  text += bullet + std::to_string(passed) + " of " + std::to_string(gated) +
          " checks within tolerance (the published targets; " + std::to_string(reported) +
          " more published points reported, not gated)\n";
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[128];
  std::snprintf(buf, sizeof buf, "wall time %.1f s (%zu runs, up to %d in parallel)\n", wall,
                jobs.size(), o.jobs);
  text += bullet + buf;
  std::cout << text << std::flush;
  return passed == gated && failures.empty() ? 0 : 1;
}

// The cost parameters of a scenario: Dist keys "cost.*" that a platform or
// scenario file sets (the declared defaults of unused mechanisms are left out).
std::vector<std::pair<std::string, std::string>> cost_parameters(
    const fs::path& scenario, const std::vector<std::string>& sets) {
  const ParamSet p = load_scenario(model_params(), scenario.string(), sets);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : model_params().all())
    if (d.type == ParamType::Dist && d.key.rfind("cost.", 0) == 0 && p.origin(d.key) != "default")
      out.emplace_back(d.key, p.text(d.key));
  return out;
}

// validate --sensitivity: every cost parameter of each experiment's scenario
// scaled by (1 - step) and (1 + step), every run repeated, and the figures
// that move printed with their elasticity (d ln figure / d ln cost).
int run_sensitivity(const ValidateOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Experiment>* all = load_experiments(o);
  if (!all) return 2;
  const fs::path dir = o.scenarios;
  if (!fs::is_directory(dir)) {
    std::cerr << "kvmsim: error: scenarios directory '" << o.scenarios << "' not found\n";
    return 2;
  }
  std::vector<const Experiment*> experiments;
  for (const Experiment& e : *all)
    if (wanted(o, e) && fs::is_regular_file(dir / e.scenario)) experiments.push_back(&e);
  if (experiments.empty()) {
    std::cerr << "kvmsim: error: no experiment to perturb (see --experiment)\n";
    return 2;
  }
  TempDir tmp{fs::temp_directory_path() / ("kvmsim-sensitivity-" + std::to_string(::getpid()))};
  fs::remove_all(tmp.path);
  fs::create_directories(tmp.path);

  // variant 0: as is; then per cost key, -step and +step.
  struct Variant {
    std::size_t experiment;
    std::string key;  // empty for the base
    int sign = 0;
    std::string set;
  };
  std::vector<Variant> variants;
  std::vector<Job> jobs;
  std::vector<std::pair<std::size_t, std::size_t>> job_of;  // (variant, run)
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    const Experiment& e = *experiments[i];
    const auto& common = o.quick ? e.quick_sets : e.full_sets;
    variants.push_back({i, "", 0, ""});
    std::vector<std::pair<std::string, std::string>> costs;
    try {
      costs = cost_parameters(dir / e.scenario, common);
    } catch (const ScenarioError& err) {
      std::cerr << "kvmsim: error: " << err.what() << "\n";
      return 2;
    }
    for (const auto& [key, text] : costs)
      for (const int sign : {-1, 1})
        variants.push_back(
            {i, key, sign, key + "=" + validate::scale_durations(text, 1.0 + sign * o.step)});
  }
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const Experiment& e = *experiments[variants[v].experiment];
    const auto& common = o.quick ? e.quick_sets : e.full_sets;
    for (std::size_t k = 0; k < e.runs.size(); ++k) {
      Job j;
      j.experiment = variants[v].experiment;
      j.run = k;
      j.dir = tmp.path / (e.id + "-" + std::to_string(v) + "-" + std::to_string(k));
      fs::create_directories(j.dir);
      j.args = {"kvmsim", "run", (dir / e.scenario).string(), "-q", "--out", j.dir.string()};
      for (const auto& s : common) j.args.insert(j.args.end(), {"--set", s});
      for (const auto& s : e.runs[k].sets) j.args.insert(j.args.end(), {"--set", s});
      if (!variants[v].set.empty()) j.args.insert(j.args.end(), {"--set", variants[v].set});
      jobs.push_back(std::move(j));
      job_of.emplace_back(v, k);
    }
  }
  std::cout << std::flush;
  run_jobs(jobs, o.jobs);
  std::vector<std::vector<RunOutput>> outputs(variants.size());
  for (std::size_t v = 0; v < variants.size(); ++v)
    outputs[v].resize(experiments[variants[v].experiment]->runs.size());
  std::size_t failed = 0;
  for (std::size_t n = 0; n < jobs.size(); ++n) {
    RunOutput r = read_run(jobs[n]);
    if (!r.ok) {
      ++failed;
      std::cerr << "run failed: " << r.error << "\n";
    }
    outputs[job_of[n].first][job_of[n].second] = std::move(r);
  }
  // Base values per experiment, then one line per (key, figure) that moves.
  std::map<std::size_t, std::vector<double>> base;
  std::map<std::pair<std::size_t, std::string>, std::array<std::vector<double>, 2>> moved;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const Experiment& e = *experiments[variants[v].experiment];
    auto vals = validate::simulate_checks(e, outputs[v]);
    if (variants[v].key.empty())
      base[variants[v].experiment] = vals;
    else
      moved[{variants[v].experiment, variants[v].key}][variants[v].sign > 0 ? 1 : 0] = vals;
  }
  std::vector<validate::SensitivityRow> rows;
  for (const auto& [id, pm] : moved) {
    const Experiment& e = *experiments[id.first];
    const auto& b = base[id.first];
    for (std::size_t c = 0; c < e.checks.size(); ++c) {
      const validate::Check& ch = e.checks[c];
      if (std::isnan(ch.published)) continue;  // a distance, not a published figure
      validate::SensitivityRow r;
      r.key = id.second;
      r.experiment = e.id;
      r.check = ch;
      r.setting = validate::setting_label(e, ch);
      r.base = b[c];
      r.minus = pm[0].size() > c ? pm[0][c] : validate::kNaN;
      r.plus = pm[1].size() > c ? pm[1][c] : validate::kNaN;
      if (validate::sensitivity_moves(r, o.step)) rows.push_back(r);
    }
  }
  std::string text = "kvmsim validate --sensitivity: every cost parameter the scenario files set, ";
  text += "x" + validate::format_number(1 - o.step, 2) + " and x" +
          validate::format_number(1 + o.step, 2) + "; ";
  text += o.quick ? "quick (shortened) runs" : "full runs";
  text += ", default seeds. Figures that move (published figures only):\n\n";
  text += validate::format_sensitivity(rows, o.step, o.markdown);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "\n%zu parameter settings, %zu runs (%zu failed), wall time %.1f s\n",
                variants.size(), jobs.size(), failed, wall);
  text += buf;
  std::cout << text << std::flush;
  return failed ? 1 : 0;
}

// validate --list: per experiment its source, runs and published figures,
// without running anything (exit 2 when the targets file does not match).
int run_list(const ValidateOptions& o) {
  const std::vector<Experiment>* all = load_experiments(o);
  if (!all) return 2;
  std::string text;
  std::size_t figures = 0;
  for (const Experiment& e : *all) {
    if (!wanted(o, e)) continue;
    text += e.id + ": " + e.title + (e.checks.empty() || e.checks[0].gated ? "" : " (not gated)") +
            "\n    scenario: " + e.scenario + "\n    source: " + e.source + "\n";
    std::vector<validate::Row> rows;
    for (const validate::Check& c : e.checks) {
      ++figures;
      const validate::Verdict v =
          validate::evaluate(c.tolerance, c.published, validate::kNaN, c.unit, c.decimals);
      validate::Row r;
      r.experiment = e.id;
      r.setting = validate::setting_label(e, c);
      r.metric = c.unit.empty() ? c.metric : c.metric + " (" + c.unit + ")";
      r.published =
          std::isnan(c.published) ? "-" : validate::format_number(c.published, c.decimals);
      r.tolerance = v.tolerance;
      if (c.quick_tolerance)
        r.tolerance +=
            " (--quick: " +
            validate::evaluate(*c.quick_tolerance, c.published, validate::kNaN, c.unit, c.decimals)
                .tolerance +
            ")";
      r.simulated = c.calibration ? "calibration" : "validation";
      rows.push_back(std::move(r));
    }
    std::vector<std::vector<std::string>> cells{
        {"setting", "metric", "published", "tolerance", "role"}};
    for (const auto& r : rows)
      cells.push_back({r.setting, r.metric, r.published, r.tolerance, r.simulated});
    std::string table = validate::render_cells(cells, {false, false, true, false, false}, false);
    std::istringstream in(table);
    for (std::string line; std::getline(in, line);) text += "    " + line + "\n";
    text += "\n";
  }
  text += std::to_string(figures) + " published figures (" +
          (o.targets.empty() ? std::string("validation/targets.yaml, built in") : o.targets) +
          ")\n";
  std::cout << text << std::flush;
  return 0;
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand(
      "validate", "Run every scenario with a published target and print the accuracy table");
  sub->add_flag("--quick", opts->quick, "Shortened runs (under 2 minutes on 2 cores)");
  sub->add_flag("--markdown", opts->markdown, "Print the table as Markdown (docs/validation.md)");
  sub->add_option("--jobs", opts->jobs, "Simulations run in parallel (default 2)")
      ->type_name("N")
      ->check(kvmsim::cli::number_in(1, 256, ""));
  sub->add_option("--scenarios", opts->scenarios,
                  "Directory of the scenario files (default scenarios)")
      ->type_name("DIR");
  sub->add_flag("--sensitivity", opts->sensitivity,
                "Scale each cost parameter the scenario files set by -10% and +10% and show "
                "which published figures move (elasticity per figure)");
  sub->add_option("--experiment", opts->only, "Only these experiments (" + experiment_ids() + ")")
      ->type_name("ID");
  sub->add_option("--step", opts->step, "Relative perturbation for --sensitivity (default 0.1)")
      ->check(CLI::Range(0.001, 0.5));
  sub->add_option("--targets", opts->targets,
                  "The published figures from FILE (a copy of validation/targets.yaml) instead "
                  "of the built-in ones")
      ->type_name("FILE");
  sub->add_option("--seeds", opts->seeds,
                  "Run every experiment once per seed (e.g. --seeds 1,2,3,4): each row is judged "
                  "on the median over the seeds and shows their min..max and how many were within "
                  "tolerance")
      ->type_name("N,...")
      ->delimiter(',')
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{9000000000000000}));
  sub->add_flag("--bands", opts->bands,
                "Also run every set-up that an experiment's published text leaves open (the "
                "guest's CPU model, the QEMU release, ...; the legend names them c1, c2, ..., c1 "
                "the scenario's choice) and print per experiment each figure under each, the "
                "band, and under which it is within tolerance");
  sub->add_flag("--list", opts->list,
                "Print each target's source and published figures (value, tolerance) and exit; "
                "checks the targets file without running");
  sub->footer(kValidateFooter);
  return {sub, [opts] {
            if (!check_experiment_ids(*opts)) return 2;
            if (opts->list) return run_list(*opts);
            return opts->sensitivity ? run_sensitivity(*opts) : run_validate(*opts);
          }};
}

}  // namespace kvmsim::cli
