#!/usr/bin/env bash
# Training runs for the profile-guided build (`make pgo`): the instrumented
# kvmsim CLI runs the paths the benchmark and typical sweeps take (the T1
# pair, shared pCPUs, IPIs, halt polling, the TLB flush), shortened. The
# profiles only steer the compiler's layout and inlining; outputs of the
# optimised build are checked identical to the plain build's by `make pgo`.
set -euo pipefail
kvmsim=${1:?usage: tools/pgo-train.sh PATH/TO/INSTRUMENTED/kvmsim}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0
run() {
  n=$((n + 1))
  "$kvmsim" run "$@" -q --out "$out/$n"
}
run scenarios/cyclictest_pinned.yaml --set kvm.enable_hv_timer=true --set cyclictest.loops=100000
run scenarios/cyclictest_pinned.yaml --set kvm.enable_hv_timer=false --set cyclictest.loops=100000
run scenarios/tscdeadline_latency.yaml
run scenarios/overcommit_busy.yaml --set sim.max_simulated_s=0.5
run scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=2000000
run scenarios/halt_poll_idle.yaml --set sim.max_simulated_s=2
run scenarios/ebizzy_overcommit.yaml --set vm.vcpus=16 --set sim.max_simulated_s=0.2
