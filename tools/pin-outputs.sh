#!/usr/bin/env bash
# Pin the model's outputs for a restructuring: run every scenario in scenarios/
# (shortened) and `validate --quick`, and keep summary.json (without sim.wall_s),
# histogram.txt and the --trace file of each run in DIR.
#
#   tools/pin-outputs.sh BIN DIR            record (BIN: a kvmsim binary)
#   tools/pin-outputs.sh BIN DIR --check REF   record into DIR, then compare with REF
#
# A restructuring must leave every file byte-identical: record REF with the
# binary before the change, then --check after each step. Exit 1 on any
# difference (the differing files are listed), 2 on a run that failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $# -ge 2 ]] || {
  echo "usage: $0 BIN DIR [--check REF]" >&2
  exit 2
}
BIN=$(realpath "$1")
DIR=$2
REF=""
[[ ${3:-} == --check ]] && REF=${4:?--check needs a reference directory}

# name | scenario and settings (short enough for the whole set to take ~1-2 min)
CASES=(
  "t1_on|scenarios/cyclictest_pinned.yaml --set cyclictest.loops=20000"
  "t1_off|scenarios/cyclictest_pinned.yaml --set cyclictest.loops=20000 --set kvm.enable_hv_timer=false"
  "fastpath|scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=5000"
  "fastpath_adaptive|scenarios/cyclictest_fastpath.yaml --set cyclictest.loops=5000 --set kvm.lapic_timer_advance_ns=-1"
  "t2_on|scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=2000"
  "t2_off|scenarios/tscdeadline_latency.yaml --set tscdeadline_latency.size=2000 --set kvm.hv_timer_advance=false"
  "t2_skylake|scenarios/tscdeadline_latency_skylake.yaml --set tscdeadline_latency.size=2000"
  "t3|scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=4194304"
  "t3_fast|scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=4194304 --set kvm.exit_fastpath=true"
  "t3_adaptive|scenarios/vmexit_tscdeadline.yaml --set vmexit.goal_cycles=4194304 --set kvm.lapic_timer_advance_ns=-1"
  "t6|scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=4194304"
  "t6_fast|scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=4194304 --set kvm.exit_fastpath=true"
  "t6_shared|scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=4194304 --set vm.pinning=[2,2]"
  "t6_noapicv|scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=4194304 --set platform.apicv=false"
  "hp_idle|scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=2"
  "hp_sweep|scenarios/halt_poll_sweep.yaml --set cyclictest.loops=2000"
  "hp_timer|scenarios/halt_poll_timer.yaml --set tscdeadline_latency.size=1000"
  "ipi_pingpong|scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=2000"
  "ipi_pingpong_poll|scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=2000 --set kvm.halt_poll_ns=200000"
  "ipi_pingpong_guest_haltpoll|scenarios/ipi_pingpong.yaml --set ipi_pingpong.rounds=2000 --set guest.idle=hlt --set guest.haltpoll_ns=200000"
  "lat_ctx|scenarios/lat_ctx.yaml"
  "smp_call|scenarios/ipi_pingpong.yaml --set workload.type=smp_call --set smp_call.calls=3000"
  "smp_call_nowait|scenarios/ebizzy_overcommit.yaml --set workload.type=smp_call --set smp_call.calls=2000 --set vm.vcpus=8 --set smp_call.wait=false"
  "watchdogs_nohz|scenarios/halt_poll_timer.yaml --set tscdeadline_latency.size=1000 --set guest.hz=250 --set guest.idle=hlt --set guest.clocksource_watchdog_ms=500"
  "overcommit_busy|scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.5"
  "timer_storm|scenarios/timer_storm.yaml --set timer_storm.expiries=4000"
  "ebizzy_t4_native|scenarios/ebizzy_overcommit.yaml --set sim.max_simulated_s=0.3 --set vm.vcpus=16"
  "ebizzy_t4_pv|scenarios/ebizzy_overcommit.yaml --set sim.max_simulated_s=0.3 --set vm.vcpus=16 --set guest.pv_tlb_flush=true"
  "ebizzy_light|scenarios/ebizzy_light_overcommit.yaml --set sim.max_simulated_s=0.3"
  "ebizzy_revert|scenarios/ebizzy_pvspinlock_revert.yaml --set sim.max_simulated_s=0.05"
  "ebizzy_multi_vm|scenarios/ebizzy_multi_vm.yaml --set sim.max_simulated_s=0.03"
  "ebizzy_cloud_mixed|scenarios/ebizzy_cloud.yaml --set sim.max_simulated_s=0.05 --set fleet.ebizzy_vms=4"
)

rm -rf "$DIR"
mkdir -p "$DIR"
failed=0
for c in "${CASES[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  out="$DIR/$name"
  # shellcheck disable=SC2086  # args are words
  if ! "$BIN" run $args -q --out "$out" --trace "$out/trace.txt" >"$out.log" 2>&1; then
    echo "pin-outputs: $name failed: $BIN run $args (see $out.log)" >&2
    failed=1
    continue
  fi
  grep -v '"sim.wall_s"' "$out/summary.json" >"$out/summary.pinned.json"
  rm "$out/summary.json"
  rm -f "$out.log"
done
# validate --quick's table (the wall-time lines left out).
if ! "$BIN" validate --quick --markdown >"$DIR/validate.md" 2>"$DIR/validate.err"; then
  : # validate exits 1 when a gated row misses; the table is what is pinned
fi
grep -viE 'wall|elapsed|took [0-9.]+ ?s' "$DIR/validate.md" >"$DIR/validate.pinned.md" || true
rm -f "$DIR/validate.md" "$DIR/validate.err"
[[ $failed == 0 ]] || exit 2

if [[ -n $REF ]]; then
  if diff -rq "$REF" "$DIR"; then
    echo "pin-outputs: identical to $REF ($(find "$DIR" -type f | wc -l) files)"
  else
    echo "pin-outputs: outputs differ from $REF" >&2
    exit 1
  fi
else
  echo "pin-outputs: recorded $(find "$DIR" -type f | wc -l) files in $DIR"
fi
