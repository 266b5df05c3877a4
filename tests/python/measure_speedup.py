"""Measures the local sweep's speed-up: 8 points of T1 (60000 loops each), 1 worker vs 2.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/measure_speedup.py [LOOPS]

Not a test (timing depends on the machine's load).
"""
import os
import resource
import sys
import time

import kvmsim

T1 = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "cyclictest_pinned.yaml")
loops = int(sys.argv[1]) if len(sys.argv) > 1 else 60000
grid = {"kvm.enable_hv_timer": [True, False], "kvm.lapic_timer_advance_ns": [0, 1000]}
times = {}
cpu = []
for workers in (1, 2, 1, 2):
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    df = kvmsim.sweep(T1, grid=grid, seeds=[1, 2], set={"cyclictest.loops": loops},
                      workers=workers, progress=False)
    assert (df["status"] == "ok").all()
    times.setdefault(workers, []).append(time.perf_counter() - t0)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
best = {w: min(t) for w, t in times.items()}
print(f"8 runs x {loops} loops: 1 worker {best[1]:.2f} s, 2 workers {best[2]:.2f} s, "
      f"speed-up {best[1] / best[2]:.2f}x (best of 2; children's CPU {min(cpu):.2f} s per sweep; "
      f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
