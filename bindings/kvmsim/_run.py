"""One simulation run in a child process: the kvmsim CLI, results read back intact."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
import threading

import pandas as pd

from . import _kvmsim
from ._errors import RunTimeout, ScenarioError, SimulationCrash, SimulationError
from ._histogram import load_histogram
from ._params import overrides, value

_ERROR_PREFIX = "kvmsim: error: "


def find_binary(binary=None):
    """Path of the ``kvmsim`` CLI that runs are made with.

    Tried in order: ``binary``, ``$KVMSIM_BINARY``, the build this package sits in
    (``build/kvmsim`` next to ``build/python``), the build directory the extension was
    compiled in, ``kvmsim`` on ``PATH``.

    Args:
        binary: an explicit path to try first.

    Returns:
        The absolute path of the first executable found.

    Raises:
        FileNotFoundError: none of them exists.
    """
    candidates = [binary, os.environ.get("KVMSIM_BINARY"),
                  os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
                      os.path.abspath(__file__)))), "kvmsim"),  # build/python/kvmsim/ -> build/
                  _kvmsim.BUILD_BINARY, shutil.which("kvmsim")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise FileNotFoundError("kvmsim CLI not found: build it (make build) or set KVMSIM_BINARY")


def _error_message(stderr):
    lines = [l[len(_ERROR_PREFIX):] for l in stderr.splitlines() if l.startswith(_ERROR_PREFIX)]
    if lines:
        return "\n".join(lines)
    tail = [l for l in stderr.strip().splitlines() if l.strip()]
    return tail[-1] if tail else ""


def _kill(proc):
    """SIGKILL to the child's process group (its own: see run_child), then the child."""
    if proc.returncode is None:  # not yet reaped: its pid is still its own
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.kill()
    except OSError:
        pass


class ChildGroup:
    """The live children of a sweep, so that Ctrl-C can kill them from the main thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._procs = set()
        self.stopped = False

    def add(self, proc):
        with self._lock:
            if self.stopped:
                _kill(proc)
            self._procs.add(proc)

    def discard(self, proc):
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self):
        with self._lock:
            self.stopped = True
            for p in self._procs:
                _kill(p)


# The janitor of a temporary folder: a small process in its own session that waits on
# its stdin. The parent writes "done" after removing the folder itself; EOF without it
# means the parent died (SIGKILL, a notebook kernel restart): the janitor removes the
# folder, retrying while the dying children (PR_SET_PDEATHSIG) may still write into it.
_JANITOR = r"""
import os, sys
try:
    said = sys.stdin.buffer.read()
except BaseException:
    said = b""
if said != b"done":
    import shutil, time
    for _ in range(20):
        shutil.rmtree(sys.argv[1], ignore_errors=True)
        time.sleep(0.1)
        if not os.path.exists(sys.argv[1]):
            break
"""


class TempArea:
    """A temporary folder that is removed by :meth:`cleanup`, and also when this process
    dies without calling it (see _JANITOR)."""

    def __init__(self, prefix="kvmsim-"):
        self.path = tempfile.mkdtemp(prefix=prefix)
        try:  # no wait for it to start: its stdin holds what the parent says
            self._janitor = subprocess.Popen(
                [sys.executable or "/usr/bin/python3", "-I", "-S", "-c", _JANITOR, self.path],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
        except OSError:
            self._janitor = None

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)
        j, self._janitor = self._janitor, None
        if j is not None:
            try:
                j.stdin.write(b"done")
                j.stdin.close()
            except OSError:
                pass
            # Not waited for (it exits on its own; subprocess reaps it later).

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()


def run_child(args, timeout=None, group=None):
    """Runs ``args``; returns (stdout, stderr). Kills the child on timeout and on any
    exception in the parent (Ctrl-C in a notebook included), so nothing is left behind.
    The child runs in its own session and process group (a signal to the parent's group
    does not reach it; the parent kills it) and, on Linux, dies with the parent even
    when the parent is SIGKILL'd: ``KVMSIM_PARENT_PID`` tells the CLI to set
    ``PR_SET_PDEATHSIG`` itself (no ``preexec_fn``, which is unsafe with the sweep's
    threads)."""
    env = {**os.environ, "KVMSIM_PARENT_PID": str(os.getpid())}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, errors="replace",
                            start_new_session=True, env=env)
    if group is not None:
        group.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        out, err = proc.communicate()
        raise RunTimeout(f"kvmsim run exceeded its timeout of {timeout} s (killed)",
                         err, proc.returncode) from None
    except BaseException:
        _kill(proc)
        proc.wait()
        raise
    finally:
        if group is not None:
            group.discard(proc)
    rc = proc.returncode
    if rc == 2:
        raise ScenarioError(_error_message(err) or "kvmsim: bad input (exit code 2)")
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        raise SimulationCrash(f"kvmsim crashed ({name}): {_error_message(err)}".rstrip(": "),
                              err, rc)
    if rc != 0:
        raise SimulationError(f"kvmsim failed (exit code {rc}): {_error_message(err)}", err, rc)
    return out, err


class KvmsimWarning(UserWarning):
    """A warning ``kvmsim run`` printed: a setting that could not act, or a result one
    artefact dominates (halt polling that never polled, vCPUs sharing a pCPU without a
    tick, a latency maximum that is a scheduler slice)."""


_WARNING_PREFIX = "kvmsim: warning: "


def parse_warnings(stderr):
    """The ``kvmsim: warning:`` lines of a run's stderr, without the prefix."""
    return [l[len(_WARNING_PREFIX):] for l in (stderr or "").splitlines()
            if l.startswith(_WARNING_PREFIX)]


def parse_exit_table(text):
    """{reason: (min_us, max_us)} from the `perf kvm stat`-style table `kvmsim run` prints
    (the per-reason min/max that summary.json does not carry). {} if there is none."""
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.split()[:2] == ["VM-EXIT", "Samples"]:
            for row in lines[i + 1:]:
                f = row.split()
                if len(f) != 7 or not f[4].endswith("us") or not f[5].endswith("us"):
                    break
                try:
                    out[f[0]] = (float(f[4][:-2]), float(f[5][:-2]))
                except ValueError:
                    break
            break
    return out


class RunResult:
    """The outputs of one run, as :func:`run` returns them.

    Attributes:
        scenario: the scenario file the run used.
        set: the overrides (``{key: value}``) the run was given.
        seed: the run seed (the scenario's when none was given).
        metrics: ``{"dotted.key": float}``, ``summary.json``'s ``"metrics"``.
        params: ``{key: value}``, every parameter as resolved for the run, each a Python
            value of its declared type (int, float, bool, str, list of int; see
            :func:`kvmsim.value`).
        params_text: the same as canonical text, as ``summary.json`` has it.
        histogram: numpy array of counts in 1-us buckets (``None`` for workloads
            without a latency histogram).
        histogram_file: the full :class:`Histogram` (overflows, printed
            min/avg/max), or ``None``.
        warnings: the run's warnings (list of str), as ``kvmsim run`` printed them:
            a setting that could not act, or a result one artefact dominates. Each is
            also issued as a :class:`KvmsimWarning`.
    """

    def __init__(self, scenario, set, seed, summary, histogram_file=None, exit_min_max=None,
                 warnings=()):
        self.scenario = scenario
        self.set = dict(set or {})
        self.seed = seed if seed is not None else int(summary["metrics"].get("sim.seed", -1))
        self.metrics = {k: float(v) for k, v in summary["metrics"].items()}
        self.params_text = dict(summary.get("params", {}))
        self.params = {k: value(k, v) for k, v in self.params_text.items()}
        self.histogram_file = histogram_file
        self.histogram = None if histogram_file is None else histogram_file.counts
        self._exit_min_max = dict(exit_min_max or {})
        self.warnings = list(warnings)

    @property
    def exits(self):
        """The exit table as ``perf kvm stat`` prints it, as a DataFrame.

        Columns reason, samples, samples_pct, time_pct, min_us, max_us (from the CLI's
        printed table, 0.01 us resolution) and avg_us; most frequent reason first.
        """
        rows = []
        for k, v in self.metrics.items():
            parts = k.split(".")
            if len(parts) == 3 and parts[0] == "exits" and parts[2] == "count":
                avg = self.metrics.get(f"exits.{parts[1]}.avg_ns", float("nan"))
                rows.append((parts[1], int(v), avg))
        df = pd.DataFrame(rows, columns=["reason", "samples", "avg_ns"])
        total = df["samples"].sum()
        time = df["samples"] * df["avg_ns"]
        df["samples_pct"] = 100.0 * df["samples"] / total if total else 0.0
        df["time_pct"] = 100.0 * time / time.sum() if total else 0.0
        df["avg_us"] = df["avg_ns"] / 1e3
        nan = (float("nan"), float("nan"))
        df["min_us"] = [self._exit_min_max.get(r, nan)[0] for r in df["reason"]]
        df["max_us"] = [self._exit_min_max.get(r, nan)[1] for r in df["reason"]]
        df = df.sort_values(["samples", "reason"], ascending=[False, True], ignore_index=True)
        return df[["reason", "samples", "samples_pct", "time_pct", "min_us", "max_us", "avg_us"]]

    @property
    def mechanisms(self):
        """What each mechanism in play did, as ``kvmsim run`` prints it after the latency
        figures: a DataFrame of section, stat and value (text with its unit), one row per
        stat. Sections: the LAPIC timer's KVM side, halt polling (KVM's ``halt_*`` stats),
        guest cpuidle-haltpoll, the host scheduler when vCPU threads competed, remote TLB
        flushes; only those that acted in this run.
        """
        rows = [(title, stat, value)
                for title, stats in _kvmsim.summary_sections(self.params_text, self.metrics)
                for stat, value in stats]
        return pd.DataFrame(rows, columns=["section", "stat", "value"])

    @property
    def breakdown(self):
        """Where the latency went, as a DataFrame.

        Columns stage and avg_ns (mean time per wake-up in each stage, from the timer
        deadline), stages in the model's order as ``kvmsim run`` prints them. Empty for
        workloads without timer wake-ups.
        """
        rows = [(k[len("breakdown."):-len(".avg_ns")], v) for k, v in self.metrics.items()
                if k.startswith("breakdown.") and k.endswith(".avg_ns")
                and k != "breakdown.total.avg_ns"]
        order = {name: i for i, name in enumerate(_kvmsim.stage_names())}
        rows.sort(key=lambda r: (order.get(r[0], len(order)), r[0]))
        return pd.DataFrame(rows, columns=["stage", "avg_ns"])

    @property
    def stage_cycles(self):
        """Host cycles per iteration in each stage of the vmexit tests, as a DataFrame.

        Columns test, stage, cycles (the ``vmexit.<test>.stage.<stage>.cycles``
        metrics), stages in the model's order. Empty for other workloads.
        """
        order = {name: i for i, name in enumerate(_kvmsim.stage_names())}
        rows = []
        for k, v in self.metrics.items():
            parts = k.split(".")
            if len(parts) == 5 and parts[0] == "vmexit" and parts[2] == "stage" \
                    and parts[4] == "cycles":
                rows.append((parts[1], parts[3], v))
        rows.sort(key=lambda r: (r[0], order.get(r[1], len(order)), r[1]))
        return pd.DataFrame(rows, columns=["test", "stage", "cycles"])

    def to_frame(self):
        """The run as a one-row DataFrame: the overrides, the seed, then every metric
        (the row format of :func:`sweep`, without its status columns)."""
        row = {**self.set, "seed": self.seed, **self.metrics}
        return pd.DataFrame([row])

    def __repr__(self):
        m = self.metrics
        core = ", ".join(f"{k}={m[k]:g}" for k in ("cyclictest.avg_us", "cyclictest.max_us",
                                                   "tscdeadline_latency.avg_cycles",
                                                   "vmexit.tscdeadline.cycles") if k in m)
        return f"<kvmsim.RunResult {os.path.basename(str(self.scenario))} seed={self.seed} {core}>"


def run(scenario, set=None, seed=None, trace=None, timeout=None, binary=None, out=None,
        allow_partial=False, perfetto=None, vcd=None, _group=None, _tmp=None):
    """Runs ``scenario`` once in a child process (``kvmsim run``) and reads back its results.

    Args:
        scenario: path of a scenario file (see :func:`kvmsim.scenario`).
        set: ``{key: value}`` overrides, as ``--set key=value`` (``True`` -> ``"true"``,
            lists as ``[a, b]``).
        seed: run seed; the same scenario, overrides and seed give the same metrics.
        trace: write the host tracepoints (``trace-cmd report`` text) to this file.
        timeout: seconds before the child is killed.
        binary: the CLI to run (default: :func:`find_binary`).
        out: keep ``summary.json`` and ``histogram.txt`` in this folder (default: a
            temporary folder, removed afterwards).
        allow_partial: keep the result of a run cut by ``sim.max_simulated_s`` (its
            metrics say ``sim.partial`` = 1), as ``--allow-partial``; else such a run
            raises SimulationError.
        perfetto: write a Perfetto / Chrome trace (JSON) of the run to this file
            (``--perfetto``).
        vcd: write a VCD waveform of the run to this file (``--vcd``).

    Returns:
        RunResult: the metrics, resolved parameters, histogram and exit table.

    Raises:
        ScenarioError: bad scenario file or override (the CLI's message).
        RunTimeout: the run exceeded ``timeout``.
        SimulationCrash: the child was killed by a signal.
        SimulationError: any other failure of the run.
    """
    exe = find_binary(binary)
    scenario = os.fspath(scenario)
    tmp = None
    if out is None and _tmp is not None:  # a sweep's: one folder per run inside it
        out_dir = tempfile.mkdtemp(prefix="run-", dir=_tmp.path)
        tmp = out_dir
    elif out is None:  # removed even if this process is SIGKILL'd mid-run
        tmp = TempArea("kvmsim-")
        out_dir = tmp.path
    else:
        out_dir = os.fspath(out)
    try:
        args = [exe, "run", scenario, "--out", out_dir]  # stdout: the summary (exit table)
        for o in overrides(set):
            args += ["--set", o]
        if seed is not None:
            args += ["--seed", str(int(seed))]
        if trace is not None:
            args += ["--trace", os.fspath(trace)]
        if perfetto is not None:
            args += ["--perfetto", os.fspath(perfetto)]
        if vcd is not None:
            args += ["--vcd", os.fspath(vcd)]
        if allow_partial:
            args.append("--allow-partial")
        stdout, stderr = run_child(args, timeout, _group)
        with open(os.path.join(out_dir, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        hist_path = os.path.join(out_dir, "histogram.txt")
        hist = load_histogram(hist_path) if os.path.exists(hist_path) else None
        if hist is not None and tmp is not None:
            hist.source = None
        result = RunResult(scenario, set, seed, summary, hist, parse_exit_table(stdout),
                           warnings=parse_warnings(stderr))
        for w in result.warnings:
            warnings.warn(f"kvmsim: {w}", KvmsimWarning, stacklevel=2)
        return result
    finally:
        if isinstance(tmp, TempArea):
            tmp.cleanup()
        elif tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
