"""Parameter declarations and override validation (the CLI's own code and messages)."""
import pandas as pd

from . import _kvmsim


def params():
    """Every declared parameter as a DataFrame: key, type, default, unit, range, min, max, choices, doc."""
    df = pd.DataFrame(_kvmsim.param_declarations())
    return df[["key", "type", "default", "unit", "range", "min", "max", "choices", "doc"]]


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
    """Resolved parameters of ``scenario`` (defaults when None) with ``set`` applied.

    Returns {key: canonical text}; with ``origins=True`` a DataFrame with the
    value and where it came from ("default", "file.yaml:12", "--set").
    Raises ScenarioError with the CLI's message on bad input.
    """
    rows = _kvmsim.resolve(str(scenario) if scenario else "", overrides(set))
    if origins:
        return pd.DataFrame(rows, columns=["key", "value", "origin"])
    return {k: v for k, v, _ in rows}


def validate(set=None, scenario=None):
    """Checks overrides (and the scenario file) without running; raises ScenarioError."""
    resolve(scenario, set)
