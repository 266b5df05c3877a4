"""Trace files: events as a DataFrame and trace-stats, on real fixtures and on a run's trace."""
import glob
import os

import pytest

import kvmsim
from conftest import REPO, SHORT, T1, TRACE_DATA

FIXTURES = sorted(glob.glob(os.path.join(TRACE_DATA, "*.txt")))


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_read_trace_and_trace_stats_count_the_same_events(path):
    df = kvmsim.read_trace(path)
    stats = kvmsim.trace_stats(path)
    assert len(df) > 0
    counts = df["event"].value_counts().to_dict()
    assert counts == {k: v["count"] for k, v in stats["events"].items()}
    assert df.attrs["malformed"] == stats["malformed"]["count"]
    assert len(df) == stats["lines"]["events"]


def test_kvm_exit_rows_carry_the_parsed_reason_and_vcpu():
    path = next(p for p in FIXTURES if "modern-format" in p)
    df = kvmsim.read_trace(path)
    exits = df[df["event"] == "kvm_exit"]
    assert len(exits) > 0
    assert exits["reason"].notna().all() and (exits["reason"].str.len() > 0).all()
    assert exits["vcpu"].notna().all()
    assert df["ts"].is_monotonic_increasing


def test_run_trace_reads_back_with_one_msr_write_exit_per_cyclictest_loop(tmp_path):
    trace = tmp_path / "t.txt"
    r = kvmsim.run(T1, set=SHORT, seed=1, trace=trace)
    df = kvmsim.read_trace(trace)
    assert df.attrs["malformed"] == 0
    exits = df[df["event"] == "kvm_exit"]
    by_reason = exits["reason"].value_counts().to_dict()
    assert by_reason["MSR_WRITE"] == r.metrics["exits.MSR_WRITE.count"]
    assert kvmsim.trace_stats(trace)["events"]["kvm_exit"]["count"] == len(exits)


def test_missing_trace_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read trace file"):
        kvmsim.read_trace(tmp_path / "nope.txt")


def test_kvm_hypercall_rows_carry_nr_and_arguments(tmp_path):
    # The PV qspinlock's KVM_HC_KICK_CPU (nr 5): a1 is the kicked vCPU, and
    # the trace has one kvm_hypercall per vcpu.pv_kicks.
    trace = tmp_path / "t.txt"
    r = kvmsim.run(
        os.path.join(REPO, "scenarios", "ebizzy_overcommit.yaml"),
        set={"vm.vcpus": 16, "guest.pv_tlb_flush": True, "sim.max_simulated_s": 0.3},
        seed=1,
        trace=trace,
    )
    df = kvmsim.read_trace(trace)
    hc = df[df["event"] == "kvm_hypercall"]
    assert len(hc) == r.metrics["vcpu.pv_kicks"] > 0
    assert (hc["nr"] == 5).all() and (hc["a0"] == 0).all()
    assert ((hc["a1"] >= 0) & (hc["a1"] < 16)).all()
