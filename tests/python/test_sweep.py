"""kvmsim.sweep: grid x seeds, locally or on Dask, equal to single runs; the CLI's sweep/plot."""
import subprocess

import pandas as pd
import pytest

import kvmsim
from conftest import SHORT, SWEEP_T1, T1

GRID = {"kvm.enable_hv_timer": [True, False], "kvm.lapic_timer_advance_ns": [0, 1000]}
SEEDS = [1, 2]


def metric_columns(df):
    return [c for c in df.columns if "." in c and c not in GRID and c != "sim.wall_s"]


@pytest.fixture(scope="module")
def single_runs():
    """The 8 points of GRID x SEEDS run one by one."""
    return {(hv, adv, s): kvmsim.run(T1, set={**SHORT, "kvm.enable_hv_timer": hv,
                                               "kvm.lapic_timer_advance_ns": adv}, seed=s).metrics
            for hv in GRID["kvm.enable_hv_timer"] for adv in GRID["kvm.lapic_timer_advance_ns"]
            for s in SEEDS}


def check_against_single_runs(df, single_runs):
    assert len(df) == 8 and (df["status"] == "ok").all()
    assert list(df.columns[:5]) == ["kvm.enable_hv_timer", "kvm.lapic_timer_advance_ns", "seed",
                                    "status", "error"]
    for _, row in df.iterrows():
        want = single_runs[(row["kvm.enable_hv_timer"], row["kvm.lapic_timer_advance_ns"],
                            row["seed"])]
        got = {k: row[k] for k in metric_columns(df) if not pd.isna(row[k])}  # absent: NaN
        diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want)
                if k != "sim.wall_s" and got.get(k) != want.get(k)}
        assert not diff, (row["kvm.enable_hv_timer"], row["kvm.lapic_timer_advance_ns"], row["seed"])


def test_two_worker_sweep_equals_single_runs_in_grid_order(single_runs):
    df = kvmsim.sweep(T1, grid=GRID, seeds=SEEDS, set=SHORT, workers=2)
    check_against_single_runs(df, single_runs)
    # Grid order, seeds innermost, whatever the completion order.
    assert list(df["seed"]) == SEEDS * 4
    assert list(df["kvm.enable_hv_timer"]) == [True] * 4 + [False] * 4


def test_dask_local_cluster_sweep_equals_single_runs(single_runs):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        df = kvmsim.sweep(T1, grid=GRID, seeds=SEEDS, set=SHORT, client=client)
    check_against_single_runs(df, single_runs)


def test_a_failing_point_is_reported_in_its_row_while_the_others_finish():
    df = kvmsim.sweep(T1, grid={"cyclictest.loops": [1000, -5, 1500]}, workers=2)
    assert list(df["status"]) == ["ok", "bad input", "ok"]
    assert "key 'cyclictest.loops'" in df.loc[1, "error"]
    assert pd.isna(df.loc[1, "cyclictest.avg_us"])
    assert list(df.loc[[0, 2], "cyclictest.loops"]) == [1000, 1500]


def test_a_bad_scenario_or_common_override_fails_the_whole_sweep_before_any_run(tmp_path):
    with pytest.raises(kvmsim.ScenarioError, match="nope.yaml"):
        kvmsim.sweep(tmp_path / "nope.yaml", grid={"kvm.enable_hv_timer": [True]})
    with pytest.raises(kvmsim.ScenarioError, match="unknown key 'cyclictest.lops'"):
        kvmsim.sweep(T1, grid={"kvm.enable_hv_timer": [True]}, set={"cyclictest.lops": 5})


def test_scenario_sweep_section_gives_grid_seeds_and_set():
    sec = kvmsim.scenario_sweep(SWEEP_T1)
    assert sec == {"grid": GRID, "seeds": SEEDS, "set": SHORT}
    assert kvmsim.scenario_sweep(T1) is None


def test_a_bad_sweep_section_is_a_scenario_error_naming_the_key(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text(f"include: {T1}\nsweep:\n  grdi: {{kvm.enable_hv_timer: [true]}}\n")
    with pytest.raises(kvmsim.ScenarioError, match=r"s\.yaml: key 'sweep\.grdi'"):
        kvmsim.scenario_sweep(bad)


def test_cli_sweep_writes_the_same_rows_as_the_python_sweep(tmp_path, kvmsim_binary,
                                                             single_runs):
    out = tmp_path / "results.csv"
    p = subprocess.run([kvmsim_binary, "sweep", SWEEP_T1, "-j", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "8 runs, 8 ok, 0 failed" in p.stderr
    assert "kvmsim sweep: 100%" in p.stderr and "8/8" in p.stderr  # the progress line
    # round_trip: pandas' default float parser may be off by one ulp.
    check_against_single_runs(pd.read_csv(out, float_precision="round_trip"), single_runs)


def test_cli_sweep_without_a_sweep_section_is_bad_input(kvmsim_binary):
    p = subprocess.run([kvmsim_binary, "sweep", T1], capture_output=True, text=True)
    assert p.returncode == 2 and "no 'sweep:' section" in p.stderr


def test_cli_plot_writes_pngs_for_a_run_folder_and_a_sweep_csv(tmp_path, kvmsim_binary):
    run_dir = tmp_path / "run"
    kvmsim.run(T1, set=SHORT, seed=1, out=run_dir)
    p = subprocess.run([kvmsim_binary, "plot", str(run_dir), "--published", "t1"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (run_dir / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = tmp_path / "results.csv"
    kvmsim.sweep(T1, grid={"kvm.enable_hv_timer": [True, False]}, set=SHORT).to_csv(csv)
    png = tmp_path / "s.png"
    p = subprocess.run([kvmsim_binary, "plot", str(csv), "--x", "kvm.enable_hv_timer",
                        "--y", "cyclictest.avg_us", "--png", str(png)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_the_scenario_loader_accepts_a_sweep_section(kvmsim_binary):
    r = kvmsim.run(SWEEP_T1, set=SHORT, seed=1)
    assert r.metrics["cyclictest.loops"] == 2000


def test_ctrl_c_during_a_local_sweep_kills_the_running_children(tmp_path):
    import signal
    import sys
    import textwrap
    import time

    from conftest import PKG
    from test_run import _alive, _fake_cli

    pids = tmp_path / "pids"
    exe = _fake_cli(tmp_path, f"echo $$ >> {pids}; exec sleep 30")
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {PKG!r})
        import kvmsim
        try:
            kvmsim.sweep({T1!r}, grid={{"vm.count": [1, 1, 1, 1]}}, workers=2, binary={exe!r})
        except KeyboardInterrupt:
            print("interrupted")
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    for _ in range(200):
        if pids.exists() and len(pids.read_text().split()) == 2:
            break
        time.sleep(0.05)
    running = [int(p) for p in pids.read_text().split()]
    assert len(running) == 2  # two workers: two children at once
    parent.send_signal(signal.SIGINT)
    out, _ = parent.communicate(timeout=10)
    assert "interrupted" in out
    assert not any(_alive(p) for p in running)
    assert len(pids.read_text().split()) == 2  # the queued points never started


def test_a_runs_warnings_land_in_its_row_not_as_python_warnings(recwarn):
    # 20 us of halt polling against a 1 ms cyclictest: no halt ends within it.
    df = kvmsim.sweep(T1, grid={"kvm.halt_poll_ns": [0, 20000]},
                      set={"cyclictest.loops": 300, "guest.idle": "hlt"}, workers=1)
    assert list(df["status"]) == ["ok", "ok"]
    assert df.loc[0, "warnings"] == ""
    assert "halt polling is configured" in df.loc[1, "warnings"]
    assert not [w for w in recwarn if issubclass(w.category, kvmsim.KvmsimWarning)]


def test_workers_with_a_client_is_an_error_not_a_silently_ignored_setting():
    # On a cluster each worker's --nthreads decides; workers= would not act.
    with pytest.raises(kvmsim.ScenarioError, match="workers= and client="):
        kvmsim.sweep(SWEEP_T1, workers=2, client=object())
