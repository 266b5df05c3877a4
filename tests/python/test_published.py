"""kvmsim.published reads the published figures from validation/targets.yaml, the same
file `kvmsim validate` checks: what the package and validate show must agree."""
import os
import re
import subprocess

import yaml

import kvmsim

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS = os.path.join(REPO, "validation", "targets.yaml")


def test_the_package_carries_the_repository_file():
    with open(TARGETS, encoding="utf-8") as f:
        assert yaml.safe_load(f) == kvmsim.published.data()


def test_t4_records_match_the_validate_table(kvmsim_binary):
    out = subprocess.run([kvmsim_binary, "validate", "--experiment", "T4", "--list"],
                         capture_output=True, text=True, timeout=60).stdout
    rows = re.findall(r"^ +vm\.vcpus=(\d+) guest\.pv_tlb_flush=(true|false) +"
                      r"ebizzy\.records_per_s +([0-9.]+) ", out, re.M)
    seen = {(int(v), f == "true"): float(p) for v, f, p in rows}
    assert seen == kvmsim.published.T4_RECORDS_PER_S


def test_constants_keep_their_shape():
    assert kvmsim.published.T2_AVG_CYCLES == {False: 4450.0, True: 1660.0}
    assert kvmsim.published.T3_CYCLES["vmexit.tscdeadline_immed.cycles"] == {
        False: 3028.5, True: 2494.75}
    assert len(kvmsim.published.T4_RECORDS_PER_S) == 8


def test_t1_histogram_adds_up_to_the_published_loops():
    h = kvmsim.published.t1_histogram()
    assert list(h.columns) == ["bucket_us", "hv_on", "hv_off"]
    assert list(h["bucket_us"]) == list(range(3, 14))
    assert h["hv_on"].sum() == h["hv_off"].sum() == 600000
    assert h.loc[h["bucket_us"] == 13, "hv_on"].item() == 74


def test_targets_lists_every_figure_validate_lists(kvmsim_binary):
    df = kvmsim.published.targets()
    out = subprocess.run([kvmsim_binary, "validate", "--list"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    total = int(re.search(r"^(\d+) published figures", out.stdout, re.M).group(1))
    assert len(df) == total
    assert set(df["target"]) == set(re.findall(r"^(\w+): ", out.stdout, re.M))
    assert df["reference"].notna().all() and df["host"].notna().all()
    pvq = df[(df["target"] == "PVQ") & (df["figure"] == "none.vms3.thread")].iloc[0]
    assert pvq["range"] == (1700, 1800) and pvq["value"] == 1750
    assert set(kvmsim.published.sources()["target"]) == set(df["target"])


def test_another_file_can_be_read(tmp_path):
    d = kvmsim.published.data()
    for f in d["targets"][1]["figures"]:
        if f["id"] == "no_advance":
            f["value"] = 1234
    p = tmp_path / "targets.yaml"
    p.write_text(yaml.safe_dump(d))
    df = kvmsim.published.targets(path=str(p))
    assert df[(df["target"] == "T2") & (df["figure"] == "no_advance")]["value"].item() == 1234
