// workload.type: timer_storm — a guest kernel hrtimer that re-arms itself
// from its own expiry at a fixed rate (timer_storm.rate_hz), as a tick
// misconfigured to tens of kHz or a driver's high-resolution polling timer
// does, on timer_storm.vcpu of VM 0 in an otherwise idle Linux guest.
//
// The callback is a kernel hrtimer function returning HRTIMER_RESTART after
// hrtimer_forward_now(timer, period) (kernel/time/hrtimer.c): the next
// expiry is the first period boundary after now, on the grid of the first
// one, with the missed periods counted as overruns. No task runs: between
// expiries the vCPU is in the idle loop. Per expiry the guest takes the
// LAPIC timer interrupt (hrtimer_interrupt() runs the callback, then
// reprograms the TSC-deadline clockevent: one WRMSR 0x6e0), and goes back
// to idle (guest.idle: hlt executes HLT; NO_HZ_IDLE stops the tick, which
// only timer-wheel timers keep, and nothing restarts it). What the host does with each of
// those (the exits, the fastpath, halt polling, the timer back end) is the
// model's, not this file's.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "sim/core/metric_decl.h"
#include "sim/guest/kernel/guest_kernel.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/vmx/vm.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

void declare_timer_storm_params(ParamRegistry& r) {
  r.declare({"timer_storm.rate_hz",
             ParamType::Int,
             "32000",
             "Hz",
             1,
             1000000,
             {},
             "timer_storm: expiries per second of the self-re-arming guest hrtimer "
             "(period = 1e9 / rate_hz ns, rounded to a guest TSC cycle)."});
  r.declare({"timer_storm.expiries",
             ParamType::Int,
             "32000",
             "count",
             1,
             1e10,
             {},
             "timer_storm: callbacks to run; the run ends after the last one (default: 1 s at "
             "the default rate)."});
  r.declare({"timer_storm.vcpu",
             ParamType::Int,
             "0",
             "vcpu",
             0,
             255,
             {},
             "timer_storm: the vCPU of VM 0 whose kernel runs the timer."});
  r.declare({"cost.timer_storm.callback",
             ParamType::Dist,
             "300ns",
             "time",
             {},
             {},
             {},
             "timer_storm: the hrtimer callback's body and hrtimer_forward_now() (estimate: a "
             "few hundred cycles, no device access)."});
  r.declare({"cost.timer_storm.start",
             ParamType::Dist,
             "1us",
             "time",
             {},
             {},
             {},
             "timer_storm: the process-context hrtimer_init()/hrtimer_start() that starts the "
             "storm (once)."});
}

struct StormStats {
  std::uint64_t expiries = 0;
  std::uint64_t overruns = 0;  // periods hrtimer_forward_now() skipped
  double lateness_sum_ns = 0;  // callback time (guest clock) - expiry
  double lateness_max_ns = 0;
  std::uint64_t first_expiry_host = 0, last_expiry_host = 0;  // host TSC of callbacks
};

// The hrtimer and its callback (HRTIMER_RESTART).
class StormTimer : public GuestHrtimer {
 public:
  StormTimer(std::uint64_t period, std::uint64_t target, Sampler cost, StormStats& st,
             std::function<void()> on_done)
      : period_(period),
        target_(target),
        cost_(std::move(cost)),
        st_(st),
        on_done_(std::move(on_done)) {}

  Tsc fn(GuestKernel& k, Tsc now) override {
    const std::uint64_t g = k.guest_tsc(now);
    const double late_ns = static_cast<double>(g - expires) * 1e6 / static_cast<double>(guest_khz_);
    st_.lateness_sum_ns += late_ns;
    if (late_ns > st_.lateness_max_ns) st_.lateness_max_ns = late_ns;
    if (st_.expiries == 0) st_.first_expiry_host = now;
    st_.last_expiry_host = now;
    const Tsc cost = cost_(k.rng());
    if (++st_.expiries >= target_) {
      if (on_done_) on_done_();  // HRTIMER_NORESTART: the run is complete
      return cost;
    }
    // hrtimer_forward_now(): whole periods past now; more than one is an overrun.
    std::uint64_t n = 0;
    while (expires <= g) {
      expires += period_;
      ++n;
    }
    if (n > 1) st_.overruns += n - 1;
    k.hrtimer_start(this, expires);  // in hrtimer_interrupt: reprogrammed at its end
    return cost;
  }

  std::uint64_t guest_khz_ = 1;

 private:
  std::uint64_t period_;
  std::uint64_t target_;
  Sampler cost_;
  StormStats& st_;
  std::function<void()> on_done_;
};

// The process-context start (a module init / device open): hrtimer_start()
// one period from now, then the task sleeps for good.
class StormStarter : public GuestTask {
 public:
  StormStarter(StormTimer& t, std::uint64_t period, Sampler cost)
      : GuestTask("timer_storm"), t_(t), period_(period), cost_(std::move(cost)) {}

  GuestStep run(GuestKernel& k, Tsc now) override {
    if (!costed_) {
      costed_ = true;
      return GuestStep::run(Stage::GuestSyscall, cost_(k.rng()));
    }
    if (!started_) {
      started_ = true;
      k.hrtimer_start(&t_, k.guest_tsc(now) + period_);
    }
    k.block_current();
    return k.step(now);
  }

 private:
  StormTimer& t_;
  std::uint64_t period_;
  Sampler cost_;
  bool costed_ = false, started_ = false;
};

class TimerStormWorkload : public Workload {
 public:
  explicit TimerStormWorkload(const ParamSet& p)
      : rate_hz_(static_cast<std::uint64_t>(p.i("timer_storm.rate_hz"))),
        target_(static_cast<std::uint64_t>(p.i("timer_storm.expiries"))),
        vcpu_(static_cast<int>(p.i("timer_storm.vcpu"))) {
    if (vcpu_ >= p.i("vm.vcpus"))
      throw ScenarioError(
          fmt::format("{}: key 'timer_storm.vcpu': vCPU {} does not exist (vm.vcpus = {})",
                      p.origin("timer_storm.vcpu"), vcpu_, p.i("vm.vcpus")));
  }

  void build(Machine& machine) override {
    const ParamSet& p = machine.params();
    const TscClock& clk = machine.clock();
    guests_ = boot_linux_guests(machine);
    GuestKernel& k = *guests_.at(static_cast<std::size_t>(vcpu_));
    const std::uint64_t khz = machine.vms().front()->guest_tsc_khz();
    // ktime period in ns, as the driver passes it; the clockevent runs on
    // the guest TSC, so the period in guest cycles is rounded to one.
    period_ns_ = 1e9 / static_cast<double>(rate_hz_);
    const auto period =
        static_cast<std::uint64_t>(std::llround(period_ns_ * static_cast<double>(khz) / 1e6));
    if (period == 0)
      throw ScenarioError(
          fmt::format("{}: key 'timer_storm.rate_hz': {} Hz is shorter than one "
                      "guest TSC cycle",
                      p.origin("timer_storm.rate_hz"), rate_hz_));
    timer_ =
        std::make_unique<StormTimer>(period, target_, p.dist("cost.timer_storm.callback").bind(clk),
                                     stats_, [&machine] { machine.stop(); });
    timer_->guest_khz_ = khz;
    starter_ =
        std::make_unique<StormStarter>(*timer_, period, p.dist("cost.timer_storm.start").bind(clk));
    k.add_task(starter_.get());
  }

  [[nodiscard]] std::uint64_t progress_total() const override { return 0; }
  [[nodiscard]] int measuring_vcpu() const override { return vcpu_; }

  void report(Metrics& m, const TscClock& clk) const override {
    const auto& s = stats_;
    m["timer_storm.expiries"] = static_cast<double>(s.expiries);
    m["timer_storm.overruns"] = static_cast<double>(s.overruns);
    m["timer_storm.period_ns"] = period_ns_;
    const auto n = static_cast<double>(s.expiries);
    m["timer_storm.lateness_avg_ns"] = s.expiries ? s.lateness_sum_ns / n : 0.0;
    m["timer_storm.lateness_max_ns"] = s.lateness_max_ns;
    // Rate achieved between the first and the last callback (host clock).
    const double span_s =
        static_cast<double>(clk.cycles_to_ns(s.last_expiry_host - s.first_expiry_host)) / 1e9;
    m["timer_storm.rate_hz"] = s.expiries > 1 && span_s > 0 ? (n - 1) / span_s : 0.0;
  }

 private:
  std::uint64_t rate_hz_, target_;
  int vcpu_;
  double period_ns_ = 0;
  StormStats stats_;
  std::unique_ptr<StormTimer> timer_;
  std::unique_ptr<StormStarter> starter_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    timer_storm,
    "a guest kernel hrtimer re-arming itself from its own expiry at timer_storm.rate_hz "
    "(HRTIMER_RESTART + hrtimer_forward_now) on timer_storm.vcpu of VM 0, in an idle Linux guest",
    declare_timer_storm_params,
    [](const ParamSet& p) { return std::make_unique<TimerStormWorkload>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(timer_storm, {
    {"timer_storm.expiries", "count", "timer_storm", "Callbacks of the self-rearming hrtimer."},
    {"timer_storm.overruns", "count", "timer_storm", "Periods hrtimer_forward_now() skipped (the callback came more than a period late)."},
    {"timer_storm.period_ns", "ns", "timer_storm", "The timer's period (from timer_storm.rate_hz)."},
    {"timer_storm.lateness_avg_ns", "ns", "timer_storm", "Mean time from the expiry to the callback (guest clock)."},
    {"timer_storm.lateness_max_ns", "ns", "timer_storm", "Largest time from an expiry to its callback."},
    {"timer_storm.rate_hz", "Hz", "timer_storm", "Rate achieved between the first and the last callback (host clock)."},
});
// clang-format on
