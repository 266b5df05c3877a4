// The checks' metric keys (sched_invariants.h).
#include "sim/core/metric_decl.h"

// clang-format off
KVMSIM_DECLARE_METRICS(checks, {
    {"invariants.violations", "count", "checks", "Scheduling invariant violations seen (sim.check_invariants); a run with any fails, so a written summary holds 0."},
});
// clang-format on
