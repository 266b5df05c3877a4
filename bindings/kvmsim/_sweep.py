"""Sweeps: a grid of parameter values times seeds, one child run per point.

Locally the runs go to a thread pool (each thread waits on its own child
process, so ``workers`` children run at once); with a ``dask.distributed``
``Client`` they go to the cluster's workers, each task carrying the scenario's
text (and its includes') so that no worker needs the files. A failing point is
reported in its row (``status``, ``error``) while the others finish.
"""
import csv
import itertools
import os
import queue
import sys
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from ._errors import KvmsimError, RunTimeout, ScenarioError, SimulationCrash
from ._params import declarations, flatten, is_group, normalize, resolve, value_text
from ._run import ChildGroup, KvmsimWarning, TempArea, find_binary, run

_SWEEP_KEYS = ("grid", "seeds", "set")

# A stop asked for by a signal (the CLI's SIGTERM, SIGHUP and SIGINT handler): the handler
# only records the signal with request_stop(); the local sweep's loop sees it within
# _POLL_S, kills the children and raises Stopped where it holds no lock. A handler that
# raised wherever the signal landed could raise inside concurrent.futures' own locks and
# leave the pool's clean-up waiting for ever.
_stop_signal = None
_POLL_S = 0.1


class Stopped(BaseException):
    """The sweep stopped on a signal (request_stop): the running children were killed and
    the temporary folders removed; ``signum`` is the signal."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def request_stop(signum):
    """Async-signal-safe: records ``signum`` for the running sweep to stop on."""
    global _stop_signal
    _stop_signal = signum


def stop_requested():
    """The signal request_stop() recorded, or None."""
    return _stop_signal


def _check_stop():
    if _stop_signal is not None:
        raise Stopped(_stop_signal)


def scenario_sweep(scenario):
    """The ``sweep:`` section of a scenario file.

    A scenario may declare its own sweep::

        sweep:
          grid:                       # every combination of these values
            kvm.enable_hv_timer: [true, false]
          seeds: [1, 2, 3]            # or a count: seeds: 3  (= 1, 2, 3)
          set: {cyclictest.loops: 20000}   # applied to every point

    Args:
        scenario: path of the scenario file.

    Returns:
        ``{"grid": {...}, "seeds": [...] or None, "set": {...}}``, or ``None`` when the
        file has no ``sweep:`` section.

    Raises:
        ScenarioError: the section is malformed.
    """
    import yaml

    path = os.fspath(scenario)
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    sec = doc.get("sweep") if isinstance(doc, dict) else None
    if sec is None:
        return None
    if not isinstance(sec, dict):
        raise ScenarioError(f"{path}: key 'sweep': expected a mapping with grid/seeds/set")
    for k in sec:
        if k not in _SWEEP_KEYS:
            raise ScenarioError(f"{path}: key 'sweep.{k}': unknown key (expected one of: "
                                + ", ".join(_SWEEP_KEYS) + ")")
    grid = sec.get("grid") or {}
    if not isinstance(grid, dict):
        raise ScenarioError(f"{path}: key 'sweep.grid': expected a mapping of key: [values]")
    grid = {k: (v if isinstance(v, list) else [v]) for k, v in grid.items()}
    seeds = sec.get("seeds")
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = list(range(1, seeds + 1))
    elif seeds is not None and not (isinstance(seeds, list)
                                    and all(isinstance(s, int) for s in seeds)):
        raise ScenarioError(f"{path}: key 'sweep.seeds': expected a count or a list of integers")
    base = sec.get("set") or {}
    if not isinstance(base, dict):
        raise ScenarioError(f"{path}: key 'sweep.set': expected a mapping of key: value")
    return {"grid": grid, "seeds": seeds, "set": base}


def grid_points(grid):
    """Every combination of the grid's values, as dicts, last key varying fastest."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def run_point(scenario, point, seed, base_set=None, binary=None, timeout=None, _group=None,
              _tmp=None):
    """One sweep row as a plain dict (picklable: this is what a Dask worker runs)."""
    if binary is not None and not os.path.isfile(binary):
        binary = None  # a cluster node with the CLI elsewhere: its own KVMSIM_BINARY
    row = {**point, "seed": seed, "status": "ok", "error": "", "warnings": ""}
    try:
        # A sweep's warnings go into its rows, not one Python warning per run.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KvmsimWarning)
            r = run(scenario, set={**flatten(base_set), **flatten(point)}, seed=seed,
                    binary=binary, timeout=timeout, _group=_group, _tmp=_tmp)
        row["warnings"] = " | ".join(r.warnings)
        # A metric named as a grid key (cyclictest.loops) keeps the grid's value.
        row.update({k: v for k, v in r.metrics.items() if k not in point})
    except ScenarioError as e:
        row.update(status="bad input", error=str(e))
    except RunTimeout as e:
        row.update(status="timeout", error=str(e))
    except SimulationCrash as e:
        row.update(status="crash", error=str(e))
    except (KvmsimError, OSError, ValueError) as e:
        row.update(status="error", error=str(e))
    return row


def scenario_files(scenario):
    """The scenario file and every file it includes (transitively), as a cluster task
    carries them: ``(root, main, {relative path: bytes})``, paths relative to ``root``,
    the deepest folder holding them all (``include:`` paths are relative to the
    including file, as the CLI's loader takes them; ``..`` included).

    Raises:
        ScenarioError: a file cannot be read.
    """
    import yaml

    main = os.path.normpath(os.path.abspath(os.fspath(scenario)))
    texts, todo = {}, [main]
    while todo:
        path = todo.pop()
        if path in texts:
            continue  # included twice (a cycle is the loader's error, checked before)
        try:
            with open(path, "rb") as f:
                texts[path] = f.read()
        except OSError as e:
            raise ScenarioError(f"{path}: cannot read file ({e.strerror})") from None
        try:
            doc = yaml.safe_load(texts[path])
        except yaml.YAMLError:
            continue  # the loader says what is wrong (resolve() runs first)
        inc = doc.get("include") if isinstance(doc, dict) else None
        for item in inc if isinstance(inc, list) else [inc]:
            if isinstance(item, str) and item:
                todo.append(os.path.normpath(os.path.join(os.path.dirname(path), item)))
    root = os.path.commonpath([os.path.dirname(p) for p in texts])
    return root, os.path.relpath(main, root), {os.path.relpath(p, root): t
                                               for p, t in texts.items()}


# On a Dask worker: the children of each sweep's tasks, by sweep id, so that a stopped
# sweep can kill its running runs there (_stop_on_worker) instead of letting them finish.
_worker_groups = {}


def _topic(sweep_id):
    return f"kvmsim-sweep-{sweep_id}"


def cluster_point(files, main, root, point, seed, base_set=None, binary=None, timeout=None,
                  sweep_id=None, index=None):
    """One sweep row on a Dask worker: :func:`run_point` on the scenario files the task
    carries (see :func:`scenario_files`), written into a temporary folder of the worker.

    Each start is logged on the scheduler (topic ``kvmsim-sweep-<sweep_id>``): the
    submitting side counts them into the row's ``attempts`` (a run the scheduler started
    again because its worker was lost). Paths in the row's messages name ``root`` (the
    submitting machine's folder), not the temporary one."""
    if sweep_id is not None:
        try:
            from distributed import get_client, get_worker

            w = get_worker()
            event = {"i": index, "worker": w.address}
            try:
                # A call that returns once the scheduler has the event: the worker's own
                # log_event() sends it in a batch a few ms later, and a worker killed in
                # between (the case attempts is for) would lose it.
                get_client().log_event(_topic(sweep_id), event)
            except Exception:  # noqa: BLE001  (no client from here: the batched way)
                w.log_event(_topic(sweep_id), event)
        except (ImportError, ValueError):
            pass  # not on a worker (called directly)
    group = _worker_groups.setdefault(sweep_id, ChildGroup()) if sweep_id else None
    row = {**point, "seed": seed, "status": "error", "error": "", "warnings": ""}
    try:
        area = TempArea("kvmsim-sweep-")  # removed even if the worker is SIGKILL'd
    except OSError as e:
        row["error"] = f"cannot make a temporary folder on the Dask worker: {e}"
        return row
    try:
        top = os.path.join(area.path, "scenario")
        for rel, data in files.items():
            path = os.path.join(top, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        row = run_point(os.path.join(top, main), point, seed, base_set, binary, timeout,
                        group, area)
    except OSError as e:
        row["error"] = f"cannot write the scenario files on the Dask worker: {e}"
    finally:
        area.cleanup()
    for k in ("error", "warnings"):
        if row.get(k):
            row[k] = row[k].replace(top + os.sep, root.rstrip(os.sep) + os.sep)
    try:  # which CLI ran it, for the submitting side to compare with its own
        exe = find_binary(binary if binary is not None and os.path.isfile(binary) else None)
        row[_CLI] = (exe, cli_version(exe))
    except OSError:
        pass  # no CLI: the row says so already
    return row


# A cluster row's private key: (path, version line) of the worker's CLI; popped before
# the row is handed on.
_CLI = "_kvmsim_cli"
_versions = {}


def cli_version(exe):
    """The first line ``exe --version`` prints (``kvmsim 0.1.0``), cached per path and
    modification time; ``""`` if it cannot say."""
    import subprocess

    try:
        key = (exe, os.stat(exe).st_mtime_ns)
    except OSError:
        return ""
    if key not in _versions:
        try:
            p = subprocess.run([exe, "--version"], capture_output=True, text=True,
                               errors="replace", timeout=30, stdin=subprocess.DEVNULL)
            _versions[key] = (p.stdout.strip().splitlines() or [""])[0].strip()
        except (OSError, subprocess.SubprocessError):
            _versions[key] = ""
    return _versions[key]


def _local_cli_version(binary):
    """The version line of the CLI this machine would use, or None without one."""
    try:
        return cli_version(find_binary(binary))
    except OSError:
        return None


def _stop_on_worker(sweep_id):
    """On each worker when a cluster sweep stops: kill the sweep's running children there
    (and any it starts later: the group stays stopped)."""
    _worker_groups.setdefault(sweep_id, ChildGroup()).kill_all()
    return True


def _attempts(client, sweep_id):
    """{task index: starts the scheduler heard of} for a cluster sweep."""
    counts = {}
    for _, msg in client.get_events(_topic(sweep_id)):
        if isinstance(msg, dict) and "i" in msg:
            counts[msg["i"]] = counts.get(msg["i"], 0) + 1
    return counts


def _with_attempts(row, n):
    """``row`` with its ``attempts`` column right after ``warnings``."""
    out = {}
    for k, v in row.items():
        if k != _ATTEMPTS:
            out[k] = v
        if k == "warnings":
            out[_ATTEMPTS] = n
    return out


# A cluster sweep with no worker for this long says so (a warning), rather than wait silently.
_NO_WORKER_WARN_S = 30.0


def _run_on_cluster(client, scenario, tasks, todo, base_set, binary, timeout, finished):
    """The cluster half of sweep(): every point of ``todo`` as a task, each finished row
    handed to ``finished(i, row)`` with its ``attempts``."""
    from distributed import KilledWorker

    root, main, files = scenario_files(scenario)
    sweep_id = uuid.uuid4().hex
    local_version = _local_cli_version(binary)
    told = set()
    # Each finished future is handed over through a queue, which the loop polls, so a
    # requested stop (request_stop) is seen within _POLL_S, as in the local sweep.
    done = queue.SimpleQueue()
    futures = {}
    try:
        for i in todo:
            _check_stop()
            fut = client.submit(cluster_point, files, main, root, tasks[i][0], tasks[i][1],
                                base_set, binary, timeout, sweep_id, i, pure=False)
            futures[fut] = i
            fut.add_done_callback(done.put)
        left = len(futures)
        no_worker_since, warned, next_check = None, False, 0.0
        while left:
            batch = []
            while not batch:
                _check_stop()
                try:
                    batch.append(done.get(timeout=_POLL_S))
                except queue.Empty:
                    now = time.monotonic()
                    if not warned and now >= next_check:
                        next_check = now + 1.0
                        if client.scheduler_info().get("workers"):
                            no_worker_since = None
                        elif no_worker_since is None:
                            no_worker_since = now
                        elif now - no_worker_since >= _NO_WORKER_WARN_S:
                            warned = True
                            warnings.warn(
                                f"kvmsim sweep: the Dask scheduler {client.scheduler.address} "
                                f"has had no worker for {_NO_WORKER_WARN_S:.0f} s; {left} "
                                "runs wait (start dask-worker on a machine, or stop with "
                                "Ctrl-C: --resume continues)", KvmsimWarning, stacklevel=3)
            while True:  # every future finished by now: one look at the event log for all
                try:
                    batch.append(done.get_nowait())
                except queue.Empty:
                    break
            counts = _attempts(client, sweep_id)
            for fut in batch:
                i = futures[fut]
                try:
                    row = fut.result()
                except KilledWorker as e:
                    # The scheduler gave up: the point's workers died more than
                    # distributed.scheduler.allowed-failures times (it may kill them itself).
                    row = {**tasks[i][0], "seed": tasks[i][1], "status": "error",
                           "error": f"Dask gave up on this run: {e} (the scheduler's "
                           "distributed.scheduler.allowed-failures)", "warnings": ""}
                except ImportError as e:
                    err = worker_error(e, binary)
                    if err is None:
                        raise
                    raise err from None
                cli = row.pop(_CLI, None)
                if cli and local_version and cli[1] != local_version and cli not in told:
                    told.add(cli)  # the rows come from another version of the model
                    warnings.warn(f"kvmsim sweep: a Dask worker ran {cli[0]}, which says "
                                  f"'{cli[1] or '(no version)'}'; this machine's CLI says "
                                  f"'{local_version}': give every worker the same build",
                                  KvmsimWarning, stacklevel=3)
                # max: an event log shorter than the sweep (events-log-length) lost some
                row = _with_attempts(row, max(1, counts.get(i, 0)))
                left -= 1
                finished(i, row)
    except BaseException:
        client.cancel(list(futures))
        try:  # the runs in progress on the workers die too (bounded: a stop must not hang)
            client.run(_stop_on_worker, sweep_id, on_error="ignore", callback_timeout=10)
        except Exception:  # noqa: BLE001  (the stop goes on; the runs end on their own)
            pass
        raise


def _progress(total, enabled):
    if enabled is False or (enabled is None and total < 8):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="kvmsim sweep", unit="run", file=sys.stderr)


_FIXED = ("seed", "status", "error", "warnings")
# Cluster sweeps only (after "warnings"): how many times the scheduler started the run.
_ATTEMPTS = "attempts"


def check_grid(grid, where="grid"):
    """The grid as its runs are given it, checked before any run.

    Values become Python ones (numpy scalars and arrays included); for integer
    parameters (and integer lists) an integral float such as ``numpy.float64(4.0)`` becomes
    the int 4. A key may name a group (``kvm``) whose values are mappings of its
    parameters. What a parameter's type is comes from its declaration.

    Raises:
        ScenarioError: an unknown key, or a non-integral float for an integer key.
    """
    import difflib

    out = {}
    for key, values in (grid or {}).items():
        key = str(key)
        if key not in declarations() and not is_group(key):
            near = difflib.get_close_matches(key, list(declarations()), n=1)
            raise ScenarioError(f"{where}: unknown key '{key}'"
                                + (f" (did you mean '{near[0]}'?)" if near else ""))
        if hasattr(values, "tolist") and not isinstance(values, str):
            values = values.tolist()
        if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
            values = [values]
        out[key] = [normalize(key, v, where) for v in values]
    return out


def _same_text(value):
    """A value as comparable text: a grid value and its CSV cell (as this or an older
    sweep wrote it: True or true, [2, 3], 1000 or 1000.0) give the same."""
    import yaml

    text = value if isinstance(value, str) else value_text(value)
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(parsed, float) and parsed.is_integer():
        parsed = int(parsed)
    return text if parsed is None else value_text(parsed)


def _frame(rows, columns=None):
    return pd.DataFrame(rows, columns=columns)


def _write_atomic(df, path):
    tmp = f"{path}.tmp{os.getpid()}"
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


class _Journal:
    """The ``out`` CSV while a sweep runs: each finished row appended and flushed, so an
    interrupted sweep keeps them (``resume``). A row with new columns rewrites the file."""

    def __init__(self, path, keys):
        self.path = path
        self.keys = list(keys)
        self.rows = []
        self.columns = None

    def rewrite(self, rows):
        self.rows = list(rows)
        metrics = sorted({k for r in self.rows for k in r
                          if k not in self.keys and k not in _FIXED and k != _ATTEMPTS})
        attempts = [_ATTEMPTS] if any(_ATTEMPTS in r for r in self.rows) else []
        self.columns = self.keys + list(_FIXED) + attempts + metrics
        _write_atomic(_frame(self.rows, self.columns), self.path)

    def add(self, row):
        if self.columns is None or any(k not in self.columns for k in row):
            self.rewrite(self.rows + [row])
            return
        self.rows.append(row)
        line = _frame([row], self.columns).to_csv(index=False, header=False)
        with open(self.path, "a", encoding="utf-8", newline="") as f:
            f.write(line)  # one write: a signal cannot cut the row
            f.flush()


def _resumed(path, keys, tasks):
    """{task index: row} for the points (grid values + seed) ``path`` has with status ok."""
    index = {(tuple(_same_text(p[k]) for k in keys), s): i for i, (p, s) in enumerate(tasks)}
    done = {}
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in keys + ["seed", "status"] if c not in (reader.fieldnames or [])]
        if reader.fieldnames and missing:
            raise ScenarioError(f"{path}: no column '{missing[0]}': not a sweep of this grid "
                                "(resume needs the CSV a sweep over the same keys wrote)")
        for rec in reader:
            if rec.get("status") != "ok":
                continue
            try:
                seed = int(rec["seed"])
                i = index.get((tuple(_same_text(rec[k]) for k in keys), seed))
                if i is None or i in done:
                    continue
                point = tasks[i][0]
                row = {**point, "seed": seed, "status": "ok", "error": rec.get("error") or "",
                       "warnings": rec.get("warnings") or ""}
                if rec.get(_ATTEMPTS) not in ("", None):
                    row[_ATTEMPTS] = int(float(rec[_ATTEMPTS]))
                for c in sorted(c for c in rec if c is not None and c not in point
                                and c not in _FIXED and c != _ATTEMPTS):
                    if rec[c] not in ("", None):
                        row[c] = float(rec[c])
            except (TypeError, ValueError):
                continue  # a damaged row (cut by the interruption): run the point again
            done[i] = row
    return done


def worker_error(exc, binary=None):
    """The error to raise for what a Dask worker raised, when it means the worker cannot
    import this package (it unpickles ``run_point`` from ``kvmsim``): a
    :class:`KvmsimError` that says what to install or which ``PYTHONPATH`` to set.
    ``None`` for any other exception."""
    if not isinstance(exc, ImportError):
        return None
    name = getattr(exc, "name", None) or ""
    if not (name == "kvmsim" or name.startswith("kvmsim.") or "'kvmsim" in str(exc)):
        return None
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cli = binary or "the kvmsim CLI"
    return KvmsimError(
        f"a Dask worker cannot import the kvmsim package ({type(exc).__name__}: {exc}). "
        f"Every worker needs it: start the workers with PYTHONPATH={here} (the folder "
        f"holding kvmsim/, as on this machine) or install the package there, and "
        f"{cli} at the same path or KVMSIM_BINARY set on the workers.")


def sweep(scenario, grid=None, seeds=None, set=None, workers=None, client=None,
          progress=None, timeout=None, binary=None, out=None, resume=False):
    """Runs every grid point for every seed, one child process per run.

    A failing point gets its ``status`` and ``error`` in its row while the others
    finish. Ctrl-C kills the running children; every child runs in its own process
    group and, on Linux, dies with this process even when it is SIGKILL'd (a notebook
    kernel restart), and the temporary folders are removed then too.

    Args:
        scenario: path of a scenario file.
        grid: ``{key: [values]}``, every combination is a point (last key varying
            fastest). Values as a scenario file takes them: lists for list keys
            (``{"vm.pinning": [[2, 3], [2, 2]]}``), a mapping for a group key
            (``{"kvm": [{"enable_hv_timer": True}, ...]}``), numpy values; an integral
            float (``numpy.float64(4.0)``) for an integer key is that integer.
            ``None``: the scenario's ``sweep:`` section (its seeds and set,
            which ``seeds`` and ``set`` given here override).
        seeds: list of seeds (default: ``[1]``).
        set: overrides applied to every point.
        workers: local child processes at once (default: ``os.cpu_count()``).
        client: a ``dask.distributed.Client``: run on its workers instead. Each task
            carries the text of the scenario file and of every file it includes, so the
            workers need no shared folder; they need the package (on their
            ``PYTHONPATH`` or installed; a worker without it raises
            :class:`KvmsimError` saying so) and the CLI, which each finds as
            :func:`find_binary` does there (``binary`` if that path exists on it,
            ``KVMSIM_BINARY``, the build its package sits in, ``PATH``; a worker without
            one gives rows with status ``"error"``; one whose CLI prints another
            ``--version`` than this machine's gives a :class:`KvmsimWarning`). A run
            whose worker is lost is started again by the scheduler (up to its
            ``distributed.scheduler.allowed-failures``, default 3, then the row says
            ``"error"``); ``attempts`` counts the starts. Ctrl-C cancels the queued
            runs and kills the running ones on the workers; a cluster without a
            worker for 30 s gives a :class:`KvmsimWarning`.
        progress: a tqdm bar on stderr (``None``: when there are 8 runs or more and
            tqdm is installed).
        timeout: seconds per run (its row then says ``"timeout"``).
        binary: the CLI to run (default: :func:`find_binary`).
        out: also write the table to this CSV file: each row as its run finishes
            (appended and flushed, so an interrupted sweep keeps them), then the
            whole table in grid order at the end.
        resume: with ``out``: the points (grid values and seed) that file already
            has with status ``"ok"`` are not run again; their rows are taken from it.
            The file must come from a sweep of the same scenario and ``set``.

    Returns:
        pandas.DataFrame: one row per run, in grid order (seeds innermost) whatever
        the completion order. Columns: the grid keys, ``seed``, ``status`` (``"ok"``,
        ``"bad input"``, ``"crash"``, ``"timeout"``, ``"error"``), ``error`` (the
        message), ``warnings`` (the run's warnings, ``" | "``-separated: a setting
        that could not act, a result one artefact dominates), with ``client`` only
        ``attempts`` (how many times the scheduler started the run: 1, or more when a
        worker was lost while running it; the same seed gives the same metrics), then
        every metric.

    Raises:
        ScenarioError: the scenario file, ``set``, a grid key or an integer key's
            non-integral value is bad (checked before any run).
        KvmsimError: a Dask worker cannot import the package.
    """
    scenario = os.path.abspath(os.fspath(scenario))
    if grid is None:
        sec = scenario_sweep(scenario) or {"grid": {}, "seeds": None, "set": {}}
        grid = sec["grid"]
        seeds = seeds if seeds is not None else sec["seeds"]
        set = {**sec["set"], **(set or {})}
    grid = check_grid(grid)
    set = {k: normalize(k, v, "set") for k, v in (set or {}).items()}
    seeds = [int(normalize("sim.seed", s, "seeds")) for s in seeds] if seeds is not None else [1]
    if resume and out is None:
        raise ScenarioError("resume needs out= (the CSV file of the interrupted sweep)")
    if client is not None and workers is not None:
        raise ScenarioError("workers= and client= together: on a cluster, each worker's "
                            "--nthreads sets how many points run at once (drop workers=)")
    # The scenario and the common overrides are checked once, in-process: a bad file
    # fails the sweep (ScenarioError); a bad point only fails its row.
    resolve(scenario, set)
    # A cluster's workers find their own CLI (run_point) unless one is given; this
    # machine needs one only for local runs.
    exe = find_binary(binary) if client is None else binary
    tasks = [(p, s) for p in grid_points(grid) for s in seeds]
    rows = [None] * len(tasks)
    journal = None
    if out is not None:
        out = os.fspath(out)
        if os.path.dirname(out):
            os.makedirs(os.path.dirname(out), exist_ok=True)
        if resume and os.path.exists(out):
            for i, row in _resumed(out, list(grid), tasks).items():
                rows[i] = row
        journal = _Journal(out, list(grid))
        journal.rewrite([r for r in rows if r is not None])
    todo = [i for i, r in enumerate(rows) if r is None]
    bar = _progress(len(todo), progress)

    def finished(i, row):
        rows[i] = row
        if journal is not None:
            journal.add(row)
        if bar:
            bar.update()

    try:
        if client is not None and todo:
            _run_on_cluster(client, scenario, tasks, todo, set, exe, timeout, finished)
        elif todo:
            n = max(1, int(workers or os.cpu_count() or 1))
            group = ChildGroup()
            area = TempArea("kvmsim-sweep-")  # removed even if this process is SIGKILL'd
            try:
                with ThreadPoolExecutor(max_workers=n) as pool:
                    # Each finished future is handed over through a queue, which the loop
                    # polls, so a requested stop is seen within _POLL_S.
                    done = queue.SimpleQueue()
                    futures = {}
                    try:
                        for i in todo:
                            _check_stop()
                            fut = pool.submit(run_point, scenario, tasks[i][0], tasks[i][1],
                                              set, exe, timeout, group, area)
                            futures[fut] = i
                            fut.add_done_callback(done.put)
                        for _ in range(len(futures)):
                            while True:
                                _check_stop()
                                try:
                                    fut = done.get(timeout=_POLL_S)
                                    break
                                except queue.Empty:
                                    pass
                            finished(futures[fut], fut.result())
                        _check_stop()
                    except BaseException:
                        for fut in futures:
                            fut.cancel()
                        group.kill_all()  # running children die now: no wait for them
                        raise
            finally:
                area.cleanup()
    finally:
        if bar:
            bar.close()
    df = pd.DataFrame(rows)
    df.attrs["scenario"] = scenario
    df.attrs["grid"] = list(grid)
    if out is not None:
        _write_atomic(df, out)  # the whole table, in grid order
    return df
