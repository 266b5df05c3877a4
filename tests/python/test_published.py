"""kvmsim.published holds copies of the published figures that `kvmsim validate` checks
(tools/kvmsim/validation_targets.cpp): the copies must not drift from the validated ones."""
import re
import subprocess

import kvmsim


def test_t4_records_match_the_validate_table(kvmsim_binary):
    out = subprocess.run([kvmsim_binary, "validate", "--experiment", "T4", "--quick", "--markdown"],
                         capture_output=True, text=True, timeout=600).stdout
    rows = re.findall(r"^\| T4 \| vm\.vcpus=(\d+) guest\.pv_tlb_flush=(true|false) \| "
                      r"ebizzy\.records_per_s \| ([0-9.]+) \|", out, re.M)
    seen = {(int(v), f == "true"): float(p) for v, f, p in rows}
    assert seen == kvmsim.published.T4_RECORDS_PER_S
