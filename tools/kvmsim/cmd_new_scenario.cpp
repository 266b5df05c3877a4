// kvmsim new-scenario --platform P --workload W --out FILE [--force]
//
// Writes a commented scenario to start one's own experiment from: the
// platform file included, then the keys that matter for any run (kernels,
// host set-up, halt polling, the vCPUs and their pCPUs, the guest's idle
// and tick) and every key of the workload, each with its resolved default
// (the era defaults of the platform's kernels) and its doc as a comment.
// The file is loaded back before the command succeeds.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/core/params.h"
#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {
namespace {

namespace fs = std::filesystem;

struct NewScenarioArgs {
  std::string platform, workload, out;
  bool force = false;
};

// The keys every run is shaped by, in the order a reader meets them.
const std::vector<std::string>& common_keys() {
  static const std::vector<std::string> keys = {"host.kernel",
                                                "host.isolcpus",
                                                "host.hz",
                                                "host.tick_hz",
                                                "kvm.halt_poll_ns",
                                                "kvm.enable_hv_timer",
                                                "kvm.lapic_timer_advance_ns",
                                                "kvm.exit_fastpath",
                                                "vm.count",
                                                "vm.vcpus",
                                                "vm.pinning",
                                                "vm.affinity",
                                                "guest.kernel",
                                                "guest.idle",
                                                "guest.hz",
                                                "guest.nohz",
                                                "guest.haltpoll_ns",
                                                "vm.cpu_model",
                                                "sim.max_simulated_s",
                                                "sim.seed"};
  return keys;
}

fs::path find_platform(const std::string& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p;
  const fs::path dir = "scenarios/platforms";
  const fs::path named = dir / (p + ".yaml");
  if (fs::is_regular_file(named, ec)) return named;
  std::string names;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".yaml")
        names += (names.empty() ? "" : ", ") + e.path().stem().string();
  throw UsageError(fmt::format(
      "new-scenario: --platform '{}': no such file{}", p,
      names.empty() ? " (and no scenarios/platforms/ here: give the platform file's path)"
                    : " (platforms in scenarios/platforms: " + names + ")"));
}

std::string yaml_value(const ParamDecl& d, const std::string& text) {
  if (d.type == ParamType::String || d.type == ParamType::Dist) return "\"" + text + "\"";
  return text;
}

// One pCPU per vCPU thread from pCPU 2 (0 and 1 left to the host), as far
// as the platform has pCPUs; then they wrap and share.
std::string pinning_example(const ParamSet& set) {
  const std::int64_t cpus = set.i("platform.sockets") * set.i("platform.cores_per_socket") *
                            set.i("platform.threads_per_core");
  const std::int64_t n = set.i("vm.count") * set.i("vm.vcpus");
  const std::int64_t first = cpus > 2 ? 2 : 0;
  std::string list;
  for (std::int64_t v = 0; v < n; ++v)
    list += (list.empty() ? "" : ", ") + std::to_string(first + v % (cpus - first));
  return "[" + list + "]";
}

int run_new_scenario(const NewScenarioArgs& a) {
  const auto& reg = model_params();
  const fs::path platform = find_platform(a.platform);
  const fs::path out = a.out;
  std::error_code ec;
  if (fs::exists(out, ec) && !a.force)
    throw UsageError("new-scenario: --out " + a.out + " exists (--force replaces it)");
  // The platform's parameters with the workload chosen: the defaults the
  // file will show are those this platform and its kernels give.
  std::vector<std::string> start = {"workload.type=" + a.workload};
  // kvm-unit-tests' timer tests boot one vCPU (-smp 1); their IPI tests say
  // vm.vcpus: 2 themselves.
  if (a.workload == "tscdeadline_latency" || a.workload == "vmexit") start.push_back("vm.vcpus=1");
  const ParamSet set = load_scenario(reg, platform.string(), start);

  std::vector<std::string> keys;
  for (const auto& k : common_keys())
    if (reg.find(k)) keys.push_back(k);
  for (const auto& d : reg.all())
    if (d.key.rfind(a.workload + ".", 0) == 0) keys.push_back(d.key);

  const fs::path out_dir = fs::absolute(out).parent_path();
  std::string text = fmt::format(
      "# A {} experiment on {} (written by kvmsim new-scenario).\n"
      "# Each key shows its default for this platform and its kernels; change what your\n"
      "# experiment varies and delete the rest. Every parameter: kvmsim params PREFIX.\n"
      "description: \"{} on {}\"\n"
      "include: {}\n",
      a.workload, set.s("platform.name"), a.workload, set.s("platform.name"),
      fs::relative(fs::absolute(platform), out_dir).generic_string());
  // One mapping per first key part, in the order of `keys`.
  std::vector<std::string> order;
  std::map<std::string, std::string> blocks;
  for (const auto& k : keys) {
    const ParamDecl& d = *reg.find(k);
    const auto dot = k.find('.');
    const std::string top = k.substr(0, dot), rest = k.substr(dot + 1);
    if (!blocks.count(top)) order.push_back(top);
    std::string& b = blocks[top];
    std::string doc = d.doc;
    if (!d.unit.empty()) doc += " [" + d.unit + "]";
    if (rest.find('.') != std::string::npos) {  // a.b.c: nested once more
      const auto dot2 = rest.find('.');
      b += wrap_words(doc, 88, "    # ");
      b += fmt::format("  {}:\n    {}: {}\n", rest.substr(0, dot2), rest.substr(dot2 + 1),
                       yaml_value(d, set.text(k)));
      continue;
    }
    b += wrap_words(doc, 88, "  # ");
    std::string value = yaml_value(d, set.text(k));
    if (k == "vm.pinning" && value == "[]" && set.ints("vm.affinity").empty() &&
        set.ints("host.isolcpus").empty())
      value = pinning_example(set);  // a run needs a place for each vCPU thread
    b += fmt::format("  {}: {}\n", rest, value);
  }
  for (const auto& top : order) text += "\n" + top + ":\n" + blocks[top];
  text += "\nworkload:\n  type: \"" + a.workload + "\"\n";

  {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) throw std::runtime_error("new-scenario: cannot write " + a.out);
  }
  try {
    (void)load_scenario(reg, out.string());
  } catch (const std::exception& e) {
    fs::remove(out, ec);
    throw std::runtime_error(std::string("new-scenario: the written file does not load (a kvmsim "
                                         "bug, please report it): ") +
                             e.what());
  }
  std::cout << "wrote " << a.out << ": run it with kvmsim run " << a.out << "\n";
  return 0;
}

}  // namespace

Command add_new_scenario_command(CLI::App& app) {
  auto a = std::make_shared<NewScenarioArgs>();
  auto* sub = app.add_subcommand(
      "new-scenario",
      "Write a commented scenario for a platform and workload, to start an experiment from");
  sub->add_option("--platform", a->platform,
                  "A platform file, or its name in scenarios/platforms (e.g. skylake-sp-gold-6148)")
      ->required();
  sub->add_option("--workload", a->workload, "The workload (a workload.type value)")->required();
  sub->add_option("--out", a->out, "The scenario file to write")->required()->type_name("FILE");
  sub->add_flag("--force", a->force, "Replace --out if it exists");
  return {sub, [a] { return run_new_scenario(*a); }};
}

}  // namespace kvmsim::cli
