"""Parameter declarations and override validation (the CLI's own code and messages)."""
import pandas as pd

from . import _kvmsim


def params():
    """Every declared parameter (what ``kvmsim params`` prints).

    Returns:
        pandas.DataFrame: columns key, type, default, unit, range, min, max, choices,
        doc; one row per parameter.
    """
    df = pd.DataFrame(_kvmsim.param_declarations())
    return df[["key", "type", "default", "unit", "range", "min", "max", "choices", "doc"]]


def metrics(prefix=""):
    """What each key of a run's metrics means (what ``kvmsim metrics`` prints).

    Args:
        prefix: only the declarations whose pattern starts with it, or the one a
            full key is an instance of (``"halt_poll."``, ``"vcpu.3.steal_s"``).

    Returns:
        pandas.DataFrame: columns key (the pattern, e.g. ``vcpu.<n>.steal_s``),
        unit, emitter, doc; one row per declaration, sorted by key.
    """
    return pd.DataFrame(_kvmsim.metric_declarations(prefix),
                        columns=["key", "unit", "emitter", "doc"])


def value_text(value):
    """A Python value as ``--set`` text: True -> "true", [2, 3] -> "[2, 3]"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return value_text(value.item())
    return str(value)


def overrides(set=None):
    """{key: value} -> ["key=value", ...] in the dict's order."""
    return [f"{k}={value_text(v)}" for k, v in (set or {}).items()]


def resolve(scenario=None, set=None, origins=False):
    """The parameters a run would use, without running it.

    Args:
        scenario: path of a scenario file (``None``: the defaults).
        set: ``{key: value}`` overrides applied on top.
        origins: also say where each value came from.

    Returns:
        ``{key: canonical text}``; with ``origins=True`` a DataFrame with columns key,
        value, origin (``"default"``, ``"file.yaml:12"``, ``"--set"``, ...).

    Raises:
        ScenarioError: bad scenario file or override, with the CLI's message.
    """
    rows = _kvmsim.resolve(str(scenario) if scenario else "", overrides(set))
    if origins:
        return pd.DataFrame(rows, columns=["key", "value", "origin"])
    return {k: v for k, v, _ in rows}


def validate(set=None, scenario=None):
    """Checks overrides (and the scenario file) without running.

    Args:
        set: ``{key: value}`` overrides.
        scenario: path of a scenario file (``None``: the defaults).

    Raises:
        ScenarioError: bad input, with the CLI's ``FILE:LINE:COL: key '...'`` message.
    """
    resolve(scenario, set)
