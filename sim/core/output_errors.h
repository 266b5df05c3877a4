// Write errors of the files a run streams while it simulates (--trace,
// --perfetto, --vcd). The writer that sees its stream fail records it here and
// stops the simulation (the rest of the run could not be written anyway); the
// caller of run_simulation() checks output_errors() and fails the run. One
// simulation per process, so one list per process.
#pragma once

#include <string>
#include <vector>

namespace kvmsim {

// Records "PATH: what (strerror(errno))" once per path and calls sc_stop()
// when the simulation is running.
void output_failed(const std::string& path, const std::string& what, int err);
const std::vector<std::string>& output_errors();

}  // namespace kvmsim
