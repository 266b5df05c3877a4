"""cyclictest -h files (recorded fixtures and simulated) and their comparison."""
import os

import numpy as np
import pytest

import kvmsim
from conftest import CYCLICTEST_DATA, SHORT, T1

TWO_THREADS = os.path.join(CYCLICTEST_DATA, "cyclictest-2.40_histogram_2threads_format-fixture.txt")
ALL_OVERFLOW = os.path.join(CYCLICTEST_DATA,
                            "cyclictest-2.40_histogram_all-overflow_format-fixture.txt")


def test_recorded_two_thread_file_reads_both_columns_with_totals_and_overflows():
    h = kvmsim.load_histogram(TWO_THREADS)
    assert h.threads == 2
    for i in range(2):
        printed = h.printed(i)
        assert int(h.thread(i).sum()) == printed["total"]
        assert h.stats(i)["samples"] == printed["total"] + printed["overflows"]
    assert h.stats(1)["overflows"] == 6
    assert np.array_equal(np.asarray(h), h.thread(0))


def test_all_overflow_file_has_empty_buckets_and_lower_bound_statistics():
    h = kvmsim.load_histogram(ALL_OVERFLOW)
    assert h.counts.sum() == 0
    s = h.stats()
    assert s["overflows"] == s["samples"] > 0
    assert s["p50_us_lower_bound"] and s["min_us"] >= h.buckets


def test_text_that_is_not_a_histogram_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("# Histogram\n000000 12 x\n")
    with pytest.raises(ValueError, match=r"bad\.txt: LINE 2"):
        kvmsim.load_histogram(bad)


def test_simulated_histogram_file_equals_the_result_histogram(tmp_path):
    r = kvmsim.run(T1, set=SHORT, seed=3, out=tmp_path)
    again = kvmsim.load_histogram(tmp_path / "histogram.txt")
    assert np.array_equal(again.counts, r.histogram)
    assert int(r.histogram.sum()) + again.overflows() == SHORT["cyclictest.loops"]


def test_compare_of_a_histogram_with_itself_passes_with_zero_distance():
    c = kvmsim.compare(TWO_THREADS, TWO_THREADS)
    assert c["pass"] and len(c["comparisons"]) == 2
    assert all(t["w1_us"] == 0 and t["ks"] == 0 for t in c["comparisons"])


def test_compare_tells_hv_timer_on_from_off():
    on = kvmsim.run(T1, set=SHORT, seed=1)
    off = kvmsim.run(T1, set={**SHORT, "kvm.enable_hv_timer": False}, seed=1)
    c = kvmsim.compare(on, off)["comparisons"][0]
    # hrtimer path: ~2.6 us slower on average (T1), so W1 ~ that shift.
    assert 1.5 < c["w1_us"] < 4.0
    assert c["ks"] > 0.5 and not c["pass"]


def test_compare_accepts_plain_count_arrays():
    a = np.array([0, 10, 80, 10])
    b = np.array([0, 0, 10, 80, 10])
    c = kvmsim.compare(a, b)["comparisons"][0]
    assert c["w1_us"] == pytest.approx(1.0)
    assert c["ks"] == pytest.approx(0.8)
