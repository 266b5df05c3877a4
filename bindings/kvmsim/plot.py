"""Plots (matplotlib): histograms on log-scale counts, latency breakdowns, sweeps."""
import numpy as np
import pandas as pd

from ._histogram import as_histogram


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(7, 4))[1]


def _labelled(results, default="simulated"):
    if isinstance(results, dict):
        return list(results.items())
    if isinstance(results, (list, tuple)):
        return [(f"run {i}", r) for i, r in enumerate(results)]
    return [(default, results)]


def histogram(results, published=None, ax=None, xmax=None, normalize=False):
    """Latency histograms, counts on a log scale (as RT people read them).

    Args:
        results: a RunResult, Histogram, path or count array, a list of them, or
            ``{label: one of these}``.
        published: the same kinds, a DataFrame with a ``bucket_us`` column and one
            column per series (e.g. ``kvmsim.published.t1_histogram()``), or the name of
            a published histogram as ``kvmsim plot --published`` takes it (``"t1"``);
            drawn dashed, the i-th published series in the colour of the i-th result.
        ax: matplotlib axes to draw on (default: a new figure).
        xmax: last bucket shown, in us.
        normalize: plot fractions of samples instead of counts (runs of different
            lengths).

    Returns:
        The matplotlib axes.
    """
    if isinstance(published, str):
        if published != "t1":
            raise ValueError(f"published={published!r}: the published histograms are 't1' "
                             "(or give a DataFrame, a Histogram or counts)")
        from . import published as _published

        published = _published.t1_histogram()
    ax = _axes(ax)
    top = 0
    series = [(label, as_histogram(r).counts.astype(float), "-") for label, r in
              _labelled(results)]
    if isinstance(published, pd.DataFrame):
        b = published["bucket_us"].to_numpy()
        for col in published.columns:
            if col == "bucket_us":
                continue
            counts = np.zeros(int(b.max()) + 1)
            counts[b] = published[col].to_numpy()
            series.append((f"published {col}", counts, "--"))
    elif published is not None:
        series += [(f"published {label}", as_histogram(r).counts.astype(float), "--")
                   for label, r in _labelled(published, "published")]
    n_sim = len(_labelled(results))
    for i, (label, counts, style) in enumerate(series):
        color = f"C{i if i < n_sim else i - n_sim}"  # i-th published series: i-th result's colour
        y = counts / counts.sum() if normalize and counts.sum() else counts
        x = np.arange(len(y))
        nz = np.nonzero(y)[0]
        top = max(top, nz.max() + 1 if len(nz) else 0)
        ax.step(x, np.where(y > 0, y, np.nan), where="mid", linestyle=style, label=label,
                color=color)
    ax.set_yscale("log")
    ax.set_xlim(0, xmax if xmax is not None else max(top + 1, 5))
    ax.set_xlabel("latency (us, 1-us buckets)")
    ax.set_ylabel("fraction of samples" if normalize else "samples")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return ax


def breakdown(results, ax=None):
    """Where the latency went: one stacked bar per run, one segment per stage.

    Latency workloads (cyclictest, tscdeadline_latency): mean ns per wake-up from the
    timer deadline (``result.breakdown``). vmexit tests: one bar per test, host cycles
    per iteration (``result.stage_cycles``).

    Args:
        results: a RunResult, a list of them, or ``{label: RunResult}``.
        ax: matplotlib axes to draw on (default: a new figure).

    Returns:
        The matplotlib axes.
    """
    import matplotlib

    ax = _axes(ax)
    bars, units = [], set()
    for label, r in _labelled(results, "run"):
        if not r.breakdown.empty:
            bars.append((label, r.breakdown.set_index("stage")["avg_ns"]))
            units.add("mean time per wake-up (ns), from the timer deadline")
        for test, g in r.stage_cycles.groupby("test", sort=False):
            bars.append((f"{label}: {test}", g.set_index("stage")["cycles"]))
            units.add("host cycles per iteration")
    stages = []
    for _, s in bars:
        stages += [k for k in s.index if k not in stages]
    colors = matplotlib.colormaps["tab20"].colors
    left = np.zeros(len(bars))
    y = np.arange(len(bars))
    for i, stage in enumerate(stages):
        w = np.array([s.get(stage, 0.0) for _, s in bars])
        ax.barh(y, w, left=left, label=stage, color=colors[i % len(colors)])
        left += w
    ax.set_yticks(y, [label for label, _ in bars])
    ax.set_xlabel(" / ".join(sorted(units)))
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5))
    return ax


def sweep(df, x, y, hue=None, ax=None):
    """``y`` against ``x`` over a sweep DataFrame.

    One line per ``hue`` value; the mean over seeds with min-max error bars when
    there are several.

    Args:
        df: a DataFrame from :func:`kvmsim.sweep`.
        x: the column on the x axis (a grid key).
        y: the metric on the y axis.
        hue: a column, or a list of columns (one line per combination).
        ax: matplotlib axes to draw on (default: a new figure).

    Returns:
        The matplotlib axes.
    """
    ax = _axes(ax)
    ok = df[df["status"] == "ok"] if "status" in df else df
    hues = [] if hue is None else ([hue] if isinstance(hue, str) else list(hue))
    groups = [(None, ok)] if not hues else list(ok.groupby(hues if len(hues) > 1 else hues[0],
                                                           sort=True))
    for key, g in groups:
        agg = g.groupby(x, sort=True)[y].agg(["mean", "min", "max"])
        err = np.vstack([agg["mean"] - agg["min"], agg["max"] - agg["mean"]])
        xs = agg.index.to_numpy()
        if xs.dtype == bool:
            xs = xs.astype(str)
        keys = key if isinstance(key, tuple) else (key,)
        label = None if not hues else ", ".join(f"{h}={k}" for h, k in zip(hues, keys))
        ax.errorbar(xs, agg["mean"], yerr=err, marker="o", capsize=3, label=label)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(True, alpha=0.3)
    if hues:
        ax.legend(fontsize="small")
    return ax
