// workload.type: ipi_pingpong — two guest tasks on vCPUs 0 and 1 of VM 0
// pass a token back and forth, a message-passing wake-up as in netperf
// TCP_RR or a pipe ping-pong (lmbench lat_pipe): task A wakes B on the other
// vCPU and sleeps until B, having run, wakes A. Every hop is a remote
// try_to_wake_up(): a RESCHEDULE_VECTOR IPI to a vCPU idling in HLT (its
// vCPU thread blocked in KVM), or none to one whose idle loop polls
// (idle=poll). Reports the round-trip latency A sees.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "sim/core/metric_decl.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

// clang-format off
void declare_ipi_pingpong_params(ParamRegistry& r) {
  r.declare({"ipi_pingpong.rounds", ParamType::Int, "10000", "count", 1, 1e9, {},
             "Round trips (A -> B -> A) to run; the run ends after the last."});
  r.declare({"ipi_pingpong.pinned", ParamType::Bool, "true", "bool", {}, {}, {},
             "A is bound to vCPU 0 and B to vCPU 1 (sched_setaffinity); false = both may run "
             "on any vCPU (a wake-up goes to the previous vCPU if idle, else an idle one)."});
  r.declare({"cost.ipi_pingpong.hop", ParamType::Dist, "1us", "time", {}, {}, {},
             "One task's turn per message: its read() returning to user space, the user "
             "code, write() up to try_to_wake_up() of the peer (a pipe/futex message; "
             "TCP_RR's network stack is not modelled) (estimate)."});
}
// clang-format on

struct PingPongStats {
  std::uint64_t rounds = 0;
  double sum_ns = 0, min_ns = std::numeric_limits<double>::max(), max_ns = 0;
};

class PingPongTask : public GuestTask {
 public:
  PingPongTask(std::string comm, bool initiator, Sampler hop, std::uint64_t rounds,
               PingPongStats* stats, std::function<void()> on_done)
      : GuestTask(std::move(comm)),
        initiator_(initiator),
        hop_(std::move(hop)),
        rounds_(rounds),
        stats_(stats),
        on_done_(std::move(on_done)) {
    policy = Policy::Normal;  // netperf's TCP_RR ends are SCHED_NORMAL processes
  }
  void set_peer(PingPongTask* p) { peer_ = p; }

  GuestStep run(GuestKernel& k, Tsc now) override {
    if (done_) return GuestStep::idle(Stage::GuestUser);
    if (initiator_) {
      if (started_) {  // the token is back: one round trip
        const auto rtt = static_cast<double>(k.guest_ns(now) - t0_ns_);
        stats_->sum_ns += rtt;
        stats_->min_ns = std::min(stats_->min_ns, rtt);
        stats_->max_ns = std::max(stats_->max_ns, rtt);
        if (++stats_->rounds == rounds_) {
          done_ = true;
          if (on_done_) on_done_();
          return GuestStep::idle(Stage::GuestUser);
        }
      }
      started_ = true;
      t0_ns_ = k.guest_ns(now);
    }
    // write(): wake the peer (the remote wake-up runs after this step),
    // then read() blocks until the peer answers.
    k.wake_up(peer_);
    k.block_current();
    return GuestStep::run(Stage::GuestSyscall, hop_(k.rng()));
  }

 private:
  bool initiator_;
  Sampler hop_;
  std::uint64_t rounds_;
  PingPongStats* stats_;
  std::function<void()> on_done_;
  PingPongTask* peer_ = nullptr;
  bool started_ = false, done_ = false;
  std::uint64_t t0_ns_ = 0;
};

class IpiPingPong : public Workload {
 public:
  explicit IpiPingPong(const ParamSet& p)
      : rounds_(static_cast<std::uint64_t>(p.i("ipi_pingpong.rounds"))),
        pinned_(p.b("ipi_pingpong.pinned")) {
    if (p.i("vm.vcpus") < 2)
      throw ScenarioError(fmt::format(
          "{}: key 'vm.vcpus': workload ipi_pingpong needs 2 vCPUs in VM 0 (vm.vcpus = {})",
          p.origin("vm.vcpus"), p.i("vm.vcpus")));
  }

  void build(Machine& machine) override {
    const Sampler hop = machine.params().dist("cost.ipi_pingpong.hop").bind(machine.clock());
    a_ = std::make_unique<PingPongTask>("pingpong-a", true, hop, rounds_, &stats_,
                                        [&machine] { machine.stop(); });
    b_ = std::make_unique<PingPongTask>("pingpong-b", false, hop, rounds_, &stats_, nullptr);
    a_->set_peer(b_.get());
    b_->set_peer(a_.get());
    if (pinned_) {
      a_->bound_cpu = 0;
      b_->bound_cpu = 1;
    }
    guests_ = boot_linux_guests(machine);
    guests_.at(0)->add_task(a_.get());
    guests_.at(1)->attach_sleeping_task(b_.get());
  }

  void report(Metrics& m, const TscClock& /*clk*/) const override {
    const auto n = static_cast<double>(stats_.rounds);
    m["ipi_pingpong.round_trips"] = n;
    m["ipi_pingpong.avg_us"] = stats_.rounds ? stats_.sum_ns / n / 1000 : 0;
    m["ipi_pingpong.min_us"] = stats_.rounds ? stats_.min_ns / 1000 : 0;
    m["ipi_pingpong.max_us"] = stats_.max_ns / 1000;
    report_guest_smp(guests_, m);
    report_guest_idle(guests_, m);
  }
  // lmbench lat_pipe prints the round trip as "Pipe latency: X microseconds".
  [[nodiscard]] double done_fraction() const override {
    return static_cast<double>(stats_.rounds) / static_cast<double>(rounds_);
  }
  [[nodiscard]] std::string headline(const Metrics& m) const override {
    return fmt::format(
        "ipi_pingpong: {:.0f} round trips  min {:.3f}  avg {:.3f}  max {:.3f} us\n"
        "  Pipe latency: {:.4f} microseconds  (as lmbench lat_pipe prints the round trip)\n",
        m.at("ipi_pingpong.round_trips"), m.at("ipi_pingpong.min_us"), m.at("ipi_pingpong.avg_us"),
        m.at("ipi_pingpong.max_us"), m.at("ipi_pingpong.avg_us"));
  }

 private:
  std::uint64_t rounds_;
  bool pinned_;
  PingPongStats stats_;
  std::unique_ptr<PingPongTask> a_, b_;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
};

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    ipi_pingpong,
    "two guest tasks on vCPUs 0 and 1 of VM 0 passing a token by cross-vCPU wake-ups "
    "(reschedule IPIs; TCP_RR / pipe ping-pong); ipi_pingpong.rounds round trips",
    declare_ipi_pingpong_params, [](const ParamSet& p) { return std::make_unique<IpiPingPong>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(ipi_pingpong, {
    {"ipi_pingpong.round_trips", "count", "ipi_pingpong", "Round trips completed: the token went from task a to task b and back."},
    {"ipi_pingpong.avg_us", "us", "ipi_pingpong", "Mean round trip (guest clock); what lmbench lat_pipe prints as Pipe latency."},
    {"ipi_pingpong.min_us", "us", "ipi_pingpong", "Shortest round trip."},
    {"ipi_pingpong.max_us", "us", "ipi_pingpong", "Longest round trip."},
});
// clang-format on
