"""Sweeps: a grid of parameter values times seeds, one child run per point.

Locally the runs go to a thread pool (each thread waits on its own child
process, so ``workers`` children run at once); with a ``dask.distributed``
``Client`` they go to the cluster's workers. A failing point is reported in
its row (``status``, ``error``) while the others finish.
"""
import itertools
import os
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import as_completed as completed

import pandas as pd

from ._errors import KvmsimError, RunTimeout, ScenarioError, SimulationCrash
from ._params import resolve
from ._run import ChildGroup, KvmsimWarning, find_binary, run

_SWEEP_KEYS = ("grid", "seeds", "set")


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


def run_point(scenario, point, seed, base_set=None, binary=None, timeout=None, _group=None):
    """One sweep row as a plain dict (picklable: this is what a Dask worker runs)."""
    if binary is not None and not os.path.isfile(binary):
        binary = None  # a cluster node with the CLI elsewhere: its own KVMSIM_BINARY
    row = {**point, "seed": seed, "status": "ok", "error": "", "warnings": ""}
    try:
        # A sweep's warnings go into its rows, not one Python warning per run.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KvmsimWarning)
            r = run(scenario, set={**(base_set or {}), **point}, seed=seed, binary=binary,
                    timeout=timeout, _group=_group)
        row["warnings"] = " | ".join(r.warnings)
        row.update(r.metrics)
    except ScenarioError as e:
        row.update(status="bad input", error=str(e))
    except RunTimeout as e:
        row.update(status="timeout", error=str(e))
    except SimulationCrash as e:
        row.update(status="crash", error=str(e))
    except (KvmsimError, OSError, ValueError) as e:
        row.update(status="error", error=str(e))
    return row


def _progress(total, enabled):
    if enabled is False or (enabled is None and total < 8):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="kvmsim sweep", unit="run", file=sys.stderr)


def sweep(scenario, grid=None, seeds=None, set=None, workers=None, client=None,
          progress=None, timeout=None, binary=None):
    """Runs every grid point for every seed, one child process per run.

    A failing point gets its ``status`` and ``error`` in its row while the others
    finish; Ctrl-C kills the running children.

    Args:
        scenario: path of a scenario file.
        grid: ``{key: [values]}``, every combination is a point (last key varying
            fastest). ``None``: the scenario's ``sweep:`` section (its seeds and set,
            which ``seeds`` and ``set`` given here override).
        seeds: list of seeds (default: ``[1]``).
        set: overrides applied to every point.
        workers: local child processes at once (default: ``os.cpu_count()``).
        client: a ``dask.distributed.Client``: run on its workers instead (they need
            the package and the CLI at the same paths, or ``KVMSIM_BINARY``).
        progress: a tqdm bar on stderr (``None``: when there are 8 runs or more and
            tqdm is installed).
        timeout: seconds per run (its row then says ``"timeout"``).
        binary: the CLI to run (default: :func:`find_binary`).

    Returns:
        pandas.DataFrame: one row per run, in grid order (seeds innermost) whatever
        the completion order. Columns: the grid keys, ``seed``, ``status`` (``"ok"``,
        ``"bad input"``, ``"crash"``, ``"timeout"``, ``"error"``), ``error`` (the
        message), ``warnings`` (the run's warnings, ``" | "``-separated: a setting
        that could not act, a result one artefact dominates), then every metric.

    Raises:
        ScenarioError: the scenario file or ``set`` is bad (checked before any run).
    """
    scenario = os.path.abspath(os.fspath(scenario))
    if grid is None:
        sec = scenario_sweep(scenario) or {"grid": {}, "seeds": None, "set": {}}
        grid = sec["grid"]
        seeds = seeds if seeds is not None else sec["seeds"]
        set = {**sec["set"], **(set or {})}
    seeds = list(seeds) if seeds is not None else [1]
    # The scenario and the common overrides are checked once, in-process: a bad file
    # fails the sweep (ScenarioError); a bad point only fails its row.
    resolve(scenario, set)
    exe = find_binary(binary)
    tasks = [(p, s) for p in grid_points(grid) for s in seeds]
    rows = [None] * len(tasks)
    bar = _progress(len(tasks), progress)
    try:
        if client is not None:
            from distributed import as_completed

            futures = [client.submit(run_point, scenario, p, s, set, exe, timeout, pure=False)
                       for p, s in tasks]
            index = {f.key: i for i, f in enumerate(futures)}
            try:
                for fut in as_completed(futures):
                    rows[index[fut.key]] = fut.result()
                    if bar:
                        bar.update()
            except BaseException:
                client.cancel(futures)
                raise
        else:
            n = max(1, int(workers or os.cpu_count() or 1))
            group = ChildGroup()
            with ThreadPoolExecutor(max_workers=n) as pool:
                futures = {pool.submit(run_point, scenario, p, s, set, exe, timeout, group): i
                           for i, (p, s) in enumerate(tasks)}
                try:
                    for fut in completed(futures):
                        rows[futures[fut]] = fut.result()
                        if bar:
                            bar.update()
                except BaseException:
                    for fut in futures:
                        fut.cancel()
                    group.kill_all()  # running children die now: no wait for them
                    raise
    finally:
        if bar:
            bar.close()
    df = pd.DataFrame(rows)
    df.attrs["scenario"] = scenario
    df.attrs["grid"] = list(grid)
    return df
