#include "sim/sched/host_task.h"

#include <fmt/format.h>

#include "sim/sched/pids.h"

namespace kvmsim {

HostCpuHog::HostCpuHog(int index, int nice, CpuMask allowed, Tsc chunk)
    : HostTask("stress-ng", pids::kHogBase + index, nice, std::move(allowed)), chunk_(chunk) {}

void HostCpuHog::start(Host& host) { host.start_thread(this, -1, 0); }

// User code in long chunks; the tick (or a wake-up IPI) preempts it on the
// way back to user mode; a chunk boundary is a syscall, also a preemption point.
void HostCpuHog::run(Pcpu& cpu, Tsc now) {
  if (cpu.preempt_point(now)) return;
  cpu.run_for(Stage::HostTask, SegKind::HostUser, chunk_);
}

HostKworker::HostKworker(int cpu, Tsc period, Tsc phase, Sampler work)
    : HostKworker(fmt::format("kworker/{}:1", cpu), pids::kKworkerBase + cpu, 0, "kworker_timer",
                  cpu, period, phase, std::move(work)) {}

HostKworker::HostKworker(std::string comm, int pid, int nice, std::string timer, int cpu,
                         Tsc period, Tsc phase, Sampler work)
    : HostTask(std::move(comm), pid, nice, CpuMask::only(cpu)),
      HostHrtimer(std::move(timer)),
      cpu_(cpu),
      period_(period),
      phase_(phase),
      work_(std::move(work)) {}

void HostKworker::start(Host& host) {
  host_ = &host;
  host.pcpu(cpu_).hrtimers().start(this, phase_);
  host.pcpu(cpu_).reschedule();
}

Tsc HostKworker::fn(Pcpu& cpu, Tsc now) {
  cpu.hrtimers().start(this, expires() + period_);  // hrtimer_forward()
  host_->wake_up(this, cpu.id(), now);              // queue_work_on() -> wake_up_process()
  return 0;
}

void HostKworker::run(Pcpu& cpu, Tsc now) {
  if (!working_) {
    working_ = true;
    cpu.run_for(Stage::HostTask, SegKind::HostIrqOn, work_(cpu.rng()));
    return;
  }
  working_ = false;
  cpu.sleep_current(now);  // worker_thread(): no more work, sleep
}

std::vector<std::unique_ptr<HostTask>> make_host_tasks(const ParamSet& p, Host& host) {
  const TscClock clk{static_cast<std::uint64_t>(p.i("platform.tsc_khz"))};
  std::vector<std::unique_ptr<HostTask>> tasks;
  CpuMask hog_mask;
  std::vector<int> hog_cpus;
  for (auto c : p.ints("host.hog.affinity")) {
    if (c >= host.topology().cpus())
      throw ScenarioError(
          fmt::format("{}: key 'host.hog.affinity': pCPU {} does not exist ({} pCPUs)",
                      p.origin("host.hog.affinity"), c, host.topology().cpus()));
    hog_cpus.push_back(static_cast<int>(c));
  }
  if (!hog_cpus.empty()) hog_mask = CpuMask::of(hog_cpus);
  tasks.reserve(p.i("host.hog.count"));
  // host.hog.cgroup own, or their session's autogroup: the hogs share one
  // task group (cpu.shares 1024, an autogroup's nice 0).
  TaskGroup* hogs = GroupLayout::from(p).hogs_own && p.i("host.hog.count") > 0
                        ? host.scheduler().create_group("hogs", kNice0Load)
                        : nullptr;
  for (int i = 0; i < p.i("host.hog.count"); ++i) {
    tasks.push_back(std::make_unique<HostCpuHog>(i, static_cast<int>(p.i("host.hog.nice")),
                                                 hog_mask, clk.from_ns(10e6)));
    if (hogs != nullptr) host.scheduler().attach(tasks.back()->se(), hogs);
  }
  const Tsc period = clk.from_ns(static_cast<double>(p.i("host.kworker.period_us")) * 1e3);
  for (auto c : p.ints("host.kworker.cpus")) {
    if (c >= host.topology().cpus())
      throw ScenarioError(
          fmt::format("{}: key 'host.kworker.cpus': pCPU {} does not exist ({} pCPUs)",
                      p.origin("host.kworker.cpus"), c, host.topology().cpus()));
    Rng phase(static_cast<std::uint64_t>(p.i("sim.seed")), fmt::format("kworker{}.phase", c));
    tasks.push_back(std::make_unique<HostKworker>(
        static_cast<int>(c), period,
        static_cast<Tsc>(phase.uniform() * static_cast<double>(period)),
        p.dist("cost.host.kworker").bind(clk)));
  }
  for (auto& t : tasks) host.add_thread(t.get());
  return tasks;
}

}  // namespace kvmsim
