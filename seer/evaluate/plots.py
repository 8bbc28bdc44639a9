"""The evaluations' plots (--plots DIR), drawn alike so that each reads on its own: a title that
says what is plotted, axes with their units (time in ms, errors in percent), a legend that
names every mark in words, accuracy metrics and the +-10% band where a plot shows accuracy,
and nothing dropped silently (values beyond an axis are counted on the plot). The Test-set-II
slowdown plot (seer.evaluate.selection.plot_slowdowns) is the model they follow.

Each `*_figure` function returns its matplotlib Figure (tests read its texts); `save` writes
it as a PNG and closes it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seer.evaluate.metrics import accuracy
from seer.evaluate.report import pyplot

DPI = 110
BAND = 0.10  # the +-10% band of SEER's accuracy target
ERROR_LIMIT = 60.0  # the error histogram's axis, percent either side
RATIO_RANGE = (0.5, 2.0)  # the drift plot's axis, measured / predicted


def save(fig: Any, path: Path) -> Path:
    """Write the figure as a PNG (its folder made if needed) and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)
    return path


def _grid(n: int, width: float, height: float, ncols: int = 3, **kw):
    """n panels in rows of at most `ncols`, each width x height inches; unused panels hidden."""
    plt = pyplot()
    cols = min(n, ncols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kw)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n], flat[n:]


def _colours(keys) -> dict:
    cycle = pyplot().get_cmap("tab10").colors
    return {k: cycle[i % len(cycle)] for i, k in enumerate(keys)}


def _metrics_text(pred, meas) -> str:
    m = accuracy(pred, meas)
    return (
        f"n = {m['n']}\nRMSPE {100 * m['rmspe']:.1f}%\nmedian APE {100 * m['median_ape']:.1f}%\n"
        f"within ±10%: {100 * m['within_10pct']:.1f}%"
    )


def _signed(v: float, unit: str = "") -> str:
    """+5, 0, −3 (a true minus sign, as matplotlib's tick labels have)."""
    return ("0" if v == 0 else f"{v:+g}".replace("-", "\u2212")) + unit


def _text_box(ax, text: str, x: float = 0.03, y: float = 0.97, **kw) -> None:
    ax.text(x, y, text, transform=ax.transAxes, va="top", ha="left", fontsize=9,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.7", "alpha": 0.9}, **kw)  # fmt: skip


# ---------------------------------------------------------------- Test-set-I
def _predicted(test: pd.DataFrame) -> pd.DataFrame:
    return test[test["pred_config"].notna()]


def scatter_figure(test: pd.DataFrame) -> Any:
    """Test-set-I predicted vs measured time, one log-log panel per GPU: y = x, the +-10% band
    around it and the panel's accuracy (n, RMSPE, median APE, share within 10%)."""
    ok = _predicted(test)
    gpus_ = sorted(pd.unique(ok["gpu"]))
    colour = _colours(sorted(pd.unique(ok["op"])))
    fig, axes, _ = _grid(len(gpus_), 5.2, 5.0)
    for ax, name in zip(axes, gpus_):
        g = ok[ok["gpu"] == name]
        lo, hi = g["time_ms"].min() / 1.5, g["time_ms"].max() * 1.5
        x = np.geomspace(lo, hi, 50)
        ax.fill_between(x, x * (1 - BAND), x * (1 + BAND), color="0.5", alpha=0.4, lw=0, label="±10% of measured")
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="predicted = measured")
        for op, h in g.groupby("op"):
            ax.scatter(h["time_ms"], h["pred_config"], s=4, alpha=0.45, color=colour[op], label=f"{op} ({len(h)} rows)")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi))
        ax.set_xlabel("measured time (ms)")
        ax.set_ylabel("predicted time (ms)")
        ax.set_title(name, fontsize=10)
        _text_box(ax, _metrics_text(g["pred_config"], g["time_ms"]))
        ax.legend(loc="lower right", markerscale=3, fontsize=8)
    fig.suptitle("Test-set-I: predicted vs measured kernel time\n(held-out 30%, variant chosen from the configuration)")
    fig.tight_layout()
    return fig


def error_histogram_figure(test: pd.DataFrame, limit: float = ERROR_LIMIT) -> Any:
    """Test-set-I signed error per op, in percent of measured. Errors beyond +-`limit` are not
    piled into the end bins (where they would pass for modes): they are counted in hatched
    overflow bars outside the axis, each labelled with its count."""
    plt = pyplot()
    ok = _predicted(test)
    err = 100 * (ok["pred_config"] - ok["time_ms"]) / ok["time_ms"]
    ops = sorted(pd.unique(ok["op"]))
    colour = _colours(ops)
    step = 2.0
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.axvspan(-100 * BAND, 100 * BAND, color="0.85", lw=0, label="within ±10%")
    gap, width = 8.0, 10.0  # overflow bars: `gap` beyond the axis, `width` wide, shared by the ops
    w = width / max(len(ops), 1)
    top = 0.0
    for i, op in enumerate(ops):
        e = err[ok["op"] == op].to_numpy()
        inside = e[np.abs(e) <= limit]
        counts, _, _ = ax.hist(inside, bins=np.arange(-limit, limit + step, step), histtype="step", lw=1.3,
                               color=colour[op], label=f"{op} ({len(e)} rows)")  # fmt: skip
        top = max(top, float(np.max(counts, initial=0)))
        for side, n in ((-1, int((e < -limit).sum())), (1, int((e > limit).sum()))):
            x0 = side * (limit + gap) + (0 if side > 0 else -width) + i * w
            ax.bar(x0, n, w, align="edge", fc="white", ec=colour[op], hatch="///", lw=1.0)
            ax.annotate(f"{n}", (x0 + w / 2, n), ha="center", va="bottom", fontsize=8, color=colour[op])
            top = max(top, n)
    for side in (-1, 1):
        ax.axvline(side * (limit + gap / 2), color="0.4", ls=":", lw=1)
    overflow = plt.Rectangle((0, 0), 1, 1, fc="white", ec="0.3", hatch="///")
    ticks = list(np.arange(-limit, limit + 1, 20))
    ax.set_xticks([-(limit + gap + width / 2), *ticks, limit + gap + width / 2],
                  [f"<{_signed(-limit)}", *(_signed(t) for t in ticks), f">{_signed(limit)}"])  # fmt: skip
    ax.set_xlim(-(limit + gap + width + 2), limit + gap + width + 2)
    ax.set_ylim(0, top * 1.15 + 1)
    ax.set_xlabel("prediction error: (predicted − measured) / measured, %")
    ax.set_ylabel(f"test rows per {step:.0f}% bin")
    ax.set_title("Test-set-I: error of configuration-only predictions")
    _text_box(ax, _metrics_text(ok["pred_config"], ok["time_ms"]))
    handles, labels = ax.get_legend_handles_labels()
    handles.append(overflow)
    labels.append(f"beyond ±{limit:.0f}%, outside the axis (count on the bar)")
    ax.legend(handles, labels, fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def drift_figure(test: pd.DataFrame, window: int = 51) -> Any:
    """Test-set-I measured / predicted along the measurement order, one panel per GPU and op,
    with its rolling median: does the GPU's state during collection explain the errors? Points
    beyond the axis are drawn on its edge and counted in the panel."""
    plt = pyplot()
    ok = _predicted(test)
    keys = sorted({(g, o) for g, o in zip(ok["gpu"], ok["op"])})
    lo, hi = RATIO_RANGE
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 1.2 + 2.4 * len(keys)), squeeze=False, sharex=True)
    for ax, (name, op) in zip(axes[:, 0], keys):
        h = ok[(ok["gpu"] == name) & (ok["op"] == op)].sort_values("position")
        r = (h["time_ms"] / h["pred_config"]).to_numpy()
        pos = h["position"].to_numpy()
        inside = (r >= lo) & (r <= hi)
        ax.axhspan(1 / (1 + BAND), 1 / (1 - BAND), color="0.85", lw=0, label="within ±10%")
        ax.axhline(1.0, color="0.3", lw=0.8, label="measured = predicted")
        ax.scatter(pos[inside], r[inside], s=3, alpha=0.35, color="tab:blue", label="one test row")
        for m, edge, marker in ((r > hi, hi, "^"), (r < lo, lo, "v")):
            if m.any():
                ax.scatter(pos[m], np.full(m.sum(), edge), s=14, marker=marker, color="tab:purple", clip_on=False,
                           label="beyond the axis (drawn on its edge)")  # fmt: skip
        med = pd.Series(r).rolling(window, center=True, min_periods=10).median()
        ax.plot(pos, med, color="tab:red", lw=1.3, label=f"rolling median of {window} rows")
        ax.set(yscale="log", ylim=RATIO_RANGE)
        ax.set_yticks([0.5, 0.7, 1.0, 1.4, 2.0], ["0.5", "0.7", "1", "1.4", "2"])
        ax.minorticks_off()
        ax.set_ylabel("measured / predicted")
        ax.set_title(f"{name}, {op}: {len(h)} rows", fontsize=10, loc="left")
        above, below = int((r > hi).sum()), int((r < lo).sum())
        note = f"beyond the axis: {above} above {hi:g}, {below} below {lo:g}" if above or below else "all rows shown"
        ax.text(0.99, 0.04, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=8,
                bbox={"fc": "white", "ec": "none", "alpha": 0.8})  # fmt: skip
    handles: dict[str, Any] = {}
    for ax in axes[:, 0]:
        for hd, lb in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lb, hd)
    labels = list(handles)
    fig.legend([handles[lb] for lb in labels], labels, loc="lower center", ncol=3, fontsize=8, markerscale=2)
    axes[-1, 0].set_xlabel("position of the row in its file (0 = first measured, 1 = last)")
    fig.suptitle("Test-set-I: measured / predicted time in measurement order (drift of the GPU's state)")
    legend_in = 0.15 + 0.2 * math.ceil(len(labels) / 3)
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    return fig


def set_one_plots(test: pd.DataFrame, folder: Path) -> list[Path]:
    """The Test-set-I PNGs: predicted vs measured, error histogram, and (when the rows know
    their place in the measurement order) the drift plot."""
    out = [
        save(scatter_figure(test), folder / "set1_predicted_vs_measured.png"),
        save(error_histogram_figure(test), folder / "set1_error_histogram.png"),
    ]
    if "position" in test:
        out.append(save(drift_figure(test), folder / "set1_ratio_vs_measurement_order.png"))
    return out


# ---------------------------------------------------------------- whole models
def models_figure(models: pd.DataFrame, shares: pd.DataFrame, kinds: list[str], what: str = "op kind") -> Any:
    """Whole models, one panel per GPU: per model a solid bar of the measured node times and a
    hatched bar of seer's prediction, both stacked by op kind, the measured whole-model time
    as a black line and the prediction's signed error above the bars. Times in ms.

    `shares`: share_by_kind's (source, kind, measured, predicted) rows in ms; `what` the kinds are
    (op kinds, or the directions of a training step)."""
    plt = pyplot()
    colour = _colours(kinds)
    gpus_ = list(dict.fromkeys(models["gpu"]))
    one = len(gpus_) == 1  # one panel: a second one beside it holds the legend
    fig, axes, spare = _grid(len(gpus_) + one, 4.8, 4.2, ncols=2 if len(gpus_) <= 4 else 3)
    if one:
        axes, spare = axes[:1], axes[1:]
    for ax, gpu in zip(axes, gpus_):
        ms = models[models["gpu"] == gpu].reset_index(drop=True)
        highest = 0.0
        for i, r in ms.iterrows():
            top = 0.0
            s = shares[shares["source"] == r["source"]].set_index("kind")
            for j, col in enumerate(("measured", "predicted")):
                bottom = 0.0
                for kind in kinds:
                    v = float(s[col].get(kind, 0.0))
                    ax.bar(i + (j - 0.5) * 0.38, v, 0.36, bottom=bottom, color=colour[kind],
                           hatch="//" if col == "predicted" else None, edgecolor="white", linewidth=0.3)  # fmt: skip
                    bottom += v
                top = max(top, bottom)
            if pd.notna(r["measured_ms"]):
                ax.plot([i - 0.4, i + 0.4], [r["measured_ms"]] * 2, color="black", lw=1.5)
                top = max(top, float(r["measured_ms"]))
                if pd.notna(r["predicted_ms"]):
                    err = round(100 * (r["predicted_ms"] / r["measured_ms"] - 1))
                    ax.annotate(_signed(err, "%"), (i, top), xytext=(0, 3), textcoords="offset points",
                                ha="center", va="bottom", fontsize=8)  # fmt: skip
            highest = max(highest, top)
        names = [m.replace("-inf-", "\n").replace("-train-", "\ntrain ") for m in ms["model"]]
        ax.set_xticks(range(len(ms)), names, fontsize=8)
        ax.set_ylim(0, highest * 1.15 if highest > 0 else 1)
        ax.set_title(gpu, fontsize=10)
        ax.set_ylabel("whole-model time (ms)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[k]) for k in kinds]
    labels = [f"{what}: {k}" for k in kinds]
    handles += [
        plt.Rectangle((0, 0), 1, 1, fc="0.6", ec="white"),
        plt.Rectangle((0, 0), 1, 1, fc="0.6", ec="white", hatch="//"),
        plt.Line2D([], [], color="black", lw=1.5),
    ]
    labels += [
        "left bar: measured node times",
        "right bar (hatched): seer's prediction",
        "black line: measured whole model",
    ]
    title = (
        f"Whole models: measured vs predicted time by {what}\n"
        "(above the bars: the prediction's error vs the measured whole model)"
    )
    if spare:  # the legend fills the grid's empty panel
        spare[0].set_visible(True)
        spare[0].axis("off")
        spare[0].legend(handles, labels, loc="center", fontsize=9, title="what the marks are", frameon=False)
        fig.suptitle(title)
        fig.tight_layout()
    else:
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
        fig.suptitle(title)
        rows = math.ceil(len(labels) / 3)
        fig.tight_layout(rect=(0, (0.3 + 0.22 * rows) / fig.get_figheight(), 1, 1))
    return fig
