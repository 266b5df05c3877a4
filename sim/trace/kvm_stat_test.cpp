// kvm_stat's table (sim/trace/kvm_stat.h): the layout and order pinned to a
// real `kvm_stat -p` screen (tests/data/structural/kvm_stat+perf-kvm-stat+
// ftrace_idle-openeuler-guest_4.19.txt, section (1); its source is in its
// first lines), and what a trace contributes to it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/trace/kvm_stat.h"

using namespace kvmsim::trace;

namespace {

std::vector<std::string> real_kvm_stat_screen() {
  std::ifstream in(std::string(KVMSIM_SOURCE_DIR) +
                   "/tests/data/structural/kvm_stat+perf-kvm-stat+ftrace_idle-openeuler-guest_"
                   "4.19.txt");
  REQUIRE(in.good());
  std::vector<std::string> out;
  std::string l;
  bool in_table = false;
  while (std::getline(in, l)) {
    if (l.rfind("## (1)", 0) == 0) {
      in_table = true;
      continue;
    }
    if (l.rfind("## (2)", 0) == 0) break;
    if (in_table) out.push_back(l);
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("kvm_stat table: the real screen's rows, byte for byte and in its order",
          "[kvm_stat][trace]") {
  const auto real = real_kvm_stat_screen();
  REQUIRE(real.size() == 17);  // header, 15 events, Total
  // The events as kvm_stat had them: total and CurAvg/s. The delta of the
  // last interval is not printed; take interval 1 s and delta = CurAvg/s,
  // except the row shown as 0 (a delta that rounds to 0: 0.3/s).
  std::vector<KvmStatEvent> ev;
  long sum_printed_cur = 0;
  for (std::size_t i = 1; i + 1 < real.size(); ++i) {
    std::istringstream row(real[i]);
    std::string name;
    std::uint64_t total = 0;
    double pct = 0;
    long cur = 0;
    row >> name >> total >> pct >> cur;
    REQUIRE(row);
    sum_printed_cur += cur;
    ev.push_back({name, total, cur ? static_cast<double>(cur) : 0.3, {}});
  }
  // Any input order: the table sorts (delta, total) descending.
  std::mt19937 g(7);
  std::shuffle(ev.begin(), ev.end(), g);
  const auto out = lines_of(kvm_stat_format(ev, 1.0, false));
  REQUIRE(out.size() == real.size());
  for (std::size_t i = 0; i + 1 < real.size(); ++i) CHECK(out[i] == real[i]);
  // The Total row: name and total columns as printed ...
  CHECK(out.back().substr(0, 52) == real.back().substr(0, 52));
  // ... and its CurAvg/s is the rounded sum of the deltas, not the sum of
  // the rounded rows: the real screen says 394 where its rows add up to 395.
  std::istringstream tot(real.back().substr(52));
  long real_tcur = 0;
  tot >> real_tcur;
  CHECK(real_tcur == 394);
  CHECK(sum_printed_cur == 395);
  CHECK(std::abs(real_tcur - sum_printed_cur) <= static_cast<long>(ev.size()) / 2);
}

TEST_CASE("kvm_stat table from a trace: kvm events only, per-reason children under kvm_exit",
          "[kvm_stat][trace]") {
  TraceSummary s;
  s.has_time = true;
  s.first_ts = 0;
  s.last_ts = 2'000'000'000;  // 2 s of ns timestamps
  s.event_counts = {{"kvm_exit", 10},     {"kvm_entry", 10},       {"kvm_msr", 4},
                    {"sched_switch", 50}, {"kvmmmu_pagefault", 7}, {"kvm_vcpu_wakeup", 1}};
  s.exits["HLT"].count = 6;
  s.exits["PREEMPTION_TIMER"].count = 3;  // kvm_stat has no child event for it
  s.exits["MSR_WRITE"].count = 1;

  const auto plain = lines_of(kvm_stat_format(kvm_stat_events(s), s.span_s(), false));
  // header, kvm_entry, kvm_exit, kvm_msr, kvm_vcpu_wakeup, Total
  REQUIRE(plain.size() == 6);
  CHECK(plain[1] == " kvm_entry                                        10   40.0        5");
  CHECK(plain[2] == " kvm_exit                                         10   40.0        5");
  CHECK(plain[3] == " kvm_msr                                           4   16.0        2");
  CHECK(plain[4] == " kvm_vcpu_wakeup                                   1    4.0        0");
  CHECK(plain[5] == " Total                                            25              12");

  const std::string text = kvm_stat_text(s, "t", true);
  const auto dd = lines_of(kvm_stat_format(kvm_stat_events(s), s.span_s(), true));
  REQUIRE(dd.size() == 8);
  // Children right under their parent, sorted, % of the parent's total.
  CHECK(dd[3] == "   HLT                                             6   60.0        3");
  CHECK(dd[4] == "   MSR_WRITE                                       1   10.0        0");
  CHECK(text.find("PREEMPTION_TIMER 3") != std::string::npos);
  CHECK(text.find("sched_switch") == std::string::npos);
  // The list of the 2022 update has PREEMPTION_TIMER: its row appears.
  const auto upd = lines_of(kvm_stat_format(kvm_stat_events(s, true), s.span_s(), true));
  REQUIRE(upd.size() == 9);
  CHECK(upd[4] == "   PREEMPTION_TIMER                                3   30.0        2");
  CHECK(kvm_stat_text(s, "t", true, true).find("has no child event") == std::string::npos);
}

TEST_CASE("kvm_stat table: a trace without a time span has no rates", "[kvm_stat][trace]") {
  TraceSummary s;
  s.event_counts = {{"kvm_exit", 1}};
  CHECK(kvm_stat_text(s, "x", false).find("no time span") != std::string::npos);
}
