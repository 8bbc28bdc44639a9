"""The headline of `python -m seer`: per GPU, each evaluation's figure beside its target and its
anchor (the bar it must beat), read back from the JSON the evaluations wrote with --out, so no
metric is computed twice. Where the targets and anchors come from: SOURCES.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from seer.hardware import gpus

SOURCES = (
    "Targets are the project's own, as docs/results.md states them (Test-set-I on NeuSight's "
    "data: bmm and linear <= 10% RMSPE, conv <= 12%; Test-set-II's final targets: top-1 >= 95%, within 10% "
    ">= 99%, mean slowdown <= 1%; whole models and training steps: <= 5% per model). Anchors are the bars of "
    "docs/reference.md "
    "(Published bars): SEER's published 14.71% RMSPE on conv kernels, "
    "NeuSight's published per-op errors (BMM 26%, FC 20%), and, measured on the same data by the "
    "evaluations themselves, cuDNN's heuristic pick (Get_v7) for Test-set-II and NeuSight's own "
    "predictions of the same graphs for whole models and training steps."
)


@dataclass(frozen=True)
class Bar:
    """What one headline row measures, the project's target for it and who sets the bar."""

    label: str  # the evaluation and metric, as the table shows them
    metric: str  # key in the evaluation's JSON (seer.evaluate.metrics, selection.SELECTION_KEYS)
    target: float  # a fraction
    higher_is_better: bool
    anchor: str  # who sets the bar
    source: str = ""  # where the anchor's figure comes from
    published: float | None = None  # the anchor's published figure; None: measured on the same data


# Test-set-I per op (configuration-only prediction). docs/reference.md, Published bars, for the anchors.
SET_ONE = {
    "conv_fwd": Bar("Test-set-I conv RMSPE", "rmspe", 0.12, False, "SEER", "published", 0.1471),
    "bmm": Bar("Test-set-I bmm RMSPE", "rmspe", 0.10, False, "NeuSight BMM", "published", 0.26),
    "linear": Bar("Test-set-I linear RMSPE", "rmspe", 0.10, False, "NeuSight FC", "published", 0.20),
    "gemm": Bar("Test-set-I GEMM RMSPE", "rmspe", 0.10, False, "NeuSight FC", "published", 0.20),
}
# Test-set-II: seer's pick against cuDNN's heuristic on the same layers.
SET_TWO = (
    Bar("Test-set-II top-1", "top1", 0.95, True, "cuDNN heuristic", "same layers"),
    Bar("Test-set-II within 10%", "within_10pct", 0.99, True, "cuDNN heuristic", "same layers"),
    Bar("Test-set-II mean slowdown", "slowdown_mean", 0.01, False, "cuDNN heuristic", "same layers"),
)
# Whole models: median over a GPU's graphs of the whole-model APE, against NeuSight's predictions.
MODELS = Bar("whole models median APE", "median_ape", 0.05, False, "NeuSight", "same graphs")
TRAINING = Bar("training steps median APE", "median_ape", 0.05, False, "NeuSight", "same steps")
# Test-set-II where only the autotuner's pick was timed (NeuSight's data): agreement, no bar.
AGREEMENT = Bar("Test-set-II agreement with autotuner", "agreement", math.nan, True, "")


@dataclass
class Row:
    """One headline row: fractions, as the JSON files hold them."""

    gpu: str  # slug, one spelling for every evaluation
    evaluation: str
    metric: str
    n: int
    value: float
    higher_is_better: bool
    target: float | None
    target_met: bool | None
    anchor: str
    anchor_source: str
    anchor_value: float | None
    beats_anchor: bool | None


def _row(gpu: str, bar: Bar, n: float, value: float, anchor_value: float | None) -> Row:
    def better(a: float, b: float) -> bool:
        return a >= b if bar.higher_is_better else a <= b

    target = None if math.isnan(bar.target) else bar.target
    anchor_value = bar.published if bar.published is not None else anchor_value
    if anchor_value is not None and not math.isfinite(anchor_value):
        anchor_value = None
    return Row(
        gpu=gpus.slug_for(gpu),
        evaluation=bar.label,
        metric=bar.metric,
        n=int(n),
        value=float(value),
        higher_is_better=bar.higher_is_better,
        target=target,
        target_met=None if target is None else better(value, target),
        anchor=bar.anchor,
        anchor_source=bar.source,
        anchor_value=anchor_value,
        beats_anchor=None if anchor_value is None else better(value, anchor_value) and value != anchor_value,
    )


def set_one_rows(doc: dict) -> list[Row]:
    """Rows from `seer.evaluate --set I --out x.json`: its per (GPU, op) table."""
    rows = []
    for key, m in doc.get("op", {}).items():
        if key == "overall" or "/" not in key:
            continue
        gpu, op = key.rsplit("/", 1)
        bar = SET_ONE.get(op)
        if bar is not None and m.get("n"):
            rows.append(_row(gpu, bar, m["n"], m[bar.metric], None))
    return rows


def set_two_rows(doc: dict) -> list[Row]:
    """Rows from `seer.evaluate --set II --out x.json`: per GPU, seer's pick beside cuDNN's heuristic
    (or, on NeuSight's data, agreement with the autotuner)."""
    rows = []
    for gpu, m in doc.get("by_gpu", {}).items():
        if "agreement" in m:
            rows.append(_row(gpu, AGREEMENT, m["n"], m["agreement"], None))
            continue
        for bar in SET_TWO:
            rows.append(_row(gpu, bar, m["model"]["n"], m["model"][bar.metric], m["cudnn_heuristic"][bar.metric]))
    return rows


def models_rows(doc: dict, bar: Bar = MODELS) -> list[Row]:
    """Rows from `seer.evaluate --set models --out x.json`: per GPU, seer's and NeuSight's median
    whole-model APE (its `by_gpu` and `neusight_by_gpu` tables); `bar` says which graphs they
    are (forward passes: MODELS, training steps: TRAINING)."""
    neusight = {r["gpu"]: r for r in doc.get("neusight_by_gpu", [])}
    rows = []
    for r in doc.get("by_gpu", []):
        if r["gpu"] == "overall":
            continue
        ns = neusight.get(r["gpu"], {}).get(bar.metric)
        rows.append(_row(r["gpu"], bar, r["n"], r[bar.metric], ns))
    return rows


def _pct(v: float | None) -> str:
    return "" if v is None else f"{100 * v:.1f}%"


def format_rows(rows: list[Row]) -> str:
    """The headline table: one line per GPU and figure, target and anchor beside it."""
    cells = [("GPU", "evaluation", "n", "seer", "target", "", "anchor", "")]
    for r in rows:
        target = "" if r.target is None else f"{'>=' if r.higher_is_better else '<='} {100 * r.target:g}%"
        met = "" if r.target_met is None else ("met" if r.target_met else "missed")
        anchor = "" if r.anchor_value is None else f"{r.anchor} {_pct(r.anchor_value)} ({r.anchor_source})"
        beats = (
            ""
            if r.beats_anchor is None
            else ("better" if r.beats_anchor else "tie" if r.value == r.anchor_value else "worse")
        )
        cells.append((r.gpu, r.evaluation, str(r.n), _pct(r.value), target, met, anchor, beats))
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    right = {2, 3}  # numbers right-aligned
    lines = [
        "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cell, widths))).rstrip()
        for cell in cells
    ]
    return "\n".join(lines)


def as_json(rows: list[Row]) -> list[dict]:
    return [asdict(r) for r in rows]
