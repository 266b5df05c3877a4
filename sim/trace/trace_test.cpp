// Trace text: the writer (trace_format.h), the tolerant parser (trace_parse.h)
// and the statistics (trace_stats.h), pinned to real trace excerpts in
// tests/data/traces/ (see the README there for where each comes from).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "sim/trace/trace_format.h"
#include "sim/trace/trace_parse.h"
#include "sim/trace/trace_stats.h"

using namespace kvmsim::trace;

namespace {

std::string fixture_path(const std::string& name) {
  return std::string(KVMSIM_SOURCE_DIR) + "/tests/data/traces/" + name;
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

TraceSummary stats_of(const std::string& text) {
  std::istringstream in(text);
  return trace_stats(in);
}

std::size_t count_prefix(const std::string& text, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) ++n;
  return n;
}

const char* const kKrause = "ftrace_kvm_events_modern-format_nested-boot_krause-2023.txt";
const char* const kOpenEuler =
    "kvm_stat+perf-kvm-stat+ftrace_idle-openeuler-guest_4.19.ftrace-part.txt";
const char* const kPerf = "perf-script_kvm_msr_tscdeadline-icr_4vcpu-guest.txt";
const char* const kHaltPoll = "trace_kvm_halt_poll_ns_grow-shrink_intel-2023.txt";
const char* const kSched = "ftrace_sched_vcpu-thread-1ms-wakeups_idle-guest.txt";
const char* const kTraceCmd = "trace-cmd-report_sched_switch-wakeup_ubuntu-xenial.txt";

// The payload shapes of the modern (≈5.18+) kvm_exit / kvm_entry formats, and
// the line framing shared by ftrace `trace` (with a flags column) and
// trace-cmd report (without): "<comm>-<pid> [NNN] [flags] sec.usec: event: ".
const std::regex kExitPayload(
    "vcpu [0-9]+ reason [A-Z_]+ rip 0x[0-9a-f]+ info1 0x[0-9a-f]{16} info2 0x[0-9a-f]{16} "
    "intr_info 0x[0-9a-f]{8} error_code 0x[0-9a-f]{8}");
const std::regex kEntryPayload("vcpu [0-9]+, rip 0x[0-9a-f]+");
const std::regex kFraming(
    " *[^ ].*-[0-9]+ +\\[[0-9]{3}\\] +([.a-zA-Z0-9]{4,5} +)?[0-9]+\\.(?:[0-9]{6}|[0-9]{9}): "
    "(kvm_exit|kvm_entry): +(.*)");

}  // namespace

// ---- real fixtures ------------------------------------------------------------

TEST_CASE("modern-format ftrace (Krause 2023): exits per reason, entries, pairing", "[trace]") {
  const std::string text = read_fixture(kKrause);
  const TraceSummary s = stats_of(text);
  // Counted independently with
  //   grep -v '^#' FILE | sed -E 's/^.* [0-9]+\.[0-9]+: ([a-z_]+): .*$/\1/' | sort | uniq -c
  //   grep -o 'kvm_exit: vcpu [0-9]* reason [A-Z_]*' FILE | awk '{print $5}' | sort | uniq -c
  // (plain `grep -c kvm_exit:` says 14: the `# what:` header line quotes the format).
  CHECK(s.lines == 55);
  CHECK(s.comments == 3);
  CHECK(s.malformed == 0);
  CHECK(s.bad_payload == 0);
  CHECK(s.events == 52);
  CHECK(s.known_events == 28);  // 13 kvm_exit + 12 kvm_entry + 3 kvm_msr
  CHECK(s.other_events == 24);
  CHECK(s.event_counts.at("kvm_exit") == 13);
  CHECK(s.event_counts.at("kvm_entry") == 12);
  CHECK(s.event_counts.at("kvm_msr") == 3);
  CHECK(s.event_counts.at("kvm_cr") == 3);
  CHECK(s.event_counts.at("kvm_cpuid") == 1);
  CHECK(s.event_counts.at("kvm_tdp_mmu_spte_changed") == 14);
  CHECK(s.event_counts.at("kvm_mmu_prepare_zap_page") == 4);
  CHECK(s.event_counts.at("kvm_emulate_insn") == 1);
  CHECK(s.event_counts.at("kvm_inj_exception") == 1);

  REQUIRE(s.exits.size() == 7);
  CHECK(s.exits.at("EXTERNAL_INTERRUPT").count == 4);
  CHECK(s.exits.at("CR_ACCESS").count == 3);
  CHECK(s.exits.at("MSR_WRITE").count == 2);
  CHECK(s.exits.at("MSR_READ").count == 1);
  CHECK(s.exits.at("CPUID").count == 1);
  CHECK(s.exits.at("LDTR_TR").count == 1);
  CHECK(s.exits.at("TRIPLE_FAULT").count == 1);

  // Pairing by pid (8396 = vCPU 0, 8397 = vCPU 1); checked with an awk script
  // pairing each exit with the next entry of the same pid: CR_ACCESS 95, 10,
  // 26 us; EXTERNAL_INTERRUPT 14, 8, 0, 9 us; the last exit (TRIPLE_FAULT)
  // has no entry.
  CHECK(s.exits_paired == 12);
  CHECK(s.exits_open_at_end == 1);
  CHECK(s.exits_unpaired == 0);
  CHECK(s.entries_without_exit == 0);
  const auto& cr = s.exits.at("CR_ACCESS").service;
  CHECK(cr.n == 3);
  CHECK(cr.min_us == Approx(10.0));
  CHECK(cr.max_us == Approx(95.0));
  CHECK(cr.avg_us() == Approx(131.0 / 3));
  const auto& ext = s.exits.at("EXTERNAL_INTERRUPT").service;
  CHECK(ext.min_us == Approx(0.0));
  CHECK(ext.max_us == Approx(14.0));
  CHECK(ext.avg_us() == Approx(7.75));
  CHECK(ext.buckets[0] == 1);  // [0,1) us
  CHECK(ext.buckets[4] == 3);  // [8,16) us
  CHECK(s.exits.at("TRIPLE_FAULT").service.n == 0);
  CHECK(s.service_all.avg_us() == Approx(232.0 / 12));

  CHECK(s.span_s() == Approx(364e-6));
  CHECK(s.rate(13) == Approx(13 / 364e-6));
}

TEST_CASE("modern kvm_exit / kvm_entry lines parse field by field", "[trace]") {
  const auto r = parse_trace_line(
      " qemu-system-x86-8396    [001] d....  1404.389421: kvm_exit: vcpu 0 reason "
      "EXTERNAL_INTERRUPT rip 0xffffffff8108aca7 info1 0x0000000000000000 info2 "
      "0x0000000000000000 intr_info 0x800000fb error_code 0x00000000",
      7);
  REQUIRE(r.kind == LineKind::Event);
  CHECK(r.line_no == 7);
  CHECK(r.comm == "qemu-system-x86");
  CHECK(r.pid == 8396);
  CHECK(r.cpu == 1);
  CHECK(r.flags == "d....");
  CHECK(r.ts == 1404389421000LL);
  CHECK_FALSE(r.raw_clock);
  CHECK(r.event == "kvm_exit");
  REQUIRE(std::holds_alternative<KvmExit>(r.data));
  const auto& e = std::get<KvmExit>(r.data);
  CHECK_FALSE(e.old_format);
  CHECK(e.vcpu == 0);
  CHECK(e.reason == "EXTERNAL_INTERRUPT");
  CHECK(e.rip == 0xffffffff8108aca7ULL);
  CHECK(e.intr_info == 0x800000fbU);
  CHECK(e.error_code == 0);

  const auto en = parse_trace_line(
      " qemu-system-x86-8397    [002] d....  1404.389461: kvm_entry: vcpu 1, rip "
      "0xffffffff8100007d",
      8);
  REQUIRE(std::holds_alternative<KvmEntry>(en.data));
  const auto& ee = std::get<KvmEntry>(en.data);
  CHECK(ee.vcpu == 1);
  REQUIRE(ee.rip.has_value());
  CHECK(*ee.rip == 0xffffffff8100007dULL);
  CHECK_FALSE(ee.immediate_exit);

  // Every kvm_exit line of the real file is the new format.
  const std::string text = read_fixture(kKrause);
  std::size_t n = 0;
  for (const auto& l : lines_of(text)) {
    const auto rec = parse_trace_line(l, 0);
    if (rec.event != "kvm_exit") continue;
    REQUIRE(std::holds_alternative<KvmExit>(rec.data));
    CHECK_FALSE(std::get<KvmExit>(rec.data).old_format);
    CHECK(std::get<KvmExit>(rec.data).vcpu >= 0);
    ++n;
  }
  CHECK(n == 13);
}

TEST_CASE("old kvm_exit and kvm_entry formats parse", "[trace]") {
  // Real old-format line (kvm-list mail, quoted in the project's KVM notes).
  auto r = parse_trace_line(
      "     qemu-kvm-3122  [002] 12345.678901: kvm_exit: reason HLT rip 0xffffffff823fa01e info 0 "
      "0",
      1);
  REQUIRE(std::holds_alternative<KvmExit>(r.data));
  auto e = std::get<KvmExit>(r.data);
  CHECK(e.old_format);
  CHECK(e.vcpu == -1);
  CHECK(e.reason == "HLT");
  CHECK(e.rip == 0xffffffff823fa01eULL);
  CHECK(e.info1 == 0);
  CHECK(e.info2 == 0);

  // Old format with the " intr %x" tail some 5.x kernels print, and as
  // trace-cmd's kvm plugin prints it (info values in bare hex).
  r = parse_trace_line(
      "     qemu-kvm-3122  [002] 12345.678902: kvm_exit: reason EXTERNAL_INTERRUPT rip "
      "0xffffffff8102b9d6 "
      "info 0 800000ef intr 0",
      2);
  REQUIRE(std::holds_alternative<KvmExit>(r.data));
  e = std::get<KvmExit>(r.data);
  CHECK(e.old_format);
  CHECK(e.reason == "EXTERNAL_INTERRUPT");
  CHECK(e.info2 == 0x800000efU);
  CHECK(e.intr_info == 0);

  // New format with extra trailing fields and an exit-reason flag.
  r = parse_trace_line(
      "CPU 0/KVM-77 [003] 1.000000: kvm_exit: vcpu 2 reason HLT VM_ENTRY_FAILURE rip 0x10 info1 "
      "0x0000000000000001 info2 0x0000000000000002 intr_info 0x00000003 error_code 0x00000004 "
      "isa 1 extra 5",
      3);
  REQUIRE(std::holds_alternative<KvmExit>(r.data));
  e = std::get<KvmExit>(r.data);
  CHECK_FALSE(e.old_format);
  CHECK(e.vcpu == 2);
  CHECK(e.flags == "VM_ENTRY_FAILURE");
  CHECK(e.info1 == 1);
  CHECK(e.error_code == 4);

  // kvm_entry: old (no rip), new, and 6.9+ with " [immediate exit]".
  r = parse_trace_line("     qemu-kvm-3122  [002] 12345.678903: kvm_entry: vcpu 3", 4);
  REQUIRE(std::holds_alternative<KvmEntry>(r.data));
  CHECK(std::get<KvmEntry>(r.data).vcpu == 3);
  CHECK_FALSE(std::get<KvmEntry>(r.data).rip.has_value());
  r = parse_trace_line(
      "     qemu-kvm-3122  [002] 12345.678904: kvm_entry: vcpu 0, rip 0x4028b7 [immediate exit]",
      5);
  REQUIRE(std::holds_alternative<KvmEntry>(r.data));
  CHECK(std::get<KvmEntry>(r.data).rip == std::optional<std::uint64_t>(0x4028b7));
  CHECK(std::get<KvmEntry>(r.data).immediate_exit);
}

TEST_CASE("header and comment lines of every fixture are not malformed", "[trace]") {
  for (const char* name : {kKrause, kOpenEuler, kPerf, kHaltPoll, kSched, kTraceCmd}) {
    INFO(name);
    const std::string text = read_fixture(name);
    const TraceSummary s = stats_of(text);
    CHECK(s.malformed == 0);
    CHECK(s.bad_payload == 0);
    CHECK(s.comments == count_prefix(text, "#"));
    CHECK(s.blank == 0);
    CHECK(s.lines == lines_of(text).size());
    CHECK(s.events + s.comments + s.headers == s.lines);
  }
}

TEST_CASE("openEuler 4.19 ftrace part: TSC-deadline writes", "[trace]") {
  const TraceSummary s = stats_of(read_fixture(kOpenEuler));
  // grep -c 'kvm_msr: msr_write 6e0' FILE -> 9
  CHECK(s.events == 9);
  CHECK(s.event_counts.at("kvm_msr") == 9);
  CHECK(s.msrs.at({true, 0x6e0}) == 9);
  CHECK(s.exits.empty());
  const auto r = parse_trace_line(
      "       CPU 5/KVM-2137779 [010] d.... 798115.331413: kvm_msr: msr_write 6e0 = "
      "0x81cba98c958c9",
      1);
  CHECK(r.comm == "CPU 5/KVM");
  CHECK(r.pid == 2137779);
  CHECK(r.cpu == 10);
  REQUIRE(std::holds_alternative<KvmMsr>(r.data));
  CHECK(std::get<KvmMsr>(r.data).data == 0x81cba98c958c9ULL);
}

TEST_CASE("perf script: comm with spaces, pid after a space, kvm: prefix", "[trace]") {
  const TraceSummary s = stats_of(read_fixture(kPerf));
  // grep -c 'kvm:kvm_msr: msr_write 6e0' -> 6, '... msr_write 830' -> 1,
  // 'msr_read 3b' -> 1, 'msr_read 1b' -> 4 (the "## perf script | grep" line is a comment).
  CHECK(s.events == 12);
  CHECK(s.msrs.at({true, 0x6e0}) == 6);
  CHECK(s.msrs.at({true, 0x830}) == 1);
  CHECK(s.msrs.at({false, 0x3b}) == 1);
  CHECK(s.msrs.at({false, 0x1b}) == 4);
  const auto r = parse_trace_line(
      "       CPU 0/KVM 1821753 [015] 4831258.258093: kvm:kvm_msr: msr_write 830 = 0x2000000fd", 9);
  REQUIRE(r.kind == LineKind::Event);
  CHECK(r.comm == "CPU 0/KVM");
  CHECK(r.pid == 1821753);
  CHECK(r.cpu == 15);
  CHECK(r.system == "kvm");
  CHECK(r.event == "kvm_msr");
  REQUIRE(std::holds_alternative<KvmMsr>(r.data));
  CHECK(std::get<KvmMsr>(r.data).msr == 0x830);
  CHECK(std::get<KvmMsr>(r.data).data == 0x2000000fdULL);
}

TEST_CASE("raw ns timestamps without comm or cpu: halt_poll_ns grow/shrink", "[trace]") {
  const TraceSummary s = stats_of(read_fixture(kHaltPoll));
  // grep -c '(grow' -> 6, grep -c '(shrink' -> 6; new values: grep -o 'halt_poll_ns [0-9]*'
  // | sort | uniq -c -> 0:1, 10000:3, 20000:5, 40000:3.
  CHECK(s.events == 12);
  CHECK(s.raw_clock);
  CHECK(s.halt_poll.grow == 6);
  CHECK(s.halt_poll.shrink == 6);
  CHECK(s.halt_poll_by_vcpu.at(0).grow == 6);
  CHECK(s.halt_poll_values ==
        std::map<unsigned, std::uint64_t>{{0, 1}, {10000, 3}, {20000, 5}, {40000, 3}});
  CHECK(s.first_ts == 87162647182125LL);
  CHECK(s.last_ts == 87162661607487LL);
  CHECK(s.span_s() == Approx(0.014425362));
  const auto r = parse_trace_line(
      "87162650892407: kvm_halt_poll_ns: vcpu 0: halt_poll_ns 20000 (shrink 40000)", 1);
  REQUIRE(r.kind == LineKind::Event);
  CHECK(r.pid == -1);
  CHECK(r.cpu == -1);
  CHECK(r.comm.empty());
  REQUIRE(std::holds_alternative<KvmHaltPollNs>(r.data));
  CHECK(std::get<KvmHaltPollNs>(r.data) == KvmHaltPollNs{0, 20000, false, 40000});
}

TEST_CASE("raw sched_switch / sched_wakeup (3.10-era ftrace) and the trace-cmd plugin forms",
          "[trace]") {
  const TraceSummary s = stats_of(read_fixture(kSched));
  // grep -c 'sched_switch:' -> 4, 'sched_wakeup:' -> 2, 'sched_stat_runtime:' -> 2.
  CHECK(s.event_counts.at("sched_switch") == 4);
  CHECK(s.event_counts.at("sched_wakeup") == 2);
  CHECK(s.event_counts.at("sched_stat_runtime") == 2);
  CHECK(s.other_events == 2);

  auto r = parse_trace_line(
      "          <idle>-0     [002] d... 158158.084267: sched_switch: prev_comm=swapper/2 "
      "prev_pid=0 "
      "prev_prio=120 prev_state=R ==> next_comm=CPU 0/KVM next_pid=2046 next_prio=120",
      1);
  CHECK(r.comm == "<idle>");
  CHECK(r.pid == 0);
  REQUIRE(std::holds_alternative<SchedSwitch>(r.data));
  CHECK(std::get<SchedSwitch>(r.data) ==
        SchedSwitch{"swapper/2", 0, 120, "R", "CPU 0/KVM", 2046, 120});
  r = parse_trace_line(
      "          <idle>-0     [002] dNh. 158158.085265: sched_wakeup: comm=CPU 0/KVM pid=2046 "
      "prio=120 success=1 target_cpu=002",
      2);
  CHECK(r.flags == "dNh.");
  REQUIRE(std::holds_alternative<SchedWakeup>(r.data));
  CHECK(std::get<SchedWakeup>(r.data) == SchedWakeup{"CPU 0/KVM", 2046, 120, 2, 1});

  // trace-cmd report (real output, fixture): headers and plugin forms.
  const TraceSummary t = stats_of(read_fixture(kTraceCmd));
  // grep -c ': sched_switch: ' -> 15, ': sched_wakeup: ' -> 9, ': sched_migrate_task: ' -> 1
  CHECK(t.headers == 2);  // version = 6, cpus=2
  CHECK(t.event_counts.at("sched_switch") == 15);
  CHECK(t.event_counts.at("sched_wakeup") == 9);
  CHECK(t.event_counts.at("sched_migrate_task") == 1);
  r = parse_trace_line(
      "    kworker/u4:0-6     [001]  3343.176373: sched_switch:         kworker/u4:0:6 [120] S ==> "
      "sshd:1683 [120]",
      3);
  CHECK(r.comm == "kworker/u4:0");
  CHECK(r.pid == 6);
  REQUIRE(std::holds_alternative<SchedSwitch>(r.data));
  CHECK(std::get<SchedSwitch>(r.data) ==
        SchedSwitch{"kworker/u4:0", 6, 120, "S", "sshd", 1683, 120});
  r = parse_trace_line(
      "              ls-2952  [000]  3343.171928: sched_switch:         trace-cmd:2952 [120] D|W "
      "==> "
      "swapper/0:0 [120]",
      4);
  REQUIRE(std::holds_alternative<SchedSwitch>(r.data));
  CHECK(std::get<SchedSwitch>(r.data).prev_state == "D|W");
}

// ---- framing variants and bad input ---------------------------------------------

TEST_CASE("framing variants: trace-cmd -l, tgid column, delta column, headers", "[trace]") {
  auto r = parse_trace_line(
      "trace-cm-1394    1d..3  2535.384180: sched_waking:         comm=kworker/u8:2 pid=1333 "
      "prio=120 target_cpu=000",
      1);
  REQUIRE(r.kind == LineKind::Event);
  CHECK(r.comm == "trace-cm");
  CHECK(r.pid == 1394);
  CHECK(r.cpu == 1);
  CHECK(r.flags == "d..3");
  CHECK(r.event == "sched_waking");
  CHECK_FALSE(r.known_event);

  r = parse_trace_line(
      "            bash-1977  (   1977) [000] .... 17284.993652: kvm_pv_tlb_flush: vcpu 3 "
      "need_flush_tlb true",
      2);
  REQUIRE(r.kind == LineKind::Event);
  CHECK(r.comm == "bash");
  CHECK(r.pid == 1977);
  CHECK(r.cpu == 0);
  CHECK(std::get<KvmPvTlbFlush>(r.data) == KvmPvTlbFlush{3, true});

  r = parse_trace_line(
      "      <idle>-0    dN.2.  14.942498: (+13)    kvm_hv_timer_state: vcpu_id a hv_timer 1", 3);
  REQUIRE(r.kind == LineKind::Event);
  CHECK(r.cpu == -1);  // "dN.2." starts with no cpu digits: latency form without cpu
  CHECK(std::get<KvmHvTimerState>(r.data) == KvmHvTimerState{10, 1});

  for (const char* h : {"cpus=24", "version = 6", "CPU 3 is empty", "CPU:2 [EVENTS DROPPED]",
                        "CPU:0 [120 EVENTS DROPPED]"}) {
    INFO(h);
    CHECK(parse_trace_line(h, 1).kind == LineKind::Header);
  }
  CHECK(parse_trace_line("=> try_to_wake_up (ffff00000810cef8)", 1).kind == LineKind::Continuation);
  CHECK(parse_trace_line("   ", 1).kind == LineKind::Blank);
  CHECK(parse_trace_line("#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION", 1).kind ==
        LineKind::Comment);
}

TEST_CASE("broken lines are reported with their line numbers, never dropped or thrown", "[trace]") {
  std::string text = read_fixture(kKrause);
  auto lines = lines_of(text);
  // Line 10 loses its timestamp; line 26 (an EXTERNAL_INTERRUPT kvm_exit) loses its rip; a
  // stray line at the end.
  REQUIRE(lines.size() == 55);
  lines[9] = " qemu-system-x86-8397    [002] .....  kvm_tdp_mmu_spte_changed: as id 0 gfn 9e";
  REQUIRE(lines[25].find("kvm_exit: vcpu 0 reason EXTERNAL_INTERRUPT") != std::string::npos);
  lines[25] = lines[25].substr(0, lines[25].find(" rip "));
  lines.emplace_back("this is not a trace line");
  std::string broken;
  for (const auto& l : lines) broken += l + "\n";
  const TraceSummary s = stats_of(broken);
  CHECK(s.lines == 56);
  CHECK(s.malformed == 2);
  REQUIRE(s.malformed_first.size() == 2);
  CHECK(s.malformed_first[0].first == 10);
  CHECK(s.malformed_first[1].first == 56);
  CHECK(s.bad_payload == 1);
  REQUIRE(s.bad_payload_first.size() == 1);
  CHECK(s.bad_payload_first[0].first == 26);
  CHECK_THAT(s.bad_payload_first[0].second, Catch::Contains("rip"));
  CHECK(s.exits.at("EXTERNAL_INTERRUPT").count == 3);  // the broken one is not counted
  CHECK(s.entries_without_exit == 1);                  // so its entry has no exit
  const std::string txt = trace_stats_text(s, "broken");
  CHECK_THAT(txt, Catch::Contains("malformed lines: 2 (line 10, 56)"));
  CHECK_THAT(txt, Catch::Contains("(line 26)"));

  // Only the first 10 line numbers are kept, the total is exact.
  std::string junk;
  for (int i = 0; i < 25; ++i) junk += "junk\n";
  const TraceSummary j = stats_of(junk);
  CHECK(j.malformed == 25);
  CHECK(j.malformed_first.size() == TraceStats::kListedLines);
  CHECK_THAT(trace_stats_text(j, "junk"), Catch::Contains("... (15 more)"));

  // Every prefix of a real line: parsed or reported, never a throw.
  const std::string real = lines_of(text)[3];
  for (std::size_t n = 0; n <= real.size(); ++n) {
    const auto r = parse_trace_line(real.substr(0, n), 1);
    CHECK((r.kind != LineKind::Malformed || !r.error.empty()));
  }
}

// ---- writer -------------------------------------------------------------------

TEST_CASE("writer -> parser round trip of every tracepoint", "[trace]") {
  struct Case {
    std::int64_t ts_ns;
    TraceTask task;
    int cpu;
    TraceEventData data;
  };
  // Built one by one: a braced list of these trips GCC 12's -Wmaybe-uninitialized.
  std::vector<Case> cases;
  auto add = [&cases](std::int64_t ts, TraceTask task, int cpu, TraceEventData d) {
    cases.push_back(Case{ts, std::move(task), cpu, std::move(d)});
  };
  add(1404389421000, {"CPU 0/KVM", 8396}, 1,
      KvmExit{0, "EXTERNAL_INTERRUPT", 0xffffffff8108aca7ULL, 0, 0, 0x800000fb, 0, "", false});
  add(1404389422000, {"CPU 1/KVM", 8397}, 2,
      KvmExit{1, "EPT_VIOLATION", 0x402065, 0x181, 0xfee00000, 0, 0x10, "VM_ENTRY_FAILURE", false});
  add(1404389423000, {"qemu-kvm", 3122}, 2,
      KvmExit{-1, "HLT", 0xffffffff823fa01eULL, 0, 0, 0, 0, "", true});
  add(1404389435000, {"CPU 0/KVM", 8396}, 1, KvmEntry{0, 0xffffffff8108aca7ULL, false});
  add(1404389436000, {"CPU 0/KVM", 8396}, 1, KvmEntry{0, 0x4028b7, true});
  add(1404389437000, {"CPU 0/KVM", 8396}, 1, KvmEntry{3, std::nullopt, false});
  add(2, {"CPU 5/KVM", 2137779}, 10, KvmMsr{true, 0x6e0, 0x81cba98c958c9ULL, false});
  add(3, {"CPU 5/KVM", 2137779}, 10, KvmMsr{false, 0x1b, 0xfee00d00, true});
  add(4000, {"CPU 0/KVM", 1}, 0, KvmHvTimerState{26, 1});
  add(5000, {"CPU 0/KVM", 1}, 0, KvmHvTimerState{0, 0});
  add(6000, {"CPU 0/KVM", 1}, 0, KvmWaitLapicExpire{0, -312});
  add(7000, {"CPU 0/KVM", 1}, 0, KvmWaitLapicExpire{1, 0});
  add(8000, {"CPU 0/KVM", 1}, 0, KvmVcpuWakeup{false, 8134, true});
  add(9000, {"CPU 0/KVM", 1}, 0, KvmVcpuWakeup{true, 1234567890123LL, false});
  add(10000, {"CPU 1/KVM", 2}, 3, KvmHaltPollNs{1, 20000, true, 10000});
  add(11000, {"CPU 1/KVM", 2}, 3, KvmHaltPollNs{1, 0, false, 10000});
  add(12000, {"<idle>", 0}, 3, KvmApicAcceptIrq{0, 236, "Fixed", false, false});
  add(13000, {"<idle>", 0}, 3, KvmApicAcceptIrq{0x1f, 2, "NMI", true, true});
  add(14000, {"CPU 3/KVM", 4}, 5, KvmPvTlbFlush{3, true});
  add(15000, {"CPU 3/KVM", 4}, 5, KvmPvTlbFlush{7, false});
  add(16000, {"qemu-kvm", 1234}, 3, SchedSwitch{"qemu-kvm", 1234, 120, "S", "swapper/3", 0, 120});
  add(17000, {"swapper/3", 0}, 3, SchedSwitch{"swapper/3", 0, 120, "R+", "CPU 0/KVM", 1234, 120});
  add(18000, {"<idle>", 0}, 3, SchedWakeup{"CPU 0/KVM", 1234, 120, 3, std::nullopt});
  add(19000, {"<idle>", 0}, 3, SchedWakeup{"kworker/10:0", 2763, 120, 10, 1});
  add(20000, {"CPU 0/KVM", 1000}, 2, KvmApicIpi{0x4020, 1});
  add(21000, {"CPU 3/KVM", 1003}, 5, KvmApicIpi{0xcc8fd, 0xff});    // logical, level, all-but-self
  add(22000, {"CPU 2/KVM", 1002}, 4, KvmHypercall{5, 0, 3, 0, 0});  // KVM_HC_KICK_CPU
  add(23000, {"CPU 1/KVM", 1001}, 3, KvmInjVirq{236, false, false, false});
  add(23100, {"CPU 1/KVM", 1001}, 3, KvmInjVirq{0x20, false, true, false});
  add(23200, {"CPU 1/KVM", 1001}, 3, KvmInjVirq{0x80, true, false, false});
  add(23300, {"CPU 1/KVM", 1001}, 3, KvmInjVirq{236, false, false, true});
  add(24000, {"CPU 1/KVM", 1001}, 3, KvmEoi{1, 236});
  add(24100, {"CPU 1/KVM", 1001}, 3, KvmEoi{0x1a, -1});
  add(24200, {"CPU 1/KVM", 1001}, 3, KvmPvEoi{{1, 236}});
  add(24300, {"CPU 0/KVM", 1000}, 2, KvmApic{true, 0x310, 1});
  add(24400, {"CPU 0/KVM", 1000}, 2, KvmApic{true, 0x300, 0x40fd});
  add(24500, {"CPU 0/KVM", 1000}, 2, KvmApic{false, 0x3a0, 0});           // unlisted offset: hex
  add(24600, {"CPU 0/KVM", 1000}, 2, KvmApic{true, 0x300, 0x1000000fd});  // v5.18+: 64 bits
  add(23000, {"CPU 2/KVM", 1002}, 4, KvmPleWindow{2, true, 8192, 4096});
  add(24000, {"CPU 2/KVM", 1002}, 4, KvmPleWindow{2, false, 4096, 4096});
  add(25000, {"CPU 2/KVM", 1002}, 4, KvmPleWindowUpdate{2, 4096, 8192});
  add(26000, {"CPU 2/KVM", 1002}, 4, KvmPleWindowUpdate{2, 4294967295U, 4096});
  add(123456789012345678LL, {"a-b c", 99999}, 127, KvmPvTlbFlush{0, false});
  std::ostringstream out;
  TraceWriter w(out);
  w.cpus_header(4);
  for (const auto& c : cases) w.write(c.ts_ns, c.task, c.cpu, c.data);
  CHECK(w.lines_written() == cases.size());
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == cases.size() + 1);
  CHECK(parse_trace_line(lines[0], 1).kind == LineKind::Header);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO(lines[i + 1]);
    const auto r = parse_trace_line(lines[i + 1], i + 2);
    const auto& c = cases[i];
    REQUIRE(r.kind == LineKind::Event);
    CHECK(r.error.empty());
    CHECK(r.comm == c.task.comm);
    CHECK(r.pid == c.task.pid);
    CHECK(r.cpu == c.cpu);
    CHECK(r.ts == std::max<std::int64_t>(c.ts_ns, 0));  // nanoseconds in the text, exact
    CHECK(r.event == std::string(event_name(c.data)));
    CHECK(r.data == c.data);
  }
  // The same payloads through the per-tracepoint methods give the same text.
  std::ostringstream out2;
  TraceWriter w2(out2);
  w2.cpus_header(4);
  for (const auto& c : cases) {
    std::visit(
        [&](const auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, KvmExit>) w2.kvm_exit(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmEntry>) w2.kvm_entry(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmMsr>) w2.kvm_msr(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmHvTimerState>)
            w2.kvm_hv_timer_state(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmWaitLapicExpire>)
            w2.kvm_wait_lapic_expire(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmVcpuWakeup>)
            w2.kvm_vcpu_wakeup(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmHaltPollNs>)
            w2.kvm_halt_poll_ns(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmApicAcceptIrq>)
            w2.kvm_apic_accept_irq(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmPvTlbFlush>)
            w2.kvm_pv_tlb_flush(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, SchedSwitch>) w2.sched_switch(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, SchedWakeup>) w2.sched_wakeup(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmApicIpi>) w2.kvm_apic_ipi(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmHypercall>)
            w2.kvm_hypercall(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmInjVirq>) w2.kvm_inj_virq(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmEoi>) w2.kvm_eoi(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmPvEoi>) w2.kvm_pv_eoi(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmApic>) w2.kvm_apic(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmPleWindow>)
            w2.kvm_ple_window(c.ts_ns, c.task, c.cpu, e);
          if constexpr (std::is_same_v<T, KvmPleWindowUpdate>)
            w2.kvm_ple_window_update(c.ts_ns, c.task, c.cpu, e);
        },
        c.data);
  }
  CHECK(out2.str() == out.str());
}

TEST_CASE("kvm_apic payloads parse back, and malformed ones are refused", "[trace]") {
  std::string err;
  const auto ok = parse_payload("kvm_apic", "apic_write APIC_ICR = 0x1000000fd", err);
  REQUIRE(std::holds_alternative<KvmApic>(ok));
  CHECK(std::get<KvmApic>(ok) == KvmApic{true, 0x300, 0x1000000fd});
  const auto hex = parse_payload("kvm_apic", "apic_read 0x3a0 = 0x0", err);
  REQUIRE(std::holds_alternative<KvmApic>(hex));
  CHECK(std::get<KvmApic>(hex) == KvmApic{false, 0x3a0, 0});
  for (const char* bad :
       {"apic_write APIC_ICR = 0x0x1f", "apic_write APIC_ICR = 0x1f junk",
        "apic_write APIC_ICR 0x1f", "apic_poke APIC_ICR = 0x1", "apic_write APIC_NOPE = 0x1",
        "apic_write APIC_ICR = 1f", "apic_write 0x = 0x1", "apic_write APIC_ICR = 0x"}) {
    INFO(bad);
    err.clear();
    CHECK(std::holds_alternative<std::monostate>(parse_payload("kvm_apic", bad, err)));
    CHECK(!err.empty());
  }
}

TEST_CASE("writer payloads print the kernel formats", "[trace]") {
  // arch/x86/kvm/trace.h kvm_apic_ipi: "dst %x vec %u (%s|%s|%s|%s|%s)".
  CHECK(format_payload(KvmApicIpi{0x4020, 1}) == "dst 1 vec 32 (Fixed|physical|assert|edge|dst)");
  CHECK(format_payload(KvmApicIpi{0xcc8fd, 0xff}) ==
        "dst ff vec 253 (Fixed|logical|assert|level|all-but-self)");
  CHECK(format_payload(KvmApicIpi{0x4500, 3}) == "dst 3 vec 0 (INIT|physical|assert|edge|dst)");
  // arch/x86/kvm/trace.h kvm_hypercall: "nr 0x%lx a0 0x%lx a1 0x%lx a2 0x%lx a3 0x%lx".
  CHECK(format_payload(KvmHypercall{5, 0, 0x1a, 0, 0}) == "nr 0x5 a0 0x0 a1 0x1a a2 0x0 a3 0x0");
  // kvm_inj_virq: "%s 0x%x%s" since v5.19 (2d61391270a3), "irq %u" before.
  CHECK(format_payload(KvmInjVirq{236, false, false, false}) == "IRQ 0xec");
  CHECK(format_payload(KvmInjVirq{0x80, true, true, false}) == "Soft/INTn 0x80 [reinjected]");
  CHECK(format_payload(KvmInjVirq{236, false, true, true}) == "irq 236");
  // kvm_eoi: "apicid %x vector %d" (-1: nothing was in service).
  CHECK(format_payload(KvmEoi{0x1a, 236}) == "apicid 1a vector 236");
  CHECK(format_payload(KvmEoi{0, -1}) == "apicid 0 vector -1");
  // kvm_apic: "apic_%s %s = 0x%x", the register by its kvm_trace_symbol_apic
  // name, an unlisted offset as __print_symbolic() prints it (hex).
  CHECK(format_payload(KvmApic{true, 0x300, 0x4020}) == "apic_write APIC_ICR = 0x4020");
  CHECK(format_payload(KvmApic{true, 0x310, 1}) == "apic_write APIC_ICR2 = 0x1");
  CHECK(format_payload(KvmApic{true, 0x320, 0x500ec}) == "apic_write APIC_LVTT = 0x500ec");
  CHECK(format_payload(KvmApic{false, 0x390, 0}) == "apic_read APIC_TMCCT = 0x0");
  CHECK(format_payload(KvmApic{true, 0x3a0, 7}) == "apic_write 0x3a0 = 0x7");
  // From v5.18 the x2APIC ICR is traced whole: "0x%llx".
  CHECK(format_payload(KvmApic{true, 0x300, 0x1000000fd}) == "apic_write APIC_ICR = 0x1000000fd");
  // kvm_pv_eoi: the same format as kvm_eoi.
  CHECK(format_payload(KvmPvEoi{{0x1a, 236}}) == "apicid 1a vector 236");
  // kvm_ple_window (v4.16 trace.h): "vcpu %u: ple_window %d (%s %d)", new then old, on
  // every call: with ple_window_shrink 0 each sched-in prints a shrink to the same 4096.
  CHECK(format_payload(KvmPleWindow{0, false, 4096, 4096}) ==
        "vcpu 0: ple_window 4096 (shrink 4096)");
  CHECK(format_payload(KvmPleWindow{4, true, 8192, 4096}) == "vcpu 4: ple_window 8192 (grow 4096)");
  // kvm_ple_window_update (v5.4+): "vcpu %u old %u new %u (%s)", old then new.
  CHECK(format_payload(KvmPleWindowUpdate{4, 4096, 8192}) == "vcpu 4 old 4096 new 8192 (growed)");
  CHECK(format_payload(KvmPleWindowUpdate{4, 8192, 4096}) == "vcpu 4 old 8192 new 4096 (shrinked)");
  CHECK(format_payload(KvmWaitLapicExpire{0, -312}) == "vcpu 0: delta -312 (early)");
  CHECK(format_payload(KvmWaitLapicExpire{2, 40}) == "vcpu 2: delta 40 (late)");
  CHECK(format_payload(KvmHvTimerState{26, 1}) == "vcpu_id 1a hv_timer 1");  // hex
  CHECK(format_payload(KvmVcpuWakeup{false, 8134, true}) == "poll time 8134 ns, polling valid");
  CHECK(format_payload(KvmHaltPollNs{1, 20000, true, 10000}) ==
        "vcpu 1: halt_poll_ns 20000 (grow 10000)");
  CHECK(format_payload(KvmApicAcceptIrq{0, 236, "Fixed", false, false}) ==
        "apicid 0 vec 236 (Fixed|edge)");
  CHECK(format_payload(KvmMsr{true, 0x6e0, 0x2c8b0e9ce46c37ULL, false}) ==
        "msr_write 6e0 = 0x2c8b0e9ce46c37");
  CHECK(format_payload(KvmMsr{false, 0x1b, 0, true}) == "msr_read 1b = 0x0 (#GP)");
  CHECK(format_payload(KvmPvTlbFlush{3, true}) == "vcpu 3 need_flush_tlb true");
  CHECK(format_payload(KvmEntry{0, 0x4028b7, false}) == "vcpu 0, rip 0x4028b7");
  CHECK(format_payload(SchedSwitch{"qemu-kvm", 1234, 120, "S", "swapper/3", 0, 120}) ==
        "qemu-kvm:1234 [120] S ==> swapper/3:0 [120]");
  CHECK(format_payload(SchedWakeup{"CPU 0/KVM", 1234, 120, 3, std::nullopt}) ==
        "CPU 0/KVM:1234 [120] CPU:003");
  // The example kvm_exit line of the KVM notes (a real kvm-list line).
  CHECK(format_payload(KvmExit{0, "PREEMPTION_TIMER", 0x402065, 0, 0, 0, 0, "", false}) ==
        "vcpu 0 reason PREEMPTION_TIMER rip 0x402065 info1 0x0000000000000000 info2 "
        "0x0000000000000000 intr_info 0x00000000 error_code 0x00000000");
}

TEST_CASE("writer kvm_exit / kvm_entry lines have the shape of the real modern-format lines",
          "[trace]") {
  // The real lines: every kvm_exit / kvm_entry line of the Krause file.
  std::size_t real = 0;
  for (const auto& l : lines_of(read_fixture(kKrause))) {
    if (l.empty() || l[0] == '#') continue;
    std::smatch m;
    if (!std::regex_match(l, m, kFraming)) continue;
    ++real;
    INFO(l);
    CHECK(std::regex_match(m[3].str(), m[2] == "kvm_exit" ? kExitPayload : kEntryPayload));
  }
  CHECK(real == 25);  // 13 exits + 12 entries

  std::ostringstream out;
  TraceWriter w(out);
  w.kvm_exit(1404389421000, {"qemu-system-x86", 8396}, 1, 0, kvmsim::ExitReason::EXTERNAL_INTERRUPT,
             0xffffffff8108aca7ULL, 0, 0, 0x800000fb, 0);
  w.kvm_exit(1404389517000, {"CPU 1/KVM", 8397}, 2,
             KvmExit{1, "MSR_WRITE", 0xffffffff81000149ULL, 0, 0, 0, 0, "", false});
  w.kvm_entry(1404389435000, {"qemu-system-x86", 8396}, 1,
              KvmEntry{0, 0xffffffff8108aca7ULL, false});
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 3);
  for (const auto& l : lines) {
    INFO(l);
    std::smatch m;
    REQUIRE(std::regex_match(l, m, kFraming));
    CHECK(std::regex_match(m[3].str(), m[2] == "kvm_exit" ? kExitPayload : kEntryPayload));
  }
  // Field for field the same payload as the real line.
  CHECK(lines[0].substr(lines[0].find("vcpu ")) ==
        "vcpu 0 reason EXTERNAL_INTERRUPT rip 0xffffffff8108aca7 info1 0x0000000000000000 info2 "
        "0x0000000000000000 intr_info 0x800000fb error_code 0x00000000");
  CHECK(lines[2].substr(lines[2].find("vcpu ")) == "vcpu 0, rip 0xffffffff8108aca7");
}

TEST_CASE("writer framing is trace-cmd report's, byte for byte", "[trace]") {
  // Real `trace-cmd report` lines (fixture kTraceCmd).
  const auto real = lines_of(read_fixture(kTraceCmd));
  std::ostringstream out;
  TraceWriter w(out, TsPrecision::Us);  // the fixture is default (microsecond) trace-cmd report
  w.sched_wakeup(3343171802000, {"ls", 2952}, 1, SchedWakeup{"migration/1", 12, 0, 1, 1});
  w.sched_switch(3343171823000, {"migration/1", 12}, 1,
                 SchedSwitch{"migration/1", 12, 0, "S", "trace-cmd", 2951, 120});
  w.sched_switch(3343171864000, {"<idle>", 0}, 0,
                 SchedSwitch{"swapper/0", 0, 120, "R", "trace-cmd", 2952, 120});
  w.sched_wakeup(3343176371000, {"kworker/u4:0", 6}, 1, SchedWakeup{"sshd", 1683, 120, 1, 1});
  w.line(3343171816000, {"migration/1", 12}, 1, "sched_migrate_task",
         "comm=trace-cmd pid=2952 prio=120 orig_cpu=1 dest_cpu=0");
  const auto lines = lines_of(out.str());
  REQUIRE(lines.size() == 5);
  auto find = [&real](const std::string& l) {
    return std::find(real.begin(), real.end(), l) != real.end();
  };
  for (const auto& l : lines) {
    INFO(l);
    CHECK(find(l));
  }
  // Microsecond precision rounds to the nearest microsecond; seconds pad to 5 columns.
  CHECK(format_line(1499, {"x", 1}, 0, "kvm_msr", "p", TsPrecision::Us) ==
        "               x-1     [000]     0.000001: kvm_msr:              p");
  CHECK(format_line(123456789500, {"x", 1}, 0, "kvm_wait_lapic_expire", "p", TsPrecision::Us) ==
        "               x-1     [000]   123.456790: kvm_wait_lapic_expire: p");
  // The default is `trace-cmd report -t`: all nine digits, nothing rounded.
  CHECK(format_line(1499, {"x", 1}, 0, "kvm_msr", "p") ==
        "               x-1     [000]     0.000001499: kvm_msr:              p");
  CHECK(format_line(123456789500, {"x", 1}, 0, "kvm_wait_lapic_expire", "p") ==
        "               x-1     [000]   123.456789500: kvm_wait_lapic_expire: p");
  // Both read back to the same instant, to their precision.
  const auto ns = parse_trace_line(format_line(123456789500, {"x", 1}, 0, "kvm_msr", "p"), 1);
  REQUIRE(ns.kind == LineKind::Event);
  CHECK(ns.ts == 123456789500);
  const auto us =
      parse_trace_line(format_line(123456789500, {"x", 1}, 0, "kvm_msr", "p", TsPrecision::Us), 1);
  REQUIRE(us.kind == LineKind::Event);
  CHECK(us.ts == 123456790000);
}

// ---- statistics over written traces ----------------------------------------------

TEST_CASE("stats: hv timer, lapic expire, wakeups, pairing by cpu, JSON", "[trace]") {
  std::ostringstream out;
  TraceWriter w(out);
  const TraceTask v0{"CPU 0/KVM", 100};
  const TraceTask v1{"CPU 1/KVM", 101};
  std::int64_t t = 1000000000;
  for (int i = 0; i < 3; ++i) {
    w.kvm_exit(t, v0, 2, 0, kvmsim::ExitReason::MSR_WRITE, 0x1000);
    w.kvm_msr(t + 500, v0, 2, KvmMsr{true, 0x6e0, 1000u + static_cast<unsigned>(i), false});
    w.kvm_hv_timer_state(t + 800, v0, 2, KvmHvTimerState{0, 1});
    w.kvm_entry(t + 2000, v0, 2, KvmEntry{0, 0x1002, false});
    w.kvm_exit(t + 100000, v0, 2, 0, kvmsim::ExitReason::PREEMPTION_TIMER, 0x1004);
    w.kvm_wait_lapic_expire(t + 101000, v0, 2, KvmWaitLapicExpire{0, i == 0 ? -300 : 100});
    w.kvm_entry(t + 103000, v0, 2, KvmEntry{0, 0x1004, false});
    w.kvm_exit(t + 200000, v1, 3, 1, kvmsim::ExitReason::HLT, 0x2000);
    w.kvm_hv_timer_state(t + 200500, v1, 3, KvmHvTimerState{1, 0});
    w.kvm_vcpu_wakeup(t + 400000, v1, 3, KvmVcpuWakeup{i == 2, 150000, i != 1});
    w.kvm_entry(t + 401000, v1, 3, KvmEntry{1, 0x2001, false});
    t += 1000000;
  }
  const TraceSummary s = stats_of(out.str());
  CHECK(s.malformed == 0);
  CHECK(s.exits.at("MSR_WRITE").count == 3);
  CHECK(s.exits.at("MSR_WRITE").service.avg_us() == Approx(2.0));
  CHECK(s.exits.at("PREEMPTION_TIMER").service.avg_us() == Approx(3.0));
  CHECK(s.exits.at("HLT").service.avg_us() == Approx(201.0));
  CHECK(s.exits.at("HLT").service.buckets[8] == 3);  // [128,256) us
  CHECK(s.exits_paired == 9);
  CHECK(s.hv_timer.at(0).to_1 == 3);
  CHECK(s.hv_timer.at(0).to_0 == 0);
  CHECK(s.hv_timer.at(1).to_0 == 3);
  CHECK(s.lapic_early == 1);
  CHECK(s.lapic_late == 2);
  CHECK(s.lapic_delta_mean() == Approx(-100.0 / 3));
  CHECK(s.lapic_delta_min == -300);
  CHECK(s.lapic_delta_max == 100);
  CHECK(s.wakeup_poll == 2);
  CHECK(s.wakeup_wait == 1);
  CHECK(s.wakeup_invalid == 1);
  CHECK(s.msrs.at({true, 0x6e0}) == 3);

  const auto j = trace_stats_json(s, "mem");
  CHECK(j["exits"]["total"] == 9);
  CHECK(j["exits"]["reasons"]["HLT"]["count"] == 3);
  CHECK(j["exits"]["reasons"]["HLT"]["service_us"]["avg"].get<double>() == Approx(201.0));
  CHECK(j["hv_timer_state"]["0"]["to_1"] == 3);
  CHECK(j["wait_lapic_expire"]["early"] == 1);
  CHECK(j["events"]["kvm_exit"]["count"] == 9);
  CHECK(j["events"]["kvm_exit"]["per_s"].get<double>() == Approx(9 / 0.002401));
  CHECK(j["time"]["clock"] == "seconds");
  CHECK(j["malformed"]["count"] == 0);

  // Without pid (raw ns lines), exits and entries pair by cpu.
  const std::string raw =
      "100: kvm_exit: vcpu 0 reason HLT rip 0x1 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0\n"
      "[001] 150: kvm_exit: vcpu 1 reason HLT rip 0x1 info1 0x0 info2 0x0 intr_info 0x0 error_code "
      "0x0\n"
      "[001] 1150: kvm_entry: vcpu 1, rip 0x1\n"
      "5100: kvm_entry: vcpu 0, rip 0x1\n";
  const TraceSummary r = stats_of(raw);
  CHECK(r.malformed == 0);
  CHECK(r.exits_paired == 2);
  CHECK(r.exits.at("HLT").service.min_us == Approx(1.0));
  CHECK(r.exits.at("HLT").service.max_us == Approx(5.0));
}

TEST_CASE("stats text names counts, reasons and malformed lines", "[trace]") {
  const TraceSummary s = stats_of(read_fixture(kKrause));
  const std::string txt = trace_stats_text(s, "krause");
  CHECK_THAT(txt, Catch::Contains("trace-stats: krause"));
  CHECK_THAT(txt, Catch::Contains("malformed lines: 0"));
  CHECK(std::regex_search(txt, std::regex("\n  EXTERNAL_INTERRUPT +4 +30\\.77%")));
  CHECK(std::regex_search(txt, std::regex("\n  CR_ACCESS +3 .* 10\\.000 +43\\.667 +95\\.000\n")));
  CHECK(std::regex_search(txt, std::regex("\n  total +13 ")));
  CHECK_THAT(txt, Catch::Contains("12 paired"));
  CHECK_THAT(txt, Catch::Contains("1 exits open at the end"));
}
