"""python3 -m kvmsim sweep|plot ... (the CLI's `kvmsim sweep` and `kvmsim plot` run this).

  kvmsim sweep SCENARIO [-j N] [--out results.csv] [--grid key=v1,v2]... [--seeds 1,2,3]
               [--set key=value]... [--timeout S]
      runs the scenario's `sweep:` section (or --grid), one child run per point;
      a progress line on stderr, one CSV row per run. Exit 1 if any point failed.
  kvmsim plot DIR [--png FILE] [--published t1]
      histogram.txt of a run's --out folder (log counts) and its latency breakdown
      (per-stage cycles for vmexit tests).
  kvmsim plot results.csv --x KEY --y METRIC [--hue KEY] [--png FILE]
"""
import argparse
import json
import os
import sys


def _value(text):
    import yaml

    return yaml.safe_load(text)


def _key_values(items, what):
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"kvmsim: error: {what} {item}: expected key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out


def cmd_sweep(a):
    import kvmsim

    grid = None
    if a.grid:
        grid = {k: [_value(x) for x in v.split(",")]
                for k, v in _key_values(a.grid, "--grid").items()}
    elif kvmsim.scenario_sweep(a.scenario) is None:
        raise kvmsim.ScenarioError(f"{a.scenario}: no 'sweep:' section (and no --grid given)")
    seeds = [int(s) for s in a.seeds.split(",")] if a.seeds else None
    df = kvmsim.sweep(a.scenario, grid=grid, seeds=seeds, set=_key_values(a.set, "--set"),
                      workers=a.jobs, progress=not a.quiet, timeout=a.timeout)
    if a.out:
        if os.path.dirname(a.out):
            os.makedirs(os.path.dirname(a.out), exist_ok=True)
        df.to_csv(a.out, index=False)
    failed = df[df["status"] != "ok"]
    print(f"kvmsim sweep: {len(df)} runs, {len(df) - len(failed)} ok, {len(failed)} failed"
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
    s = sub.add_parser("sweep", help="run a scenario's sweep: section, one child run per point")
    s.add_argument("scenario")
    s.add_argument("-j", "--jobs", type=int, default=None, help="runs at once (default: cores)")
    s.add_argument("--out", help="CSV file, one row per run (default: stdout)")
    s.add_argument("--grid", action="append", help="key=v1,v2,... (instead of sweep.grid)")
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
    import kvmsim

    try:
        return cmd_sweep(a) if a.cmd == "sweep" else cmd_plot(a)
    except kvmsim.ScenarioError as e:
        print(f"kvmsim: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as e:
        print(f"kvmsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
