"""kvmsim.run: a child process per run, results back intact, errors as exceptions."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kvmsim
from conftest import PKG, SHORT, T1, T2, T3, same_metrics


def test_run_returns_contract_metrics_histogram_exits_and_resolved_params():
    r = kvmsim.run(T1, set=SHORT, seed=1)
    for key in ["sim.events", "sim.wall_s", "sim.simulated_s", "cyclictest.loops",
                "cyclictest.avg_us", "cyclictest.p99_us", "exits.MSR_WRITE.count",
                "exits.PREEMPTION_TIMER.avg_ns"]:
        assert key in r.metrics, key
    assert r.metrics["cyclictest.loops"] == 2000
    assert r.histogram.dtype == np.uint64 and len(r.histogram) == 100
    assert r.params["cyclictest.loops"] == 2000 and r.params["sim.seed"] == 1
    assert r.params_text["cyclictest.loops"] == "2000"
    ex = r.exits.set_index("reason")
    assert ex.loc["MSR_WRITE", "samples"] == r.metrics["exits.MSR_WRITE.count"]
    assert ex["samples_pct"].sum() == pytest.approx(100.0)
    assert r.exits["samples"].is_monotonic_decreasing
    assert (ex["min_us"] <= ex["avg_us"]).all() and (ex["avg_us"] <= ex["max_us"]).all()


def test_breakdown_stages_sum_to_the_total_in_the_models_order():
    r = kvmsim.run(T1, set=SHORT, seed=1)
    b = r.breakdown
    assert b["avg_ns"].sum() == pytest.approx(r.metrics["breakdown.total.avg_ns"], rel=1e-6)
    assert b["stage"].iloc[0] == "vmexit" and b["stage"].iloc[-1] == "guest_user"


def test_to_frame_is_one_row_with_overrides_seed_and_metrics():
    r = kvmsim.run(T1, set={**SHORT, "kvm.enable_hv_timer": False}, seed=4)
    df = r.to_frame()
    assert len(df) == 1 and df.loc[0, "seed"] == 4
    assert not df.loc[0, "kvm.enable_hv_timer"]
    assert df.loc[0, "cyclictest.avg_us"] == r.metrics["cyclictest.avg_us"]


def test_kvm_unit_tests_workloads_have_no_histogram_but_their_metrics():
    t2 = kvmsim.run(T2, set={"tscdeadline_latency.size": 500}, seed=1)
    assert t2.histogram is None and t2.metrics["tscdeadline_latency.avg_cycles"] > 0
    t3 = kvmsim.run(T3, set={"vmexit.goal_cycles": 1 << 22}, seed=1)
    assert t3.metrics["vmexit.tscdeadline.cycles"] > t3.metrics["vmexit.tscdeadline_immed.cycles"]


def test_vmexit_stage_cycles_add_up_to_the_reported_cycles_per_iteration():
    r = kvmsim.run(T3, set={"vmexit.goal_cycles": 1 << 22}, seed=1)
    per_test = r.stage_cycles.groupby("test")["cycles"].sum()
    for test in ("tscdeadline", "tscdeadline_immed"):
        # vmexit.flat prints an integer: the stages sum to it before truncation
        assert per_test[test] == pytest.approx(r.metrics[f"vmexit.{test}.cycles"], abs=1.0)
    assert r.stage_cycles["stage"].iloc[0] == "vmexit"


def test_twenty_runs_in_one_process_repeat_their_metrics_exactly():
    first = {s: kvmsim.run(T1, set=SHORT, seed=s).metrics for s in (1, 2)}
    for i in range(18):
        seed = 1 + i % 2
        assert same_metrics(kvmsim.run(T1, set=SHORT, seed=seed).metrics, first[seed])
    assert not same_metrics(first[1], first[2])  # the seed matters


def test_bad_override_raises_scenario_error_with_the_clis_message():
    with pytest.raises(kvmsim.ScenarioError,
                       match=r"--set cyclictest\.loops=-1: key 'cyclictest\.loops'"):
        kvmsim.run(T1, set={"cyclictest.loops": -1})


def test_bad_scenario_file_names_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"include: {T1}\nkvm:\n  enable_hv_timer: perhaps\n")
    with pytest.raises(kvmsim.ScenarioError, match=r"bad\.yaml:3:\d+: key 'kvm\.enable_hv_timer'"):
        kvmsim.run(bad)
    with pytest.raises(kvmsim.ScenarioError, match="nope.yaml"):
        kvmsim.run(tmp_path / "nope.yaml")


def _fake_cli(tmp_path, body):
    exe = tmp_path / "fake-kvmsim"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(0o755)
    return str(exe)


def test_a_crash_in_the_child_becomes_simulation_crash(tmp_path):
    exe = _fake_cli(tmp_path, 'echo "boom" >&2; kill -SEGV $$')
    with pytest.raises(kvmsim.SimulationCrash, match="SIGSEGV") as err:
        kvmsim.run(T1, binary=exe)
    assert err.value.returncode == -signal.SIGSEGV and "boom" in err.value.stderr


def test_other_failures_become_simulation_error_with_the_message(tmp_path):
    exe = _fake_cli(tmp_path, 'echo "kvmsim: error: disk full" >&2; exit 1')
    with pytest.raises(kvmsim.SimulationError, match="exit code 1.*disk full"):
        kvmsim.run(T1, binary=exe)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead too
        return f.read().split()[2] != "Z"


def test_timeout_kills_the_child_and_raises(tmp_path):
    pidfile = tmp_path / "pid"
    exe = _fake_cli(tmp_path, f'echo $$ > {pidfile}; exec sleep 30')
    t0 = time.monotonic()
    with pytest.raises(kvmsim.RunTimeout):
        kvmsim.run(T1, binary=exe, timeout=0.5)
    assert time.monotonic() - t0 < 5
    assert not _alive(int(pidfile.read_text()))


def test_ctrl_c_stops_the_child_instead_of_waiting_for_it(tmp_path):
    pidfile = tmp_path / "pid"
    exe = _fake_cli(tmp_path, f'echo $$ > {pidfile}; exec sleep 30')
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {PKG!r})
        import kvmsim
        try:
            kvmsim.run({T1!r}, binary={exe!r})
        except KeyboardInterrupt:
            print("interrupted")
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    # The parent imports the package (pandas, numpy) before it starts the
    # child: on a loaded machine that takes seconds, so wait for the pid
    # file by a deadline, not a fixed number of polls.
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the fake CLI never started"
        time.sleep(0.05)
    child = int(pidfile.read_text())
    parent.send_signal(signal.SIGINT)  # what a notebook's interrupt does to the kernel
    out, _ = parent.communicate(timeout=5)
    assert "interrupted" in out
    assert not _alive(child)


def test_missing_cli_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("KVMSIM_BINARY", raising=False)
    monkeypatch.setattr(kvmsim._run, "__file__", "/nonexistent/python/kvmsim/_run.py")
    monkeypatch.setattr(kvmsim._run._kvmsim, "BUILD_BINARY", "/nonexistent/kvmsim")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(FileNotFoundError, match="KVMSIM_BINARY"):
        kvmsim.run(T1)


def test_kvmsim_binary_env_var_selects_the_cli(monkeypatch, tmp_path):
    exe = _fake_cli(tmp_path, "exit 0")
    monkeypatch.setenv("KVMSIM_BINARY", exe)
    assert kvmsim.find_binary() == exe


def test_a_setting_that_could_not_act_comes_back_as_a_warning_and_in_the_result():
    # Halt polling on a 1 kHz cyclictest: every halt outlasts a 20 us maximum, so no
    # vCPU's window ever grows and nothing polls. The run says so, in Python too.
    with pytest.warns(kvmsim.KvmsimWarning, match="halt polling is configured"):
        r = kvmsim.run(T1, set={**SHORT, "guest.idle": "hlt", "kvm.halt_poll_ns": 20000})
    assert r.metrics["halt_poll.attempted"] == 0 and r.metrics["vcpu.halts"] > 0
    assert any(w.startswith("kvm.halt_poll_ns: ") for w in r.warnings)
    quiet = kvmsim.run(T1, set=SHORT)  # the pinned idle=poll run: nothing to say
    assert quiet.warnings == []


def test_mechanisms_shows_only_what_acted_with_the_counters_of_the_metrics():
    # Four vCPUs on two pCPUs beside two host hogs: the scheduler section appears, with
    # the metrics' counts; halt polling is configured, so its section is there too.
    # Every halt outlasts the 50 us maximum (1 ms interval): the run says so.
    with pytest.warns(kvmsim.KvmsimWarning, match="halt polling is configured"):
        r = kvmsim.run(T1, set={**SHORT, "guest.idle": "hlt", "kvm.halt_poll_ns": 50000,
                                "vm.vcpus": 4, "vm.pinning": "[]", "vm.affinity": "[2, 3]",
                                "host.hog.count": 2, "host.hog.affinity": "[2, 3]",
                                "host.tick_hz": 250})
    mech = r.mechanisms.set_index(["section", "stat"])["value"]
    sections = set(r.mechanisms["section"])
    sched = "host scheduler (vCPU threads competing for pCPUs)"
    assert sched in sections
    assert mech[(sched, "context_switches")] == f"{r.metrics['host.sched.context_switches']:.0f}"
    halt = "halt polling (KVM's halt_* stats, all vCPUs)"
    assert mech[(halt, "halt_exits")] == f"{r.metrics['vcpu.halts']:.0f}"
    # The pinned idle=poll run: no halts, no competition, no TLB flushes.
    quiet = kvmsim.run(T1, set=SHORT).mechanisms
    assert not ({sched, halt} & set(quiet["section"]))
    assert not any(quiet["section"].str.startswith("remote TLB"))


def test_run_takes_the_clis_output_options_allow_partial_perfetto_and_vcd(tmp_path):
    cut = {"cyclictest.loops": 100000, "sim.max_simulated_s": 0.01}
    with pytest.raises(kvmsim.SimulationError, match="sim.max_simulated_s"):
        kvmsim.run(T1, set=cut)
    with pytest.warns(kvmsim.KvmsimWarning, match="partial result"):
        r = kvmsim.run(T1, set=cut, allow_partial=True, perfetto=tmp_path / "t.json",
                       vcd=tmp_path / "w.vcd")
    assert r.metrics["sim.partial"] == 1 and r.metrics["cyclictest.loops"] < 100000
    assert (tmp_path / "t.json").read_text().lstrip().startswith("{")
    assert "$timescale" in (tmp_path / "w.vcd").read_text()
