"""Sweeps on a real Dask cluster: a dask-scheduler and dask-worker processes started here
as separate processes (as on separate machines), `kvmsim sweep --scheduler`, the scenario
files carried by the tasks, a worker SIGKILL'd mid-run (its run goes again, the row says
so), an unreachable scheduler, Ctrl-C."""
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import kvmsim
from conftest import SWEEP_T1, T1, same_metrics
from test_run import _alive
from test_sweep_safety import _cmdline, _descendants

pytestmark = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="dask.distributed is not installed")

# ~1.3 us of wall time a loop on this machine when idle: a run of a few seconds, so
# that it is still running when the test kills its worker.
SLOW_LOOPS = 1500000


def _metrics(row):
    return {k: v for k, v in row.items() if "." in k and k != "sim.wall_s" and not pd.isna(v)}


class Cluster:
    """A dask-scheduler on 127.0.0.1 (a free port) and dask-worker processes without a
    nanny (killing one is a machine going away: nothing restarts it), each in its own
    working folder, with the environment of this test (PYTHONPATH: the build's package;
    no KVMSIM_BINARY: each worker finds build/kvmsim next to its package)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.workers = []
        self.env = {k: v for k, v in os.environ.items() if k != "KVMSIM_BINARY"}
        sched_file = os.path.join(tmp, "scheduler.json")
        self.scheduler = self._start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                      "--port", "0", "--no-dashboard",
                                      "--scheduler-file", sched_file], "scheduler")
        end = time.monotonic() + 60
        while not os.path.exists(sched_file):
            assert self.scheduler.poll() is None, "dask-scheduler exited"
            assert time.monotonic() < end, "dask-scheduler did not start within 60 s"
            time.sleep(0.1)
        time.sleep(0.1)  # the file is written whole, but be sure
        with open(sched_file) as f:
            self.address = json.load(f)["address"]

    def _start(self, args, name):
        log = open(os.path.join(self.tmp, f"{name}.log"), "wb")
        cwd = os.path.join(self.tmp, name)
        os.makedirs(cwd, exist_ok=True)
        p = subprocess.Popen([sys.executable, "-m"] + args, cwd=cwd, env=self.env,
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        self.procs.append(p)
        return p

    def ensure_workers(self, client, n):
        """Starts workers until ``n`` of them live, then waits for the scheduler to have
        them all."""
        self.workers = [w for w in self.workers if w.poll() is None]
        while len(self.workers) < n:
            self.workers.append(self._start(
                ["distributed.cli.dask_worker", self.address, "--nthreads", "1",
                 "--nworkers", "1", "--no-nanny", "--no-dashboard"],
                f"worker{len(self.procs)}"))
        client.wait_for_workers(n, timeout=90)
        end = time.monotonic() + 30
        while len(client.scheduler_info()["workers"]) != n:  # a killed one may linger
            assert time.monotonic() < end, client.scheduler_info()["workers"].keys()
            time.sleep(0.1)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("dask")))
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def client(cluster):
    from distributed import Client

    with Client(cluster.address, timeout=60) as cl:
        cluster.ensure_workers(cl, 2)
        yield cl


def test_scenario_files_carries_every_include_relative_to_a_common_root(tmp_path):
    from kvmsim._sweep import scenario_files

    (tmp_path / "a" / "p").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "p" / "plat.yaml").write_text("host.kernel: '5.4'\n")
    (tmp_path / "b" / "extra.yaml").write_text("include: ../a/p/plat.yaml\n")
    (tmp_path / "a" / "s.yaml").write_text("include: [p/plat.yaml, ../b/extra.yaml]\n")
    root, main, files = scenario_files(tmp_path / "a" / "s.yaml")
    assert root == str(tmp_path) and main == os.path.join("a", "s.yaml")
    assert sorted(files) == [os.path.join("a", "p", "plat.yaml"), os.path.join("a", "s.yaml"),
                             os.path.join("b", "extra.yaml")]
    assert files[os.path.join("a", "p", "plat.yaml")] == b"host.kernel: '5.4'\n"


def test_a_cluster_task_runs_the_text_it_carries_not_the_file_at_that_path():
    """What a worker on another machine does: the scenario's folder does not exist there;
    its messages still name the submitting machine's files."""
    from kvmsim._sweep import cluster_point, scenario_files

    root, main, files = scenario_files(SWEEP_T1)
    files[main] += b"cyclictest:\n  loops: 1234\n"
    row = cluster_point(files, main, "/nowhere", {}, 1)
    assert row["status"] == "ok", row["error"]
    assert row["cyclictest.loops"] == 1234  # from the carried text
    row = cluster_point(files, main, "/nowhere", {"vm.vcpus": 99}, 1)
    assert row["status"] == "bad input"
    assert row["error"].startswith("/nowhere/scenarios/cyclictest_pinned.yaml:"), row["error"]


def test_cluster_sweep_gives_the_local_sweeps_rows_and_attempts_1(client, tmp_path):
    # A scenario outside the source tree that includes one of it: the tasks carry both.
    scen = tmp_path / "mine.yaml"
    scen.write_text(f"include: {os.path.relpath(T1, tmp_path)}\ncyclictest:\n  loops: 1500\n")
    grid = {"kvm.enable_hv_timer": [True, False]}
    local = kvmsim.sweep(scen, grid=grid, seeds=[1, 2], workers=2)
    df = kvmsim.sweep(scen, grid=grid, seeds=[1, 2], client=client)
    assert "attempts" not in local.columns
    assert list(df.columns[:6]) == ["kvm.enable_hv_timer", "seed", "status", "error",
                                    "warnings", "attempts"]
    assert (df["status"] == "ok").all() and list(df["attempts"]) == [1, 1, 1, 1]
    assert df["cyclictest.loops"].eq(1500).all()  # the scenario's own value
    for (_, a), (_, b) in zip(local.iterrows(), df.iterrows()):
        assert (a["kvm.enable_hv_timer"], a["seed"]) == (b["kvm.enable_hv_timer"], b["seed"])
        assert same_metrics(_metrics(a), _metrics(b))


def test_a_worker_cli_of_another_version_is_a_warning(client, monkeypatch):
    from kvmsim import _sweep

    monkeypatch.setattr(_sweep, "_local_cli_version", lambda binary: "kvmsim 0.0.0")
    with pytest.warns(kvmsim.KvmsimWarning, match=r"says 'kvmsim \d.*'; this machine's CLI "
                      r"says 'kvmsim 0.0.0': give every worker the same build"):
        df = kvmsim.sweep(T1, grid={"cyclictest.loops": [1000]}, client=client)
    assert list(df["status"]) == ["ok"] and _sweep._CLI not in df.columns


def test_cli_sweep_on_a_scheduler_writes_the_local_rows(cluster, client, tmp_path,
                                                         kvmsim_binary):
    out = tmp_path / "results.csv"
    env = {k: v for k, v in os.environ.items() if k != "KVMSIM_BINARY"}
    p = subprocess.run([kvmsim_binary, "sweep", SWEEP_T1, "--scheduler", cluster.address,
                        "--out", str(out)], capture_output=True, text=True, timeout=180,
                       cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert f"Dask scheduler {cluster.address}, 2 workers" in p.stderr
    assert "8 runs, 8 ok, 0 failed" in p.stderr and "run again" not in p.stderr
    df = pd.read_csv(out, float_precision="round_trip")
    assert list(df["attempts"]) == [1] * 8
    local = kvmsim.sweep(SWEEP_T1, workers=2)
    for (_, a), (_, b) in zip(local.iterrows(), df.iterrows()):
        assert same_metrics(_metrics(a), _metrics(b))
    # --resume: every row is there with status ok, nothing runs; attempts stay ints.
    p = subprocess.run([kvmsim_binary, "sweep", SWEEP_T1, "--scheduler", cluster.address,
                        "--out", str(out), "--resume", "-q"], capture_output=True, text=True,
                       timeout=180, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    again = pd.read_csv(out, float_precision="round_trip")
    assert list(again.columns) == list(df.columns) and list(again["attempts"]) == [1] * 8
    pd.testing.assert_frame_equal(again.drop(columns="sim.wall_s"),
                                  df.drop(columns="sim.wall_s"))
    p = subprocess.run([kvmsim_binary, "sweep", SWEEP_T1, "--scheduler", cluster.address,
                        "-j", "2"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "-j and --scheduler" in p.stderr


def test_an_unreachable_scheduler_is_a_quick_error_naming_it(kvmsim_binary):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    t0 = time.monotonic()
    p = subprocess.run([kvmsim_binary, "sweep", SWEEP_T1, "--scheduler", address,
                        "--connect-timeout", "2"], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"kvmsim: error: --scheduler {address}: no Dask scheduler "
                               "answered within 2 s"), p.stderr
    assert took < 20, took


def test_a_cluster_without_workers_warns_and_a_requested_stop_ends_the_wait(monkeypatch):
    """No silent wait: a scheduler without workers gives a KvmsimWarning (after 30 s; 0.5 s
    here), and request_stop (the CLI's signal handler) ends the sweep with Stopped."""
    from distributed import Client, LocalCluster

    from kvmsim import _sweep

    monkeypatch.setattr(_sweep, "_NO_WORKER_WARN_S", 0.5)
    monkeypatch.setattr(_sweep, "_stop_signal", None)  # and back to None afterwards
    with LocalCluster(n_workers=0, processes=True, host="127.0.0.1",
                      dashboard_address=":0") as lc, Client(lc) as cl:
        timer = threading.Timer(4.0, _sweep.request_stop, (signal.SIGTERM,))
        timer.start()
        try:
            with pytest.warns(kvmsim.KvmsimWarning, match="has had no worker for 0 s; 2 runs"), \
                    pytest.raises(_sweep.Stopped):
                kvmsim.sweep(T1, grid={"cyclictest.loops": [1000, 2000]}, client=cl)
        finally:
            timer.cancel()


def _kvmsim_runs(pid):
    """{pid: seed} of the `kvmsim run` children under process ``pid``."""
    runs = {}
    for q in _descendants(pid):
        args = _cmdline(q)
        if args[1:2] == [b"run"] and b"--seed" in args:
            runs[q] = int(args[args.index(b"--seed") + 1])
    return runs


def _wait_for_run(workers, timeout=120):
    """(worker, {pid: seed}) of the first of ``workers`` seen running a kvmsim run."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for w in workers:
            runs = _kvmsim_runs(w.pid)
            if runs:
                return w, runs
        time.sleep(0.05)
    raise AssertionError("no worker started a kvmsim run")


def test_ctrl_c_stops_a_cluster_sweep_and_kills_its_runs_on_the_workers(cluster, client,
                                                                       kvmsim_binary):
    p = subprocess.Popen([kvmsim_binary, "sweep", T1, "--scheduler", cluster.address, "-q",
                          "--grid", "cyclictest.loops=10000000", "--seeds", "1,2,3,4"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, runs = _wait_for_run(cluster.workers)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGINT, err
        assert "stopped by SIGINT" in err
        end = time.monotonic() + 20
        while any(_kvmsim_runs(w.pid) for w in cluster.workers):
            assert time.monotonic() < end, "a worker still runs the stopped sweep's runs"
            time.sleep(0.1)
        assert not any(_alive(q) for q in runs)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_worker_killed_mid_run_loses_no_point_and_its_row_says_attempts_2(cluster, client):
    """SIGKILL to a worker process (no nanny: nothing restarts it, as when its machine goes
    away) while it runs a point: the scheduler runs that point again on the other worker;
    every row is ok, the re-run one has attempts 2 and the metrics of a local run."""
    killed = {}

    def killer():
        try:
            w, runs = _wait_for_run(cluster.workers)
            killed["seed"] = next(iter(runs.values()))
            w.kill()  # SIGKILL
            w.wait()
        except BaseException as e:  # noqa: BLE001  (reported by the test)
            killed["error"] = e

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    df = kvmsim.sweep(T1, grid={"cyclictest.loops": [SLOW_LOOPS]}, seeds=[1, 2, 3, 4],
                      client=client, progress=False)
    t.join(timeout=10)
    assert "error" not in killed, killed.get("error")
    assert list(df["status"]) == ["ok"] * 4, df[["seed", "status", "error"]]
    retried = df[df["attempts"] > 1]
    assert list(retried["seed"]) == [killed["seed"]], df[["seed", "attempts"]]
    assert list(retried["attempts"]) == [2]
    again = kvmsim.run(T1, set={"cyclictest.loops": SLOW_LOOPS}, seed=killed["seed"])
    assert same_metrics(_metrics(retried.iloc[0]), again.metrics)
