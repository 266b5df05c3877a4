"""kvmsim.plot: what each figure shows (matplotlib, Agg backend)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import kvmsim  # noqa: E402
from conftest import SHORT, T1  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return {hv: kvmsim.run(T1, set={**SHORT, "kvm.enable_hv_timer": hv}, seed=1)
            for hv in (True, False)}


def test_histogram_draws_each_result_and_published_series_on_log_counts(runs):
    ax = kvmsim.plot.histogram({"on": runs[True], "off": runs[False]},
                               published=kvmsim.published.t1_histogram())
    assert ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["on", "off", "published hv_on", "published hv_off"]
    on = ax.get_lines()[0].get_ydata()
    assert np.nansum(on) == runs[True].histogram.sum()
    plt.close("all")


def test_normalized_histogram_sums_to_one(runs):
    ax = kvmsim.plot.histogram(runs[True], normalize=True)
    assert np.nansum(ax.get_lines()[0].get_ydata()) == pytest.approx(1.0)
    plt.close("all")


def test_breakdown_bars_stack_to_the_total_per_run(runs):
    ax = kvmsim.plot.breakdown({"on": runs[True], "off": runs[False]})
    for i, r in enumerate((runs[True], runs[False])):
        bars = [p for p in ax.patches if abs(p.get_y() + p.get_height() / 2 - i) < 1e-9]
        right = max(p.get_x() + p.get_width() for p in bars)
        assert right == pytest.approx(r.metrics["breakdown.total.avg_ns"], rel=1e-6)
    plt.close("all")


def test_sweep_plot_has_one_line_per_hue_with_the_mean_over_seeds():
    df = kvmsim.sweep(T1, grid={"kvm.enable_hv_timer": [True, False],
                                "kvm.lapic_timer_advance_ns": [0, 1000]},
                      seeds=[1, 2], set=SHORT)
    ax = kvmsim.plot.sweep(df, x="kvm.lapic_timer_advance_ns", y="cyclictest.avg_us",
                           hue="kvm.enable_hv_timer")
    assert len(ax.containers) == 2
    on = df[df["kvm.enable_hv_timer"]].groupby("kvm.lapic_timer_advance_ns")["cyclictest.avg_us"]
    line = [c for c in ax.containers if c.get_label().endswith("True")][0].lines[0]
    assert list(line.get_ydata()) == pytest.approx(list(on.mean()))
    plt.close("all")


def test_breakdown_of_a_vmexit_run_has_one_bar_per_test_in_cycles():
    from conftest import T3

    r = kvmsim.run(T3, set={"vmexit.goal_cycles": 1 << 22}, seed=1)
    ax = kvmsim.plot.breakdown({"fp": r})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fp: tscdeadline",
                                                            "fp: tscdeadline_immed"]
    assert "cycles" in ax.get_xlabel()
    plt.close("all")


def test_histogram_takes_a_published_histogram_by_name_as_the_cli_does(runs):
    ax = kvmsim.plot.histogram({"on": runs[True]}, published="t1")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["on", "published hv_on", "published hv_off"]
    plt.close("all")
    with pytest.raises(ValueError, match="'t1'"):
        kvmsim.plot.histogram(runs[True], published="t9")
