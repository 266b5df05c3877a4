// Unit tests of the guest's rw_semaphore (GuestRwsem, sim/guest/kernel/rwsem.h)
// against Linux v4.16's kernel/locking/rwsem-xadd.c, on a model built in this
// process (tests/support/model_fixture.h). GuestRwsem asks the guest kernel
// whether the owner is current on its CPU (task_curr()), reads the owner's
// vCPU's steal-time `preempted` byte, blocks and wakes tasks, so it runs inside
// a model: a v4.16 guest on a v4.16 host (the T4 scenario) whose vCPUs are
// pinned one per pCPU and which has no task of its own (workload idle). Each
// test adds one scripted task per vCPU that takes the test's own GuestRwsem
// and checks the lock's statistics and the tasks' own record of what they did.
// v4.16's writer path (rwsem_down_write_failed() -> rwsem_optimistic_spin()):
// rwsem_can_spin_on_owner() / rwsem_spin_on_owner() spin while the owner is a
// writer that is on its CPU and whose vCPU is not preempted
// (vcpu_is_preempted()); a reader-owned lock (RWSEM_READER_OWNED) is not
// spinnable; otherwise the writer queues and sleeps.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/guest/kernel/guest_kernel.h"
#include "sim/guest/kernel/rwsem.h"
#include "sim/vmx/kvm_para.h"
#include "sim/vmx/vcpu.h"
#include "tests/support/model_fixture.h"

using namespace kvmsim;
using kvmsim::test::InProcessModel;

namespace {

// What one task does: when `start_when` holds (polled every 5 us of user
// work; empty = at once) it takes the lock for write or read, holds it for
// `hold_ns` of kernel work (or, with `sleep_holding`, sleeps that long on an
// hrtimer with the lock held), releases it and sleeps for good.
struct LockScript {
  bool write = false;
  std::function<bool()> start_when;
  double hold_ns = 100000;
  bool sleep_holding = false;
};

class LockUser : public GuestTask, public GuestHrtimer {
 public:
  LockUser(std::string comm, int cpu, GuestRwsem& sem, LockScript s,
           std::vector<std::string>& order)
      : GuestTask(std::move(comm)), sem_(sem), s_(std::move(s)), order_(order) {
    bound_cpu = cpu;
  }

  // What the task saw: down_*() results and host TSC of the acquisition and
  // the release.
  int spins = 0, sleeps = 0;
  Tsc acquired_at = 0, released_at = 0;
  bool done = false;

  // The hrtimer of sleep_holding (hrtimer_wakeup()).
  Tsc fn(GuestKernel& k, Tsc /*now*/) override {
    k.wake_up(this);
    return k.costs().hrtimer_wakeup(k.rng());
  }

  GuestStep run(GuestKernel& k, Tsc now) override {
    const TscClock& clk = k.vcpu().ctx().clock;
    switch (phase_) {
      case Phase::Wait:
        if (s_.start_when && !s_.start_when())
          return GuestStep::run(Stage::GuestUser, clk.from_ns(5000));
        phase_ = Phase::Lock;
        return run(k, now);
      case Phase::Lock:
        switch (s_.write ? sem_.down_write(k, this, w_, now) : sem_.down_read(k, this, w_, now)) {
          case GuestRwsem::Result::Acquired:
            return hold(k, now);
          case GuestRwsem::Result::Spin:
            ++spins;
            return sem_.spin_step();
          case GuestRwsem::Result::Sleep:
            ++sleeps;
            phase_ = Phase::Woken;
            return k.step(now);
        }
        break;
      case Phase::Woken:  // a woken reader holds the lock, a woken writer retries
        if (sem_.woken(w_, now)) return hold(k, now);
        phase_ = Phase::Lock;
        return run(k, now);
      case Phase::Holding:
        if (s_.write)
          sem_.up_write(k, now);
        else
          sem_.up_read(k, now);
        released_at = now;
        done = true;
        phase_ = Phase::Done;
        return run(k, now);
      case Phase::Done:
        k.block_current();
        return k.step(now);
    }
    return GuestStep::idle(Stage::GuestUser);
  }

 private:
  enum class Phase : std::uint8_t { Wait, Lock, Woken, Holding, Done };
  GuestStep hold(GuestKernel& k, Tsc now) {
    acquired_at = now;
    order_.push_back(comm());
    phase_ = Phase::Holding;
    const auto ns = static_cast<std::uint64_t>(s_.hold_ns);
    if (!s_.sleep_holding)
      return GuestStep::run(Stage::GuestSyscall, k.vcpu().ctx().clock.from_ns(s_.hold_ns));
    k.hrtimer_start(this, k.guest_tsc(now) + k.ns_to_guest_tsc_ceil(ns) + 1);
    k.block_current();
    return k.step(now);
  }

  GuestRwsem& sem_;
  LockScript s_;
  std::vector<std::string>& order_;
  Phase phase_ = Phase::Wait;
  RwsemWaiter w_;
};

// The T4 scenario's v4.16 guest and host (-cpu host: steal time, PV
// spinlocks) with `vcpus` vCPUs, vCPU n pinned to pCPU n, no guest task, for
// `seconds`; `extra` after that.
std::vector<std::string> pinned_guest(int vcpus, const std::string& seconds,
                                      const std::vector<std::string>& extra = {}) {
  std::string pin = "[0";
  for (int i = 1; i < vcpus; ++i) pin += "," + std::to_string(i);
  std::vector<std::string> o{"workload.type=idle", "vm.vcpus=" + std::to_string(vcpus),
                             "vm.affinity=[]",     "vm.pinning=" + pin + "]",
                             "host.hog.count=0",   "sim.max_simulated_s=" + seconds};
  o.insert(o.end(), extra.begin(), extra.end());
  return o;
}

constexpr const char* kScenario = "scenarios/ebizzy_overcommit.yaml";
constexpr double kRecheckNs = 1000;  // the spin re-reads owner and `preempted` every 1 us

// An rwsem as ebizzy's mmap_sem is built, with the guest's vcpu_is_preempted()
// given: true = __kvm_vcpu_is_preempted() (steal time), false = the native one.
GuestRwsem make_rwsem(InProcessModel& m, bool vcpu_is_preempted) {
  const TscClock& clk = m.system().clock();
  return {m.system().params().dist("cost.guest.rwsem_slowpath").bind(clk), clk.from_ns(kRecheckNs),
          vcpu_is_preempted};
}

GuestKernel& kernel(InProcessModel& m, int cpu) {
  auto* k =
      dynamic_cast<GuestKernel*>(m.system().vcpus().at(static_cast<std::size_t>(cpu))->guest());
  REQUIRE(k != nullptr);
  return *k;
}

double ms(InProcessModel& m, Tsc cycles) {
  return m.system().clock().to_ns(static_cast<double>(cycles)) / 1e6;
}

// vCPU `cpu` runs on its pCPU and the guest can see it does (its `preempted`
// byte is clear): a writer that arrives now finds a spinnable owner there.
bool vcpu_running(InProcessModel& m, int cpu) {
  const Vcpu& v = *m.system().vcpus().at(static_cast<std::size_t>(cpu));
  return v.running_on_pcpu() && (v.steal_time_preempted() & KVM_VCPU_PREEMPTED) == 0;
}

}  // namespace

TEST_CASE(
    "GuestRwsem: a writer that finds the lock held by a writer running on its vCPU spins "
    "and takes the lock by spinning when the owner releases it, without sleeping",
    "[model][rwsem]") {
  InProcessModel m(kScenario, pinned_guest(2, "0.02"));
  GuestRwsem sem = make_rwsem(m, true);
  std::vector<std::string> order;
  LockUser owner("owner", 0, sem, {true, {}, 200000}, order);
  LockUser spinner("spinner", 1, sem, {true, [&sem] { return sem.writer() != nullptr; }, 10000},
                   order);
  kernel(m, 0).add_task(&owner);
  kernel(m, 1).add_task(&spinner);
  REQUIRE(m.run().completed);

  REQUIRE(owner.done);
  REQUIRE(spinner.done);
  CHECK(order == std::vector<std::string>{"owner", "spinner"});
  const RwsemStats& s = sem.stats();
  CHECK(s.write_acquires == 2);
  CHECK(s.write_contended == 1);
  // rwsem_optimistic_spin(): it spun on the owner and got the lock from the
  // spin (rwsem_try_write_lock_unqueued() once the owner left).
  CHECK(s.write_spins == 1);
  CHECK(s.spin_acquires == 1);
  CHECK(spinner.spins > 10);  // ~200 us of 1 us re-checks
  // It never queued or slept, and nobody had to be woken.
  CHECK(spinner.sleeps == 0);
  CHECK(s.write_sleeps == 0);
  CHECK(s.sleeps_owner_preempted == 0);
  CHECK(s.sleeps_reader_owned == 0);
  CHECK(s.wakeups == 0);
  CHECK(sem.waiters() == 0);
  // It took the lock at the first re-check after the release (a guest
  // interrupt may stretch one), and the whole wait was spinning.
  CHECK(spinner.acquired_at >= owner.released_at);
  CHECK(ms(m, spinner.acquired_at - owner.released_at) < 0.02);
  CHECK(s.spin_cycles > 0);
  CHECK(s.spin_cycles == s.wait_cycles);
}

TEST_CASE(
    "GuestRwsem: a writer that finds the lock held by a reader does not spin, it sleeps "
    "until the reader's release wakes it",
    "[model][rwsem]") {
  InProcessModel m(kScenario, pinned_guest(2, "0.02"));
  GuestRwsem sem = make_rwsem(m, true);
  std::vector<std::string> order;
  LockUser reader("reader", 0, sem, {false, {}, 200000}, order);
  LockUser writer("writer", 1, sem, {true, [&sem] { return sem.readers() > 0; }, 10000}, order);
  kernel(m, 0).add_task(&reader);
  kernel(m, 1).add_task(&writer);
  REQUIRE(m.run().completed);

  REQUIRE(reader.done);
  REQUIRE(writer.done);
  CHECK(order == std::vector<std::string>{"reader", "writer"});
  const RwsemStats& s = sem.stats();
  CHECK(s.read_acquires == 1);
  CHECK(s.write_acquires == 1);
  CHECK(s.write_contended == 1);
  // RWSEM_READER_OWNED: rwsem_can_spin_on_owner() says no, so no spin at all.
  CHECK(writer.spins == 0);
  CHECK(s.write_spins == 0);
  CHECK(s.spin_acquires == 0);
  CHECK(s.spin_cycles == 0);
  CHECK(s.sleeps_reader_owned == 1);
  CHECK(s.sleeps_owner_preempted == 0);
  // It queued and slept once; up_read() -> rwsem_wake() woke it and it took
  // the lock on its retry.
  CHECK(writer.sleeps == 1);
  CHECK(s.write_sleeps == 1);
  CHECK(s.wakeups == 1);
  CHECK(writer.acquired_at >= reader.released_at);
  CHECK(sem.waiters() == 0);
}

TEST_CASE(
    "GuestRwsem: with the PV vcpu_is_preempted a spinning writer stops spinning and sleeps "
    "when the owner's vCPU is preempted on the host",
    "[model][rwsem]") {
  // A host CPU hog shares pCPU 0 with vCPU 0: CFS preempts the vCPU thread
  // within its slice (12 ms), while the owner holds the lock for 50 ms of
  // its own work.
  InProcessModel m(kScenario,
                   pinned_guest(2, "0.3", {"host.hog.count=1", "host.hog.affinity=[0]"}));
  GuestRwsem sem = make_rwsem(m, true);
  std::vector<std::string> order;
  LockUser owner("owner", 0, sem, {true, {}, 50e6}, order);
  // The writer arrives while the owner's vCPU runs, so it starts spinning.
  LockUser writer("writer", 1, sem,
                  {true, [&] { return sem.writer() != nullptr && vcpu_running(m, 0); }, 10000},
                  order);
  kernel(m, 0).add_task(&owner);
  kernel(m, 1).add_task(&writer);
  REQUIRE(m.run().completed);

  REQUIRE(owner.done);
  REQUIRE(writer.done);
  REQUIRE(m.system().vcpus().at(0)->stats().preemptions >= 1);
  CHECK(order == std::vector<std::string>{"owner", "writer"});
  const RwsemStats& s = sem.stats();
  // It spun while the owner's vCPU ran, saw KVM_VCPU_PREEMPTED at a re-check
  // (rwsem_spin_on_owner()) and went to sleep; the owner's up_write() woke
  // it.
  CHECK(s.write_spins == 1);
  CHECK(writer.spins >= 1);
  CHECK(s.sleeps_owner_preempted == 1);
  CHECK(writer.sleeps == 1);
  CHECK(s.write_sleeps == 1);
  CHECK(s.spin_acquires == 0);
  CHECK(s.wakeups == 1);
  CHECK(s.write_acquires == 2);
  CHECK(writer.acquired_at >= owner.released_at);
  // It stopped at the end of the owner's vCPU's first host slice (~13 ms
  // here), long before the owner's release (the native spin of the next test
  // lasts ~89 ms).
  CHECK(ms(m, s.spin_cycles) < 25);
}

TEST_CASE(
    "GuestRwsem: with the native vcpu_is_preempted a writer keeps spinning while the "
    "owner's vCPU is preempted and takes the lock by spinning",
    "[model][rwsem]") {
  // The same set-up as the PV test above: only vcpu_is_preempted() differs.
  InProcessModel m(kScenario,
                   pinned_guest(2, "0.3", {"host.hog.count=1", "host.hog.affinity=[0]"}));
  GuestRwsem sem = make_rwsem(m, false);
  std::vector<std::string> order;
  LockUser owner("owner", 0, sem, {true, {}, 50e6}, order);
  LockUser writer("writer", 1, sem,
                  {true, [&] { return sem.writer() != nullptr && vcpu_running(m, 0); }, 10000},
                  order);
  kernel(m, 0).add_task(&owner);
  kernel(m, 1).add_task(&writer);
  REQUIRE(m.run().completed);

  REQUIRE(owner.done);
  REQUIRE(writer.done);
  REQUIRE(m.system().vcpus().at(0)->stats().preemptions >= 1);
  const RwsemStats& s = sem.stats();
  CHECK(s.write_spins == 1);
  CHECK(s.spin_acquires == 1);
  CHECK(writer.sleeps == 0);
  CHECK(s.write_sleeps == 0);
  CHECK(s.sleeps_owner_preempted == 0);
  // The spin lasted longer than the owner's 50 ms of work: it went on
  // through the time the owner's vCPU was off its pCPU.
  CHECK(ms(m, s.spin_cycles) > 50);
}

TEST_CASE(
    "GuestRwsem: a writer does not spin on a writer owner that is off its CPU, sleeping "
    "with the lock held",
    "[model][rwsem]") {
  // The native vcpu_is_preempted(): only owner->on_cpu can stop the spin.
  InProcessModel m(kScenario, pinned_guest(2, "0.02"));
  GuestRwsem sem = make_rwsem(m, false);
  std::vector<std::string> order;
  LockScript sleeper{true, {}, 200000};
  sleeper.sleep_holding = true;
  LockUser owner("owner", 0, sem, sleeper, order);
  LockUser writer("writer", 1, sem, {true, [&sem] { return sem.writer() != nullptr; }, 10000},
                  order);
  kernel(m, 0).add_task(&owner);
  kernel(m, 1).add_task(&writer);
  REQUIRE(m.run().completed);

  REQUIRE(owner.done);
  REQUIRE(writer.done);
  CHECK(order == std::vector<std::string>{"owner", "writer"});
  const RwsemStats& s = sem.stats();
  CHECK(writer.spins == 0);
  CHECK(s.write_spins == 0);
  CHECK(s.spin_acquires == 0);
  CHECK(s.sleeps_owner_preempted == 1);
  CHECK(writer.sleeps == 1);
  CHECK(s.wakeups == 1);
  CHECK(writer.acquired_at >= owner.released_at);
}

TEST_CASE(
    "GuestRwsem: a reader that arrives behind a queued writer queues too and gets the lock "
    "only after that writer released it",
    "[model][rwsem]") {
  InProcessModel m(kScenario, pinned_guest(3, "0.02"));
  GuestRwsem sem = make_rwsem(m, true);
  std::vector<std::string> order;
  LockUser first("first-reader", 0, sem, {false, {}, 200000}, order);
  LockUser writer("writer", 1, sem, {true, [&sem] { return sem.readers() > 0; }, 100000}, order);
  // Arrives while the first reader still holds the lock and the writer waits.
  LockUser second("second-reader", 2, sem,
                  {false, [&sem] { return sem.waiters() == 1 && sem.readers() > 0; }, 10000},
                  order);
  kernel(m, 0).add_task(&first);
  kernel(m, 1).add_task(&writer);
  kernel(m, 2).add_task(&second);
  REQUIRE(m.run().completed);

  REQUIRE(first.done);
  REQUIRE(writer.done);
  REQUIRE(second.done);
  // The lock was reader-owned when the second reader came, but the queued
  // writer (RWSEM_WAITING_BIAS in the count) sent it to the slow path: it
  // queued behind the writer, and the writer's up_write() handed it the lock.
  CHECK(order == std::vector<std::string>{"first-reader", "writer", "second-reader"});
  const RwsemStats& s = sem.stats();
  CHECK(s.read_contended == 1);
  CHECK(s.read_sleeps == 1);
  CHECK(second.sleeps == 1);
  CHECK(s.sleeps_reader_owned == 1);
  CHECK(s.wakeups == 2);  // the writer by up_read(), the reader by up_write()
  CHECK(s.read_acquires == 2);
  CHECK(s.write_acquires == 1);
  CHECK(second.acquired_at >= writer.released_at);
  CHECK(writer.acquired_at >= first.released_at);
}
