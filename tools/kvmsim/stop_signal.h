// SIGINT / SIGTERM during `kvmsim run`: the first one stops the simulation at
// the next event boundary (kvmsim::request_stop(), sim/checks/run_guard.h) (the run then ends like
// one cut by sim.max_simulated_s: every observer closes its file properly), the CLI discards the
// outputs (or writes them marked partial with --allow-partial), says how far the run got and exits
// 128 + signal (130, 143). A second signal a second or more after the first kills the process at
// once (the default action; its temporary files stay behind as .kvmsim-PID-NAME).
#pragma once

namespace kvmsim::cli {

void install_stop_signals();
// 0, or the first signal received.
int stop_signal();

}  // namespace kvmsim::cli
