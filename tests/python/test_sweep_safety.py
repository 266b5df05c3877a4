"""Sweeps that can be trusted: signals leave no child or temporary folder behind, rows
land in the --out CSV as they finish and --resume runs only the missing points, --grid
takes every value form a scenario file takes, numpy grids work for integer keys, and a
Dask worker without the package says what to do."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

import kvmsim
from conftest import PKG, SHORT, T1
from test_run import _alive, _fake_cli

SLOW = "cyclictest.loops=10000000,10000001,10000002"  # ~30 s a run: still running when hit


def _descendants(pid):
    """Every live descendant of ``pid``, from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _wait_for_runs(parent, n, timeout=30):
    """The pids of ``parent``'s descendants once ``n`` of them are `kvmsim run` children."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pids = _descendants(parent.pid)
        if sum(b"run" in _cmdline(p)[1:2] for p in pids) >= n:
            return pids
        assert parent.poll() is None, parent.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {n} kvmsim runs under {parent.pid}")


def _gone(pids, folder, timeout=5):
    """True once none of ``pids`` lives and ``folder`` is empty (or ``timeout`` passed)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(_alive(p) for p in pids) and not os.listdir(folder):
            return True
        time.sleep(0.05)
    return False


def _kill_left(parent, pids):
    """Whatever a failed test left running."""
    if parent.poll() is None:
        parent.kill()
        parent.wait()
    for q in pids:
        if _alive(q):
            os.kill(q, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_to_cli_sweep_kills_every_child_and_removes_the_temp_folders(
        tmp_path, kvmsim_binary, sig):
    """Pins: SIGTERM, SIGHUP or SIGINT sent to `kvmsim sweep` (the process only, not its
    group) makes it exit promptly with 128+N, with no child process left alive (the
    running `kvmsim run`s included) and nothing left in its TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([kvmsim_binary, "sweep", T1, "--grid", SLOW, "-j", "2", "-q",
                          "--out", str(tmp_path / "r.csv")],
                         env={**os.environ, "TMPDIR": str(tmp)},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        pids = _wait_for_runs(p, 2)
        assert os.listdir(tmp)  # the sweep's temporary folder exists while it runs
        t0 = time.monotonic()
        p.send_signal(sig)
        _, err = p.communicate(timeout=10)
        assert time.monotonic() - t0 < 5
        assert p.returncode == 128 + sig, err
        assert f"stopped by {signal.Signals(sig).name}" in err
        assert _gone(pids, tmp), ([p for p in pids if _alive(p)], os.listdir(tmp))
    finally:
        _kill_left(p, pids)


def test_cli_sweep_under_nohup_keeps_ignoring_sighup(tmp_path, kvmsim_binary):
    """Pins: a sweep started with SIGHUP ignored (nohup) does not take SIGHUP as a stop;
    SIGTERM still stops it cleanly."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([kvmsim_binary, "sweep", T1, "--grid", SLOW, "-j", "2", "-q"],
                         env={**os.environ, "TMPDIR": str(tmp)},
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        pids = _wait_for_runs(p, 2)
        p.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert p.poll() is None and all(_alive(q) for q in pids)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=10)
        assert p.returncode == 128 + signal.SIGTERM, err
        assert _gone(pids, tmp)
    finally:
        _kill_left(p, pids)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM],
                         ids=lambda s: signal.Signals(s).name)
def test_a_killed_python_sweep_leaves_no_child_and_no_temp_folder(tmp_path, kvmsim_binary,
                                                                   sig):
    """Pins: a Python process running kvmsim.sweep() that is SIGKILL'd or SIGTERM'd (what
    a Jupyter kernel restart sends; no handler in the library) leaves no `kvmsim run`
    alive (PR_SET_PDEATHSIG) and no temporary folder (the janitor removes it)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {PKG!r})
        import kvmsim
        kvmsim.sweep({T1!r}, grid={{"cyclictest.loops": [10000000, 10000001, 10000002]}},
                     workers=2, binary={kvmsim_binary!r})
    """)
    p = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmp)})
    pids = []
    try:
        pids = _wait_for_runs(p, 2)
        p.send_signal(sig)
        assert p.wait(timeout=5) == -sig
        assert _gone(pids, tmp), ([p for p in pids if _alive(p)], os.listdir(tmp))
    finally:
        _kill_left(p, pids)


def _counting_cli(tmp_path, real, hang_on=None):
    """A CLI that logs each run's overrides to runs.log, then runs the real one (or, for a
    run whose arguments contain ``hang_on`` while the file `hang` exists, sleeps)."""
    log = tmp_path / "runs.log"
    hang = tmp_path / "hang"
    body = f'echo "$*" >> {log}\n'
    if hang_on:
        body += f'case "$*" in *{hang_on}*) [ -e {hang} ] && exec sleep 60;; esac\n'
    body += f'exec {real} "$@"'
    return _fake_cli(tmp_path, body), log, hang


def _runs(log):
    return log.read_text().splitlines() if log.exists() else []


def _table(path):
    return pd.read_csv(path, float_precision="round_trip").drop(columns=["sim.wall_s"])


def test_cli_sweep_interrupted_keeps_finished_rows_and_resume_runs_only_the_rest(
        tmp_path, kvmsim_binary):
    """Pins: `kvmsim sweep --out F` appends each row as its run finishes, so a SIGTERM'd
    sweep leaves the finished rows in F; `--resume` then runs only the missing points
    and F ends as an uninterrupted sweep's file (grid order, same values)."""
    fake, log, hang = _counting_cli(tmp_path, kvmsim_binary, hang_on="cyclictest.loops=3000")
    hang.touch()
    out = tmp_path / "r.csv"
    args = [kvmsim_binary, "sweep", T1, "--grid", "cyclictest.loops=1000,2000,3000,4000",
            "-j", "1", "-q", "--out", str(out)]
    env = {**os.environ, "KVMSIM_BINARY": fake}
    p = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        if len(_runs(log)) == 3:
            break
        time.sleep(0.05)
    assert len(_runs(log)) == 3  # 1000 and 2000 finished, 3000 hangs
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=10)
    assert p.returncode == 128 + signal.SIGTERM, err
    part = pd.read_csv(out)
    assert list(part["cyclictest.loops"]) == [1000, 2000] and (part["status"] == "ok").all()

    hang.unlink()
    p = subprocess.run(args + ["--resume"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    resumed = _runs(log)[3:]
    assert len(resumed) == 2 and "loops=3000" in resumed[0] and "loops=4000" in resumed[1]

    full = tmp_path / "full.csv"
    p = subprocess.run(args[:-1] + [str(full)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    pd.testing.assert_frame_equal(_table(out), _table(full))


def test_python_sweep_resume_runs_only_points_not_ok_in_the_csv(tmp_path, kvmsim_binary):
    """Pins: kvmsim.sweep(out=F, resume=True) takes the rows F has with status ok (any
    order, as an interrupted sweep left them), runs the other points (a failed one
    included) and returns, and leaves in F, the same table as an uninterrupted sweep."""
    grid = {"kvm.enable_hv_timer": [True, False], "cyclictest.loops": [1000, 2000]}
    full_csv = tmp_path / "full.csv"
    full = kvmsim.sweep(T1, grid=grid, seeds=[1, 2], workers=2, out=full_csv)
    assert len(full) == 8 and (full["status"] == "ok").all()
    rows = pd.read_csv(full_csv, float_precision="round_trip")
    partial = rows.iloc[[6, 0, 3, 1]].copy()  # completion order, not grid order
    partial.loc[partial.index[-1], "status"] = "crash"  # row 1 failed: runs again
    out = tmp_path / "r.csv"
    partial.to_csv(out, index=False)
    fake, log, _ = _counting_cli(tmp_path, kvmsim_binary)
    df = kvmsim.sweep(T1, grid=grid, seeds=[1, 2], workers=2, out=out, resume=True,
                      binary=fake)
    assert len(_runs(log)) == 5  # 8 points, 3 ok in the file
    pd.testing.assert_frame_equal(df.drop(columns=["sim.wall_s"]),
                                  full.drop(columns=["sim.wall_s"]))
    pd.testing.assert_frame_equal(_table(out), _table(full_csv))
    # Everything there: a second resume runs nothing.
    kvmsim.sweep(T1, grid=grid, seeds=[1, 2], out=out, resume=True, binary=fake)
    assert len(_runs(log)) == 5


def test_cli_grid_takes_list_and_mapping_values_as_a_scenario_file_does(tmp_path,
                                                                         kvmsim_binary):
    """Pins: --grid splits values only at commas outside brackets and braces, and parses
    each as a YAML flow value: vm.pinning=[2,3],[3,2] is two lists; a group key takes
    mappings of its parameters. Each point runs with exactly those values."""
    out = tmp_path / "r.csv"
    p = subprocess.run([kvmsim_binary, "sweep", T1, "--grid", "vm.pinning=[2,3],[3, 2]",
                        "--grid", "kvm={enable_hv_timer: true, lapic_timer_advance_ns: 0},"
                        "{enable_hv_timer: false, lapic_timer_advance_ns: 1000}",
                        "--set", "cyclictest.loops=2000", "-q", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    df = pd.read_csv(out, float_precision="round_trip")
    assert list(df["vm.pinning"]) == ["[2, 3]", "[2, 3]", "[3, 2]", "[3, 2]"]
    want = [kvmsim.run(T1, set={**SHORT, "vm.pinning": pin, "kvm.enable_hv_timer": hv,
                                "kvm.lapic_timer_advance_ns": adv}, seed=1)
            .metrics["sim.fingerprint"]
            for pin in ([2, 3], [3, 2]) for hv, adv in ((True, 0), (False, 1000))]
    assert list(df["sim.fingerprint"]) == want
    assert len(set(want)) == 4


@pytest.mark.parametrize("grid, message", [
    ("vm.pinnig=[2,3],[3,2]", "unknown key 'vm.pinnig' (did you mean 'vm.pinning'?)"),
    ("vm.pinning=[2,3,[3,2]", "unclosed bracket"),
    ("vm.pinning=[2,3],", "empty value"),
    ("vm.pinning=[2,3]],[2]", "unbalanced ']'"),
    ("cyclictest.loops=1000,{a: 1", "unclosed bracket"),
    ("cyclictest.loops=1000,-5", "-5 is out of range"),
    ("cyclictest.loops=1000,2.5", "2.5 is not an integer"),
    ("kvm={enable_hv_timr: true}", "unknown key 'kvm.enable_hv_timr'"),
    ("cyclictest.loops", "expected key=value"),
])
def test_cli_bad_grid_fails_before_any_run_in_one_line_exit_2(tmp_path, kvmsim_binary, grid,
                                                               message):
    """Pins: an unknown --grid key or a malformed value (syntax, or not a value its key
    takes) makes `kvmsim sweep` exit 2 with ONE `kvmsim: error:` line and no run."""
    fake, log, _ = _counting_cli(tmp_path, kvmsim_binary)
    p = subprocess.run([kvmsim_binary, "sweep", T1, "--grid", grid, "-q"],
                       env={**os.environ, "KVMSIM_BINARY": fake},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvmsim: error: ") and message in lines[0], \
        p.stderr
    assert _runs(log) == []


def test_numpy_and_integral_floats_are_accepted_for_integer_keys(tmp_path, kvmsim_binary):
    """Pins: numpy grids work: numpy.float64(2000.0), 1000.0 and numpy.int64 for an integer
    key run as the integers (the row holds the int), numpy arrays for a list key too."""
    fake, log, _ = _counting_cli(tmp_path, kvmsim_binary)
    df = kvmsim.sweep(T1, grid={"cyclictest.loops": [1000.0, *np.linspace(2000, 3000, 2)],
                                "vm.pinning": [np.array([2.0, 3.0])]},
                      set={"vm.count": np.int64(1)}, workers=1, binary=fake)
    assert list(df["status"]) == ["ok"] * 3, list(df["error"])
    assert list(df["cyclictest.loops"]) == [1000, 2000, 3000]
    runs = _runs(log)
    assert "cyclictest.loops=1000 " in runs[0] + " " and "cyclictest.loops=2000" in runs[1]
    assert "vm.pinning=[2, 3]" in runs[0] and "vm.count=1 " in runs[0] + " "


def test_a_non_integral_float_for_an_integer_key_fails_before_any_run(tmp_path, kvmsim_binary):
    """Pins: a non-integral float for an integer key (in the grid, an integer list's
    element, or set=) raises ScenarioError naming the key and value; no run starts."""
    fake, log, _ = _counting_cli(tmp_path, kvmsim_binary)
    with pytest.raises(kvmsim.ScenarioError, match=r"cyclictest\.loops'.*1500\.5 is not an "
                                                   "integer"):
        kvmsim.sweep(T1, grid={"cyclictest.loops": np.array([1000, 1500.5])}, binary=fake)
    with pytest.raises(kvmsim.ScenarioError, match=r"vm\.pinning'.*2\.5 is not an integer"):
        kvmsim.sweep(T1, grid={"vm.pinning": [[2, 3], [2.5, 3]]}, binary=fake)
    with pytest.raises(kvmsim.ScenarioError, match=r"vm\.count'.*1\.5"):
        kvmsim.sweep(T1, grid={"cyclictest.loops": [1000]}, set={"vm.count": 1.5}, binary=fake)
    with pytest.raises(kvmsim.ScenarioError, match="unknown key 'cyclictest.lops'"):
        kvmsim.sweep(T1, grid={"cyclictest.lops": [1000]}, binary=fake)
    assert _runs(log) == []


def test_worker_error_names_the_package_folder_for_a_worker_without_kvmsim():
    """Pins the mapping: a ModuleNotFoundError for kvmsim (what a Dask worker raises when it
    cannot unpickle run_point) becomes a KvmsimError naming the PYTHONPATH to set; other
    errors are left alone."""
    from kvmsim._sweep import worker_error

    err = worker_error(ModuleNotFoundError("No module named 'kvmsim'", name="kvmsim"),
                       "/x/kvmsim")
    assert isinstance(err, kvmsim.KvmsimError)
    pkg_parent = os.path.dirname(os.path.dirname(kvmsim.__file__))
    assert f"PYTHONPATH={pkg_parent}" in str(err) and "install the package" in str(err)
    assert "KVMSIM_BINARY" in str(err) and "/x/kvmsim" in str(err)
    assert worker_error(ModuleNotFoundError("No module named 'numpy'", name="numpy")) is None
    assert worker_error(ValueError("kvmsim")) is None


def test_dask_worker_without_the_package_gives_a_clear_error(tmp_path):
    """Pins: a sweep on a Dask cluster whose worker runs without the package on its
    PYTHONPATH raises KvmsimError saying which PYTHONPATH to set, not the worker's
    ModuleNotFoundError traceback."""
    distributed = pytest.importorskip("distributed")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                   cluster.scheduler_address, "--nthreads", "1",
                                   "--no-dashboard"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client.wait_for_workers(1, timeout=60)
            with pytest.raises(kvmsim.KvmsimError,
                               match="cannot import the kvmsim package") as e:
                kvmsim.sweep(T1, grid={"cyclictest.loops": [1000]}, client=client)
            assert f"PYTHONPATH={PKG}" in str(e.value) and e.value.__cause__ is None
        finally:
            worker.terminate()
            worker.wait(timeout=30)
