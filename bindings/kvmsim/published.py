"""The published figures kvmsim compares itself against (docs/validation.md).

They come from validation/targets.yaml as built into the package (the copy
``kvmsim validate`` checks); each function takes ``path=`` to read another
copy of that file instead.

    targets()        one row per published figure, with its target's source
    sources()        one row per target: title, scenario, source fields
    t1_histogram()   T1's published cyclictest histogram
    T2_AVG_CYCLES, T3_CYCLES, T4_RECORDS_PER_S   the figures of T2-T4 as dicts
"""
import functools

import pandas as pd
import yaml

from . import _kvmsim

_SOURCE_FIELDS = ("reference", "author", "date", "host", "kernel", "guest", "notes")


@functools.lru_cache(maxsize=None)
def _load(path):
    text = _kvmsim.targets_yaml() if path is None else open(path, encoding="utf-8").read()
    return yaml.safe_load(text)


def data(path=None):
    """The targets file as parsed YAML: {"targets": [{"id", "title", "source", "figures", ...}]}."""
    return _load(path)


def _target(tid, path=None):
    for t in _load(path)["targets"]:
        if t["id"] == tid:
            return t
    raise KeyError(f"no published target {tid!r}")


def _value(figure):
    if "range" in figure:
        lo, hi = figure["range"]
        return (lo + hi) / 2.0
    return float(figure["value"]) if "value" in figure else float("nan")


def targets(path=None):
    """Every published figure, one row each.

    Columns: target, figure, setting, metric, unit, value (NaN where validate derives it;
    a range's middle), range, derived, tolerance, quick_tolerance, calibration, gated,
    figure_source, note, title, scenario and the target's source fields (reference, author,
    date, host, kernel, guest, notes).
    """
    rows = []
    for t in _load(path)["targets"]:
        src = t.get("source", {})
        for f in t["figures"]:
            rows.append({
                "target": t["id"], "figure": f["id"], "setting": f["setting"],
                "metric": f["metric"], "unit": f["unit"], "value": _value(f),
                "range": tuple(f["range"]) if "range" in f else None,
                "derived": f.get("derived"), "tolerance": f["tolerance"],
                "quick_tolerance": f.get("quick_tolerance"),
                "calibration": bool(f.get("calibration", False)),
                "gated": bool(t.get("gated", True)), "figure_source": f.get("source"),
                "note": f.get("note"),
                "title": t["title"], "scenario": t["scenario"],
                **{k: (None if src.get(k) is None else str(src.get(k))) for k in _SOURCE_FIELDS},
            })
    return pd.DataFrame(rows)


def sources(path=None):
    """One row per target: target, title, scenario, gated and its source fields."""
    return pd.DataFrame([
        {"target": t["id"], "title": t["title"], "scenario": t["scenario"],
         "gated": bool(t.get("gated", True)),
         **{k: (None if t["source"].get(k) is None else str(t["source"].get(k)))
            for k in _SOURCE_FIELDS}}
        for t in _load(path)["targets"]])


def t1_histogram(path=None):
    """T1's published cyclictest histogram (Xeon E5-2699 v3, 600000 loops).

    DataFrame: bucket_us, hv_on, hv_off; bucket 13 holds the "> 12 us" samples.
    """
    h = _target("T1", path)["histogram"]
    last = h["bucket_us"][-1]
    df = pd.DataFrame({"bucket_us": list(h["bucket_us"]) + [last + 1]})
    for series, counts in h["counts"].items():
        df[series] = list(counts) + [h["above"][series]]
    return df


def _figures(tid, path=None):
    return {f["id"]: _value(f) for f in _target(tid, path)["figures"]}


_T2 = _figures("T2")
_T3 = _figures("T3")
_T4 = _figures("T4")

# T2: kvm-unit-tests tscdeadline_latency average, guest TSC cycles (Haswell desktop).
T2_AVG_CYCLES = {False: _T2["no_advance"], True: _T2["advance"]}  # key: kvm.hv_timer_advance

# T3: vmexit.flat cycles per iteration (Skylake-SP), key: kvm.exit_fastpath.
T3_CYCLES = {
    "vmexit.tscdeadline_immed.cycles": {False: _T3["immed.no_fastpath"],
                                        True: _T3["immed.fastpath"]},
    "vmexit.tscdeadline.cycles": {False: _T3["deadline.no_fastpath"],
                                  True: _T3["deadline.fastpath"]},
}

# T4: ebizzy -M records/s in one guest on a Haswell i7 desktop (8 pCPUs);
# key: (vm.vcpus, guest.pv_tlb_flush).
T4_RECORDS_PER_S = {
    (v, pv): _T4[f"vcpus{v}.{'pv' if pv else 'native'}"]
    for v in (8, 16, 24, 32) for pv in (False, True)
}
