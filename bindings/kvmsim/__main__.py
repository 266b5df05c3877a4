"""python3 -m kvmsim sweep|plot ... (the CLI's `kvmsim sweep` and `kvmsim plot` run this).

  kvmsim sweep SCENARIO [-j N | --scheduler tcp://HOST:PORT] [--out results.csv [--resume]]
               [--grid key=v1,v2]... [--seeds 1,2,3] [--set key=value]... [--timeout S]
      runs the scenario's `sweep:` section (or --grid), one child run per point,
      locally (-j) or on the workers of a Dask scheduler (--scheduler);
      a progress line on stderr, one CSV row per run (--out: appended as each run
      finishes; --resume skips the points the file has with status ok). Exit 1 if
      any point failed, 2 on bad input or an unreachable --scheduler (before any run),
      128+N on signal N (SIGINT, SIGTERM, SIGHUP: the running children are killed,
      temporary files removed).
  kvmsim plot DIR [--png FILE] [--published t1]
      histogram.txt of a run's --out folder (log counts) and its latency breakdown
      (per-stage cycles for vmexit tests).
  kvmsim plot results.csv --x KEY --y METRIC [--hue KEY] [--png FILE]
"""
import argparse
import json
import os
import signal
import sys


def _stop(signum, frame):
    """SIGINT, SIGTERM, SIGHUP during a sweep: only records the signal (see
    _sweep.request_stop); the sweep's loop kills the children, removes its temporary
    folders and raises _sweep.Stopped where it holds no lock."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # one stop is enough
        signal.signal(s, signal.SIG_IGN)
    sys.modules["kvmsim._sweep"].request_stop(signum)  # imported before the handler is set


def _split_values(text):
    """``--grid`` values: split at the commas outside brackets, braces, parentheses and
    quotes (``[2,3],[2,2]`` is two lists, ``normal(300ns, 20ns)`` one value)."""
    parts, cur, depth, quote = [], [], 0, None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced '{ch}'")
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if quote or depth:
        raise ValueError("unclosed " + (f"quote {quote}" if quote else "bracket"))
    parts.append("".join(cur))
    return parts


def _value(text):
    """One value as a scenario file takes it (a YAML flow value)."""
    import yaml

    if not text.strip():
        raise ValueError("empty value")
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError("not a YAML value: " + " ".join(str(e).split())) from None
    if v is None:
        raise ValueError(f"empty value '{text.strip()}'")
    return v


def _grid(items, scenario, base_set):
    """{key: [values]} from --grid key=v1,v2 items, every key and value checked against
    its declaration (with the scenario and --set) before any run."""
    import kvmsim
    from kvmsim._sweep import check_grid

    grid = {}
    for k, text in _key_values(items, "--grid").items():
        try:
            grid[k] = [_value(x) for x in _split_values(text)]
        except ValueError as e:
            raise kvmsim.ScenarioError(f"--grid {k}={text}: {e}") from None
        grid.update(check_grid({k: grid[k]}, where=f"--grid {k}={text}"))
        for v in grid[k]:
            try:
                kvmsim.resolve(scenario, {**base_set, k: v})
            except kvmsim.ScenarioError as e:
                msg = "; ".join(str(e).splitlines())  # one line
                if msg.startswith("--set ") and ": " in msg:
                    msg = msg.split(": ", 1)[1]
                raise kvmsim.ScenarioError(f"--grid {k}={text}: {msg}") from None
    return grid


def _key_values(items, what):
    from kvmsim import ScenarioError

    out = {}
    for item in items or []:
        if "=" not in item:
            raise ScenarioError(f"{what} {item}: expected key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out


class SchedulerError(Exception):
    """--scheduler: no Dask scheduler answers at that address (exit 2, before any run)."""


def _connect(address, timeout):
    """A dask.distributed Client of the scheduler at ``address``, or SchedulerError within
    about ``timeout`` seconds."""
    try:
        from distributed import Client
    except ImportError:
        raise SchedulerError("--scheduler needs dask.distributed on this machine (Debian: "
                             "apt-get install python3-distributed)") from None
    try:
        client = Client(address, timeout=timeout)
    except Exception as e:  # noqa: BLE001  (OSError on a time-out, ValueError on a bad address)
        msg = " ".join(str(e).split()) or type(e).__name__
        raise SchedulerError(f"--scheduler {address}: no Dask scheduler answered within "
                             f"{timeout:g} s ({msg})") from None
    n = len(client.scheduler_info().get("workers", {}))
    print(f"kvmsim sweep: Dask scheduler {address}, {n} worker{'s' * (n != 1)}"
          + ("" if n else " yet (the runs wait for dask-worker)"), file=sys.stderr)
    return client


def cmd_sweep(a):
    import kvmsim

    if a.resume and not a.out:
        raise kvmsim.ScenarioError("--resume needs --out FILE.csv (the interrupted sweep's)")
    if a.scheduler is not None and a.jobs is not None:
        raise kvmsim.ScenarioError("-j and --scheduler: -j sets local runs at once; on a "
                                   "Dask cluster each worker's --nthreads does")
    base_set = _key_values(a.set, "--set")
    kvmsim.resolve(a.scenario, base_set)  # a bad file or --set first, as itself
    grid = None
    if a.grid:
        grid = _grid(a.grid, a.scenario, base_set)
    elif kvmsim.scenario_sweep(a.scenario) is None:
        raise kvmsim.ScenarioError(f"{a.scenario}: no 'sweep:' section (and no --grid given)")
    try:
        seeds = [int(s) for s in a.seeds.split(",")] if a.seeds else None
    except ValueError:
        raise kvmsim.ScenarioError(f"--seeds {a.seeds}: expected integers, comma-separated")
    if a.scheduler is None:
        df = kvmsim.sweep(a.scenario, grid=grid, seeds=seeds, set=base_set, workers=a.jobs,
                          progress=not a.quiet, timeout=a.timeout, out=a.out, resume=a.resume)
    else:
        with _connect(a.scheduler, a.connect_timeout) as client:
            df = kvmsim.sweep(a.scenario, grid=grid, seeds=seeds, set=base_set, client=client,
                              progress=not a.quiet, timeout=a.timeout, out=a.out,
                              resume=a.resume)
    failed = df[df["status"] != "ok"]
    rerun = int((df["attempts"] > 1).sum()) if "attempts" in df.columns else 0
    print(f"kvmsim sweep: {len(df)} runs, {len(df) - len(failed)} ok, {len(failed)} failed"
          + (f", {rerun} run again after a lost Dask worker (column attempts)" if rerun else "")
          + (f" -> {a.out}" if a.out else ""), file=sys.stderr)
    for _, row in failed.iterrows():
        print(f"  seed {row['seed']}: {row['status']}: {row['error']}", file=sys.stderr)
    if not a.out:
        df.to_csv(sys.stdout, index=False)
    return 1 if len(failed) else 0


def cmd_plot(a):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import kvmsim

    src = a.source
    if os.path.isdir(src):
        hist = os.path.join(src, "histogram.txt")
        summ = os.path.join(src, "summary.json")
        if not os.path.exists(summ):
            raise kvmsim.ScenarioError(f"{src}: no summary.json (not a `kvmsim run --out` folder)")
        with open(summ, encoding="utf-8") as f:
            summary = json.load(f)
        result = kvmsim.RunResult(summary.get("scenario"), {}, None, summary,
                                  kvmsim.load_histogram(hist) if os.path.exists(hist) else None)
        has_stages = not (result.breakdown.empty and result.stage_cycles.empty)
        panels = (result.histogram is not None) + has_stages
        if not panels:
            raise kvmsim.ScenarioError(f"{src}: nothing to plot (no histogram, no breakdown)")
        fig, axes = plt.subplots(panels, 1, figsize=(8, 4 * panels), squeeze=False)
        i = 0
        if result.histogram is not None:
            published = kvmsim.published.t1_histogram() if a.published == "t1" else None
            kvmsim.plot.histogram({"simulated": result}, published=published, ax=axes[i][0],
                                  normalize=published is not None)
            axes[i][0].set_title(os.path.basename(str(summary.get("scenario", src))))
            i += 1
        if has_stages:
            kvmsim.plot.breakdown({"run": result}, ax=axes[i][0])
        png = a.png or os.path.join(src, "plot.png")
    else:
        import pandas as pd

        if not (a.x and a.y):
            raise kvmsim.ScenarioError(f"{src}: a sweep CSV needs --x KEY and --y METRIC")
        df = pd.read_csv(src)
        hue = a.hue.split(",") if a.hue else None
        for col in [a.x, a.y] + (hue or []):
            if col not in df.columns:
                raise kvmsim.ScenarioError(f"{src}: no column '{col}'")
        fig, ax = plt.subplots(figsize=(7, 4))
        kvmsim.plot.sweep(df, a.x, a.y, hue=hue if hue and len(hue) > 1 else a.hue, ax=ax)
        if a.title:
            ax.set_title(a.title)
        png = a.png or os.path.splitext(src)[0] + ".png"
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"kvmsim plot: wrote {png}", file=sys.stderr)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="kvmsim", description="kvmsim sweeps and plots")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="run a scenario's sweep: section, one child run per point",
                       epilog="Exit code: 0 every row ok, 1 a row failed, 2 bad input (an "
                       "unknown key or a bad --grid value: one line on stderr, before any "
                       "run) or no scheduler at --scheduler, 128+N on signal N (SIGINT, "
                       "SIGTERM, SIGHUP: the running children are killed, temporary files "
                       "removed; --resume continues). With --scheduler each worker needs "
                       "the kvmsim package and CLI (found as KVMSIM_BINARY, the build of "
                       "its package, or PATH), not the scenario files: each task carries "
                       "them; a run whose worker is lost runs again (column attempts).")
    s.add_argument("scenario")
    s.add_argument("-j", "--jobs", type=int, default=None,
                   help="local runs at once (default: cores; not with --scheduler)")
    s.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on the workers of the Dask scheduler at ADDRESS "
                   "(tcp://HOST:8786) instead of local child processes")
    s.add_argument("--connect-timeout", type=float, default=20.0, metavar="S",
                   help="with --scheduler: seconds to wait for it to answer (default: 20)")
    s.add_argument("--out", help="CSV file, one row per run, appended as each run finishes "
                   "and rewritten in grid order at the end (default: stdout)")
    s.add_argument("--resume", action="store_true",
                   help="with --out: skip the points (grid values + seed) the file already "
                   "has with status ok (after an interruption)")
    s.add_argument("--grid", action="append",
                   help="key=v1,v2,... (instead of sweep.grid); values as in a scenario "
                   "file (YAML flow), commas inside [], {}, () do not split: "
                   "vm.pinning=[2,3],[2,2]")
    s.add_argument("--seeds", help="comma-separated seeds (instead of sweep.seeds)")
    s.add_argument("--set", action="append", help="key=value applied to every point")
    s.add_argument("--timeout", type=float, default=None, help="seconds per run")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    q = sub.add_parser("plot", help="PNG from a run's --out folder or a sweep CSV")
    q.add_argument("source", help="a `kvmsim run --out` folder or a `kvmsim sweep` CSV")
    q.add_argument("--png", help="output file (default: DIR/plot.png or results.png)")
    q.add_argument("--published", choices=["t1"], help="overlay a published histogram")
    q.add_argument("--x")
    q.add_argument("--y")
    q.add_argument("--hue", help="column(s), comma-separated: one line per value / combination")
    q.add_argument("--title")
    a = p.parse_args(argv)
    if a.cmd == "sweep":  # SIGINT, SIGTERM, SIGHUP: kill the children, clean up, exit
        import kvmsim._sweep  # noqa: F401  (the handler must not import)

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup, `cmd &`: stay ignored
                signal.signal(sig, _stop)
    import kvmsim

    try:
        return cmd_sweep(a) if a.cmd == "sweep" else cmd_plot(a)
    except (kvmsim.ScenarioError, FileNotFoundError, ValueError, SchedulerError) as e:
        for line in str(e).splitlines() or [""]:  # as the C++ CLI: one prefix per line
            print(f"kvmsim: error: {line}", file=sys.stderr)
        return 2
    except kvmsim.KvmsimError as e:  # a Dask worker without the package
        print(f"kvmsim: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # writing --out: a full disk, a read-only folder
        print(f"kvmsim: error: {e}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, kvmsim._sweep.Stopped) as e:
        signum = e.signum if isinstance(e, kvmsim._sweep.Stopped) else signal.SIGINT
        try:
            print(f"kvmsim {a.cmd}: stopped by {signal.Signals(signum).name}"
                  + (f"; the finished rows are in {a.out} (--resume continues)"
                     if a.cmd == "sweep" and a.out else ""), file=sys.stderr)
        except (OSError, ValueError):
            pass
        return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
