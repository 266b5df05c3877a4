"""pytest set-up: import kvmsim from the build (build/python, or $KVMSIM_BUILD_DIR/python)."""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KVMSIM_BUILD_DIR", os.path.join(REPO, "build"))
PKG = os.path.join(BUILD, "python")
if os.path.isdir(PKG) and PKG not in sys.path:
    sys.path.insert(0, PKG)
    # Child interpreters (Dask workers, nbclient kernels, `kvmsim sweep`) see it too.
    os.environ["PYTHONPATH"] = PKG + os.pathsep + os.environ.get("PYTHONPATH", "")

T1 = os.path.join(REPO, "scenarios", "cyclictest_pinned.yaml")
T2 = os.path.join(REPO, "scenarios", "tscdeadline_latency.yaml")
T3 = os.path.join(REPO, "scenarios", "vmexit_tscdeadline.yaml")
SWEEP_T1 = os.path.join(REPO, "tests", "python", "data", "t1_sweep.yaml")
CYCLICTEST_DATA = os.path.join(REPO, "tests", "data", "cyclictest")
TRACE_DATA = os.path.join(REPO, "tests", "data", "traces")
SHORT = {"cyclictest.loops": 2000}


def same_metrics(a, b):
    """Metrics equal except wall-clock time (the one non-deterministic output)."""
    strip = lambda m: {k: v for k, v in m.items() if k != "sim.wall_s"}  # noqa: E731
    return strip(a) == strip(b)


@pytest.fixture(scope="session")
def kvmsim_binary():
    import kvmsim

    return kvmsim.find_binary()
