"""Published measurements of the validation targets (docs/validation-targets.md).

The numbers are the ones ``kvmsim validate`` checks (tools/kvmsim/validation_targets.cpp).
"""
import os

import pandas as pd

from . import _kvmsim


def t1_histogram(path=None):
    """T1's published cyclictest histogram (Xeon E5-2699 v3, 600000 loops).

    DataFrame: bucket_us, hv_on, hv_off; bucket 13 holds the "> 12 us" samples.
    """
    path = path or os.path.join(_kvmsim.SOURCE_DIR, "tests", "data", "t1_published.csv")
    return pd.read_csv(path, comment="#")


# T2: kvm-unit-tests tscdeadline_latency average, guest TSC cycles (Haswell desktop).
T2_AVG_CYCLES = {False: 4450.0, True: 1660.0}  # key: kvm.hv_timer_advance

# T3: vmexit.flat cycles per iteration (Skylake-SP), key: kvm.exit_fastpath.
T3_CYCLES = {
    "vmexit.tscdeadline_immed.cycles": {False: 3028.5, True: 2494.75},
    "vmexit.tscdeadline.cycles": {False: 5765.7, True: 5285.0},
}
