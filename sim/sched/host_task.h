// Host tasks besides vCPU threads, so that host load can be modelled: CPU
// hogs (user-mode loops, preempted at the tick like any process) and
// periodic per-CPU kworkers (a host hrtimer wakes them; they work, sleep).
#pragma once

#include <memory>
#include <vector>

#include "sim/core/params.h"
#include "sim/sched/host.h"

namespace kvmsim {

class HostTask : public HostThread {
 public:
  using HostThread::HostThread;
  virtual void start(Host& host) = 0;  // at time 0
};

// A CPU-bound user process: runs user code until preempted.
class HostCpuHog : public HostTask {
 public:
  HostCpuHog(int index, int nice, CpuMask allowed, Tsc chunk);
  void start(Host& host) override;
  void run(Pcpu& cpu, Tsc now) override;

 private:
  Tsc chunk_;
};

// A per-CPU kthread woken every `period` by its own host hrtimer: a kworker
// (host.kworker.*), or a kernel one such as the softlockup watchdog's.
class HostKworker : public HostTask, public HostHrtimer {
 public:
  HostKworker(int cpu, Tsc period, Tsc phase, Sampler work);
  // A kthread `comm` (pid, nice) whose timer is `timer`.
  HostKworker(std::string comm, int pid, int nice, std::string timer, int cpu, Tsc period,
              Tsc phase, Sampler work);
  void start(Host& host) override;
  void run(Pcpu& cpu, Tsc now) override;
  Tsc fn(Pcpu& cpu, Tsc now) override;  // the timer: queue the work, wake the kworker
  [[nodiscard]] const void* mm() const override { return nullptr; }  // a kthread

 private:
  int cpu_;
  Tsc period_, phase_;
  Sampler work_;
  bool working_ = false;
  Host* host_ = nullptr;
};

// host.hog.* and host.kworker.*: the host tasks to add, registered with `host`.
std::vector<std::unique_ptr<HostTask>> make_host_tasks(const ParamSet& p, Host& host);

}  // namespace kvmsim
