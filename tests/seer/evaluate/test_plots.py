"""The evaluations' plots read on their own: titled, axes in ms or percent, legends in words,
the +-10% band and the metrics where they show accuracy, nothing beyond an axis dropped or
piled silently, and a whole-models figure of a readable size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from seer.evaluate import plots  # noqa: E402
from seer.evaluate.metrics import accuracy  # noqa: E402


def _texts(fig) -> list[str]:
    """Every text drawn on the figure: titles, labels, tick labels, legends, annotations."""
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and a.get_text())]


def _legend(ax_or_fig) -> list[str]:
    leg = ax_or_fig.get_legend() if hasattr(ax_or_fig, "get_legend") else None
    legs = [leg] if leg is not None else list(getattr(ax_or_fig, "legends", []))
    return [t.get_text() for lg in legs for t in lg.get_texts()]


@pytest.fixture
def test_rows() -> pd.DataFrame:
    """Test-set-I rows of two GPUs and two ops: errors of about 5%, and on T4 conv_fwd three
    rows predicted 3x too slow (+200%), two at 0.3x (-70%) and one at 1/1.5 (-33%)."""
    rng = np.random.default_rng(0)
    parts = []
    for gpu in ("Tesla T4", "NVIDIA A100"):
        for op in ("conv_fwd", "gemm"):
            t = 10 ** rng.uniform(-2, 2, 100)
            pred = t * (1 + rng.normal(0, 0.05, 100))
            parts.append(pd.DataFrame({"gpu": gpu, "op": op, "time_ms": t, "pred_config": pred,
                                       "position": np.linspace(0, 1, 100)}))  # fmt: skip
    df = pd.concat(parts, ignore_index=True)
    t4conv = df.index[(df["gpu"] == "Tesla T4") & (df["op"] == "conv_fwd")]
    df.loc[t4conv[:3], "pred_config"] = 3 * df.loc[t4conv[:3], "time_ms"]
    df.loc[t4conv[3:5], "pred_config"] = 0.3 * df.loc[t4conv[3:5], "time_ms"]
    df.loc[t4conv[5], "pred_config"] = df.loc[t4conv[5], "time_ms"] / 1.5
    df.loc[len(df)] = ["Tesla T4", "gemm", 1.0, np.nan, 0.5]  # not predicted: left out
    return df


def test_scatter_has_title_band_units_and_metrics(test_rows):
    fig = plots.scatter_figure(test_rows)
    assert "Test-set-I" in fig.get_suptitle()
    axes = [a for a in fig.axes if a.get_visible()]
    assert sorted(a.get_title() for a in axes) == ["NVIDIA A100", "Tesla T4"]
    for ax in axes:
        assert "(ms)" in ax.get_xlabel() and "(ms)" in ax.get_ylabel()
        legend = _legend(ax)
        assert "±10% of measured" in legend and "predicted = measured" in legend
        assert {"conv_fwd (100 rows)", "gemm (100 rows)"} <= set(legend)  # the NaN row is not counted
        g = test_rows[(test_rows["gpu"] == ax.get_title()) & test_rows["pred_config"].notna()]
        m = accuracy(g["pred_config"], g["time_ms"])
        box = next(t.get_text() for t in ax.texts)
        assert f"n = {m['n']}" in box and f"RMSPE {100 * m['rmspe']:.1f}%" in box and "within ±10%" in box
        band = ax.collections[0].get_paths()[0].vertices  # y between 0.9 x and 1.1 x
        x, y = band[:, 0], band[:, 1]
        inner = (x > x.min()) & (x < x.max())
        assert np.all((y[inner] >= 0.9 * x[inner] * (1 - 1e-9)) & (y[inner] <= 1.1 * x[inner] * (1 + 1e-9)))
        assert np.isclose(y[inner] / x[inner], 1.1).any() and np.isclose(y[inner] / x[inner], 0.9).any()
    plots.pyplot().close(fig)


def test_histogram_counts_overflow_apart_from_the_end_bins(test_rows):
    fig = plots.error_histogram_figure(test_rows, limit=60)
    ax = fig.axes[0]
    assert ax.get_title() and "%" in ax.get_xlabel() and "rows" in ax.get_ylabel()
    conv = [p for p in ax.patches if p.get_label() == "conv_fwd (200 rows)"]
    assert len(conv) == 1  # the step histogram of conv_fwd: both GPUs
    verts = conv[0].get_path().vertices
    inside = verts[(verts[:, 0] >= -60) & (verts[:, 0] <= 60)]
    assert inside[:, 0].min() >= -60 and inside[:, 0].max() <= 60
    # the end bins hold only rows in them, not the overflow: no conv row lies within 58-60% off
    ends = [y for x, y in verts if x in (-60, -58, 58, 60)]
    assert max(ends) == 0
    notes = [t.get_text() for t in ax.texts if t.get_text().isdigit()]
    assert sorted(notes) == ["0", "0", "2", "3"]  # conv_fwd: 2 below -60%, 3 above +60%; gemm: none
    x_of = {t.get_text(): t.xy[0] for t in ax.texts if t.get_text() in ("2", "3")}
    assert x_of["2"] < -60 < 60 < x_of["3"]  # outside the axis, on their own side
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0].startswith("<") and ticks[-1].startswith(">")
    assert any("beyond ±60%" in s for s in _legend(ax)) and "within ±10%" in _legend(ax)
    plots.pyplot().close(fig)


def test_drift_counts_points_beyond_the_axis_and_names_its_lines(test_rows):
    fig = plots.drift_figure(test_rows)
    assert "measurement order" in fig.get_suptitle()
    legend = _legend(fig)
    assert "rolling median of 51 rows" in legend and "measured = predicted" in legend
    assert "beyond the axis (drawn on its edge)" in legend
    titles = [a.get_title(loc="left") for a in fig.axes]
    t4conv = fig.axes[titles.index("Tesla T4, conv_fwd: 100 rows")]
    assert "beyond the axis: 2 above 2, 3 below 0.5" in [t.get_text() for t in t4conv.texts]
    a100 = fig.axes[titles.index("NVIDIA A100, gemm: 100 rows")]
    assert "all rows shown" in [t.get_text() for t in a100.texts]
    assert all(a.get_ylabel() == "measured / predicted" for a in fig.axes)
    plots.pyplot().close(fig)


def test_set_one_plots_writes_three_pngs(test_rows, tmp_path):
    paths = plots.set_one_plots(test_rows, tmp_path / "p")
    assert [p.name for p in paths] == [
        "set1_predicted_vs_measured.png", "set1_error_histogram.png", "set1_ratio_vs_measurement_order.png"
    ]  # fmt: skip
    assert all(p.stat().st_size > 1000 for p in paths)
    assert len(plots.set_one_plots(test_rows.drop(columns="position"), tmp_path / "q")) == 2


def _models(n_gpus: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, shares = [], []
    for g in range(n_gpus):
        for m in ("bert_large-inf-512-8", "gpt2_large-inf-1024-4"):
            src = f"gpu{g}/{m}"
            rows.append({"source": src, "gpu": f"GPU {g}", "model": m, "measured_ms": 1234.0, "predicted_ms": 1300.0})
            shares += [{"source": src, "kind": "linear", "measured": 1000.0, "predicted": 1050.0},
                       {"source": src, "kind": "softmax", "measured": 200.0, "predicted": 250.0}]  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(shares)


@pytest.mark.parametrize("n_gpus", [5, 3, 2])
def test_models_figure_in_ms_readable_and_in_words(n_gpus):
    models, shares = _models(n_gpus)
    fig = plots.models_figure(models, shares, ["linear", "softmax"])
    w, h = fig.get_size_inches() * plots.DPI
    assert w <= 1700 and h <= 1200 and w / h < 2.5  # a grid, not a 2520x540 strip
    panels = [a for a in fig.axes if a.get_visible() and a.get_ylabel()]
    assert len(panels) == n_gpus and all(a.get_ylabel() == "whole-model time (ms)" for a in panels)
    ax = panels[0]
    assert any(np.allclose(line.get_ydata(), 1234.0) for line in ax.lines)  # ms, not s
    heights = sorted({round(p.get_height(), 6) for p in ax.patches})
    assert 1000.0 in heights and 1050.0 in heights
    assert "+5%" in [t.get_text() for t in ax.texts]  # 1300 / 1234 - 1
    legend = _legend(fig) + [s for a in fig.axes for s in _legend(a)]
    assert "op kind: linear" in legend and "black line: measured whole model" in legend
    assert any("hatched" in s and "prediction" in s for s in legend)
    assert fig.get_suptitle().startswith("Whole models")
    plots.pyplot().close(fig)
