"""cyclictest ``-h`` histograms (recorded or simulated) and their comparison (W1, KS)."""
import json
import os

import numpy as np

from . import _kvmsim


class Histogram:
    """A parsed cyclictest ``-h`` file: one column per thread, 1-us buckets.

    Made by :func:`load_histogram`, :func:`read_histogram` or
    :meth:`from_counts`; ``np.asarray(h)`` gives thread 0's counts.

    Attributes:
        buckets: number of buckets (cyclictest ``-h``).
        source: the file it was read from, or ``None``.
    """

    def __init__(self, threads, buckets, source=None):
        self._threads = threads
        self.buckets = int(buckets)
        self.source = source

    @classmethod
    def from_counts(cls, counts, source=None):
        """A one-thread Histogram from an array of counts in 1-us buckets."""
        counts = [int(c) for c in np.asarray(counts).ravel()]
        thread = {"counts": counts, "total": sum(counts), "overflows": 0, "min_us": -1,
                  "avg_us": -1, "max_us": -1, "overflow_cycles": [], "overflow_others": 0}
        return cls([thread], len(counts), source)

    @property
    def threads(self):
        """Number of threads (columns) in the file."""
        return len(self._threads)

    def thread(self, i=0):
        """Counts of thread ``i`` as a uint64 array of length ``buckets``."""
        c = self._threads[i]["counts"]
        out = np.zeros(self.buckets, dtype=np.uint64)
        out[: len(c)] = c
        return out

    @property
    def counts(self):
        """Thread 0's counts as a uint64 array of length ``buckets``."""
        return self.thread(0)

    def __array__(self, dtype=None):
        return self.counts if dtype is None else self.counts.astype(dtype)

    def overflows(self, i=0):
        """Samples of thread ``i`` beyond the last bucket."""
        return int(self._threads[i]["overflows"])

    def printed(self, i=0):
        """The ``# Min/Avg/Max Latencies`` and ``# Total`` lines as printed (-1 when absent)."""
        t = self._threads[i]
        return {k: t[k] for k in ("min_us", "avg_us", "max_us", "total", "overflows")}

    def stats(self, i=0):
        """Thread ``i``'s min, avg and percentiles as ``kvmsim compare`` computes them
        (overflows placed at their lower bound), as a dict."""
        return _kvmsim.thread_stats(self._threads, self.buckets, i)

    def __repr__(self):
        src = f" from {self.source}" if self.source else ""
        return f"<kvmsim.Histogram{src}: {self.threads} thread(s), {self.buckets} buckets>"


def read_histogram(text, source=None):
    """Parses cyclictest ``-h`` text into a :class:`Histogram`.

    Raises:
        ValueError: the text is not a cyclictest histogram (``"SOURCE: LINE N: ..."``).
    """
    try:
        d = _kvmsim.parse_histogram_text(text)
    except ValueError as e:
        raise ValueError(f"{source}: {e}" if source else str(e)) from None
    return Histogram(d["threads"], d["buckets"], source)


def load_histogram(path):
    """Reads any cyclictest ``-h`` file (``histogram.txt`` of a run, or a recorded one)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        return read_histogram(f.read(), path)


def as_histogram(x):
    """A Histogram from a Histogram, a path, a RunResult or an array of counts."""
    if isinstance(x, Histogram):
        return x
    if isinstance(x, (str, os.PathLike)):
        return load_histogram(x)
    h = getattr(x, "histogram_file", None)
    if h is not None:
        return h
    return Histogram.from_counts(x)


def compare(a, b, w1_us=None, ks=None, avg_us=None, p99_us=None, merge=False):
    """``kvmsim compare`` on two histograms.

    Args:
        a, b: paths, :class:`Histogram` objects, :class:`RunResult` objects or count
            arrays.
        w1_us: tolerance on the Wasserstein-1 distance, in us.
        ks: tolerance on the Kolmogorov-Smirnov statistic.
        avg_us: tolerance on the difference of the averages, in us.
        p99_us: tolerance on the difference of the 99th percentiles, in us.
        merge: compare all threads merged instead of thread by thread.

    Without any tolerance, the regression defaults (W1 0.05 us, KS 0.02) are checked.

    Returns:
        dict: the command's JSON document: ``"comparisons"`` (one per thread, with
        ``"w1_us"``, ``"ks"``, both sides' stats and ``"checks"``) and ``"pass"``.
    """
    ha, hb = as_histogram(a), as_histogram(b)
    text = _kvmsim.compare_json(ha._threads, ha.buckets, hb._threads, hb.buckets,
                                w1_us, ks, avg_us, p99_us, merge,
                                ha.source or "A", hb.source or "B")
    return json.loads(text)
