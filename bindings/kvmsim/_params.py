"""Parameter declarations and override validation (the CLI's own code and messages)."""
import pandas as pd

from . import _kvmsim


def params():
    """Every declared parameter (what ``kvmsim params`` prints).

    Returns:
        pandas.DataFrame: columns key, type, default (a Python value of the parameter's
        type, see :func:`value`), unit, range, min, max, choices, doc, default_text (the
        default as the CLI prints it), kind ("param", "kernel", "version switch": the
        default follows host.kernel or guest.kernel, "derived": it follows other keys
        such as vm.cpu_model); one row per parameter.
    """
    df = pd.DataFrame(_kvmsim.param_declarations())
    df["default_text"] = df["default"]
    df["default"] = [value(k, t) for k, t in zip(df["key"], df["default_text"])]
    return df[["key", "type", "default", "unit", "range", "min", "max", "choices", "doc",
               "default_text", "kind"]]


def value(key, text):
    """A parameter's canonical text (what ``kvmsim params``, ``resolve(text=True)`` and
    ``summary.json`` give) as a Python value of its declared type: int, float, bool,
    str, a list of int for ``int-list``; a ``dist`` (``"normal(300ns, 20ns)"``) stays
    text. An undeclared key's text is returned unchanged.

    Raises:
        ValueError: the text is not of the declared type.
    """
    d = declarations().get(key)
    kind = d["type"] if d else None
    try:
        if kind == "int":
            return int(text)
        if kind == "double":
            return float(text)
        if kind == "bool":
            if text not in ("true", "false"):
                raise ValueError("not true or false")
            return text == "true"
        if kind == "int-list":
            inner = text.strip()
            if not (inner.startswith("[") and inner.endswith("]")):
                raise ValueError("not a [..] list")
            inner = inner[1:-1].strip()
            return [int(x) for x in inner.split(",")] if inner else []
    except ValueError as e:
        raise ValueError(f"key '{key}': {text!r} is not a {kind}: {e}") from None
    return text


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
    if hasattr(value, "tolist") and not isinstance(value, str):  # numpy scalars and arrays
        return value_text(value.tolist())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


_DECLS = None


def declarations():
    """{key: declaration dict} of every parameter (type, min, max, ...), from the
    model's own table (cached)."""
    global _DECLS
    if _DECLS is None:
        _DECLS = {d["key"]: d for d in _kvmsim.param_declarations()}
    return _DECLS


def is_group(key):
    """True if ``key`` names a group of parameters (``kvm`` for ``kvm.*``), not a key."""
    prefix = key + "."
    return key not in declarations() and any(k.startswith(prefix) for k in declarations())


def _plain(value):
    """numpy scalars and arrays as Python values; tuples as lists."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    return value


def _integer(key, value, where):
    value = _plain(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise _kvmsim.ScenarioError(
                f"{where}: key '{key}': {value!r} is not an integer (the parameter is an "
                f"integer; integral floats such as 4.0 are accepted)")
        return int(value)
    return value


def normalize(key, value, where="--set"):
    """``value`` for ``key`` as a run is given it: numpy values as Python ones, and for
    integer parameters (and the elements of integer lists) an integral float such as
    ``numpy.float64(4.0)`` as the int 4. A group key (``kvm``) takes a mapping of its
    parameters, each normalized.

    Raises:
        ScenarioError: a non-integral float for an integer parameter.
    """
    value = _plain(value)
    if isinstance(value, dict) and is_group(key):
        return {k: normalize(f"{key}.{k}", v, where) for k, v in value.items()}
    d = declarations().get(key)
    if d is None:
        return value
    if d["type"] == "int":
        return _integer(key, value, where)
    if d["type"] == "int-list" and isinstance(value, list):
        return [_integer(key, v, where) for v in value]
    return value


def flatten(set):
    """{key: value} with group keys' mappings (``{"kvm": {"enable_hv_timer": True}}``)
    spread into dotted keys (``{"kvm.enable_hv_timer": True}``)."""
    out = {}
    for k, v in (set or {}).items():
        if isinstance(v, dict) and is_group(k):
            out.update(flatten({f"{k}.{sub}": x for sub, x in v.items()}))
        else:
            out[k] = v
    return out


def overrides(set=None):
    """{key: value} -> ["key=value", ...] in the dict's order (a group key's mapping,
    ``{"kvm": {"enable_hv_timer": True}}``, as one override per parameter)."""
    return [f"{k}={value_text(v)}" for k, v in flatten(set).items()]


def resolve(scenario=None, set=None, origins=False, text=False):
    """The parameters a run would use, without running it.

    Args:
        scenario: path of a scenario file (``None``: the defaults).
        set: ``{key: value}`` overrides applied on top.
        origins: also say where each value came from.
        text: the values as canonical text (as ``kvmsim params`` and ``--set`` write
            them) instead of Python values.

    Returns:
        ``{key: value}``, each value of its parameter's type (see :func:`value`);
        with ``origins=True`` a DataFrame with columns key, value, text, origin
        (``"default"``, ``"file.yaml:12"``, ``"--set"``, ...).

    Raises:
        ScenarioError: bad scenario file or override, with the CLI's message.
    """
    rows = _kvmsim.resolve(str(scenario) if scenario else "", overrides(set))
    if origins:
        return pd.DataFrame([(k, value(k, v), v, o) for k, v, o in rows],
                            columns=["key", "value", "text", "origin"])
    return {k: (v if text else value(k, v)) for k, v, _ in rows}


def validate(set=None, scenario=None):
    """Checks overrides (and the scenario file) without running.

    Args:
        set: ``{key: value}`` overrides.
        scenario: path of a scenario file (``None``: the defaults).

    Raises:
        ScenarioError: bad input, with the CLI's ``FILE:LINE:COL: key '...'`` message.
    """
    resolve(scenario, set)
