#include "sim/views/vcd_observer.h"

#include "sim/core/model_signals.h"
#include "sim/lapic/lapic_signals.h"
#include "sim/vmx/kvm_signals.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <systemc>

#include "sim/core/context.h"
#include "sim/core/output_errors.h"
#include "sim/vmx/vcpu.h"

namespace kvmsim::views {

// The fixed-period sampling of the countdowns: one SC_METHOD that exists only
// while a VCD is written and stops at the limit. It touches no model state.
class VcdSampler : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(VcdSampler);
  VcdSampler(const sc_core::sc_module_name& name, VcdObserver& obs, Tsc period, Tsc limit)
      : sc_module(name), obs_(obs), period_(period), limit_(limit) {
    SC_METHOD(tick);
  }

 private:
  void tick() {
    const Tsc now = now_tsc();
    if (obs_.closed() || now >= limit_) return;
    obs_.sample(now);
    next_trigger(cycles(period_));
  }
  VcdObserver& obs_;
  Tsc period_, limit_;
};

namespace {
constexpr std::string_view kVcdSuffix = ".vcd";

}  // namespace

void VcdObserver::connect(SignalRegistry& signals) {
  auto& model = signals.get<ModelSignals>();
  model.segment.connect<&VcdObserver::on_segment>(this);
  model.latency_sample.connect<&VcdObserver::on_latency_sample>(this);
  auto& kvm = signals.get<KvmSignals>();
  kvm.kvm_exit.connect<&VcdObserver::on_vmexit>(this);
  kvm.kvm_entry.connect<&VcdObserver::on_vmentry>(this);
  kvm.vcpu_poll.connect<&VcdObserver::on_vcpu_poll>(this);
  kvm.vcpu_block.connect<&VcdObserver::on_vcpu_block>(this);
  kvm.kvm_vcpu_wakeup.connect<&VcdObserver::on_vcpu_wakeup>(this);
  auto& lapic = signals.get<LapicSignals>();
  lapic.kvm_hv_timer_state.connect<&VcdObserver::on_hv_timer_state>(this);
}

VcdObserver::VcdObserver(const std::string& path, TscClock clock, Tsc limit, Tsc sample_period,
                         std::vector<const Vcpu*> vcpus)
    : path_(path), clock_(clock), limit_(limit), vcpus_(vcpus.size()) {
  // sc_create_vcd_trace_file(name) writes name + ".vcd": SystemC writes
  // PATH.systemc.vcd, finish() copies it to PATH with a fixed $date.
  const std::string base = path + ".systemc";
  written_path_ = base + std::string(kVcdSuffix);
  for (const std::string& p : {path_, written_path_}) {
    if (std::FILE* f = std::fopen(p.c_str(), "w")) {
      std::fclose(f);  // SystemC opens the file lazily: check now that it can be written
    } else {
      throw std::runtime_error("--vcd: cannot write " + p);
    }
  }
  tf_ = sc_core::sc_create_vcd_trace_file(base.c_str());
  tf_->set_time_unit(1, sc_core::SC_PS);  // one SystemC time unit = one host TSC cycle
  sc_core::sc_write_comment(
      tf_, fmt::format("kvmsim: time unit = 1 host TSC cycle (shown as 1 ps); TSC {} kHz, so {} "
                       "units = 1 us",
                       clock.tsc_khz, clock.tsc_khz / 1000));
  sc_core::sc_write_comment(
      tf_,
      "vcpuN.mode: 0 root (KVM handles an exit), 1 guest, 2 halted (kvm_vcpu_block), "
      "3 polling (halt polling in kvm_vcpu_halt(), from the poll to the wake-up or the sleep)");
  sc_core::sc_write_comment(
      tf_,
      "vcpuN.preemption_timer: VMX preemption-timer counter, recomputed from the value "
      "loaded at entry at each segment boundary and sampling period; frozen in root mode; "
      "0xffffffff = soft-disabled (preemption_timer_armed = 0)");
  sc_core::sc_write_comment(
      tf_,
      "vcpuN.hv_timer: last kvm_hv_timer_state (1 preemption timer, 0 host hrtimer); "
      "vcpuN.latency_ns: last latency sample");
  for (std::size_t i = 0; i < vcpus.size(); ++i) {
    VcpuTrace& v = vcpus_[i];
    v.vcpu = vcpus[i];
    v.rate = vcpus[i]->vmx().preemption_timer_rate;
    const std::string scope = fmt::format("vcpu{}.", vcpus[i]->id());
    sc_core::sc_trace(tf_, v.mode, scope + "mode", 8);
    sc_core::sc_trace(tf_, v.preemption_timer, scope + "preemption_timer", 32);
    sc_core::sc_trace(tf_, v.preemption_timer_armed, scope + "preemption_timer_armed");
    sc_core::sc_trace(tf_, v.hv_timer, scope + "hv_timer");
    sc_core::sc_trace(tf_, v.latency_ns, scope + "latency_ns", 32);
  }
  if (sample_period > 0)
    sampler_ = std::make_unique<VcdSampler>("kvmsim_vcd_sampler", *this, sample_period, limit);
}

VcdObserver::~VcdObserver() {
  try {
    finish();
  } catch (...) {  // a destructor must not throw
  }
}

void VcdObserver::finish() {
  if (!tf_) return;
  sc_core::sc_close_vcd_trace_file(tf_);
  tf_ = nullptr;
  copy_with_fixed_date(written_path_, path_);
  std::remove(written_path_.c_str());
}

// SystemC's header has the wall-clock date (`$date` ... `$end`), so two runs
// of the same seed would differ: the copy says where the file came from
// instead. The copy also checks every write (SystemC's writer ignores errors).
void VcdObserver::copy_with_fixed_date(const std::string& from, const std::string& to) {
  std::FILE* in = std::fopen(from.c_str(), "rb");
  if (!in) {
    output_failed(to, "the VCD SystemC wrote cannot be read back", errno);
    return;
  }
  std::FILE* out = std::fopen(to.c_str(), "wb");
  if (!out) {
    std::fclose(in);
    output_failed(to, "cannot write the VCD", errno);
    return;
  }
  bool ok = true;
  char line[4096];
  enum { BeforeDate, InDate, Body } state = BeforeDate;
  while (state != Body && std::fgets(line, sizeof line, in)) {
    const std::string_view l(line);
    if (state == BeforeDate && l.rfind("$date", 0) == 0) {
      state = InDate;
      ok = ok &&
           std::fputs("$date\n    kvmsim (no wall-clock date: same seed, same file)\n", out) >= 0;
      continue;
    }
    if (state == InDate) {
      if (l.rfind("$end", 0) == 0)
        state = Body;
      else
        continue;
    }
    ok = ok && std::fputs(line, out) >= 0;
    if (state == BeforeDate && l.rfind("$var", 0) == 0) state = Body;  // no $date at all
  }
  std::vector<char> buf(1 << 16);
  std::size_t n;
  while (ok && (n = std::fread(buf.data(), 1, buf.size(), in)) > 0)
    ok = std::fwrite(buf.data(), 1, n, out) == n;
  ok = ok && (std::ferror(in) == 0);
  const int err = errno;
  std::fclose(in);
  ok = (std::fclose(out) == 0) && ok;
  if (!ok) output_failed(to, "writing the VCD failed", errno ? errno : err);
}

VcdObserver::VcpuTrace* VcdObserver::at(int vcpu) {
  if (vcpu < 0 || static_cast<std::size_t>(vcpu) >= vcpus_.size()) return nullptr;
  return &vcpus_[static_cast<std::size_t>(vcpu)];
}

bool VcdObserver::past_limit(Tsc t) {
  if (!tf_) return true;
  if (t < limit_) {
    if (++events_ % 4096 == 0) check_size(t);
    return tf_ == nullptr;
  }
  finish();
  return true;
}

// The size cap: the file ends at the time it was reached, complete.
void VcdObserver::check_size(Tsc t) {
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(written_path_, ec);
  if (ec || bytes < kMaxBytes) return;
  std::fprintf(stderr,
               "kvmsim: warning: --vcd: the file reached its size cap of %llu MiB at %.3f ms "
               "simulated; it ends there (a complete VCD). Choose a shorter --vcd-limit-ms or a "
               "longer --vcd-sample-ns to see the whole span.\n",
               static_cast<unsigned long long>(kMaxBytes >> 20), clock_.to_ns(double(t)) / 1e6);
  finish();
}

void VcdObserver::refresh(VcpuTrace& v, Tsc now) {
  if (!v.counting || now < v.entry) return;
  const Tsc ticks = (now >> v.rate) - (v.entry >> v.rate);
  v.preemption_timer = ticks >= v.loaded ? 0U : static_cast<unsigned>(v.loaded - ticks);
}

void VcdObserver::sample(Tsc now) {
  if (past_limit(now)) return;
  for (auto& v : vcpus_) refresh(v, now);
}

void VcdObserver::on_segment(int /*pcpu*/, Stage /*stage*/, Tsc /*begin*/, Tsc end) {
  if (past_limit(end)) return;
  for (auto& v : vcpus_) refresh(v, end);
}

void VcdObserver::set_vcpu_mode(int vcpu, VcpuMode mode, Tsc t) {
  if (past_limit(t)) return;
  VcpuTrace* v = at(vcpu);
  if (!v) return;
  if (mode == VcpuMode::Guest) {
    // vmx_update_hv_timer() loaded the counter at the end of vmx_vcpu_run();
    // it starts counting now.
    v->preemption_timer_armed = v->vcpu->preemption_timer_loaded();
    v->counting = v->preemption_timer_armed;
    v->loaded = v->preemption_timer_armed ? v->vcpu->preemption_timer_value() : 0xffffffffU;
    v->entry = t;
    v->preemption_timer = v->loaded;
  } else {
    refresh(*v, t);  // the value it stopped at
    v->counting = false;
  }
  v->mode = static_cast<unsigned>(mode);
}

void VcdObserver::on_vmexit(int vcpu, int /*pcpu*/, ExitReason /*reason*/, Tsc t) {
  set_vcpu_mode(vcpu, VcpuMode::Root, t);
}

void VcdObserver::on_vmentry(int vcpu, int /*pcpu*/, Tsc t) {
  set_vcpu_mode(vcpu, VcpuMode::Guest, t);
}

void VcdObserver::on_vcpu_poll(int vcpu, int /*pcpu*/, Tsc t) {
  set_vcpu_mode(vcpu, VcpuMode::Polling, t);
}

void VcdObserver::on_vcpu_block(int vcpu, int /*pcpu*/, Tsc t) {
  set_vcpu_mode(vcpu, VcpuMode::Halted, t);
}

void VcdObserver::on_vcpu_wakeup(int vcpu, bool /*waited*/, std::int64_t /*ns*/, Tsc t) {
  set_vcpu_mode(vcpu, VcpuMode::Root, t);
}

void VcdObserver::on_latency_sample(int vcpu, int /*pcpu*/, Tsc /*deadline*/, Tsc t,
                                    std::int64_t latency_ns) {
  if (past_limit(t)) return;
  if (VcpuTrace* v = at(vcpu))
    v->latency_ns = latency_ns <= 0             ? 0U
                    : latency_ns > 0xffffffffLL ? 0xffffffffU
                                                : static_cast<unsigned>(latency_ns);
}

void VcdObserver::on_hv_timer_state(int vcpu, bool hv_timer, Tsc t) {
  if (past_limit(t)) return;
  if (VcpuTrace* v = at(vcpu)) v->hv_timer = hv_timer;
}

}  // namespace kvmsim::views
