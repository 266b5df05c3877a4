// kvmsim explain's text: the window split at the deadline, rows after it
// adding up to the total, events in time order.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>

#include "sim/views/explain.h"
#include "sim/views/stage_info.h"

using namespace kvmsim;
using namespace kvmsim::views;

namespace {

ExplainItem seg(Stage s, Tsc b, Tsc e) {
  ExplainItem it;
  it.kind = ExplainItem::Kind::Segment;
  it.stage = s;
  it.t = b;
  it.end = e;
  return it;
}

ExplainItem exit_at(ExitReason r, Tsc t) {
  ExplainItem it;
  it.kind = ExplainItem::Kind::VmExit;
  it.reason = r;
  it.t = t;
  return it;
}

long long sum_after_deadline(const std::string& text, long long* total) {
  const std::regex row(R"(^\s*([+-]\d+)\s+(\d+)\s+([a-z_]+)\s)");
  const std::regex tot(R"(^total (-?\d+) ns)");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  bool after = false;
  long long sum = 0;
  while (std::getline(in, line)) {
    if (line.find("the deadline ---") != std::string::npos) after = true;
    if (std::regex_search(line, m, tot)) {
      *total = std::stoll(m[1]);
      after = false;
    } else if (after && std::regex_search(line, m, row)) {
      sum += std::stoll(m[2]);
    }
  }
  return sum;
}

}  // namespace

TEST_CASE("explain: the rows after the deadline add up to the total", "[views]") {
  ExplainCapture c;
  c.captured = true;
  c.sample = 7;
  c.vcpu = 1;
  c.pcpu = 3;
  c.armed_at = 100;
  c.deadline = 1000;
  c.measured_at = 1600;
  c.latency_ns = 600;
  c.items = {seg(Stage::GuestSyscall, 100, 200),
             exit_at(ExitReason::MSR_WRITE, 200),
             seg(Stage::VmExit, 200, 300),
             seg(Stage::GuestIdle, 300, 1200),
             exit_at(ExitReason::PREEMPTION_TIMER, 1200),
             seg(Stage::VmExit, 1200, 1400),
             seg(Stage::GuestUser, 1400, 1600)};
  TscClock clk;
  clk.tsc_khz = 1000000;  // 1 cycle = 1 ns
  const std::string text = format_explanation(c, clk);
  INFO(text);
  long long total = -1;
  CHECK(sum_after_deadline(text, &total) == 600);
  CHECK(total == 600);
  CHECK(text.find("(until the deadline)") != std::string::npos);
  CHECK(text.find("(from the deadline)") != std::string::npos);
  CHECK(text.find("-900") != std::string::npos);  // armed 900 ns before the deadline
  CHECK(text.find("VM exit: PREEMPTION_TIMER") != std::string::npos);
  CHECK(text.find("1 VM exit on the way") != std::string::npos);
  CHECK(text.find(std::string(stage_explanation(Stage::VmExit))) != std::string::npos);

  // Rounding to ns at a non-integer ratio keeps the sum exact.
  clk.tsc_khz = 2300000;
  const std::string t2 = format_explanation(c, clk);
  INFO(t2);
  total = -1;
  const long long sum = sum_after_deadline(t2, &total);
  CHECK(sum == total);
  CHECK(total == 261);  // 600 cycles at 2.3 GHz
}

TEST_CASE("explain: every stage has an explanation and a category", "[views]") {
  for (int i = 0; i < kStageCount; ++i) {
    const auto s = static_cast<Stage>(i);
    CHECK(stage_explanation(s) != "?");
    CHECK((stage_category(s) == "host" || stage_category(s) == "guest"));
  }
  CHECK(stage_category(Stage::VmExit) == "host");
  CHECK(stage_category(Stage::GuestUser) == "guest");
}
