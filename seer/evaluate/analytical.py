"""Held-out accuracy of the memory-bound model on real measurements, and its report.

The rows of each (GPU, op, function) group are split by SEER's rule (`records.split_rows`:
stable sort by configuration, row index mod 10 < 7 = train); the effective bandwidth, floor
and row terms are fitted on the training rows only and every metric is on the held-out rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from seer.analytical.memory import predict_memory_bound
from seer.data.records import atomic_write, neusight_dir, read_neusight, split_rows
from seer.errors import SeerError
from seer.evaluate.metrics import ACCURACY_KEYS, accuracy_table, format_table
from seer.models.memory import MemoryBoundFit, MemoryBoundModel, memory_records

NEUSIGHT_OPS = ("add", "mul", "relu", "gelu", "tanh", "softmax", "ln")
TARGET_MEDIAN_APE = 0.08
TARGET_RMSPE = 0.15
SPLIT_BY = ["gpu", "op", "fn"]


def display_op(records: pd.DataFrame) -> np.ndarray:
    """The op as a reader names it: the function for element-wise rows (add, relu, ...),
    memcpy:<direction> for copies, the op otherwise (softmax, layer_norm, ...)."""
    op = records["op"].astype(str).to_numpy()
    fn = records["fn"].astype(str).to_numpy() if "fn" in records else np.full(len(op), "")
    return np.where(op == "elementwise", fn, np.where(op == "memcpy", "memcpy:" + fn.astype(object), op))


def holdout(records: pd.DataFrame, model: str = "fitted") -> tuple[pd.DataFrame, MemoryBoundFit | None]:
    """Test rows with their prediction (`pred_ms`) and display op, and the memory-bound fit on
    the training rows (None for the datasheet model)."""
    if model not in ("fitted", "datasheet"):
        raise SeerError(f"argument model: expected 'fitted' or 'datasheet', got {model!r}")
    rec = memory_records(records).reset_index(drop=True)
    if "fn" not in rec:
        rec = rec.assign(fn="")
    # object dtype: split_rows sorts object columns as text (pandas' str dtype it would not)
    text = {c: rec[c].fillna("").astype(str).astype(object) for c in ("gpu", "op", "fn", "dtype") if c in rec}
    rec = rec.assign(**text)
    split = split_rows(rec, by=SPLIT_BY)
    train, test = rec[split == "train"], rec[split == "test"].copy()
    if test.empty:
        raise SeerError("records: too few rows for a held-out test set (SEER's split keeps 3 of 10)")
    params = MemoryBoundModel().fit(train) if model == "fitted" else None
    cols = [c for c in ("op", "rows", "cols", "fn", "dtype", "gpu") if c in test]
    test["pred_ms"] = predict_memory_bound(test[cols], params)
    test["op_name"] = display_op(test)
    return test, params


def validation_table(records: pd.DataFrame, model: str = "fitted") -> pd.DataFrame:
    """Held-out accuracy per (gpu, op) with an overall row; columns gpu, op and
    seer.evaluate.metrics.ACCURACY_KEYS (fractions). `model="datasheet"` scores the unfitted fallback."""
    return _table(holdout(records, model)[0])


def _table(test: pd.DataFrame) -> pd.DataFrame:
    tab = accuracy_table(
        test.rename(columns={"op": "op_kind", "op_name": "op"}), "pred_ms", "time_ms", by=["gpu", "op"]
    )
    return tab[["gpu", "op", *ACCURACY_KEYS]]


def missed_targets(
    table: pd.DataFrame, median_ape: float = TARGET_MEDIAN_APE, rmspe: float = TARGET_RMSPE
) -> list[str]:
    """The (gpu, op) groups of a validation table above either target, as 'gpu / op' strings."""
    rows = table[table["gpu"] != "overall"]
    bad = rows[(rows["median_ape"] > median_ape) | (rows["rmspe"] > rmspe)]
    return [f"{g} / {o}" for g, o in zip(bad["gpu"], bad["op"])]


def _write(out: Path, table: pd.DataFrame, params: MemoryBoundFit | None, data: str, model: str) -> None:
    if out.suffix == ".csv":
        atomic_write(out, lambda p: table.to_csv(p, index=False))
    elif out.suffix == ".json":
        groups = table[table["gpu"] != "overall"]
        overall = table[table["gpu"] == "overall"].iloc[0]
        doc = {
            "set": "analytical",
            "model": model,
            "data": data,
            "split": "seer.data.records.split_rows by gpu, op, fn (index mod 10 < 7 = train)",
            "targets": {"median_ape": TARGET_MEDIAN_APE, "rmspe": TARGET_RMSPE},
            "groups": [
                {"gpu": r["gpu"], "op": r["op"], **{k: r[k] for k in ACCURACY_KEYS}} for _, r in groups.iterrows()
            ],
            "overall": {k: overall[k] for k in ACCURACY_KEYS},
            "params": None if params is None else params.to_dict(),
        }
        text = json.dumps(doc, indent=1, sort_keys=True, default=lambda v: v.item())
        atomic_write(out, lambda p: p.write_text(text + "\n"))
    else:
        raise SeerError(f"argument out: expected a file name ending in .csv or .json, got {str(out)!r}")


def report(
    neusight_path: str | Path | None = None,
    out: str | Path | None = None,
    *,
    datasheet: bool = False,
    stream: TextIO | None = None,
) -> int:
    """Fit on NeuSight's training rows, print held-out accuracy per op and GPU and the fitted
    parameters; write the table to `out` (.csv or .json) if given. Returns an exit code
    (0 done, 2 bad input or no data, with one sentence on stderr)."""
    stream = stream or sys.stdout
    try:
        if out is not None and Path(out).suffix not in (".csv", ".json"):
            raise SeerError(f"argument out: expected a file name ending in .csv or .json, got {str(out)!r}")
        path = Path(neusight_path) if neusight_path is not None else neusight_dir()
        if path is None:
            raise SeerError(
                "NeuSight data not found: pass its folder or set SEER_NEUSIGHT (expected ../shared/datasets/neusight)"
            )
        records = read_neusight(path, ops=NEUSIGHT_OPS)
        model = "datasheet" if datasheet else "fitted"
        test, params = holdout(records, model)
        table = _table(test)
        what = (
            "datasheet roofline, nothing fitted"
            if datasheet
            else "roofline with fitted effective bandwidth and floor (statsmodels WLS, 1/t^2)"
        )
        how = "scored on" if datasheet else "fitted on the training rows and scored on"
        print(
            f"Memory-bound kernels, {what}: held-out accuracy on NeuSight ({path}),\n"
            f"{how} the test rows of SEER's split per GPU, op and function "
            f"({len(test)} test rows).\n",
            file=stream,
        )
        print(format_table(table), file=stream)
        missed = missed_targets(table)
        verdict = (
            "met for every op on every GPU"
            if not missed
            else f"missed by {len(missed)} of {len(table) - 1}: {', '.join(missed[:5])}"
            + (f", and {len(missed) - 5} more" if len(missed) > 5 else "")
        )
        print(
            f"\nTargets (median APE <= {TARGET_MEDIAN_APE:.0%}, RMSPE <= {TARGET_RMSPE:.0%}): {verdict}.", file=stream
        )
        if params is not None:
            fit = params.table()
            shown = fit[
                [
                    "gpu",
                    "kernel",
                    "n",
                    "bw_gbs",
                    "datasheet_gbs",
                    "bw_of_peak",
                    "floor_us",
                    "latency_us",
                    "row_ns",
                    "reread_cols",
                ]
            ].copy()
            shown["bw_of_peak"] = shown["bw_of_peak"].map(lambda v: "" if pd.isna(v) else f"{100 * v:.0f}%")
            for c in ("bw_gbs", "floor_us", "latency_us", "row_ns"):
                shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else f"{v:.1f}")
            shown["reread_cols"] = shown["reread_cols"].map(lambda v: "" if pd.isna(v) else f">{v:.0f}")
            print(
                "\nFitted parameters (training rows): effective bandwidth, its share of the "
                "datasheet peak, floor, latency, cost per row, re-read threshold (columns):\n",
                file=stream,
            )
            print(shown.to_string(index=False), file=stream)
        if out is not None:
            _write(Path(out), table, params, str(path), model)
            print(f"\nwrote {out}", file=stream)
        return 0
    except SeerError as exc:
        print(f"seer: {exc}", file=sys.stderr)
        return 2
