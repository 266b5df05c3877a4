// Remote TLB flush in the guest (sim/guest/tlb_flush.*): native IPIs with a
// wait for every target, the PV flush of preempted targets through the
// steal-time area (record_steal_time), and the "no flush is lost" invariant,
// on the T4 scenario (ebizzy -M, Haswell i7 desktop, 8 pCPUs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "tests/cli/cli_runner.h"

using namespace kvmsim::test;

namespace {

const std::string kT4 = "scenarios/ebizzy_overcommit.yaml --set sim.check_invariants=true ";

}  // namespace

TEST_CASE("native flush: every target gets the IPI and runs the handler before the call returns",
          "[cli][tlb]") {
  const auto r = run_metrics("tlb-native-8", kT4 + "--set sim.max_simulated_s=0.2");
  CHECK(metric(r, "invariants.violations") == 0);
  CHECK(metric(r, "tlb.flushes") > 100);
  // 8 threads on 8 vCPUs: each flush goes to the 7 others, all by IPI.
  CHECK(metric(r, "tlb.targets") == 7 * metric(r, "tlb.flushes"));
  CHECK(metric(r, "tlb.ipi_targets") == metric(r, "tlb.targets"));
  CHECK(metric(r, "tlb.pv_targets") == 0);
  // Every IPI'd target ran flush_tlb_func_remote() (the handler count can
  // trail by the calls still in flight at the end of the run).
  CHECK(metric(r, "tlb.handler_flushes") <= metric(r, "tlb.ipi_targets"));
  CHECK(metric(r, "tlb.handler_flushes") >= metric(r, "tlb.ipi_targets") - 7 * 8);
  CHECK(metric(r, "guest.ipi.call_function.handled") <= metric(r, "guest.ipi.call_function.sent"));
  CHECK(r.find("vcpu.pv_tlb_flushes") == r.end());  // the host never flushes for the guest
}

TEST_CASE(
    "PV flush with random host preemption: preempted targets flush on their next entry, "
    "none is lost",
    "[cli][tlb]") {
  // 16 vCPUs and 4 host CPU hogs on 8 pCPUs: vCPU threads are preempted at
  // random points of their flushes and records.
  const auto dir = out_dir("tlb-pv-trace");
  std::filesystem::create_directories(dir);
  const auto trace = dir / "trace.txt";
  const auto r = run_metrics("tlb-pv-16", kT4 +
                                              "--set vm.vcpus=16 --set guest.pv_tlb_flush=true "
                                              "--set host.hog.count=4 "
                                              "--set sim.max_simulated_s=0.5 --trace " +
                                              trace.string());
  CHECK(metric(r, "invariants.violations") == 0);
  CHECK(metric(r, "tlb.pv_targets") > 100);
  CHECK(metric(r, "tlb.ipi_targets") > 0);
  CHECK(metric(r, "tlb.pv_targets") + metric(r, "tlb.ipi_targets") == metric(r, "tlb.targets"));
  // Each successful cmpxchg set the flag; several requests before one entry
  // share one host flush, and requests on vCPUs still preempted at the end
  // are not flushed yet.
  CHECK(metric(r, "vcpu.pv_tlb_flush_requests") == metric(r, "tlb.pv_targets"));
  CHECK(metric(r, "vcpu.pv_tlb_flushes") > 0);
  CHECK(metric(r, "vcpu.pv_tlb_flushes") <= metric(r, "vcpu.pv_tlb_flush_requests"));
  // kvm_pv_tlb_flush arrived in v5.4: this v4.16 host flushes without tracing it
  // (tracepoint_audit_test.cpp pins the count on a v5.4 host).
  const auto st = run_cli("trace-stats --json " + trace.string());
  REQUIRE(st.exit_code == 0);
  const auto j = nlohmann::json::parse(st.output);
  CHECK(j.at("pv_tlb_flush").at("true").get<double>() == 0);
  CHECK(j.at("pv_tlb_flush").at("false").get<double>() == 0);
  // kvm_hypercall: one per KVM_HC_KICK_CPU of the guest's PV qspinlock.
  REQUIRE(metric(r, "vcpu.pv_kicks") > 0);
  CHECK(j.at("events").at("kvm_hypercall").at("count").get<double>() == metric(r, "vcpu.pv_kicks"));
}

TEST_CASE("the pre-v5.6 steal-time write-back loses KVM_VCPU_FLUSH_TLB and the invariant says so",
          "[cli][tlb]") {
  // CVE-2019-3016: record_steal_time() of v4.16-v5.5 wrote its copy of the
  // struct back after the request processing, over a flag another vCPU set
  // meanwhile. The window is the vcpu_enter_guest() stage, widened here so
  // that a short run hits it.
  const auto r =
      run_cli("run " + kT4 +
              "--set vm.vcpus=16 --set guest.pv_tlb_flush=true --set host.hog.count=4 "
              "--set kvm.steal_time_atomic_preempted=false --set cost.vcpu_enter_guest=20us "
              "--set sim.max_simulated_s=2 -q --out " +
              out_dir("tlb-race").string());
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("a flush was lost") != std::string::npos);
}

TEST_CASE("over-commit: native flush collapses from 8 to 16 vCPUs, PV flush recovers",
          "[cli][tlb]") {
  const std::string s = kT4 + "--set sim.max_simulated_s=1 ";
  const auto n8 = run_metrics("tlb-n8", s);
  const auto n16 = run_metrics("tlb-n16", s + "--set vm.vcpus=16");
  const auto p16 = run_metrics("tlb-p16", s + "--set vm.vcpus=16 --set guest.pv_tlb_flush=true");
  const double a = metric(n8, "ebizzy.records_per_s"), b = metric(n16, "ebizzy.records_per_s"),
               c = metric(p16, "ebizzy.records_per_s");
  INFO("records/s: native 8 vCPUs " << a << ", native 16 " << b << ", PV 16 " << c);
  CHECK(b < 0.5 * a);
  CHECK(c > 2 * b);
  // Why: the native initiators wait on targets that are not running.
  CHECK(metric(n16, "tlb.wait_not_running_s") > 0.5 * metric(n16, "tlb.wait_s"));
  CHECK(metric(p16, "tlb.wait_avg_us") < 0.1 * metric(n16, "tlb.wait_avg_us"));
  // Native: every flush with targets sends IPIs. PV could leave every
  // target to the host and send none, but at 16 vCPUs on 8 pCPUs about half
  // the targets run, so in practice every PV flush IPIs someone as well.
  CHECK(metric(n16, "tlb.ipi_flushes") == metric(n16, "tlb.flushes"));
  CHECK(metric(p16, "tlb.ipi_flushes") <= metric(p16, "tlb.flushes"));
  CHECK(metric(p16, "tlb.ipi_flushes") > 0.9 * metric(p16, "tlb.flushes"));
  // The wait bands partition the waits: their counts are the flushes that
  // sent IPIs (PV flushes with every target preempted send none), their
  // times the total, their on-CPU parts the total less the off-CPU part.
  const char* bands[] = {"lt10us", "lt100us", "lt1ms", "lt10ms", "ge10ms"};
  const auto band = [&](const nlohmann::json& r, const char* name, const char* what) {
    return metric(r, (std::string("tlb.wait_band.") + name + "." + what).c_str());
  };
  for (const auto* r : {&n16, &p16}) {
    double n = 0, t = 0, on = 0;
    for (const char* bn : bands) {
      n += band(*r, bn, "flushes");
      t += band(*r, bn, "s");
      on += band(*r, bn, "on_cpu_s");
      CHECK(band(*r, bn, "on_cpu_s") <= band(*r, bn, "s") + 1e-12);
    }
    // tlb.ipi_flushes counts a flush when it sends, the bands when it
    // returns: they differ by the waits in flight at the end (one per vCPU
    // at most).
    CHECK(metric(*r, "tlb.ipi_flushes") <= metric(*r, "tlb.flushes"));
    CHECK(n <= metric(*r, "tlb.ipi_flushes"));
    CHECK(n >= metric(*r, "tlb.ipi_flushes") - 16);
    CHECK(t == Approx(metric(*r, "tlb.wait_s")).epsilon(1e-9));
    CHECK(on == Approx(metric(*r, "tlb.wait_s") - metric(*r, "tlb.wait_off_cpu_s")).epsilon(1e-6));
  }
  // Native: the waits for preempted targets are milliseconds long and carry
  // most of the wait time (a v4.16 madvise() flushes twice; the second
  // flush often finds its targets just run by the first and ends sooner).
  // PV: most waits are for running targets and end within 100 us; the few
  // long ones (a target spinning with IRQs off behind a preempted lock
  // holder) still carry most of the wait time.
  CHECK(band(n16, "lt10ms", "flushes") + band(n16, "ge10ms", "flushes") >
        0.25 * metric(n16, "tlb.flushes"));
  CHECK(band(n16, "lt10ms", "s") + band(n16, "ge10ms", "s") > 0.8 * metric(n16, "tlb.wait_s"));
  const double p_short = band(p16, "lt10us", "flushes") + band(p16, "lt100us", "flushes");
  CHECK(p_short > 0.8 * metric(p16, "tlb.flushes"));
  CHECK(band(p16, "lt10ms", "s") + band(p16, "ge10ms", "s") > 0.5 * metric(p16, "tlb.wait_s"));
  CHECK(metric(n16, "invariants.violations") == 0);
  CHECK(metric(p16, "invariants.violations") == 0);
}

TEST_CASE(
    "Pause-Loop Exiting: a native flush initiator's spin exits and yields to preempted "
    "vCPUs in guest kernel mode",
    "[cli][tlb]") {
  // The flush path alone (no lru_lock sections: their PV-lock halts and
  // wake-ups spread the vruntimes that the buddy check below compares).
  const std::string s =
      kT4 + "--set sim.max_simulated_s=0.5 --set vm.vcpus=16 --set ebizzy.lru_lock=false ";
  const auto off = run_metrics("tlb-ple-off", s + "--set kvm.ple_gap=0");
  const auto on = run_metrics("tlb-ple-on", s);  // the scenario: v4.16's ple_gap 128
  // Off (kvm.ple_gap 0): no PAUSE exits at all.
  CHECK(off.find("vcpu.pause_exits") == off.end());
  CHECK(off.find("exits.PAUSE_INSTRUCTION.count") == off.end());
  // On: the csd_lock_wait() spins exit after ple_window cycles and
  // kvm_vcpu_on_spin() finds preempted vCPUs that spun in the kernel too.
  // (exits.* and the handler's count differ by the exits in flight at the end)
  CHECK(std::abs(metric(on, "exits.PAUSE_INSTRUCTION.count") - metric(on, "vcpu.pause_exits")) <=
        16);
  CHECK(metric(on, "vcpu.pause_exits") > 1000);
  CHECK(metric(on, "vcpu.directed_yields") > 0);
  CHECK(metric(on, "vcpu.directed_yields") <= metric(on, "vcpu.pause_exits"));
  // Many boosted vCPUs wait on another pCPU's queue: yield_to()'s
  // resched_curr(p_rq) IPI, unless that pCPU has need_resched already. (The
  // share depends steeply on the switch's cost: 0.49 with the vCPU put /
  // load / VMPTRLD, 2.1 us per switch; 0.88 at 1.95 us.)
  CHECK(metric(on, "vcpu.directed_yields_remote") <= metric(on, "vcpu.directed_yields"));
  CHECK(metric(on, "vcpu.directed_yields_remote") > 0.3 * metric(on, "vcpu.directed_yields"));
  CHECK(metric(on, "vcpu.directed_yield_ipis_saved") > 0);
  CHECK(metric(on, "vcpu.directed_yield_ipis_saved") < metric(on, "vcpu.directed_yields_remote"));
  // Every pCPU is busy with >= 2 runnable threads: no -ESRCH; a candidate
  // is vcpu->preempted, so it is never running when yield_to() looks.
  CHECK(metric(on, "vcpu.yield_to_esrch") == 0);
  CHECK(metric(on, "vcpu.yield_to_failed") == 0);
  // The boosted target runs next on its queue (next buddy) unless it lies
  // more than wakeup_gran right of the leftmost.
  CHECK(metric(on, "host.sched.next_buddy_picks") > metric(on, "host.sched.next_buddy_refused"));
  // The yields let preempted targets run before the initiators' slices end.
  CHECK(metric(on, "tlb.wait_avg_us") < 0.5 * metric(off, "tlb.wait_avg_us"));
  CHECK(metric(on, "invariants.violations") == 0);
  // handle_pause() -> grow_ple_window(): every exit doubles the window (from
  // ple_window 4096, reset at sched_in) up to ple_window_max.
  CHECK(off.find("vcpu.ple_window_peak") == off.end());
  CHECK(metric(on, "vcpu.ple_window_grows") == metric(on, "vcpu.pause_exits"));
  CHECK(metric(on, "vcpu.ple_window_peak") >= 2 * 4096);
  CHECK(metric(on, "vcpu.ple_window_peak") <= 1073741823.0);
  // kvm_vcpu_eligible_for_directed_yield(): a candidate that yielded in its
  // own kvm_vcpu_on_spin() and waits to run is passed over every other time.
  CHECK(metric(on, "vcpu.dy_ineligible") > 0);
  const auto capped =
      run_metrics("tlb-ple-max", s + "--set kvm.ple_gap=128 --set kvm.ple_window_max=8192");
  CHECK(metric(capped, "vcpu.ple_window_peak") == 8192);
  CHECK(metric(capped, "vcpu.ple_window_grows") < metric(capped, "vcpu.pause_exits"));
}

TEST_CASE(
    "host load balancing spreads 24 ebizzy vCPU threads over 8 pCPUs, without it some keep a pCPU "
    "alone and others starve",
    "[cli][tlb][sched]") {
  const std::string s = kT4 + "--set sim.max_simulated_s=1 --set vm.vcpus=24 --set kvm.ple_gap=0 ";
  const auto on = run_metrics("tlb-lb-on", s);  // the scenario: host.sched_load_balance true
  const auto off = run_metrics("tlb-lb-off", s + "--set host.sched_load_balance=false");
  auto min_max = [](const nlohmann::json& r) {
    double lo = 1e9, hi = 0;
    for (int i = 0; i < 24; ++i) {
      const double v = metric(r, ("vcpu." + std::to_string(i) + ".run_s").c_str());
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    return std::make_pair(lo, hi);
  };
  // Fair share: 8/24 = 0.33 s of each simulated second.
  const auto [on_lo, on_hi] = min_max(on);
  CHECK(on_lo > 0.2);
  CHECK(on_hi < 0.7);
  CHECK(metric(on, "host.sched.load_balance_pulls") > 0);
  const auto [off_lo, off_hi] = min_max(off);
  CHECK(off_lo < 0.15);
  CHECK(off_hi > 0.9);
  CHECK(off.find("host.sched.load_balance_pulls") == off.end());
  CHECK(metric(on, "invariants.violations") == 0);
}

TEST_CASE("ebizzy -M takes mmap_sem only for read (faults, madvise): it never blocks",
          "[cli][tlb][rwsem]") {
  // -M: free() trims the arena with madvise(MADV_DONTNEED) under
  // down_read(); no writer, so no reader waits however many are preempted.
  const auto r = run_metrics("rwsem-M-16", kT4 + "--set vm.vcpus=16 --set sim.max_simulated_s=0.3");
  CHECK(metric(r, "mmap_sem.write_acquires") == 0);
  CHECK(metric(r, "mmap_sem.read_contended") == 0);
  CHECK(metric(r, "mmap_sem.read_sleeps") == 0);
  // Read holds per record: one per group of faults up to a pagevec drain
  // (96 faults in at least ceil(96 / 15) = 7 groups; more where the other
  // thread on the vCPU filled part of the pagevec) and the madvise; plus
  // those of the records in flight at the end.
  const double records = metric(r, "ebizzy.vm0.records");
  CHECK(metric(r, "mmap_sem.read_acquires") >= 8 * records);
  CHECK(metric(r, "mmap_sem.read_acquires") <= 9 * records + 9 * metric(r, "ebizzy.threads"));
  CHECK(metric(r, "invariants.violations") == 0);
}

// The record's kernel path (sim/guest/workloads/ebizzy_workload.cpp): with
// -M glibc's heap_trim() keeps M_TOP_PAD (128 KiB) of the freed copy, so a
// record re-faults 96 of its 128 pages (64 with a 256 KiB pad, none with
// 512); -m faults all 128. A v4.16 guest's zap_page_range() flushes twice (4647706ebeee), a
// v4.19 guest's once (50c150f26261), and munmap() once in any era. Without
// over-commit every flush has the other 7 vCPUs as targets.
TEST_CASE("ebizzy record: faults per record follow M_TOP_PAD, flushes per record the guest's era",
          "[cli][tlb]") {
  const std::string s = kT4 + "--set sim.max_simulated_s=0.1 ";
  // `key` counts `n` per finished record, plus at most `n` for each thread's
  // record in flight at the end.
  const auto per_record = [](const nlohmann::json& m, const char* key, double n) {
    const double records = metric(m, "ebizzy.vm0.records");
    INFO(key << " " << metric(m, key) << " over " << records << " records");
    CHECK(metric(m, key) >= n * records);
    CHECK(metric(m, key) <= n * (records + metric(m, "ebizzy.threads")));
  };
  const auto m416 = run_metrics("record-416", s);
  per_record(m416, "ebizzy.page_faults", 96);
  per_record(m416, "tlb.flushes", 2);
  const auto m419 = run_metrics("record-419", s + "--set guest.kernel=4.19");
  per_record(m419, "ebizzy.page_faults", 96);
  per_record(m419, "tlb.flushes", 1);
  const auto pad = run_metrics("record-pad", s + "--set ebizzy.malloc_top_pad_kib=256");
  per_record(pad, "ebizzy.page_faults", 64);
  // The two flushes of a v4.16 madvise() run one after the other: the
  // second one's wait does not contain the first's, so the mean wait per
  // flush is about a v4.19 guest's (not 1.5 times it).
  CHECK(metric(m416, "tlb.wait_avg_us") < 1.2 * metric(m419, "tlb.wait_avg_us"));
  // A pad that covers the copy leaves nothing to trim: no fault, no
  // madvise(), no flush.
  const auto full = run_metrics("record-pad-512", s + "--set ebizzy.malloc_top_pad_kib=512");
  CHECK(metric(full, "ebizzy.vm0.records") > 0);
  CHECK(metric(full, "ebizzy.page_faults") == 0);
  CHECK(metric(full, "tlb.flushes") == 0);
  const auto mm = run_metrics("record-mmap", s + "--set ebizzy.alloc=mmap");
  per_record(mm, "ebizzy.page_faults", 128);
  per_record(mm, "tlb.flushes", 1);
  for (const auto* m : {&m416, &m419, &pad, &mm}) CHECK(metric(*m, "invariants.violations") == 0);
}

TEST_CASE(
    "ebizzy -m: a contended writer sleeps behind the faults' readers, spins on a running writer "
    "and sleeps when the owner's vCPU is preempted",
    "[cli][tlb][rwsem]") {
  const std::string s = kT4 + "--set ebizzy.alloc=mmap --set sim.max_simulated_s=0.3 ";
  // 8 vCPUs on 8 pCPUs: no vCPU thread is preempted. Each of a record's 128
  // faults read-locks mmap_sem, so a writer mostly finds readers holding it
  // and sleeps (v4.16's rwsem_can_spin_on_owner() does not spin on a
  // reader-owned lock); one that finds a writer spins
  // (rwsem_optimistic_spin()). None sleeps because of a preempted owner.
  const auto n8 = run_metrics("rwsem-m-8", s);
  CHECK(metric(n8, "vcpu.preemptions") == 0);
  CHECK(metric(n8, "mmap_sem.write_contended") > 0);
  CHECK(metric(n8, "mmap_sem.sleeps_reader_owned") > 0.5 * metric(n8, "mmap_sem.write_contended"));
  CHECK(metric(n8, "mmap_sem.write_spins") > 0);
  CHECK(metric(n8, "mmap_sem.sleeps_owner_preempted") == 0);
  // 16 vCPUs: owners are preempted while they hold the lock (in their
  // flush); writers that see vcpu_is_preempted() sleep instead of spinning,
  // readers (the faults) sleep behind the writer.
  const auto n16 = run_metrics("rwsem-m-16", s + "--set vm.vcpus=16");
  CHECK(metric(n16, "vcpu.preemptions") > 0);
  CHECK(metric(n16, "mmap_sem.sleeps_owner_preempted") > 0);
  CHECK(metric(n16, "mmap_sem.write_sleeps") >= metric(n16, "mmap_sem.sleeps_owner_preempted"));
  CHECK(metric(n16, "mmap_sem.read_sleeps") > 0);
  // The releases wake the sleepers (readers get the lock with the wake-up,
  // a woken writer retries and may lose it to a running writer).
  CHECK(metric(n16, "mmap_sem.wakeups") > 0);
  // Per finished record: mmap() and munmap() write-lock, each of the 128
  // faults read-locks.
  CHECK(metric(n16, "mmap_sem.write_acquires") >= 2 * metric(n16, "ebizzy.vm0.records"));
  CHECK(metric(n16, "mmap_sem.read_acquires") >= 128 * metric(n16, "ebizzy.vm0.records"));
  CHECK(metric(n16, "invariants.violations") == 0);
}

TEST_CASE("ebizzy -m with PV flush and host hogs: no flush is lost under mmap_sem",
          "[cli][tlb][rwsem]") {
  const auto r = run_metrics(
      "rwsem-m-pv", kT4 +
                        "--set ebizzy.alloc=mmap --set vm.vcpus=16 --set guest.pv_tlb_flush=true "
                        "--set host.hog.count=4 --set sim.max_simulated_s=0.3");
  CHECK(metric(r, "invariants.violations") == 0);
  CHECK(metric(r, "tlb.pv_targets") > 0);
  CHECK(metric(r, "mmap_sem.write_acquires") > 0);
}

// ebizzy.lru_lock (sim/guest/kernel/spinlock.h): the record's lru_lock
// sections where v4.16 takes them (-M: 7 pagevec drains and 4 release_pages()
// batches, IRQs off). Without over-commit no holder is ever preempted and no
// waiter halts; ebizzy.lru_lock=false: no ebizzy.lock.* metric.
TEST_CASE("ebizzy lock sections: no holder preemption and no PV halt without over-commit",
          "[cli][tlb]") {
  const auto off =
      run_metrics("lock-off-8", kT4 + "--set ebizzy.lru_lock=false --set sim.max_simulated_s=0.2");
  CHECK(off.find("ebizzy.lock.acquires") == off.end());
  const auto r8 = run_metrics("lock-8", kT4 + "--set sim.max_simulated_s=0.2");
  CHECK(metric(r8, "invariants.violations") == 0);
  // 96 faults fill ceil(96 / 15) = 7 pagevecs (the last drained by the
  // madvise), and release_pages() of 8 + 88 pages takes the lock 1 + 3 times.
  // The two threads of a vCPU share its pagevec, so a drain may fall in
  // either's record: 11 per record on average.
  const double per_record = metric(r8, "ebizzy.lock.acquires") / metric(r8, "ebizzy.vm0.records");
  CHECK(per_record > 10.5);
  CHECK(per_record < 11.5);
  CHECK(metric(r8, "ebizzy.lock.contended") > 0);
  CHECK(metric(r8, "ebizzy.lock.hold_preempted") == 0);
  CHECK(metric(r8, "ebizzy.lock.wait_off_cpu_s") == 0);
  CHECK(metric(r8, "ebizzy.lock.pv_wait_node") + metric(r8, "ebizzy.lock.pv_wait_head") == 0);
  // Contended unlocks hand the lock to a spinning queue head whose vCPU is
  // running: the hand-over costs no off-CPU time, and no head ever halts.
  CHECK(metric(r8, "ebizzy.lock.handoffs") > 0);
  CHECK(metric(r8, "ebizzy.lock.handoff_off_cpu_s") == 0);
  CHECK(metric(r8, "ebizzy.lock.handoff_s") <
        1e-6 * metric(r8, "ebizzy.lock.handoffs"));  // < 1 us each
  CHECK(metric(r8, "ebizzy.lock.free_halted_head_s") == 0);
}

// The fair queued (MCS) lock with 2 us sections (no PV halting): with 16 vCPUs on 8 pCPUs holders
// and queue heads are preempted, the waiters spin on them (lock-holder / lock-waiter preemption),
// and the PV-flush run loses records to it.
TEST_CASE("queued spinlock: holders are preempted under over-commit, and PV pays for it",
          "[cli][tlb]") {
  const std::string mcs =
      "--set guest.pv_spinlock=false --set guest.virt_spin_lock=false "
      "--set cost.ebizzy.lock_hold=2us ";
  const std::string pv16 =
      "--set vm.vcpus=16 --set guest.pv_tlb_flush=true --set sim.max_simulated_s=0.5 ";
  const auto base = run_metrics("mcs-pv16-off", kT4 + pv16 + "--set ebizzy.lru_lock=false");
  const auto r16 = run_metrics("mcs-pv16", kT4 + mcs + pv16);
  CHECK(metric(r16, "invariants.violations") == 0);
  CHECK(metric(r16, "ebizzy.lock.hold_preempted") > 0);
  CHECK(metric(r16, "ebizzy.lock.wait_off_cpu_s") > 0);
  CHECK(metric(r16, "ebizzy.records_per_s") < 0.9 * metric(base, "ebizzy.records_per_s"));
}

// The v4.16 guest's PV qspinlock under 2x over-commit, against the lock
// event counts Wanpeng Li posted in the thread of the 2019 revert of
// 75437bb304b2 (kvm@vger.kernel.org, 2019-09-10, reply to Waiman Long;
// ebizzy -M, 3 x 80 vCPUs on 80 pCPUs; cumulative guest counters read twice
// 5 s apart: pv_wait_node 189429 -> 202590, pv_wait_early 189429 -> 202574,
// pv_wait_head 263 -> 267, pv_wait_again 179 -> 181): nearly every
// halt of a queued waiter is an early one (its predecessor halted or was
// preempted: the cascade Waiman Long described), the queue head almost never
// halts, and every kick of a halted head is a KVM_HC_KICK_CPU that wakes it.
TEST_CASE("PV qspinlock: waiters halt early in a cascade, heads rarely, kicks wake them",
          "[cli][tlb]") {
  const auto r = run_metrics("pvq-16", kT4 +
                                           "--set vm.vcpus=16 --set guest.pv_tlb_flush=true "
                                           "--set sim.max_simulated_s=2");
  CHECK(metric(r, "invariants.violations") == 0);
  const double node = metric(r, "ebizzy.lock.pv_wait_node");
  INFO("pv_wait_node " << node << ", early " << metric(r, "ebizzy.lock.pv_wait_early") << ", head "
                       << metric(r, "ebizzy.lock.pv_wait_head") << ", kicks "
                       << metric(r, "vcpu.pv_kicks") << " (woke "
                       << metric(r, "vcpu.pv_kick_wakeups") << ")");
  CHECK(node > 200);
  CHECK(metric(r, "ebizzy.lock.pv_wait_early") >= 0.9 * node);
  CHECK(metric(r, "ebizzy.lock.pv_wait_head") < 0.05 * node);
  // Some early waits come from vcpu_is_preempted() (a v4.16 guest has
  // 75437bb304b2): the predecessor's node spins but its vCPU is off its
  // pCPU. Without that check (the 2019 revert) none do.
  CHECK(metric(r, "ebizzy.lock.pv_wait_early_preempted") > 0);
  CHECK(metric(r, "ebizzy.lock.pv_wait_early_preempted") < metric(r, "ebizzy.lock.pv_wait_early"));
  const auto rv =
      run_metrics("pvq-16-revert", kT4 +
                                       "--set vm.vcpus=16 --set guest.pv_tlb_flush=true "
                                       "--set guest.pv_spinlock_wait_early_preempted=false "
                                       "--set sim.max_simulated_s=1");
  CHECK(metric(rv, "ebizzy.lock.pv_wait_early") > 0);
  CHECK(metric(rv, "ebizzy.lock.pv_wait_early_preempted") == 0);
  CHECK(metric(r, "vcpu.pv_kicks") == metric(r, "ebizzy.lock.pv_kick"));
  CHECK(metric(r, "vcpu.pv_kick_wakeups") >= 0.75 * metric(r, "vcpu.pv_kicks"));
  // Newcomers take the free lock while the head is halted or not yet back.
  CHECK(metric(r, "ebizzy.lock.steals") > metric(r, "ebizzy.lock.pv_kick"));
  // Where the free lock's time goes: with a halted (kicked, not yet
  // running) head it lies open to steals for a sizeable share of the run.
  // Hand-overs to a spinning head are short in all, and what time they
  // take is mostly the head's vCPU off its pCPU (lock-waiter preemption).
  // The lock is held well under half the time: it does not limit this run.
  const double run_s = metric(r, "sim.simulated_s");
  CHECK(metric(r, "ebizzy.lock.free_halted_head_s") > 0.1 * run_s);
  CHECK(metric(r, "ebizzy.lock.handoff_s") < 0.1 * run_s);
  CHECK(metric(r, "ebizzy.lock.handoff_off_cpu_s") <= metric(r, "ebizzy.lock.handoff_s"));
  CHECK(metric(r, "ebizzy.lock.handoff_off_cpu_s") > 0.5 * metric(r, "ebizzy.lock.handoff_s"));
  CHECK(metric(r, "ebizzy.lock.hold_s") < 0.5 * run_s);
  // At 2x over-commit on 8 pCPUs the MCS queue keeps draining (so each
  // cascade of early halts ends), and it is short on average.
  CHECK(metric(r, "ebizzy.lock.queue_drains") > 100);
  CHECK(metric(r, "ebizzy.lock.last_drain_s") > 0.9 * run_s);
  CHECK(metric(r, "ebizzy.lock.queue_len_avg") > 0);
  CHECK(metric(r, "ebizzy.lock.queue_len_avg") < 4);
  // Native qspinlock (nopvspin): no halts, no kicks.
  const auto n = run_metrics("pvq-16-native", kT4 +
                                                  "--set vm.vcpus=16 --set guest.pv_tlb_flush=true "
                                                  "--set guest.pv_spinlock=false "
                                                  "--set sim.max_simulated_s=0.5");
  CHECK(metric(n, "invariants.violations") == 0);
  CHECK(metric(n, "ebizzy.lock.pv_wait_node") + metric(n, "ebizzy.lock.pv_wait_head") == 0);
  CHECK(n.find("vcpu.pv_kicks") == n.end());
}

// Lock waits with IRQs off hold up native flushes: a flush IPI to a vCPU
// spinning or halted in spin_lock_irqsave() is taken only once it got the
// lock and restored IRQs. The same over-committed native run without the
// sections waits less per flush.
TEST_CASE("native flush waits longer when its targets wait for a lock with IRQs off",
          "[cli][tlb]") {
  const std::string n16 = "--set vm.vcpus=16 --set sim.max_simulated_s=0.5 ";
  const auto with = run_metrics("irqoff-16", kT4 + n16);
  const auto without = run_metrics("irqoff-16-none", kT4 + n16 + "--set ebizzy.lru_lock=false");
  CHECK(metric(with, "invariants.violations") == 0);
  INFO("flush wait with lock sections " << metric(with, "tlb.wait_avg_us") << " us, without "
                                        << metric(without, "tlb.wait_avg_us") << " us");
  CHECK(metric(with, "tlb.wait_avg_us") > 1.15 * metric(without, "tlb.wait_avg_us"));
}

// kvm_vcpu_kick() wakes a halted vCPU's thread whatever its RFLAGS.IF. A
// vCPU halted in kvm_wait() with IRQs off is woken by a flush IPI (the
// thread finds nothing it can take and sleeps again in the same
// kvm_vcpu_block()) or by its own timer (kvm_vcpu_block() ends, the timer
// goes to the IRR, a new one begins). Either way the halt goes on: one HLT
// exit sleeps at most once in `blocks`, and only the PV kick ends it (an
// invariant of every run: "a halt with IRQs off ended without the PV
// kick"). A guest whose lock waiters never halt (nopvspin) has none.
TEST_CASE(
    "a vCPU halted with IRQs off is woken by an IPI or its timer and halts on until the PV kick",
    "[cli][tlb]") {
  const std::string n16 = "--set vm.vcpus=16 --set sim.max_simulated_s=0.5 ";
  const auto r = run_metrics("ifclear-16", kT4 + n16);
  CHECK(metric(r, "invariants.violations") == 0);
  const double spurious =
      r.contains("vcpu.spurious_wakeups") ? metric(r, "vcpu.spurious_wakeups") : 0;
  INFO("halts " << metric(r, "vcpu.halts") << ", blocks " << metric(r, "vcpu.blocks")
                << ", woken in vain " << spurious << ", PV kicks " << metric(r, "vcpu.pv_kicks")
                << " (woke " << metric(r, "vcpu.pv_kick_wakeups") << ")");
  CHECK(spurious > 10);
  CHECK(metric(r, "vcpu.blocks") <= metric(r, "vcpu.halts"));
  // A kick that reaches a thread woken in vain still ends its halt.
  CHECK(metric(r, "vcpu.pv_kick_wakeups") <= metric(r, "vcpu.pv_kicks"));
  CHECK(metric(r, "vcpu.pv_kick_wakeups") >= 0.9 * metric(r, "vcpu.pv_kicks"));
  const auto n = run_metrics("ifclear-16-nopvspin", kT4 + n16 + "--set guest.pv_spinlock=false");
  CHECK(metric(n, "invariants.violations") == 0);
  CHECK_FALSE(n.contains("vcpu.spurious_wakeups"));
}

// ebizzy's default -t is 2 x online CPUs: two CPU-bound SCHED_NORMAL threads
// per vCPU, which the guest's CFS time-slices at the tick. On 8 vCPUs the
// tunables scale by 1 + ilog2(8) = 4: sched_latency 24 ms, so each of two
// threads gets a 12 ms slice, checked at every 4 ms tick (HZ=250); it is
// switched out at the first tick past 12 ms of runtime, i.e. after ~16 ms:
// ~62 switches per vCPU-second. (Before the guest CFS the second thread
// never ran, and with -m the run stalled: 13 records in 1 s.)
TEST_CASE("ebizzy: two threads per vCPU are time-sliced by the guest CFS, evenly",
          "[cli][tlb][sched]") {
  const std::string s = kT4 + "--set sim.max_simulated_s=1 --set vm.vcpus=8 ";
  const auto two = run_metrics("ebizzy-2t", s);  // ebizzy.threads 0: 2 x 8
  const auto one = run_metrics("ebizzy-1t", s + "--set ebizzy.threads=8");
  CHECK(metric(two, "ebizzy.threads") == 16);
  CHECK(metric(one, "ebizzy.threads") == 8);
  // ~62 switches per vCPU-second, 8 vCPUs, less the start-up spread.
  CHECK(metric(two, "guest.sched.fair_switches") > 8 * 45);
  CHECK(metric(two, "guest.sched.fair_switches") < 8 * 80);
  // Almost all of them at the tick (the rest: a thread's start-up sleep).
  CHECK(metric(two, "guest.sched.tick_preemptions") >
        0.9 * metric(two, "guest.sched.fair_switches"));
  // One thread per vCPU: nothing to slice.
  CHECK(one.find("guest.sched.fair_switches") == one.end());
  // Each thread gets half a vCPU: the fewest records within 20% of the most
  // (a 12-16 ms slice against ~740 us records), and the VM's throughput is
  // that of one thread per vCPU (a guest context switch every ~16 ms).
  CHECK(metric(two, "ebizzy.thread_records_min") > 0.8 * metric(two, "ebizzy.thread_records_max"));
  CHECK(metric(two, "ebizzy.records_per_s") > 0.98 * metric(one, "ebizzy.records_per_s"));
  CHECK(metric(two, "ebizzy.records_per_s") < 1.02 * metric(one, "ebizzy.records_per_s"));
  CHECK(metric(two, "invariants.violations") == 0);
}

// -m with 32 threads on 16 vCPUs used to stall on mmap_sem: a writer spun on
// an owner that was not running (a thread its own vCPU could not switch
// to). rwsem_spin_on_owner() stops when the owner is off its CPU or
// need_resched is set, and the waiter sleeps; the run now makes records
// at the rate of 16 threads.
TEST_CASE("ebizzy -m with more threads than vCPUs does not stall on mmap_sem", "[cli][tlb]") {
  const std::string s =
      kT4 + "--set sim.max_simulated_s=0.5 --set vm.vcpus=16 --set ebizzy.alloc=mmap ";
  const auto two = run_metrics("ebizzy-m-2t", s);
  const auto one = run_metrics("ebizzy-m-1t", s + "--set ebizzy.threads=16");
  CHECK(metric(two, "ebizzy.threads") == 32);
  CHECK(metric(two, "ebizzy.records_per_s") > 0.5 * metric(one, "ebizzy.records_per_s"));
  CHECK(metric(two, "ebizzy.thread_records_min") > 0);
  CHECK(metric(two, "mmap_sem.write_sleeps") > 0);
  CHECK(metric(two, "invariants.violations") == 0);
}

TEST_CASE(
    "light over-commit (2 host hogs beside an 8-vCPU guest): native initiators spend most of the "
    "guest's CPU time in smp_call_function_many, PV flush does not",
    "[cli][tlb]") {
  // scenarios/ebizzy_light_overcommit.yaml (validate T4L): 10 runnable
  // threads on 8 pCPUs. The published profile of this setup has 72% of the
  // guest's time in smp_call_function_many.
  const std::string s =
      "scenarios/ebizzy_light_overcommit.yaml --set sim.check_invariants=true "
      "--set sim.max_simulated_s=1 ";
  const auto native = run_metrics("tlb-light-native", s);
  const auto pv = run_metrics("tlb-light-pv", s + "--set guest.pv_tlb_flush=true");
  const double n = metric(native, "ebizzy.flush_wait_on_cpu_share");
  const double p = metric(pv, "ebizzy.flush_wait_on_cpu_share");
  INFO("on-CPU flush wait share: native " << n << ", PV " << p);
  // Most, not all: the model's share (~0.9 with the record's kernel path)
  // is above the published 0.72; validate T4L reports the difference.
  CHECK(n > 0.5);
  CHECK(n < 0.95);
  CHECK(p < 0.1);
  // The share is the on-CPU part of the wait over the vCPU threads' CPU time.
  double run = 0;
  for (int i = 0; i < 8; ++i)
    run += metric(native, ("vcpu." + std::to_string(i) + ".run_s").c_str());
  CHECK(n == Approx((metric(native, "tlb.wait_s") - metric(native, "tlb.wait_off_cpu_s")) / run)
                 .epsilon(1e-6));
  CHECK(metric(pv, "ebizzy.records_per_s") > 2 * metric(native, "ebizzy.records_per_s"));
  CHECK(metric(native, "invariants.violations") == 0);
  CHECK(metric(pv, "invariants.violations") == 0);
}

TEST_CASE(
    "kvm.directed_yield_ready (d73eb57b80b, v5.3): vCPUs woken from a halt become directed-yield "
    "candidates, off, only preempted ones are",
    "[cli][tlb]") {
  const std::string s =
      "scenarios/ebizzy_light_overcommit.yaml --set sim.check_invariants=true "
      "--set sim.max_simulated_s=1 ";
  const auto off = run_metrics("dy-ready-off", s);  // host 5.2: the era's default is off
  const auto era = run_metrics("dy-ready-era", s + "--set host.kernel=5.3");
  const auto on = run_metrics("dy-ready-on", s + "--set kvm.directed_yield_ready=true");
  CHECK(metric(off, "vcpu.directed_yields") > 0);
  CHECK(metric(off, "vcpu.directed_yields_woken") == 0);
  CHECK(metric(on, "vcpu.directed_yields_woken") > 0);
  CHECK(metric(on, "vcpu.directed_yields_woken") <= metric(on, "vcpu.directed_yields"));
  // host.kernel 5.3 turns it on.
  CHECK(metric(era, "vcpu.directed_yields_woken") > 0);
  CHECK(metric(on, "invariants.violations") == 0);
}

TEST_CASE(
    "kvm.kick_cpu_yield (266e85a5ec9, v5.3): a KVM_HC_KICK_CPU to a ready (woken or preempted) "
    "target is followed by a directed yield to it, and halted queue heads leave a free lock "
    "sooner, off, never",
    "[cli][tlb]") {
  const std::string s = kT4 +
                        "--set vm.vcpus=16 --set guest.pv_tlb_flush=true "
                        "--set sim.max_simulated_s=1 ";
  const auto off = run_metrics("kick-yield-off", s);  // host 4.16
  const auto on = run_metrics("kick-yield-on", s + "--set kvm.kick_cpu_yield=true");
  const auto era = run_metrics("kick-yield-era", s + "--set host.kernel=5.3");
  CHECK(metric(off, "ebizzy.lock.pv_kick") > 0);
  CHECK(metric(off, "vcpu.kick_yields") == 0);
  CHECK(metric(on, "vcpu.kick_yields") > 0);
  // At most one yield per kick, and only to a target the kick woke (or that
  // was preempted): never more than the kicks.
  CHECK(metric(on, "vcpu.kick_yields") <= metric(on, "vcpu.pv_kicks"));
  CHECK(metric(era, "vcpu.kick_yields") > 0);
  // What the patch is for: the kicked queue head gets its pCPU at once, so a
  // free lock waits less for a halted head (seed 1: 0.41 s -> 0.20 s of 1 s).
  CHECK(metric(on, "ebizzy.lock.free_halted_head_s") <
        0.8 * metric(off, "ebizzy.lock.free_halted_head_s"));
  CHECK(metric(on, "invariants.violations") == 0);
}

TEST_CASE(
    "PV sched yield (guest 5.3, host with kvm.pv_sched_yield): a CALL_FUNCTION IPI-many with a "
    "preempted target is followed by KVM_HC_SCHED_YIELD, it needs the host's offer and the CPU "
    "model's, and asking for it without them is an error",
    "[cli][tlb]") {
  const std::string s =
      "scenarios/ebizzy_light_overcommit.yaml --set sim.check_invariants=true "
      "--set sim.max_simulated_s=1 ";
  const auto off = run_metrics("psy-off", s);  // the scenario: guest.pv_sched_yield false
  const auto on = run_metrics("psy-on", s + "--set guest.pv_sched_yield=true");
  const auto no_host = run_metrics("psy-nohost", s + "--set kvm.pv_sched_yield=false");
  CHECK(metric(off, "guest.smp_call.pv_sched_yields") == 0);
  CHECK(off.find("vcpu.sched_yield_calls") == off.end());
  // One hypercall per IPI-many at most, each one the host saw.
  CHECK(metric(on, "guest.smp_call.pv_sched_yields") > 0);
  CHECK(metric(on, "guest.smp_call.pv_sched_yields") <= metric(on, "guest.ipi.call_function.sent"));
  CHECK(metric(on, "vcpu.sched_yield_calls") == metric(on, "guest.smp_call.pv_sched_yields"));
  // v5.2's kvm_sched_yield() yields only to a target still preempted when
  // the hypercall arrives.
  CHECK(metric(on, "vcpu.sched_yields") > 0);
  CHECK(metric(on, "vcpu.sched_yields") <= metric(on, "vcpu.sched_yield_calls"));
  // Without the host's KVM_FEATURE_PV_SCHED_YIELD the guest does not use it.
  CHECK(metric(no_host, "guest.smp_call.pv_sched_yields") == 0);
  CHECK(metric(on, "invariants.violations") == 0);
  // Asking for it where the CPUID lacks it cannot act: an error that says why.
  for (const char* lacking : {"kvm.pv_sched_yield=false", "guest.kernel=5.2",
                              "vm.cpu_model=Haswell", "vm.qemu_version=4.1"}) {
    const auto r = run_cli("run " + s + "--set guest.pv_sched_yield=true --set " + lacking +
                           " --out " + out_dir(std::string("psy-err-") + lacking).string());
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("key 'guest.pv_sched_yield': true cannot act") != std::string::npos);
  }
}
