// workload.type: smp_call — a cross-call microbenchmark, as a test kernel
// module would loop: a task on vCPU 0 of VM 0 calls
// smp_call_function_many(targets, func, wait) (smp_call_function_single()
// for one target) smp_call.calls times, with some work of its own between
// calls; the targets idle (guest.idle). The function records that it ran on
// each target. With wait, a call that returns before every target ran the
// function is counted in smp_call.early_returns (it must stay 0); without
// wait that count shows how often the initiator runs ahead of its targets.
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/metric_decl.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

// clang-format off
void declare_smp_call_params(ParamRegistry& r) {
  r.declare({"smp_call.calls", ParamType::Int, "10000", "count", 1, 1e9, {},
             "Cross calls to make; the run ends after the last returns."});
  r.declare({"smp_call.targets", ParamType::Int, "0", "count", 0, 255, {},
             "Target vCPUs: vCPUs 1..N of VM 0; 0 = every other vCPU."});
  r.declare({"smp_call.wait", ParamType::Bool, "true", "bool", {}, {}, {},
             "wait argument: the caller spins in csd_lock_wait() until every target ran func."});
  r.declare({"cost.smp_call.func", ParamType::Dist, "500ns", "time", {}, {}, {},
             "The called function's own work on each target (a TLB flush of a few pages is "
             "of this order) (estimate)."});
  r.declare({"cost.smp_call.gap", ParamType::Dist, "5us", "time", {}, {}, {},
             "The caller's own work between two calls."});
}
// clang-format on

struct SmpCallStats {
  std::uint64_t calls = 0, early_returns = 0, functions_run = 0;
  double sum_ns = 0;
};

class SmpCallTask : public GuestTask {
 public:
  SmpCallTask(std::vector<int> targets, std::uint64_t calls, bool wait, Sampler func, Sampler gap,
              SmpCallStats* stats, std::function<void()> on_done)
      : GuestTask("smp_call"),
        targets_(std::move(targets)),
        ran_(static_cast<std::size_t>(*std::max_element(targets_.begin(), targets_.end()) + 1)),
        calls_(calls),
        wait_(wait),
        func_(std::move(func)),
        gap_(std::move(gap)),
        stats_(stats),
        on_done_(std::move(on_done)) {
    bound_cpu = 0;
  }

  GuestStep run(GuestKernel& k, Tsc now) override {
    switch (phase_) {
      case Phase::Gap:
        phase_ = Phase::Call;
        return GuestStep::run(Stage::GuestUser, gap_(k.rng()));
      case Phase::Call: {
        ++seq_;
        t0_ns_ = k.guest_ns(now);
        SmpCallFunc f;
        f.cost = [this](GuestKernel& t, Tsc) { return func_(t.rng()); };
        f.ran = [this](GuestKernel& t, Tsc) {
          ++ran_[static_cast<std::size_t>(t.cpu())];
          ++stats_->functions_run;
        };
        if (targets_.size() == 1)
          k.smp_call_function_single(targets_[0], std::move(f), wait_);
        else
          k.smp_call_function_many(targets_, std::move(f), wait_);
        phase_ = Phase::Returned;
        // The call's kernel work runs after this step (the call's entry).
        return GuestStep::run(Stage::GuestSyscall, 1);
      }
      case Phase::Returned:
        stats_->sum_ns += static_cast<double>(k.guest_ns(now) - t0_ns_);
        for (const int c : targets_)
          if (ran_[static_cast<std::size_t>(c)] < seq_) {
            ++stats_->early_returns;
            break;
          }
        phase_ = Phase::Gap;
        if (++stats_->calls == calls_) {
          phase_ = Phase::Done;
          if (on_done_) on_done_();
        }
        return run(k, now);
      case Phase::Done:
        break;
    }
    return GuestStep::idle(Stage::GuestUser);
  }

 private:
  enum class Phase : std::uint8_t { Gap, Call, Returned, Done };
  std::vector<int> targets_;
  std::vector<std::uint64_t> ran_;  // func runs per target CPU
  std::uint64_t calls_;
  bool wait_;
  Sampler func_, gap_;
  SmpCallStats* stats_;
  std::function<void()> on_done_;
  Phase phase_ = Phase::Gap;
  std::uint64_t seq_ = 0, t0_ns_ = 0;
};

class SmpCallWorkload : public Workload {
 public:
  explicit SmpCallWorkload(const ParamSet& p)
      : calls_(static_cast<std::uint64_t>(p.i("smp_call.calls"))), wait_(p.b("smp_call.wait")) {
    const auto vcpus = p.i("vm.vcpus");
    if (vcpus < 2)
      throw ScenarioError(fmt::format(
          "{}: key 'vm.vcpus': workload smp_call needs 2+ vCPUs in VM 0 (vm.vcpus = {})",
          p.origin("vm.vcpus"), vcpus));
    auto n = p.i("smp_call.targets");
    if (n >= vcpus)
      throw ScenarioError(
          fmt::format("{}: key 'smp_call.targets': {} targets need {} vCPUs (vm.vcpus = {})",
                      p.origin("smp_call.targets"), n, n + 1, vcpus));
    if (n == 0) n = vcpus - 1;
    for (int c = 1; c <= n; ++c) targets_.push_back(c);
  }

  void build(Machine& machine) override {
    const auto& clk = machine.clock();
    task_ = std::make_unique<SmpCallTask>(targets_, calls_, wait_,
                                          machine.params().dist("cost.smp_call.func").bind(clk),
                                          machine.params().dist("cost.smp_call.gap").bind(clk),
                                          &stats_, [&machine] { machine.stop(); });
    guests_ = boot_linux_guests(machine);
    guests_.at(0)->add_task(task_.get());
  }

  void report(Metrics& m, const TscClock& /*clk*/) const override {
    m["smp_call.calls"] = static_cast<double>(stats_.calls);
    m["smp_call.avg_us"] =
        stats_.calls ? stats_.sum_ns / static_cast<double>(stats_.calls) / 1000 : 0;
    m["smp_call.early_returns"] = static_cast<double>(stats_.early_returns);
    m["smp_call.functions_run"] = static_cast<double>(stats_.functions_run);
    m["smp_call.targets"] = static_cast<double>(targets_.size());
    report_guest_smp(guests_, m);
    report_guest_idle(guests_, m);
  }
  // No published tool: a test module would print its loop count and the
  // mean time per call.
  [[nodiscard]] double done_fraction() const override {
    return static_cast<double>(stats_.calls) / static_cast<double>(calls_);
  }
  [[nodiscard]] std::string headline(const Metrics& m) const override {
    return fmt::format(
        "smp_call: {:.0f} calls to {:.0f} target{} (wait {})  avg {:.3f} us per call  "
        "functions run {:.0f}  early returns {:.0f}\n",
        m.at("smp_call.calls"), m.at("smp_call.targets"), m.at("smp_call.targets") == 1 ? "" : "s",
        wait_ ? "on" : "off", m.at("smp_call.avg_us"), m.at("smp_call.functions_run"),
        m.at("smp_call.early_returns"));
  }

 private:
  std::uint64_t calls_;
  bool wait_;
  std::vector<int> targets_;
  SmpCallStats stats_;
  std::unique_ptr<SmpCallTask> task_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(smp_call,
                         "a cross-call microbenchmark: a task on vCPU 0 of VM 0 loops on "
                         "smp_call_function_many/single to vCPUs 1..N, with or without wait",
                         declare_smp_call_params,
                         [](const ParamSet& p) { return std::make_unique<SmpCallWorkload>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(smp_call, {
    {"smp_call.calls", "count", "smp_call", "Cross calls made (smp_call_function_many(), or _single() for one target)."},
    {"smp_call.avg_us", "us", "smp_call", "Mean time from the call to its return on the caller (guest clock)."},
    {"smp_call.early_returns", "count", "smp_call", "Calls that returned before every target had run the function (must be 0 with smp_call.wait)."},
    {"smp_call.functions_run", "count", "smp_call", "Function runs on the targets."},
    {"smp_call.targets", "count", "smp_call", "Target vCPUs of each call (smp_call.targets, or every other vCPU)."},
});
// clang-format on
