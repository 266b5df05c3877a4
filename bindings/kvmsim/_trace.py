"""Trace files (trace-cmd report, ftrace, perf script text): events and statistics."""
import json
import os

import pandas as pd

from . import _kvmsim

_FRAMING = ["line", "ts", "cpu", "pid", "comm", "event", "flags", "raw_clock", "payload",
            "payload_error"]


def read_trace(path):
    """One row per event line; ``ts`` in ns (or the raw count when ``raw_clock``).

    Columns: the framing (line, ts, cpu, pid, comm, event, flags, payload), then
    the parsed fields of the tracepoints kvmsim knows (vcpu, reason, msr, data,
    hv_timer, delta, ...), NaN where an event has no such field. Lines whose
    framing is not understood are left out; ``df.attrs["malformed"]`` counts
    them and ``df.attrs["malformed_first"]`` lists the first (line, why).
    """
    path = os.fspath(path)
    rows, malformed, first = _kvmsim.trace_events(path)
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=_FRAMING)
    rest = [c for c in df.columns if c not in _FRAMING]
    df = df[_FRAMING + rest]
    df.attrs["source"] = path
    df.attrs["malformed"] = malformed
    df.attrs["malformed_first"] = list(first)
    return df


def trace_stats(path, raw_ticks_per_s=1e9):
    """``kvmsim trace-stats FILE --json`` as a dict.

    Args:
        path: a trace file (``trace-cmd report``, ftrace or ``perf script`` text).
        raw_ticks_per_s: ticks per second of a raw (non-ns) trace clock.

    Returns:
        dict: per-event counts and statistics, e.g. ``["events"]["kvm_exit"]["count"]``.
    """
    return json.loads(_kvmsim.trace_stats_json(os.fspath(path), float(raw_ticks_per_s)))
