// A model built and run in the test's own process, so that a unit test can
// look at the objects themselves (Host, Pcpu, Vm, Vcpu and their mechanisms)
// after a bounded run, not only at the CLI's outputs.
//
// SystemC elaborates once per process: one InProcessModel per process.
// ctest runs every Catch2 test case in its own process (CMakeLists.txt), so
// each [model] test case may build one; running several [model] cases in one
// kvmsim_tests process fails with a message saying so.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "sim/core/scenario.h"
#include "sim/model_params.h"
#include "sim/system.h"

namespace kvmsim::test {

class InProcessModel {
 public:
  // `scenario`: a path relative to the repository root (the tests' working
  // directory); `overrides`: --set style "key=value".
  InProcessModel(const std::string& scenario, const std::vector<std::string>& overrides)
      : params_(load_scenario(model_params(), scenario, overrides)) {
    static bool elaborated = false;
    if (elaborated)
      FAIL("one model per process: run [model] test cases one per process (ctest does)");
    elaborated = true;
    // Leaked on purpose, as run_simulation() does: SystemC objects are torn
    // down by the process exit.
    system_ = new System(params_, RunOptions{});
  }
  RunResult& run() {
    result_ = system_->run();
    return result_;
  }
  System& system() { return *system_; }
  [[nodiscard]] const RunResult& result() const { return result_; }

 private:
  ParamSet params_;
  System* system_ = nullptr;
  RunResult result_;
};

}  // namespace kvmsim::test
