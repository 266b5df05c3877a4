#include "sim/views/perfetto_observer.h"

#include "sim/core/model_signals.h"
#include "sim/lapic/lapic_signals.h"
#include "sim/vmx/kvm_signals.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/core/context.h"
#include "sim/core/output_errors.h"
#include "sim/views/stage_info.h"
#include "sim/vmx/exit_reason.h"

namespace kvmsim::views {
namespace {

constexpr std::size_t kFlushBytes = 1 << 16;

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string_view msr_event_name(std::uint32_t msr) {
  if (msr == MSR_IA32_TSC_DEADLINE) return "wrmsr IA32_TSC_DEADLINE";
  if (msr == MSR_X2APIC_EOI) return "wrmsr x2APIC EOI";
  if (msr == MSR_X2APIC_ICR) return "wrmsr x2APIC ICR";
  return "wrmsr";
}

}  // namespace

void PerfettoObserver::connect(SignalRegistry& signals) {
  auto& model = signals.get<ModelSignals>();
  model.segment.connect<&PerfettoObserver::on_segment>(this);
  model.timer_armed.connect<&PerfettoObserver::on_timer_armed>(this);
  model.latency_sample.connect<&PerfettoObserver::on_latency_sample>(this);
  auto& kvm = signals.get<KvmSignals>();
  kvm.kvm_exit.connect<&PerfettoObserver::on_vmexit>(this);
  kvm.kvm_entry.connect<&PerfettoObserver::on_vmentry>(this);
  kvm.vcpu_poll.connect<&PerfettoObserver::on_vcpu_poll>(this);
  kvm.vcpu_block.connect<&PerfettoObserver::on_vcpu_block>(this);
  kvm.kvm_vcpu_wakeup.connect<&PerfettoObserver::on_vcpu_wakeup>(this);
  kvm.kvm_msr_write.connect<&PerfettoObserver::on_msr_write>(this);
  auto& lapic = signals.get<LapicSignals>();
  lapic.kvm_hv_timer_state.connect<&PerfettoObserver::on_hv_timer_state>(this);
  lapic.kvm_wait_lapic_expire.connect<&PerfettoObserver::on_wait_lapic_expire>(this);
}

PerfettoObserver::PerfettoObserver(const std::string& path, TscClock clock, Tsc limit,
                                   const std::vector<int>& pcpus,
                                   const std::vector<ViewVcpu>& vcpus)
    : path_(path), clock_(clock), limit_(limit) {
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error("--perfetto: cannot write " + path);
  buf_.reserve(kFlushBytes + 4096);
  int max_id = 0;
  for (const int c : pcpus) max_id = std::max(max_id, c);
  pcpu_index_.assign(static_cast<std::size_t>(max_id) + 1, -1);
  for (const int c : pcpus) {
    if (pcpu_index_[static_cast<std::size_t>(c)] >= 0) continue;
    pcpu_index_[static_cast<std::size_t>(c)] = static_cast<int>(pcpus_.size());
    PcpuState p;
    p.id = c;
    pcpus_.push_back(p);
  }
  for (const auto& v : vcpus) {
    VcpuState s;
    s.id = v.id;
    s.pcpu = v.pcpu;
    if (static_cast<std::size_t>(v.id) >= vcpus_.size())
      vcpus_.resize(static_cast<std::size_t>(v.id) + 1);
    vcpus_[static_cast<std::size_t>(v.id)] = s;
  }

  buf_ += R"({"traceEvents":[)";
  for (const auto& p : pcpus_) {
    const int pid = kPcpuPidBase + p.id;
    const std::string name = fmt::format("pCPU {}", p.id);
    metadata("process_name", pid, pid, "name", name);
    metadata("process_sort_index", pid, pid, "sort_index", std::to_string(p.id));
    metadata("thread_name", pid, pid, "name", name);
  }
  for (const auto& v : vcpus) {
    const int pid = kVcpuPidBase + v.id;
    metadata("process_name", pid, pid, "name", fmt::format("vCPU {} ({})", v.id, v.comm));
    metadata("process_sort_index", pid, pid, "sort_index", std::to_string(pid));
    metadata("thread_name", pid, pid, "name", "mode");
    metadata("thread_sort_index", pid, pid, "sort_index", "0");
    metadata("thread_name", pid, kVcpuTimerTidBase + v.id, "name", "timer");
    metadata("thread_sort_index", pid, kVcpuTimerTidBase + v.id, "sort_index", "1");
  }
}

PerfettoObserver::~PerfettoObserver() {
  try {
    finish(now_tsc());
  } catch (...) {  // a destructor must not throw; the file stays incomplete
  }
}

PerfettoObserver::PcpuState* PerfettoObserver::pcpu_state(int pcpu) {
  if (pcpu < 0 || static_cast<std::size_t>(pcpu) >= pcpu_index_.size()) return nullptr;
  const int i = pcpu_index_[static_cast<std::size_t>(pcpu)];
  return i < 0 ? nullptr : &pcpus_[static_cast<std::size_t>(i)];
}

PerfettoObserver::VcpuState* PerfettoObserver::vcpu_state(int vcpu) {
  if (vcpu < 0 || static_cast<std::size_t>(vcpu) >= vcpus_.size()) return nullptr;
  return &vcpus_[static_cast<std::size_t>(vcpu)];
}

bool PerfettoObserver::past_limit(Tsc t) {
  if (done_) return true;
  if (t < limit_) return false;
  finish(limit_);
  return true;
}

std::int64_t PerfettoObserver::last_segment_mid_ns(const PcpuState& p) const {
  const std::uint64_t b = ns(p.last_begin);
  const std::uint64_t e = ns(p.last_end);
  return static_cast<std::int64_t>(b + (e - b) / 2);
}

// --- writing ---------------------------------------------------------------

void PerfettoObserver::put_ts_value(std::uint64_t v) {
  fmt::format_to(std::back_inserter(buf_), "{}.{:03}", v / 1000, v % 1000);
}

void PerfettoObserver::begin_event(char ph, std::string_view name, std::string_view cat, int pid,
                                   int tid, std::uint64_t ts_ns) {
  buf_ += first_event_ ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
  first_event_ = false;
  buf_ += ph;
  buf_ += R"(","name":)";
  append_json_string(buf_, name);
  buf_ += R"(,"cat":)";
  append_json_string(buf_, cat);
  fmt::format_to(std::back_inserter(buf_), R"(,"pid":{},"tid":{},"ts":)", pid, tid);
  put_ts_value(ts_ns);
}

void PerfettoObserver::put_dur(std::uint64_t dur_ns) {
  buf_ += R"(,"dur":)";
  put_ts_value(dur_ns);
}

void PerfettoObserver::end_event() {
  buf_ += '}';
  ++events_;
  flush_if_full();
}

void PerfettoObserver::write_buffer() {
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  bytes_ += buf_.size();
  buf_.clear();
  if (!out_) output_failed(path_, "writing the Perfetto trace failed", errno);
}

void PerfettoObserver::flush_if_full() {
  if (buf_.size() < kFlushBytes) return;
  write_buffer();
  if (bytes_ < kMaxBytes || done_) return;
  capped_ = true;
  const Tsc now = now_tsc();
  std::fprintf(stderr,
               "kvmsim: warning: --perfetto: the file reached its size cap of %llu MiB at "
               "%.3f ms simulated; it ends there (valid JSON). Choose a shorter "
               "--perfetto-limit-ms to see the whole span.\n",
               static_cast<unsigned long long>(kMaxBytes >> 20), clock_.to_ns(double(now)) / 1e6);
  finish(now);
}

void PerfettoObserver::complete(std::string_view name, std::string_view cat, int pid, int tid,
                                Tsc b, Tsc e) {
  begin_event('X', name, cat, pid, tid, ns(b));
  put_dur(ns(e) - ns(b));
}

void PerfettoObserver::metadata(std::string_view what, int pid, int tid, std::string_view key,
                                std::string_view value) {
  buf_ += first_event_ ? "\n{\"ph\":\"M\",\"name\":" : ",\n{\"ph\":\"M\",\"name\":";
  first_event_ = false;
  append_json_string(buf_, what);
  fmt::format_to(std::back_inserter(buf_), R"(,"pid":{},"tid":{},"args":{{"{}":)", pid, tid, key);
  if (key == "sort_index")
    buf_ += value;  // a number
  else
    append_json_string(buf_, value);
  buf_ += '}';
  end_event();
}

void PerfettoObserver::finish(Tsc end) {
  if (done_) return;
  done_ = true;
  const Tsc cap = std::min(end, limit_);
  for (const auto& v : vcpus_) {
    if (v.mode_begin >= cap) continue;
    const int pid = kVcpuPidBase + v.id;
    complete(vcpu_mode_name(v.mode), "vcpu", pid, pid, v.mode_begin, cap);
    end_event();
  }
  buf_ += "\n]}\n";
  write_buffer();
  buf_.shrink_to_fit();
  out_.close();
  if (!out_) output_failed(path_, "closing the Perfetto trace failed", errno);
}

// --- hooks -----------------------------------------------------------------

void PerfettoObserver::on_segment(int pcpu, Stage stage, Tsc begin, Tsc end) {
  if (done_) return;
  if (past_limit(begin)) return;
  PcpuState* p = pcpu_state(pcpu);
  if (!p) return;
  const int pid = kPcpuPidBase + pcpu;
  complete(stage_name(stage), stage_category(stage), pid, pid, begin, end);
  buf_ += R"(,"args":{"kernel":)";
  append_json_string(buf_, stage_explanation(stage));
  buf_ += '}';
  end_event();
  p->last_begin = begin;
  p->last_end = end;
  p->has_last = true;
  if (p->flow_start_vcpu >= 0) {
    if (VcpuState* v = vcpu_state(p->flow_start_vcpu)) v->flow_start_ns = last_segment_mid_ns(*p);
    p->flow_start_vcpu = -1;
  }
  past_limit(end);
}

void PerfettoObserver::set_vcpu_mode(int vcpu, VcpuMode mode, Tsc t, std::string_view why) {
  if (past_limit(t)) return;
  VcpuState* v = vcpu_state(vcpu);
  if (!v) return;
  if (t > v->mode_begin) {
    const int pid = kVcpuPidBase + vcpu;
    complete(vcpu_mode_name(v->mode), "vcpu", pid, pid, v->mode_begin, t);
    if (!v->mode_why.empty()) {
      buf_ += R"(,"args":{"exit_reason":)";
      append_json_string(buf_, v->mode_why);
      buf_ += '}';
    }
    end_event();
  }
  v->mode = mode;
  v->mode_begin = t;
  v->mode_why = why;
}

void PerfettoObserver::on_vmexit(int vcpu, int pcpu, ExitReason reason, Tsc t) {
  if (past_limit(t)) return;
  set_vcpu_mode(vcpu, VcpuMode::Root, t, exit_reason_name(reason));
  const int pid = kVcpuPidBase + vcpu;
  begin_event('i', "kvm_exit", "vmx", pid, pid, ns(t));
  buf_ += R"(,"s":"t","args":{"reason":)";
  append_json_string(buf_, exit_reason_name(reason));
  fmt::format_to(std::back_inserter(buf_), R"(,"pcpu":{}}})", pcpu);
  end_event();
}

void PerfettoObserver::on_vmentry(int vcpu, int pcpu, Tsc t) {
  if (past_limit(t)) return;
  set_vcpu_mode(vcpu, VcpuMode::Guest, t);
  vcpu_instant(vcpu, pcpu, "kvm_entry", t);
}

// An instant on the vCPU's mode track, tagged with the pCPU it ran on.
void PerfettoObserver::vcpu_instant(int vcpu, int pcpu, const char* name, Tsc t) {
  const int pid = kVcpuPidBase + vcpu;
  begin_event('i', name, "vmx", pid, pid, ns(t));
  fmt::format_to(std::back_inserter(buf_), R"(,"s":"t","args":{{"pcpu":{}}})", pcpu);
  end_event();
}

void PerfettoObserver::on_timer_armed(int vcpu, int pcpu, Tsc deadline) {
  const Tsc t = now_tsc();
  if (past_limit(t)) return;
  VcpuState* v = vcpu_state(vcpu);
  PcpuState* p = pcpu_state(pcpu);
  if (!v || !p) return;
  const int pid = kVcpuPidBase + vcpu;
  if (v->armed) {
    // Re-armed without a sample (vmexit.flat, or the first interrupt of
    // tscdeadline_latency): the previous arming ends here.
    const Tsc end = std::max(v->arm_t, std::min(v->arm_deadline, t));
    complete("timer armed", "timer", pid, kVcpuTimerTidBase + vcpu, v->arm_t, end);
    buf_ += R"(,"args":{"sampled":false})";
    end_event();
  }
  v->armed = true;
  v->arm_t = t;
  v->arm_deadline = deadline;
  v->pcpu = pcpu;
  // The segment that armed the timer ends now (it was reported just before);
  // otherwise the flow starts on the next one.
  if (p->has_last && p->last_end == t) {
    v->flow_start_ns = last_segment_mid_ns(*p);
  } else {
    v->flow_start_ns = -1;
    p->flow_start_vcpu = vcpu;
  }
}

void PerfettoObserver::on_latency_sample(int vcpu, int pcpu, Tsc deadline, Tsc t,
                                         std::int64_t latency_ns) {
  if (past_limit(t)) return;
  VcpuState* v = vcpu_state(vcpu);
  PcpuState* p = pcpu_state(pcpu);
  if (!v || !p) return;
  ++v->samples;
  const int pid = kVcpuPidBase + vcpu;
  const int tid = kVcpuTimerTidBase + vcpu;
  if (v->armed) {
    const Tsc end = std::max(v->arm_t, std::min(deadline, t));
    complete("timer armed", "timer", pid, tid, v->arm_t, end);
    fmt::format_to(
        std::back_inserter(buf_), R"(,"args":{{"deadline_after_arming_ns":{}}})",
        static_cast<std::int64_t>(ns(deadline)) - static_cast<std::int64_t>(ns(v->arm_t)));
    end_event();
  }
  if (t > deadline) {
    complete("wake-up latency", "timer", pid, tid, deadline, t);
    fmt::format_to(std::back_inserter(buf_), R"(,"args":{{"latency_ns":{},"sample":{}}})",
                   latency_ns, v->samples);
    end_event();
  }
  // The arrow: from the segment that armed the timer to the one that ended
  // with the measurement (reported just before this call), on the pCPU tracks.
  if (v->armed && v->flow_start_ns >= 0 && p->has_last) {
    const std::uint64_t id = ++flows_;
    const int from = kPcpuPidBase + v->pcpu;
    begin_event('s', "timer interrupt", "timer", from, from,
                static_cast<std::uint64_t>(v->flow_start_ns));
    fmt::format_to(std::back_inserter(buf_), R"(,"id":{})", id);
    end_event();
    const int to = kPcpuPidBase + pcpu;
    begin_event('f', "timer interrupt", "timer", to, to,
                static_cast<std::uint64_t>(last_segment_mid_ns(*p)));
    fmt::format_to(std::back_inserter(buf_), R"(,"id":{},"bp":"e")", id);
    end_event();
  }
  v->armed = false;
}

void PerfettoObserver::on_vcpu_poll(int vcpu, int /*pcpu*/, Tsc t) {
  set_vcpu_mode(vcpu, VcpuMode::Polling, t, "HLT (halt polling)");
}

void PerfettoObserver::on_vcpu_block(int vcpu, int pcpu, Tsc t) {
  if (past_limit(t)) return;
  set_vcpu_mode(vcpu, VcpuMode::Halted, t);
  vcpu_instant(vcpu, pcpu, "kvm_vcpu_block", t);
}

void PerfettoObserver::on_vcpu_wakeup(int vcpu, bool waited, std::int64_t wait_ns, Tsc t) {
  if (past_limit(t)) return;
  set_vcpu_mode(vcpu, VcpuMode::Root, t, "HLT (woken)");
  const int pid = kVcpuPidBase + vcpu;
  begin_event('i', "kvm_vcpu_wakeup", "vmx", pid, pid, ns(t));
  fmt::format_to(std::back_inserter(buf_), R"(,"s":"t","args":{{"waited":{},"ns":{}}})",
                 waited ? "true" : "false", wait_ns);
  end_event();
}

void PerfettoObserver::on_hv_timer_state(int vcpu, bool hv_timer, Tsc t) {
  if (past_limit(t) || !vcpu_state(vcpu)) return;
  begin_event('i', "kvm_hv_timer_state", "timer", kVcpuPidBase + vcpu, kVcpuTimerTidBase + vcpu,
              ns(t));
  fmt::format_to(std::back_inserter(buf_), R"(,"s":"t","args":{{"hv_timer":{}}})",
                 hv_timer ? 1 : 0);
  end_event();
}

void PerfettoObserver::on_wait_lapic_expire(int vcpu, std::int64_t delta, Tsc t) {
  if (past_limit(t) || !vcpu_state(vcpu)) return;
  begin_event('i', "kvm_wait_lapic_expire", "timer", kVcpuPidBase + vcpu, kVcpuTimerTidBase + vcpu,
              ns(t));
  fmt::format_to(std::back_inserter(buf_),
                 R"(,"s":"t","args":{{"delta_guest_cycles":{},"early":{}}})", delta,
                 delta < 0 ? "true" : "false");
  end_event();
}

void PerfettoObserver::on_msr_write(int vcpu, std::uint32_t msr, std::uint64_t value, Tsc t) {
  if (past_limit(t) || !vcpu_state(vcpu)) return;
  begin_event('i', msr_event_name(msr), "timer", kVcpuPidBase + vcpu, kVcpuTimerTidBase + vcpu,
              ns(t));
  fmt::format_to(std::back_inserter(buf_), R"(,"s":"t","args":{{"msr":"{:#x}","value":{}}})", msr,
                 value);
  end_event();
}

}  // namespace kvmsim::views
