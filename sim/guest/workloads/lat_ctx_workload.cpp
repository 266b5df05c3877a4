// workload.type: lat_ctx — lmbench's lat_ctx: N processes in a ring of
// pipes pass a token; each, on getting it, touches its own K KB of data
// (lat_ctx -s K) and writes the token to the next. lat_ctx reports the time
// per hop less its overhead (the pipe read/write and the data touch without
// a context switch), for a table of N/K points run one after another.
//
// Where the halts and the timers come from (README "Halt polling"): the
// processes are placed round-robin on the guest's vCPUs (as fork balancing
// spreads the ring; they keep that CPU: a sync pipe wake-up pulling the
// wakee to the waker's CPU, wake_affine, is not modelled), so every hop is
// a remote wake-up (a RESCHEDULE IPI) of a process on another vCPU, and the
// writer then blocks in read(): its vCPU has nothing to run and executes
// HLT until the token comes round again. The timers are the guest's own:
// a dynticks guest (guest.hz with NO_HZ_IDLE) restarts its tick when a vCPU
// leaves idle and stops it on idle entry unless another timer is due within
// a tick; HRTICK arms a per-task slice timer only while a CPU has more than
// one runnable task, which the ring never has (one token): the timer that
// fires while a vCPU halts is the tick it kept or the watchdog.
#include <fmt/format.h>

#include <sstream>

#include "sim/core/metric_decl.h"
#include "sim/guest/kernel/linux_guest.h"
#include "sim/workload.h"

namespace kvmsim {
namespace {

// clang-format off
void declare_lat_ctx_params(ParamRegistry& r) {
  r.declare({"lat_ctx.table", ParamType::String, "2p/0K,2p/16K,2p/64K,8p/16K,8p/64K,16p/16K,16p/64K",
             "", {}, {}, {},
             "The lat_ctx points to run in order, comma-separated <N>p/<K>K (N processes, K KB "
             "touched per process and hop); the default is T5's table."});
  r.declare({"lat_ctx.laps", ParamType::Int, "1000", "count", 1, 1e9, {},
             "Laps of the token around the ring per point (after one warm-up lap)."});
  r.declare({"cost.lat_ctx.pipe_read", ParamType::Dist, "700ns", "time", {}, {}, {},
             "read() of the token returning to user space (pipe_read, copy_to_user, syscall "
             "exit) (estimate)."});
  r.declare({"cost.lat_ctx.pipe_write", ParamType::Dist, "800ns", "time", {}, {}, {},
             "write() of the token up to the wake-up of the reader (pipe_write, "
             "__wake_up_sync_key; the remote try_to_wake_up is cost.guest.ttwu_remote) "
             "(estimate)."});
  r.declare({"cost.lat_ctx.touch_kb", ParamType::Dist, "60ns", "time", {}, {}, {},
             "Summing one KB of the process's data (lat_ctx's sumit), per KB touched "
             "(estimate: cache-resident)."});
}
// clang-format on

struct Point {
  unsigned procs = 2, kb = 0;
  std::uint64_t hops = 0;
  double hop_ns = 0, ovr_ns = 0;  // sums over measured hops
  [[nodiscard]] std::string name() const { return fmt::format("{}p_{}K", procs, kb); }
};

class LatCtx;

class LatCtxTask : public GuestTask {
 public:
  LatCtxTask(LatCtx& w, std::size_t point, unsigned index, unsigned kb)
      : GuestTask(fmt::format("lat_ctx-{}", index)), w_(w), point_(point), index_(index), kb_(kb) {
    policy = Policy::Normal;  // lmbench's forked processes: SCHED_NORMAL, under the guest's CFS
  }
  void set_next(GuestTask* n) { next_ = n; }
  GuestStep run(GuestKernel& k, Tsc now) override;

 private:
  LatCtx& w_;
  std::size_t point_;
  unsigned index_;
  unsigned kb_;
  GuestTask* next_ = nullptr;
  int phase_ = 0;  // 0 read returns, 1 touch, 2 write
  Tsc ovr_ = 0;
};

class LatCtx : public Workload {
 public:
  explicit LatCtx(const ParamSet& p) : laps_(static_cast<std::uint64_t>(p.i("lat_ctx.laps"))) {
    std::stringstream ss(p.s("lat_ctx.table"));
    std::string item;
    while (std::getline(ss, item, ',')) {
      Point pt;
      char pc = 0;
      char slash = 0;
      char kc = 0;
      std::istringstream is(item);
      if (!(is >> pt.procs >> pc >> slash >> pt.kb >> kc) || pc != 'p' || slash != '/' ||
          kc != 'K' || pt.procs < 2 || pt.procs > 1024 || pt.kb > 65536)
        throw ScenarioError(
            fmt::format("{}: key 'lat_ctx.table': '{}' is not <N>p/<K>K with "
                        "2 <= N <= 1024, K <= 65536",
                        p.origin("lat_ctx.table"), item));
      points_.push_back(pt);
    }
    if (points_.empty())
      throw ScenarioError(fmt::format("{}: key 'lat_ctx.table': empty", p.origin("lat_ctx.table")));
    if (p.i("vm.vcpus") < 2)
      throw ScenarioError(
          fmt::format("{}: key 'vm.vcpus': workload lat_ctx needs 2 vCPUs in VM 0 (vm.vcpus = {})",
                      p.origin("vm.vcpus"), p.i("vm.vcpus")));
  }

  void build(Machine& machine) override {
    machine_ = &machine;
    const auto S = [&](const char* key) {
      return machine.params().dist(key).bind(machine.clock());
    };
    read_ = S("cost.lat_ctx.pipe_read");
    write_ = S("cost.lat_ctx.pipe_write");
    touch_ = S("cost.lat_ctx.touch_kb");
    guests_ = boot_linux_guests(machine);
    nvcpus_ = static_cast<unsigned>(machine.params().i("vm.vcpus"));
    guests_.at(0)->add_task(start_point(0));
  }

  // The ring of point `i`: process j on vCPU j % vcpus, all asleep in
  // read() but process 0, which holds the token.
  GuestTask* start_point(std::size_t i) {
    auto& ring = rings_.emplace_back();
    for (unsigned j = 0; j < points_[i].procs; ++j) {
      ring.push_back(std::make_unique<LatCtxTask>(*this, i, j, points_[i].kb));
      ring.back()->bound_cpu = static_cast<int>(j % nvcpus_);
    }
    for (unsigned j = 0; j < ring.size(); ++j) {
      ring[j]->set_next(ring[(j + 1) % ring.size()].get());
      if (j) guests_.at(j % nvcpus_)->attach_sleeping_task(ring[j].get());
    }
    lap_ = 0;
    return ring[0].get();
  }

  // Process 0 got the token back: a lap. Returns the next point's first
  // process to wake instead of continuing, or nullptr.
  GuestTask* lap_done(std::size_t point, std::uint64_t now_ns, bool* finished) {
    *finished = false;
    if (lap_ > 0) {  // the first call only starts the clock
      points_[point].hops += points_[point].procs;
      points_[point].hop_ns += static_cast<double>(now_ns - lap_start_ns_);
    }
    lap_start_ns_ = now_ns;
    if (lap_++ < laps_) return nullptr;
    *finished = true;
    if (point + 1 == points_.size()) {
      machine_->stop();
      return nullptr;
    }
    return start_point(point + 1);
  }
  void add_overhead(std::size_t point, Tsc c) {
    if (lap_ > 0) points_[point].ovr_ns += static_cast<double>(machine_->clock().cycles_to_ns(c));
  }
  Sampler read_, write_, touch_;

  void report(Metrics& m, const TscClock& /*clk*/) const override {
    for (const auto& pt : points_) {
      if (!pt.hops) continue;
      const double hop = pt.hop_ns / static_cast<double>(pt.hops) / 1000;
      const double ovr = pt.ovr_ns / static_cast<double>(pt.hops) / 1000;
      m["lat_ctx." + pt.name() + ".us"] = hop - ovr;  // what lat_ctx prints
      m["lat_ctx." + pt.name() + ".hop_us"] = hop;
      m["lat_ctx." + pt.name() + ".ovr_us"] = ovr;
    }
    report_guest_idle(guests_, m);
    report_guest_smp(guests_, m);
  }

 private:
  std::uint64_t laps_;
  std::vector<Point> points_;
  Machine* machine_ = nullptr;
  unsigned nvcpus_ = 2;
  std::vector<std::unique_ptr<GuestKernel>> guests_;
  std::vector<std::vector<std::unique_ptr<LatCtxTask>>> rings_;
  std::uint64_t lap_ = 0, lap_start_ns_ = 0;
};

// One process's turn: read() returns with the token, sumit() over its K KB,
// write() to the next pipe (the remote wake-up follows this step), then
// read() blocks.
GuestStep LatCtxTask::run(GuestKernel& k, Tsc now) {
  switch (phase_) {
    case 0: {
      if (index_ == 0) {
        bool finished = false;
        if (GuestTask* next = w_.lap_done(point_, k.guest_ns(now), &finished)) {
          k.wake_up(next);  // the next point's ring starts; this one is done
          k.block_current();
          return GuestStep::run(Stage::GuestUser, 1);
        }
        if (finished) {
          k.block_current();
          return GuestStep::run(Stage::GuestUser, 1);
        }
      }
      phase_ = 1;
      ovr_ = w_.read_(k.rng());
      return GuestStep::run(Stage::GuestSyscall, ovr_);
    }
    case 1: {
      phase_ = 2;
      // One draw of the per-KB cost times K (its spread hardly matters).
      const Tsc t = kb_ ? w_.touch_(k.rng()) * kb_ : 0;
      ovr_ += t;
      if (t) return GuestStep::run(Stage::GuestUser, t);
      [[fallthrough]];
    }
    default: {
      phase_ = 0;
      const Tsc wr = w_.write_(k.rng());
      w_.add_overhead(point_, ovr_ + wr);
      k.wake_up(next_);
      k.block_current();
      return GuestStep::run(Stage::GuestSyscall, wr);
    }
  }
}

}  // namespace

KVMSIM_REGISTER_WORKLOAD(
    lat_ctx,
    "lmbench lat_ctx: N processes on a ring of pipes pass a token, each touching K KB; "
    "the table of lat_ctx.table points, lat_ctx.laps laps each",
    declare_lat_ctx_params, [](const ParamSet& p) { return std::make_unique<LatCtx>(p); })

}  // namespace kvmsim

// clang-format off
KVMSIM_DECLARE_METRICS(lat_ctx, {
    {"lat_ctx.<config>.us", "us", "lat_ctx", "What lat_ctx prints for point `<config>` (`<procs>p_<kb>K`, e.g. 2p_0K, 16p_64K, from lat_ctx.table): time per hop less its overhead."},
    {"lat_ctx.<config>.hop_us", "us", "lat_ctx", "Mean time per token hop (one process to the next, a context switch on another vCPU) at point `<config>`, laps after the first."},
    {"lat_ctx.<config>.ovr_us", "us", "lat_ctx", "Overhead per hop that lat_ctx subtracts at point `<config>`: the pipe read and write and the data touch, without a context switch."},
});
// clang-format on
