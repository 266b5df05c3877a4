"""kvmsim from Python: runs, sweeps (local cores or Dask), histograms, traces, plots.

Every run happens in a child process (SystemC elaborates once per process): the
package runs the ``kvmsim`` CLI and reads back its ``summary.json`` and
``histogram.txt``. What needs no elaboration (parameter declarations and
validation, cyclictest histograms and their comparison, trace parsing and
statistics) is the same C++ code as the CLI's, bound in-process (``_kvmsim``).

    >>> import kvmsim
    >>> r = kvmsim.run("scenarios/cyclictest_pinned.yaml",
    ...                set={"cyclictest.loops": 2000}, seed=1)
    >>> r.metrics["cyclictest.avg_us"], r.histogram[:10]
    >>> df = kvmsim.sweep("scenarios/cyclictest_pinned.yaml",
    ...                   grid={"kvm.enable_hv_timer": [True, False]}, seeds=[1, 2])
"""
__version__ = "0.1"  # the CMake project version

from ._errors import KvmsimError, RunTimeout, ScenarioError, SimulationCrash, SimulationError
from ._params import metrics, params, resolve, validate, value
from ._histogram import Histogram, compare, load_histogram, read_histogram
from ._trace import read_trace, trace_stats
from ._run import KvmsimWarning, RunResult, find_binary, run
from ._sweep import scenario_sweep, sweep
from . import published


def scenario(name):
    """Path of a scenario file of the source tree this package was built from
    (``kvmsim.scenario("cyclictest_pinned.yaml")``)."""
    import os
    from . import _kvmsim

    return os.path.join(_kvmsim.SOURCE_DIR, "scenarios", name)

__all__ = [
    "KvmsimError", "RunTimeout", "ScenarioError", "SimulationCrash", "SimulationError",
    "metrics", "params", "resolve", "validate", "value",
    "Histogram", "compare", "load_histogram", "read_histogram",
    "read_trace", "trace_stats",
    "KvmsimWarning", "RunResult", "find_binary", "run",
    "scenario_sweep", "sweep", "published", "scenario",
]


def __getattr__(name):  # kvmsim.plot imports matplotlib only when used
    if name == "plot":
        import importlib
        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'kvmsim' has no attribute {name!r}")
