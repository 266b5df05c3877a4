// Scenario files: YAML that sets declared parameters.
//
//   description: "HV timer off, 4 vCPUs"    # ignored (so is `name:`)
//   include: [../platforms/skylake.yaml]   # loaded first, relative to this file
//   kvm:
//     enable_hv_timer: false               # = kvm.enable_hv_timer
//   guest.cpus: [0, 1, 2, 3]               # dotted keys work too
//
// Later sources win: includes (in order), then the file itself, then --set
// overrides. Every user error is a ScenarioError whose message starts with
// "FILE:LINE:COL:" (or "--set KEY=VALUE:") and names the full dotted key.
#pragma once

#include <string>
#include <vector>

#include "sim/core/params.h"

namespace kvmsim {

// Loads a scenario YAML file, follows its includes, applies overrides
// "key=value" (from --set), then the kernel eras (apply_kernel_eras: the
// version switches neither the files nor --set chose take the defaults of
// host.kernel / guest.kernel).
ParamSet load_scenario(const ParamRegistry& reg, const std::string& path,
                       const std::vector<std::string>& overrides = {});

// Same but from a string (path used only in messages and for resolving
// relative includes).
ParamSet load_scenario_text(const ParamRegistry& reg, const std::string& text,
                            const std::string& path,
                            const std::vector<std::string>& overrides = {});

// Applies "key=value" overrides to an existing set (origin "--set"); call
// apply_kernel_eras() afterwards if a kernel key may have changed.
void apply_overrides(ParamSet& set, const std::vector<std::string>& overrides);

}  // namespace kvmsim
