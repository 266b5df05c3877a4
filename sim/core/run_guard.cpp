#include "sim/core/run_guard.h"

#include <systemc>

namespace kvmsim {

volatile std::sig_atomic_t detail::g_stop_requested = 0;

void RunGuard::stop() {
  if (stopped_) return;
  stopped_ = true;
  sc_core::sc_stop();
}

}  // namespace kvmsim
