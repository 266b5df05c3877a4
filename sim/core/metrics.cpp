// The core's own metric keys: the run itself (sim.*) and the latency
// breakdown (breakdown.*, sim/core/breakdown.h). Every other folder declares
// its keys beside their emitter (sim/core/metric_decl.h).
#include "sim/core/metric_decl.h"

// One declaration per row: kept compact by hand.
// clang-format off
KVMSIM_DECLARE_METRICS(core, {
    {"sim.events", "count", "core", "Model events dispatched (pCPU decision points); the run summary's events/s divides it by sim.wall_s."},
    {"sim.wall_s", "s", "core", "Wall-clock time the simulation took (host seconds, not simulated; the only key that varies between identical runs)."},
    {"sim.simulated_s", "s", "core", "Simulated time at the end of the run (when the workload stopped it, or sim.max_simulated_s)."},
    {"sim.seed", "id", "core", "The run's seed (sim.seed or --seed)."},
    {"sim.fingerprint", "id", "core", "Hash of the run's event sequence: equal fingerprints mean the same run (sim/checks/fingerprint.h)."},
    {"sim.partial", "bool", "cli", "1 when the run stopped before its workload finished (a signal, or sim.max_simulated_s with --allow-partial); absent otherwise."},
    {"breakdown.<stage>.avg_ns", "ns", "core", "Mean time per measured wake-up that stage `<stage>` occupied the measuring vCPU's pCPU between the timer deadline and the measurement (sim/core/breakdown.h); stages with no time are left out."},
    {"breakdown.total.avg_ns", "ns", "core", "Sum of the `breakdown.<stage>.avg_ns`: the mean latency from the timer deadline to the measurement."},
});
// clang-format on
