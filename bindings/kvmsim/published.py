"""Published measurements of the validation targets (docs/validation.md).

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

# T4: ebizzy -M records/s in one guest on a Haswell i7 desktop (8 pCPUs), PV TLB flush
# series cover letter (Wanpeng Li, 2017); key: (vm.vcpus, guest.pv_tlb_flush).
T4_RECORDS_PER_S = {
    (8, False): 10152.0, (8, True): 10083.0,
    (16, False): 1224.0, (16, True): 4866.0,
    (24, False): 1109.0, (24, True): 3871.0,
    (32, False): 1025.0, (32, True): 3375.0,
}
