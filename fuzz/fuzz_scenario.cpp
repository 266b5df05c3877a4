// libFuzzer target: the scenario loader with --set overrides. Input: YAML text;
// lines after a "#--set" line are overrides (key=value). Any input must end in
// a ParamSet or a ScenarioError; anything else (a crash, another exception,
// a sanitizer report) is a finding. Includes resolve relative to fuzz/ (none).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "sim/core/scenario.h"
#include "sim/model_params.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::string yaml = input;
  std::vector<std::string> overrides;
  if (const auto cut = input.find("#--set\n"); cut != std::string::npos) {
    yaml = input.substr(0, cut);
    std::istringstream rest(input.substr(cut + 7));
    for (std::string line; std::getline(rest, line);) overrides.push_back(line);
  }
  try {
    const auto p = kvmsim::load_scenario_text(kvmsim::model_params(), yaml, "fuzz.yaml", overrides);
    // Every distribution must bind to the clock and draw without UB.
    kvmsim::TscClock clk{static_cast<std::uint64_t>(p.i("platform.tsc_khz"))};
    kvmsim::Rng rng(1, "fuzz");
    for (const auto& k : p.keys()) {
      const auto* d = kvmsim::model_params().find(k);
      if (d && d->type == kvmsim::ParamType::Dist) {
        const auto s = p.dist(k).bind(clk);
        for (int i = 0; i < 4; ++i) (void)s(rng);
      }
    }
  } catch (const kvmsim::ScenarioError&) {
  }
  return 0;
}
