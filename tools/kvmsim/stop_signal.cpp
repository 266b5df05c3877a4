#include "tools/kvmsim/stop_signal.h"

#include <csignal>
#include <ctime>

#include "sim/checks/run_guard.h"

namespace kvmsim::cli {

namespace {
volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_first_s = 0;  // CLOCK_MONOTONIC second of the first signal

extern "C" void on_stop_signal(int sig) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  if (!g_signal) {
    g_signal = sig;
    g_first_s = static_cast<std::sig_atomic_t>(now.tv_sec);
    request_stop();
    return;
  }
  // A second signal a second or more later: the user insists, stop now. (One
  // signal often arrives twice: `timeout` and terminals also signal the group.)
  if (now.tv_sec - g_first_s >= 1) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return static_cast<int>(g_signal); }

}  // namespace kvmsim::cli
