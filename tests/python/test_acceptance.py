"""Issue 11's acceptance sequence in one process: 20 runs, a 2-worker sweep over 8 points,
the same sweep on a Dask LocalCluster; identical metrics for identical (params, seed)."""
import pytest

import kvmsim
from conftest import SHORT, T1, same_metrics

GRID = {"kvm.enable_hv_timer": [True, False], "kvm.lapic_timer_advance_ns": [0, 1000]}
SEEDS = [1, 2]


def rows_by_point(df):
    out = {}
    for row in df.to_dict("records"):
        key = (row["kvm.enable_hv_timer"], row["kvm.lapic_timer_advance_ns"], row["seed"])
        out[key] = {k: v for k, v in row.items() if "." in k and k not in GRID and v == v}
    return out


def test_twenty_runs_then_local_sweep_then_dask_sweep_agree_exactly():
    distributed = pytest.importorskip("distributed")
    singles = {}
    points = [(hv, adv, s) for hv in GRID["kvm.enable_hv_timer"]
              for adv in GRID["kvm.lapic_timer_advance_ns"] for s in SEEDS]
    for i in range(20):  # 20 runs in a loop, every point at least twice
        hv, adv, s = points[i % len(points)]
        m = kvmsim.run(T1, set={**SHORT, "kvm.enable_hv_timer": hv,
                                "kvm.lapic_timer_advance_ns": adv}, seed=s).metrics
        if (hv, adv, s) in singles:
            assert same_metrics(m, singles[(hv, adv, s)])
        singles[(hv, adv, s)] = m
    local = rows_by_point(kvmsim.sweep(T1, grid=GRID, seeds=SEEDS, set=SHORT, workers=2))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = rows_by_point(kvmsim.sweep(T1, grid=GRID, seeds=SEEDS, set=SHORT, client=client))
    assert set(local) == set(dask) == set(singles) and len(singles) == 8
    for key, m in singles.items():
        assert same_metrics(local[key], m), key
        assert same_metrics(dask[key], m), key
