#include "sim/trace/trace_parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <vector>

namespace kvmsim::trace {

namespace {

using std::string_view;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

string_view ltrim(string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return s.substr(i);
}
string_view rtrim(string_view s) {
  std::size_t n = s.size();
  while (n > 0 && is_space(s[n - 1])) --n;
  return s.substr(0, n);
}
string_view trim(string_view s) { return rtrim(ltrim(s)); }

bool starts_with(string_view s, string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(string_view s, string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool all_digits(string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_digit(c); });
}

// The whole of `s` as an unsigned number; base 16 accepts an optional "0x".
bool to_u64(string_view s, int base, std::uint64_t& out) {
  if (base == 16 && (starts_with(s, "0x") || starts_with(s, "0X"))) s.remove_prefix(2);
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
bool to_i64(string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, 10);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
template <class T>
bool to_uint(string_view s, int base, T& out) {
  std::uint64_t v = 0;
  if (!to_u64(s, base, v) || v > std::numeric_limits<T>::max()) return false;
  out = static_cast<T>(v);
  return true;
}
bool to_int(string_view s, int& out) {
  std::int64_t v = 0;
  if (!to_i64(s, v) || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return false;
  out = static_cast<int>(v);
  return true;
}

std::vector<string_view> split_ws(string_view s) {
  std::vector<string_view> t;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t b = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > b) t.push_back(s.substr(b, i - b));
  }
  return t;
}

string_view strip_suffix(string_view s, char c) {
  return !s.empty() && s.back() == c ? s.substr(0, s.size() - 1) : s;
}

// Index of the first token equal to `key` at or after `from`, or npos.
std::size_t find_tok(const std::vector<string_view>& t, string_view key, std::size_t from = 0) {
  for (std::size_t i = from; i < t.size(); ++i)
    if (t[i] == key) return i;
  return string_view::npos;
}

// The token after `key`, if both exist.
bool value_after(const std::vector<string_view>& t, string_view key, string_view& v) {
  const std::size_t i = find_tok(t, key);
  if (i == string_view::npos || i + 1 >= t.size()) return false;
  v = t[i + 1];
  return true;
}

// ---- payloads ---------------------------------------------------------------

bool fail(std::string& err, const char* why) {
  err = why;
  return false;
}

bool parse_kvm_exit(string_view p, KvmExit& e, std::string& err) {
  const auto t = split_ws(p);
  const std::size_t ri = find_tok(t, "reason");
  const std::size_t pi = find_tok(t, "rip");
  if (ri == string_view::npos || ri + 1 >= t.size()) return fail(err, "kvm_exit without reason");
  if (pi == string_view::npos || pi + 1 >= t.size() || pi < ri + 2)
    return fail(err, "kvm_exit without rip");
  e.reason = std::string(t[ri + 1]);
  e.flags.clear();
  for (std::size_t i = ri + 2; i < pi; ++i) {
    if (!e.flags.empty()) e.flags += ' ';
    e.flags += t[i];
  }
  if (!to_u64(t[pi + 1], 16, e.rip)) return fail(err, "kvm_exit: bad rip");
  string_view v;
  e.vcpu = -1;
  if (value_after(t, "vcpu", v) && !to_int(v, e.vcpu)) return fail(err, "kvm_exit: bad vcpu");
  if (find_tok(t, "info1") != string_view::npos) {  // ≈5.18+ format
    e.old_format = false;
    if (!value_after(t, "info1", v) || !to_u64(v, 16, e.info1))
      return fail(err, "kvm_exit: bad info1");
    if (value_after(t, "info2", v) && !to_u64(v, 16, e.info2))
      return fail(err, "kvm_exit: bad info2");
    if (value_after(t, "intr_info", v) && !to_uint(v, 16, e.intr_info))
      return fail(err, "kvm_exit: bad intr_info");
    if (value_after(t, "error_code", v) && !to_uint(v, 16, e.error_code))
      return fail(err, "kvm_exit: bad error_code");
    if (e.vcpu < 0) return fail(err, "kvm_exit: new format without vcpu");
    return true;
  }
  e.old_format = true;  // reason %s rip 0x%lx info %llx %llx [intr %x]
  const std::size_t ii = find_tok(t, "info");
  if (ii != string_view::npos) {
    if (ii + 2 >= t.size() || !to_u64(t[ii + 1], 16, e.info1) || !to_u64(t[ii + 2], 16, e.info2))
      return fail(err, "kvm_exit: bad info");
  }
  if (value_after(t, "intr", v) && !to_uint(v, 16, e.intr_info))
    return fail(err, "kvm_exit: bad intr");
  return true;
}

bool parse_kvm_entry(string_view p, KvmEntry& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 2 || t[0] != "vcpu" || !to_int(strip_suffix(t[1], ','), e.vcpu))
    return fail(err, "kvm_entry without vcpu");
  string_view v;
  if (value_after(t, "rip", v)) {
    std::uint64_t rip = 0;
    if (!to_u64(strip_suffix(v, ','), 16, rip)) return fail(err, "kvm_entry: bad rip");
    e.rip = rip;
  }
  e.immediate_exit = p.find("[immediate exit]") != string_view::npos;
  return true;
}

bool parse_kvm_msr(string_view p, KvmMsr& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 4 || (t[0] != "msr_read" && t[0] != "msr_write") || t[2] != "=")
    return fail(err, "kvm_msr: expected 'msr_read|msr_write MSR = VALUE'");
  e.write = t[0] == "msr_write";
  if (!to_uint(t[1], 16, e.msr) || !to_u64(t[3], 16, e.data))
    return fail(err, "kvm_msr: bad number");
  e.gp = p.find("(#GP)") != string_view::npos;
  return true;
}

bool parse_hv_timer_state(string_view p, KvmHvTimerState& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 4 || t[0] != "vcpu_id" || t[2] != "hv_timer" || !to_uint(t[1], 16, e.vcpu_id) ||
      !to_uint(t[3], 16, e.hv_timer))
    return fail(err, "kvm_hv_timer_state: expected 'vcpu_id X hv_timer X'");
  return true;
}

bool parse_wait_lapic_expire(string_view p, KvmWaitLapicExpire& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 4 || t[0] != "vcpu" || t[2] != "delta" ||
      !to_uint(strip_suffix(t[1], ':'), 10, e.vcpu) || !to_i64(t[3], e.delta))
    return fail(err, "kvm_wait_lapic_expire: expected 'vcpu N: delta D (early|late)'");
  return true;
}

bool parse_vcpu_wakeup(string_view p, KvmVcpuWakeup& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 6 || (t[0] != "wait" && t[0] != "poll") || t[1] != "time" || t[3] != "ns," ||
      t[4] != "polling" || (t[5] != "valid" && t[5] != "invalid") || !to_i64(t[2], e.ns))
    return fail(err, "kvm_vcpu_wakeup: expected 'wait|poll time N ns, polling valid|invalid'");
  e.waited = t[0] == "wait";
  e.valid = t[5] == "valid";
  return true;
}

bool parse_halt_poll_ns(string_view p, KvmHaltPollNs& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 6 || t[0] != "vcpu" || t[2] != "halt_poll_ns" ||
      (t[4] != "(grow" && t[4] != "(shrink") || !to_uint(strip_suffix(t[1], ':'), 10, e.vcpu) ||
      !to_uint(t[3], 10, e.new_ns) || !to_uint(strip_suffix(t[5], ')'), 10, e.old_ns))
    return fail(err, "kvm_halt_poll_ns: expected 'vcpu N: halt_poll_ns N (grow|shrink N)'");
  e.grow = t[4] == "(grow";
  return true;
}

bool parse_ple_window(string_view p, KvmPleWindow& e, std::string& err) {
  const auto t = split_ws(p);
  int nw = 0;
  int ow = 0;
  if (t.size() < 6 || t[0] != "vcpu" || t[2] != "ple_window" ||
      (t[4] != "(grow" && t[4] != "(shrink") || !to_uint(strip_suffix(t[1], ':'), 10, e.vcpu) ||
      !to_int(t[3], nw) || !to_int(strip_suffix(t[5], ')'), ow))
    return fail(err, "kvm_ple_window: expected 'vcpu N: ple_window N (grow|shrink N)'");
  e.grow = t[4] == "(grow";
  e.new_window = nw;
  e.old_window = ow;
  return true;
}

bool parse_ple_window_update(string_view p, KvmPleWindowUpdate& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 7 || t[0] != "vcpu" || t[2] != "old" || t[4] != "new" ||
      (t[6] != "(growed)" && t[6] != "(shrinked)") || !to_uint(t[1], 10, e.vcpu) ||
      !to_uint(t[3], 10, e.old_window) || !to_uint(t[5], 10, e.new_window))
    return fail(err, "kvm_ple_window_update: expected 'vcpu N old N new N (growed|shrinked)'");
  return true;
}

bool parse_apic_accept_irq(string_view p, KvmApicAcceptIrq& e, std::string& err) {
  const auto t = split_ws(p);
  const char* const msg = "kvm_apic_accept_irq: expected 'apicid X vec N (mode|edge|level)'";
  if (t.size() < 5 || t[0] != "apicid" || t[2] != "vec" || !to_uint(t[1], 16, e.apicid) ||
      !to_uint(t[3], 10, e.vec))
    return fail(err, msg);
  const string_view m = t[4];
  const std::size_t bar = m.find('|');
  if (m.size() < 4 || m.front() != '(' || m.back() != ')' || bar == string_view::npos)
    return fail(err, msg);
  const string_view tm = m.substr(bar + 1, m.size() - bar - 2);
  if (tm != "level" && tm != "edge") return fail(err, msg);
  e.delivery_mode = std::string(m.substr(1, bar - 1));
  e.level = tm == "level";
  e.coalesced = p.find("(coalesced)") != string_view::npos;
  return true;
}

// "nr 0x5 a0 0x0 a1 0x3 a2 0x0 a3 0x0" (hex, with or without 0x).
bool parse_hypercall(string_view p, KvmHypercall& e, std::string& err) {
  const auto t = split_ws(p);
  const char* const msg = "kvm_hypercall: expected 'nr 0xN a0 0xN a1 0xN a2 0xN a3 0xN'";
  if (t.size() < 10 || t[0] != "nr" || t[2] != "a0" || t[4] != "a1" || t[6] != "a2" || t[8] != "a3")
    return fail(err, msg);
  std::uint64_t* const f[5] = {&e.nr, &e.a0, &e.a1, &e.a2, &e.a3};
  for (int i = 0; i < 5; ++i) {
    string_view v = t[2 * static_cast<std::size_t>(i) + 1];
    if (starts_with(v, "0x")) v.remove_prefix(2);
    if (!to_uint(v, 16, *f[i])) return fail(err, msg);
  }
  return true;
}

// "IRQ 0xec", "Soft/INTn 0x80 [reinjected]" (v5.19+) or "irq 236" (before).
bool parse_inj_virq(string_view p, KvmInjVirq& e, std::string& err) {
  const auto t = split_ws(p);
  const char* const msg =
      "kvm_inj_virq: expected 'IRQ 0xN', 'Soft/INTn 0xN' (+ ' [reinjected]') or 'irq N'";
  if (t.size() < 2) return fail(err, msg);
  if (t[0] == "irq") {
    e.legacy = true;
    return to_uint(t[1], 10, e.vector) && e.vector <= 255 ? true : fail(err, msg);
  }
  if (t[0] != "IRQ" && t[0] != "Soft/INTn") return fail(err, msg);
  e.soft = t[0] == "Soft/INTn";
  string_view v = t[1];
  if (starts_with(v, "0x")) v.remove_prefix(2);
  if (!to_uint(v, 16, e.vector) || e.vector > 255) return fail(err, msg);
  e.reinjected = t.size() > 2 && t[2] == "[reinjected]";
  return true;
}

// "apicid 0 vector 236" (apicid hex, vector decimal).
bool parse_eoi(string_view p, KvmEoi& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 4 || t[0] != "apicid" || t[2] != "vector" || !to_uint(t[1], 16, e.apicid) ||
      !to_int(t[3], e.vector))
    return fail(err, "kvm_eoi: expected 'apicid X vector N'");
  return true;
}

// kvm_pv_eoi: kvm_eoi's fields.
bool parse_pv_eoi(string_view p, KvmPvEoi& e, std::string& err) {
  return parse_eoi(p, e, err) || fail(err, "kvm_pv_eoi: expected 'apicid X vector N'");
}

// "apic_write APIC_ICR = 0x40020" (read/write, the register's name or its
// offset in hex when the kernel's list has no name for it, the value in hex).
bool parse_kvm_apic(string_view p, KvmApic& e, std::string& err) {
  constexpr const char* msg = "kvm_apic: expected 'apic_write|apic_read REG = 0xVAL'";
  const auto t = split_ws(p);
  if (t.size() != 4 || t[2] != "=" || !starts_with(t[3], "0x")) return fail(err, msg);
  if (t[0] != "apic_write" && t[0] != "apic_read") return fail(err, msg);
  e.write = t[0] == "apic_write";
  if (const auto reg = apic_reg_from_name(t[1])) {
    e.reg = *reg;
  } else if (!starts_with(t[1], "0x") || !to_uint(t[1], 16, e.reg)) {  // to_u64 drops the 0x
    return fail(err, msg);
  }
  return to_uint(t[3], 16, e.val) ? true : fail(err, msg);
}

// "dst X vec N (Fixed|physical|assert|edge|dst)": icr_low is rebuilt from
// the decoded fields (vector, delivery mode, dest mode, level, trigger,
// shorthand), which is all the kernel prints of it.
bool parse_apic_ipi(string_view p, KvmApicIpi& e, std::string& err) {
  const auto t = split_ws(p);
  const char* const msg =
      "kvm_apic_ipi: expected 'dst X vec N (mode|physical|assert|edge|shorthand)'";
  unsigned vec = 0;
  if (t.size() < 5 || t[0] != "dst" || t[2] != "vec" || !to_uint(t[1], 16, e.dest_id) ||
      !to_uint(t[3], 10, vec) || vec > 255)
    return fail(err, msg);
  string_view m = t[4];
  if (m.size() < 3 || m.front() != '(' || m.back() != ')') return fail(err, msg);
  m = m.substr(1, m.size() - 2);
  std::array<string_view, 5> f{};
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::size_t bar = m.find('|');
    if ((bar == string_view::npos) != (i + 1 == f.size())) return fail(err, msg);
    f[i] = m.substr(0, bar);
    if (bar != string_view::npos) m.remove_prefix(bar + 1);
  }
  static constexpr std::array<string_view, 8> kMode = {"Fixed", "LowPrio", "SMI",  "Res3",
                                                       "NMI",   "INIT",    "SIPI", "ExtINT"};
  static constexpr std::array<string_view, 4> kShort = {"dst", "self", "all", "all-but-self"};
  std::uint32_t mode = 8;
  std::uint32_t shorthand = 4;
  for (std::uint32_t i = 0; i < kMode.size(); ++i)
    if (f[0] == kMode[i]) mode = i;
  for (std::uint32_t i = 0; i < kShort.size(); ++i)
    if (f[4] == kShort[i]) shorthand = i;
  if (mode == 8 || shorthand == 4 || (f[1] != "logical" && f[1] != "physical") ||
      (f[2] != "assert" && f[2] != "de-assert") || (f[3] != "level" && f[3] != "edge"))
    return fail(err, msg);
  e.icr_low = vec | mode << 8 | (f[1] == "logical" ? 1U << 11 : 0) |
              (f[2] == "assert" ? 1U << 14 : 0) | (f[3] == "level" ? 1U << 15 : 0) |
              shorthand << 18;
  return true;
}

bool parse_pv_tlb_flush(string_view p, KvmPvTlbFlush& e, std::string& err) {
  const auto t = split_ws(p);
  if (t.size() < 4 || t[0] != "vcpu" || t[2] != "need_flush_tlb" || !to_uint(t[1], 10, e.vcpu) ||
      (t[3] != "true" && t[3] != "false"))
    return fail(err, "kvm_pv_tlb_flush: expected 'vcpu N need_flush_tlb true|false'");
  e.need_flush_tlb = t[3] == "true";
  return true;
}

// "key=value" fields of the raw sched formats, where values may hold spaces
// (comm): the value of `key` runs to the next " <other key>=" in `keys`.
bool raw_field(string_view p, string_view key, std::initializer_list<string_view> next_keys,
               string_view& v) {
  std::size_t b = string_view::npos;
  for (std::size_t at = p.find(key); at != string_view::npos; at = p.find(key, at + 1)) {
    if (at == 0 || is_space(p[at - 1])) {
      b = at + key.size();
      break;
    }
  }
  if (b == string_view::npos) return false;
  std::size_t e = p.size();
  for (const string_view nk : next_keys) {
    const std::size_t at = p.find(nk, b);
    if (at != string_view::npos && at < e) e = at;
  }
  v = trim(p.substr(b, e - b));
  return true;
}

// Plugin form "comm:pid [prio]" at the start of `s`; `rest` gets what follows.
bool comm_pid_prio(string_view s, std::string& comm, int& pid, int& prio, string_view& rest) {
  for (std::size_t br = s.find(" ["); br != string_view::npos; br = s.find(" [", br + 1)) {
    const std::size_t close = s.find(']', br);
    const std::size_t colon = s.rfind(':', br);
    if (close == string_view::npos || colon == string_view::npos) continue;
    if (!to_int(s.substr(colon + 1, br - colon - 1), pid)) continue;
    if (!to_int(s.substr(br + 2, close - br - 2), prio)) continue;
    comm = std::string(s.substr(0, colon));
    rest = s.substr(close + 1);
    return true;
  }
  return false;
}

bool parse_sched_switch(string_view p, SchedSwitch& e, std::string& err) {
  if (p.find("prev_comm=") != string_view::npos) {  // raw kernel format
    string_view c1;
    string_view pid1;
    string_view pr1;
    string_view st;
    string_view c2;
    string_view pid2;
    string_view pr2;
    const bool ok = raw_field(p, "prev_comm=", {" prev_pid="}, c1) &&
                    raw_field(p, "prev_pid=", {" prev_prio="}, pid1) &&
                    raw_field(p, "prev_prio=", {" prev_state="}, pr1) &&
                    raw_field(p, "prev_state=", {" ==>"}, st) &&
                    raw_field(p, "next_comm=", {" next_pid="}, c2) &&
                    raw_field(p, "next_pid=", {" next_prio="}, pid2) &&
                    raw_field(p, "next_prio=", {" "}, pr2) && to_int(pid1, e.prev_pid) &&
                    to_int(pr1, e.prev_prio) && to_int(pid2, e.next_pid) &&
                    to_int(pr2, e.next_prio);
    if (!ok) return fail(err, "sched_switch: bad prev_comm=... ==> next_comm=... fields");
    e.prev_comm = std::string(c1);
    e.prev_state = std::string(st);
    e.next_comm = std::string(c2);
    return true;
  }
  const std::size_t arrow = p.find(" ==> ");
  string_view state;
  string_view rest;
  if (arrow == string_view::npos ||
      !comm_pid_prio(p.substr(0, arrow), e.prev_comm, e.prev_pid, e.prev_prio, state) ||
      trim(state).empty() ||
      !comm_pid_prio(p.substr(arrow + 5), e.next_comm, e.next_pid, e.next_prio, rest))
    return fail(err, "sched_switch: expected 'comm:pid [prio] STATE ==> comm:pid [prio]'");
  e.prev_state = std::string(trim(state));
  return true;
}

bool parse_sched_wakeup(string_view p, SchedWakeup& e, std::string& err) {
  string_view v;
  if (starts_with(p, "comm=")) {  // raw kernel format
    string_view c;
    string_view pid;
    string_view prio;
    string_view cpu;
    const bool ok = raw_field(p, "comm=", {" pid="}, c) && raw_field(p, "pid=", {" "}, pid) &&
                    raw_field(p, "prio=", {" "}, prio) && raw_field(p, "target_cpu=", {" "}, cpu) &&
                    to_int(pid, e.pid) && to_int(prio, e.prio) && to_int(cpu, e.target_cpu);
    if (!ok) return fail(err, "sched_wakeup: bad comm=... target_cpu=... fields");
    e.comm = std::string(c);
    e.success.reset();
    int s = 0;
    if (raw_field(p, "success=", {" "}, v)) {
      if (!to_int(v, s)) return fail(err, "sched_wakeup: bad success");
      e.success = s;
    }
    return true;
  }
  string_view rest;
  if (!comm_pid_prio(p, e.comm, e.pid, e.prio, rest))
    return fail(err, "sched_wakeup: expected 'comm:pid [prio] CPU:NNN'");
  const auto t = split_ws(rest);
  bool have_cpu = false;
  e.success.reset();
  for (const string_view w : t) {
    int s = 0;
    if (starts_with(w, "success=") && to_int(w.substr(8), s)) e.success = s;
    if (starts_with(w, "CPU:") && to_int(w.substr(4), e.target_cpu)) have_cpu = true;
  }
  if (!have_cpu) return fail(err, "sched_wakeup: no CPU:NNN");
  return true;
}

constexpr std::array<string_view, 19> kKnown = {"kvm_apic_ipi",
                                                "kvm_exit",
                                                "kvm_entry",
                                                "kvm_msr",
                                                "kvm_hv_timer_state",
                                                "kvm_wait_lapic_expire",
                                                "kvm_vcpu_wakeup",
                                                "kvm_halt_poll_ns",
                                                "kvm_apic_accept_irq",
                                                "kvm_pv_tlb_flush",
                                                "sched_switch",
                                                "sched_wakeup",
                                                "kvm_hypercall",
                                                "kvm_ple_window",
                                                "kvm_ple_window_update",
                                                "kvm_inj_virq",
                                                "kvm_eoi",
                                                "kvm_pv_eoi",
                                                "kvm_apic"};

template <class T, class F>
TraceEventData parse_as(string_view p, std::string& err, F f) {
  T v;
  if (!f(p, v, err)) return std::monostate{};
  return v;
}

// ---- framing ----------------------------------------------------------------

bool is_header(string_view s) {
  if (starts_with(s, "cpus=") && all_digits(s.substr(5))) return true;
  if (starts_with(s, "version = ") && all_digits(s.substr(10))) return true;
  if (starts_with(s, "CPU ") && ends_with(s, " is empty")) {
    return all_digits(s.substr(4, s.size() - 4 - 9));
  }
  if (starts_with(s, "CPU:")) {  // CPU:N [EVENTS DROPPED], [N EVENTS DROPPED], [SUBBUFFER START]
    const std::size_t sp = s.find(' ');
    return sp != string_view::npos && all_digits(s.substr(4, sp - 4)) && s[sp + 1] == '[' &&
           s.back() == ']';
  }
  return false;
}

// "<digits>[.<digits>]:" -> ts (ns, or raw count).
bool timestamp_token(string_view t, std::int64_t& ts, bool& raw) {
  if (t.size() < 2 || t.back() != ':') return false;
  t.remove_suffix(1);
  const std::size_t dot = t.find('.');
  if (dot == string_view::npos) {
    if (!all_digits(t)) return false;
    raw = true;
    return to_i64(t, ts);
  }
  const string_view sec = t.substr(0, dot);
  const string_view frac = t.substr(dot + 1);
  if (!all_digits(sec) || !all_digits(frac)) return false;
  std::int64_t s = 0;
  if (!to_i64(sec, s) || s > std::numeric_limits<std::int64_t>::max() / 1000000000 - 1)
    return false;
  std::int64_t f = 0;
  for (std::size_t i = 0; i < 9; ++i) f = f * 10 + (i < frac.size() ? frac[i] - '0' : 0);
  ts = s * 1000000000 + f;
  raw = false;
  return true;
}

// "name:" or "sys:name:" (event token, trailing colon included).
bool event_token(string_view t, string_view& sys, string_view& name) {
  if (t.size() < 2 || t.back() != ':') return false;
  t.remove_suffix(1);
  const std::size_t colon = t.find(':');
  sys = colon == string_view::npos ? string_view{} : t.substr(0, colon);
  name = colon == string_view::npos ? t : t.substr(colon + 1);
  auto ident = [](string_view s) {
    if (s.empty() || !(is_alpha(s[0]) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
  };
  return ident(name) && (colon == string_view::npos || ident(sys));
}

bool flags_token(string_view t) {
  if (t.empty() || t.size() > 8) return false;
  return std::all_of(t.begin(), t.end(),
                     [](char c) { return is_alpha(c) || is_digit(c) || c == '.'; });
}

bool cpu_token(string_view t, int& cpu) {
  return t.size() >= 3 && t.front() == '[' && t.back() == ']' &&
         all_digits(t.substr(1, t.size() - 2)) && to_int(t.substr(1, t.size() - 2), cpu);
}

// Splits off the last whitespace-separated token of `s` (already rtrimmed).
string_view last_token(string_view s, string_view& before) {
  std::size_t i = s.size();
  while (i > 0 && !is_space(s[i - 1])) --i;
  before = rtrim(s.substr(0, i));
  return s.substr(i);
}

// Everything before the timestamp: "<comm>-<pid> [cpu] flags" and variants.
bool parse_prefix(string_view s, TraceRecord& r) {
  s = rtrim(s);
  if (s.empty()) return true;
  string_view before;
  const string_view last = last_token(s, before);
  if (cpu_token(last, r.cpu)) {
    s = before;
  } else {
    string_view before2;
    const string_view prev = before.empty() ? string_view{} : last_token(before, before2);
    if (flags_token(last) && cpu_token(prev, r.cpu)) {
      r.flags = std::string(last);
      s = before2;
    } else {
      // trace-cmd report -l: "<cpu><flags>", e.g. "1d..3"; or flags alone
      // ("dN.2.", no cpu column) after "<comm>-<pid>".
      // Otherwise no cpu column at all (perf script -F without cpu): the
      // last token must then end the "<comm>-<pid>" / "<comm> <pid>" part.
      std::size_t d = 0;
      while (d < last.size() && is_digit(last[d])) ++d;
      const string_view fl = last.substr(d);
      const bool flags_ok =
          d < last.size() && fl.size() >= 3 && flags_token(fl) &&
          (d > 0 ? to_int(last.substr(0, d), r.cpu)
                 : fl.find('.') != string_view::npos && !before.empty() && is_digit(before.back()));
      if (flags_ok) {
        r.flags = std::string(fl);
        s = before;
      } else if (!is_digit(last.back())) {
        return fail(r.error, "no [cpu] column before the timestamp");
      }
      if (!flags_ok) r.cpu = -1;
    }
  }
  // Optional "(tgid)" column (record-tgid option).
  if (!s.empty() && s.back() == ')') {
    const std::size_t open = s.rfind('(');
    if (open != string_view::npos) {
      const string_view in = trim(s.substr(open + 1, s.size() - open - 2));
      if (all_digits(in) || in.find_first_not_of('-') == string_view::npos)
        s = rtrim(s.substr(0, open));
    }
  }
  if (s.empty()) return true;
  // "<comm>-<pid>", "<comm> <pid>" or perf's "<comm> <pid>/<tid>".
  std::size_t i = s.size();
  while (i > 0 && is_digit(s[i - 1])) --i;
  if (i > 1 && s[i - 1] == '/' && i < s.size()) {  // pid/tid: keep the thread id
    std::size_t j = i - 1;
    while (j > 0 && is_digit(s[j - 1])) --j;
    if (j < i - 1) {
      if (!to_int(s.substr(i), r.pid)) return fail(r.error, "bad pid");
      i = j;
      if (i == 0 || (s[i - 1] != '-' && !is_space(s[i - 1])))
        return fail(r.error, "no pid before the cpu column");
      r.comm = std::string(trim(s.substr(0, i - 1)));
      return true;
    }
  }
  if (i == s.size() || i == 0 || (s[i - 1] != '-' && !is_space(s[i - 1])))
    return fail(r.error, "no pid before the cpu column");
  if (!to_int(s.substr(i), r.pid)) return fail(r.error, "bad pid");
  r.comm = std::string(trim(s.substr(0, i - 1)));
  return true;
}

}  // namespace

bool is_known_event(std::string_view event) {
  return std::any_of(kKnown.begin(), kKnown.end(), [&](auto k) { return k == event; });
}

TraceEventData parse_payload(std::string_view event, std::string_view p, std::string& err) {
  err.clear();
  if (event == "kvm_exit") return parse_as<KvmExit>(p, err, parse_kvm_exit);
  if (event == "kvm_entry") return parse_as<KvmEntry>(p, err, parse_kvm_entry);
  if (event == "kvm_msr") return parse_as<KvmMsr>(p, err, parse_kvm_msr);
  if (event == "kvm_hv_timer_state") return parse_as<KvmHvTimerState>(p, err, parse_hv_timer_state);
  if (event == "kvm_wait_lapic_expire")
    return parse_as<KvmWaitLapicExpire>(p, err, parse_wait_lapic_expire);
  if (event == "kvm_vcpu_wakeup") return parse_as<KvmVcpuWakeup>(p, err, parse_vcpu_wakeup);
  if (event == "kvm_halt_poll_ns") return parse_as<KvmHaltPollNs>(p, err, parse_halt_poll_ns);
  if (event == "kvm_apic_accept_irq")
    return parse_as<KvmApicAcceptIrq>(p, err, parse_apic_accept_irq);
  if (event == "kvm_apic_ipi") return parse_as<KvmApicIpi>(p, err, parse_apic_ipi);
  if (event == "kvm_hypercall") return parse_as<KvmHypercall>(p, err, parse_hypercall);
  if (event == "kvm_inj_virq") return parse_as<KvmInjVirq>(p, err, parse_inj_virq);
  if (event == "kvm_eoi") return parse_as<KvmEoi>(p, err, parse_eoi);
  if (event == "kvm_pv_eoi") return parse_as<KvmPvEoi>(p, err, parse_pv_eoi);
  if (event == "kvm_apic") return parse_as<KvmApic>(p, err, parse_kvm_apic);
  if (event == "kvm_ple_window") return parse_as<KvmPleWindow>(p, err, parse_ple_window);
  if (event == "kvm_ple_window_update")
    return parse_as<KvmPleWindowUpdate>(p, err, parse_ple_window_update);
  if (event == "kvm_pv_tlb_flush") return parse_as<KvmPvTlbFlush>(p, err, parse_pv_tlb_flush);
  if (event == "sched_switch") return parse_as<SchedSwitch>(p, err, parse_sched_switch);
  if (event == "sched_wakeup") return parse_as<SchedWakeup>(p, err, parse_sched_wakeup);
  return std::monostate{};
}

TraceRecord parse_trace_line(std::string_view line, std::size_t line_no) {
  TraceRecord r;
  r.line_no = line_no;
  const string_view s = rtrim(line);
  const string_view body = ltrim(s);
  if (body.empty()) {
    r.kind = LineKind::Blank;
    return r;
  }
  if (body[0] == '#') {
    r.kind = LineKind::Comment;
    return r;
  }
  if (is_header(body)) {
    r.kind = LineKind::Header;
    return r;
  }
  if (starts_with(body, "=>")) {
    r.kind = LineKind::Continuation;
    return r;
  }

  // The first "<timestamp>: [(+delta)] <event>:" token sequence.
  r.kind = LineKind::Malformed;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t tb = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    const string_view tok = s.substr(tb, i - tb);
    if (tok.empty() || !is_digit(tok[0])) continue;
    std::int64_t ts = 0;
    bool raw = false;
    if (!timestamp_token(tok, ts, raw)) continue;
    std::size_t j = i;
    auto next = [&s, &j]() {
      while (j < s.size() && is_space(s[j])) ++j;
      const std::size_t b = j;
      while (j < s.size() && !is_space(s[j])) ++j;
      return s.substr(b, j - b);
    };
    string_view ev = next();
    if (starts_with(ev, "(+") && ev.back() == ')') ev = next();  // latency delta column
    string_view sys;
    string_view name;
    if (!event_token(ev, sys, name)) continue;
    if (!parse_prefix(s.substr(0, tb), r)) return r;  // r.error set
    r.kind = LineKind::Event;
    r.ts = ts;
    r.raw_clock = raw;
    r.system = std::string(sys);
    r.event = std::string(name);
    r.payload = std::string(trim(s.substr(j)));
    r.known_event = is_known_event(r.event);
    if (r.known_event) r.data = parse_payload(r.event, r.payload, r.error);
    return r;
  }
  r.error = "no '<timestamp>: <event>:' in the line";
  return r;
}

std::size_t parse_trace(std::istream& in, const std::function<void(const TraceRecord&)>& sink) {
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) sink(parse_trace_line(line, ++n));
  return n;
}

}  // namespace kvmsim::trace
