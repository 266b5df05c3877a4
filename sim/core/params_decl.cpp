// Platform identity and simulation control.
#include "sim/core/params.h"

namespace kvmsim {

void declare_core_params(ParamRegistry& r) {
  r.declare({"platform.name",
             ParamType::String,
             "generic",
             "",
             {},
             {},
             {},
             "Host CPU this platform file describes."});
  r.declare({"platform.tsc_khz",
             ParamType::Int,
             "2300000",
             "kHz",
             100000,
             10000000,
             {},
             "Host TSC frequency (tsc_khz); simulated time is kept in these cycles."});
  r.declare({"platform.sockets", ParamType::Int, "1", "count", 1, 8, {}, "CPU sockets."});
  r.declare({"platform.cores_per_socket",
             ParamType::Int,
             "4",
             "count",
             1,
             256,
             {},
             "Physical cores per socket."});
  r.declare({"platform.threads_per_core",
             ParamType::Int,
             "2",
             "count",
             1,
             4,
             {},
             "Hardware threads (SMT siblings) per core."});
  r.declare({"sim.seed",
             ParamType::Int,
             "1",
             "",
             0,
             9.0e15,
             {},
             "Run seed; every component derives its own random stream from it."});
  r.declare({"sim.check_invariants",
             ParamType::Bool,
             "true",
             "bool",
             {},
             {},
             {},
             "Check the scheduling invariants during every run (one thread per pCPU at a time, a "
             "thread current on one pCPU, a vCPU entering only where it runs, no kick lost); "
             "violations make the run fail."});
  r.declare({"sim.max_simulated_s",
             ParamType::Double,
             "7200",
             "s",
             0.001,
             1e6,
             {},
             "Stop the run at this simulated time even if workloads are not done."});
}

}  // namespace kvmsim
