// Output of a run: summary.json, histogram.txt (cyclictest -h format) and the
// readable summary with a `perf kvm stat`-like exit table.
#pragma once

#include <string>

#include "sim/core/params.h"
#include "sim/system.h"

namespace kvmsim {

std::string summary_json(const RunResult& r, const ParamSet& p, const std::string& scenario);
std::string exit_table(const RunResult& r);  // VM-EXIT Samples Samples% Time% ... Avg time
std::string summary_text(const RunResult& r, const ParamSet& p, const std::string& scenario);

}  // namespace kvmsim
