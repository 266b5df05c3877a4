// Shared pCPUs under the host's fair scheduler: over-commit fair shares,
// steal time, the context-switch rate the slice parameters imply, the sched
// trace events, and the scheduling invariants under random load.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "sim/checks/sched_invariants.h"
#include "sim/sched/pids.h"
#include "tests/cli/cli_runner.h"
#include "tests/cli/traced_run.h"

using namespace kvmsim::test;

TEST_CASE(
    "overcommit_busy: each vCPU gets the fair share of the pCPU it shares, waits the rest as "
    "steal time, and is switched at the rate the CFS slices imply",
    "[cli][sched]") {
  const double T = 4.0;
  const auto m =
      run_metrics("oc-busy", "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=4");
  REQUIRE(m.at("sim.simulated_s") == Approx(T));
  // 9 always-runnable threads on 4 pCPUs, no periodic balancing that would
  // change a 3-2-2-2 split (v5.4 leaves it: moving one task only swaps the
  // imbalance): two vCPUs share a pCPU with the host hog (1/3 each), six
  // share a pCPU in pairs (1/2).
  CHECK(m.at("host.sched.migrations") == 0);
  int thirds = 0, halves = 0;
  double total_run = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string k = "vcpu." + std::to_string(i);
    const double run = m.at(k + ".run_s"), steal = m.at(k + ".steal_s");
    INFO(k << " run " << run << " steal " << steal);
    total_run += run;
    CHECK(run + steal == Approx(T).epsilon(0.001));  // always runnable: waiting = steal
    if (std::fabs(run - T / 3) < 0.05 * T / 3) ++thirds;
    if (std::fabs(run - T / 2) < 0.05 * T / 2) ++halves;
  }
  CHECK(thirds == 2);
  CHECK(halves == 6);
  CHECK(m.at("vcpu.steal_s") == Approx(8 * T - total_run).epsilon(0.001));
  // CFS with 8 online CPUs (log scaling: x4): latency 24 ms, so a pCPU with
  // n threads gives slices of 24/n ms, ended by the first HZ=1000 tick past
  // the slice: about 1000/(24/n + 1) switches per second.
  const double expected = T * (1000.0 / (24.0 / 3 + 1) + 3 * 1000.0 / (24.0 / 2 + 1));
  INFO("context switches " << m.at("host.sched.context_switches").get<double>() << " expected ~"
                           << expected);
  CHECK(m.at("host.sched.context_switches").get<double>() == Approx(expected).epsilon(0.1));
  CHECK(m.at("vcpu.preemptions").get<double>() > 0.8 * expected);
}

TEST_CASE("the over-commit trace reads back with every context switch as a sched_switch",
          "[cli][sched][trace]") {
  const auto dir = out_dir("oc-trace");
  const auto r =
      run_cli("run scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.5 -q --out " +
              dir.string() + " --trace " + (dir / "t.txt").string());
  REQUIRE(r.exit_code == 0);
  const auto m = read_json(dir / "summary.json").at("metrics");
  const auto s = run_cli("trace-stats " + (dir / "t.txt").string() + " --json");
  REQUIRE(s.exit_code == 0);
  const auto j = nlohmann::json::parse(s.output.substr(s.output.find('{')));
  CHECK(j.at("events").at("sched_switch").at("count") == m.at("host.sched.context_switches"));
  CHECK(j.at("lines").at("malformed") == 0);
}

TEST_CASE(
    "under random load (unpinned HLT vCPUs, host hogs, kworkers, noise) no scheduling "
    "invariant breaks and every kick of a blocked vCPU wakes it",
    "[cli][sched]") {
  for (int seed : {1, 2, 3, 4}) {
    INFO("seed " << seed);
    const auto m =
        run_metrics("sched-random-" + std::to_string(seed),
                    "tests/data/scenarios/sched_random_load.yaml --seed " + std::to_string(seed));
    CHECK(m.at("invariants.violations") == 0);
    CHECK(m.at("vcpu.kicks_lost") == 0);
    CHECK(m.at("cyclictest.loops") == 1500);
    CHECK(m.at("vcpu.kicks").get<double>() > 1000);  // timer wake-ups of blocked vCPUs
    CHECK(m.at("host.sched.wakeup_preemptions").get<double>() > 1000);  // they preempt the hogs
    CHECK(m.at("host.sched.migrations").get<double>() >= 1);  // new-idle balance moved one
  }
}

TEST_CASE("the invariant checker flags a pCPU running two threads and a vCPU entering elsewhere",
          "[sched]") {
  kvmsim::SchedInvariants chk({1000});
  chk.on_sched_switch(0, "swapper/0", 0, 120, true, "CPU 0/KVM", 1000, 120, 10);
  CHECK(chk.violations() == 0);
  chk.on_vmentry(0, 0, 11);  // fine: it is current on pCPU 0
  CHECK(chk.violations() == 0);
  chk.on_sched_switch(1, "swapper/1", 0, 120, true, "CPU 0/KVM", 1000, 120, 12);  // on two pCPUs
  CHECK(chk.violations() == 1);
  chk.on_sched_switch(0, "hog", 3000, 120, true, "swapper/0", 0, 120, 13);  // 3000 was not running
  CHECK(chk.violations() == 2);
  chk.on_vmentry(0, 0, 14);  // pCPU 0 now idle
  CHECK(chk.violations() == 3);
}

TEST_CASE("two idle=poll vCPUs pinned to one pCPU share it half and half", "[cli][sched]") {
  const auto m = run_metrics("shared-pin",
                             "scenarios/cyclictest_pinned.yaml --set vm.pinning=[2,2] "
                             "--set host.tick_hz=1000 --set workload.type=busy "
                             "--set sim.max_simulated_s=2");
  CHECK(m.at("vcpu.0.run_s").get<double>() == Approx(1.0).epsilon(0.02));
  CHECK(m.at("vcpu.1.run_s").get<double>() == Approx(1.0).epsilon(0.02));
  CHECK(m.at("vcpu.0.steal_s").get<double>() == Approx(1.0).epsilon(0.02));
}

TEST_CASE(
    "vmexit.flat ipi with both vCPUs on one pCPU: every IPI is accepted and handled once, the "
    "blocked target is switched in by wake-up preemption and the invariants hold",
    "[cli][sched]") {
  const auto m = run_metrics("ipi-shared",
                             "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=4000000 "
                             "--set vm.pinning=[2,2] --set host.tick_hz=1000 "
                             "--set sim.check_invariants=true");
  const double sent = m.at("ipi.sent");
  CHECK(sent > 100);
  CHECK(m.at("ipi.accepted") == sent);
  CHECK(m.at("ipi.handled") == sent);
  CHECK(m.at("invariants.violations") == 0);
  CHECK(m.at("vcpu.kicks_lost") == 0);
  // Two switches per IPI at least: sender -> target (woken), target -> sender (HLT).
  CHECK(m.at("host.sched.context_switches").get<double>() >= 2 * sent);
  // Sharing the pCPU costs the context switches: far slower than on two pCPUs
  // (T6's published figure).
  CHECK(m.at("vmexit.ipi.cycles").get<double>() > 2 * published_figure("T6", "no_fastpath").value);
}

TEST_CASE(
    "host tick by context: two CPU-bound vCPUs pinned to one stock pCPU are time-sliced at "
    "CONFIG_HZ, isolated on the 1 Hz residual tick they are not and the run warns",
    "[cli][sched]") {
  const std::string base =
      "run scenarios/cyclictest_pinned.yaml -q --set workload.type=busy --set vm.vcpus=2 "
      "--set vm.pinning=[2,2] --set sim.max_simulated_s=0.5 --set host.tick_hz=-1 ";
  // Not isolated: host.hz (250 Hz) ticks, CFS preempts at check_preempt_tick().
  const auto stock_dir = out_dir("tick-stock");
  const auto stock = run_cli(base + "--set host.isolcpus=[] --out " + stock_dir.string());
  REQUIRE(stock.exit_code == 0);
  CHECK(stock.output.find("warning: host.tick_hz") == std::string::npos);
  const auto ms = read_json(stock_dir / "summary.json")["metrics"];
  CHECK(ms.at("host.sched.context_switches").get<double>() > 20);
  CHECK(ms.at("vcpu.1.run_s").get<double>() > 0.1);
  // Isolated: the 1 Hz residual tick; each vCPU keeps the pCPU for its 1 s slice.
  const auto iso_dir = out_dir("tick-iso");
  const auto iso = run_cli(base + "--set host.isolcpus=[2] --out " + iso_dir.string());
  REQUIRE(iso.exit_code == 0);
  CHECK(
      iso.output.find("warning: host.tick_hz: vCPU threads share pCPU 2 whose host tick is 1 Hz") !=
      std::string::npos);
  const auto mi = read_json(iso_dir / "summary.json")["metrics"];
  CHECK(mi.at("host.sched.context_switches").get<double>() < 5);
}

// vm.cgroup (group scheduling, docs/model/host-scheduler.md): 8 CPU-bound
// vCPUs pinned two per pCPU on 4 pCPUs and one host hog on pCPU 0. Flat,
// pCPU 0 is shared by 3 equal threads, so the VM gets 3 + 2/3 pCPUs; with a
// group per VM the VM weighs 1024 x 2/8 = 256 there against the hog's 1024,
// so the hog gets 80% of its pCPU and the VM 3.2 pCPUs. The default is the
// flat scheduler.
TEST_CASE(
    "vm.cgroup per_vm: a host hog beside a VM's group gets 80% of its pCPU, the VM the rest, "
    "and one shared group is the same as a group per VM for one VM",
    "[cli][sched][groups]") {
  const std::string base =
      "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=2 --set "
      "vm.pinning=[0,0,1,1,2,2,3,3] --set vm.affinity=[] --set host.hog.affinity=[0]";
  const auto flat = run_metrics("cg-none", base);
  const auto grouped = run_metrics("cg-per-vm", base + " --set vm.cgroup=per_vm");
  // One VM: all VMs in one group is the same hierarchy as a group per VM.
  const auto shared = run_metrics("cg-shared", base + " --set vm.cgroup=shared");
  const auto vm_cpu_s = [](const nlohmann::json& m) {
    double steal = 0;
    for (int v = 0; v < 8; ++v)
      steal += m.at("vcpu." + std::to_string(v) + ".steal_s").get<double>();
    return 8 * 2.0 - steal;  // every vCPU is always runnable
  };
  CHECK(vm_cpu_s(flat) == Approx(2 * (3 + 2.0 / 3)).epsilon(0.02));
  CHECK(vm_cpu_s(grouped) == Approx(2 * 3.2).epsilon(0.02));
  CHECK(grouped.at("sim.fingerprint") != flat.at("sim.fingerprint"));
  CHECK(shared.at("sim.fingerprint") == grouped.at("sim.fingerprint"));
}

// host.sched_autogroup per_session: threads a cgroup leaves in the root run
// in their session's autogroup of weight 1024. With one VM and a hog on
// pCPU 0 that is the VM in a group and the hogs in another; vm.cpu_shares
// (a cgroup's knob) does not act on an autogroup, and a VM placed in a cgroup
// leaves its autogroup (task_wants_autogroup()).
TEST_CASE(
    "host.sched_autogroup per_session groups a VM and the hogs as vm.cgroup per_vm with the "
    "hogs' own group would, and gives way to a cgroup",
    "[cli][sched][groups]") {
  const std::string base =
      "scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.5 --set "
      "vm.pinning=[0,0,1,1,2,2,3,3] --set vm.affinity=[] --set host.hog.affinity=[0]";
  const auto fp = [](const nlohmann::json& m) { return m.at("sim.fingerprint").get<double>(); };
  const auto autogroup = run_metrics("ag-on", base + " --set host.sched_autogroup=per_session");
  const auto cgroups =
      run_metrics("ag-cgroups", base + " --set vm.cgroup=per_vm --set host.hog.cgroup=own");
  const auto flat = run_metrics("ag-off", base);
  CHECK(fp(autogroup) == fp(cgroups));
  CHECK(fp(autogroup) != fp(flat));
  const auto shares = run_metrics(
      "ag-shares", base + " --set host.sched_autogroup=per_session --set vm.cpu_shares=256");
  CHECK(fp(shares) == fp(autogroup));
  // In a cgroup of cpu.shares 256 the VM is no longer in its autogroup.
  const auto in_cgroup = run_metrics("ag-in-cgroup", base +
                                                         " --set host.sched_autogroup=per_session "
                                                         "--set vm.cgroup=per_vm --set "
                                                         "vm.cpu_shares=256");
  const auto cgroup_only = run_metrics(
      "ag-cgroup-only",
      base + " --set vm.cgroup=per_vm --set vm.cpu_shares=256 --set host.hog.cgroup=own");
  CHECK(fp(in_cgroup) == fp(cgroup_only));
  CHECK(fp(in_cgroup) != fp(autogroup));
}

TEST_CASE(
    "pids: 2304 vCPU threads beside host CPU hogs each have their own pid, which names one "
    "thread in the trace (sim/sched/pids.h ranges)",
    "[cli][sched]") {
  // vCPU 2000's pid, 1000 + 2000, was the first hog's (3000 + 0) before the
  // ranges were made disjoint: the two threads shared a scheduling entity id.
  const auto run = traced_run("pids",
                              "scenarios/ebizzy_multi_vm.yaml --set vm.count=9 --set vm.vcpus=256 "
                              "--set host.hog.count=2 --set sim.max_simulated_s=0.002");
  std::map<int, std::set<std::string>> comms;
  for (const auto& e : run.events) {
    if (const auto* s = std::get_if<kvmsim::trace::SchedSwitch>(&e.data)) {
      if (s->prev_pid != 0) comms[s->prev_pid].insert(s->prev_comm);
      if (s->next_pid != 0) comms[s->next_pid].insert(s->next_comm);
    }
  }
  std::size_t shared = 0;
  for (const auto& [pid, names] : comms) shared += names.size() > 1;
  CHECK(shared == 0);
  // Both kinds ran: the hogs and vCPU threads with ids past 2000.
  CHECK(comms.count(kvmsim::pids::kHogBase) == 1);
  CHECK(comms.count(kvmsim::pids::kVcpuBase + 2000) == 1);
}
