"""Accuracy metrics with the names and definitions of docs/results.md (Metrics), used by every report.

APE = |t_pred - t_meas| / t_meas. Results are fractions, not percents.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

ACCURACY_KEYS = ("n", "rmspe", "mape", "median_ape", "p90_ape", "gmae", "within_10pct")
GMAE_FLOOR = 1e-6


def ape(pred, meas) -> np.ndarray:
    pred = np.asarray(pred, dtype=np.float64)
    meas = np.asarray(meas, dtype=np.float64)
    return np.abs(pred - meas) / meas


def accuracy(pred, meas) -> dict[str, float]:
    """RMSPE, MAPE, median and p90 APE, GMAE (APE floored at 1e-6), share within 10%."""
    e = ape(pred, meas)
    if len(e) == 0:
        return {k: (0 if k == "n" else float("nan")) for k in ACCURACY_KEYS}
    return {
        "n": len(e),
        "rmspe": float(np.sqrt(np.mean(e**2))),
        "mape": float(np.mean(e)),
        "median_ape": float(np.median(e)),
        "p90_ape": float(np.quantile(e, 0.9)),
        "gmae": float(np.exp(np.mean(np.log(np.maximum(e, GMAE_FLOOR))))),
        "within_10pct": float(np.mean(e <= 0.10)),
    }


def accuracy_table(
    df: pd.DataFrame, pred: str, meas: str, by: Sequence[str] | str = (), overall: bool = True
) -> pd.DataFrame:
    """One row of accuracy metrics per group of `by`, plus an `overall` row."""
    by = [by] if isinstance(by, str) else list(by)
    rows = []
    if by:
        for key, g in df.groupby(by, sort=True, observed=True):
            key = key if isinstance(key, tuple) else (key,)
            rows.append({**dict(zip(by, key)), **accuracy(g[pred], g[meas])})
    if overall or not by:
        rows.append({**{b: "overall" for b in by}, **accuracy(df[pred], df[meas])})
    return pd.DataFrame(rows, columns=[*by, *ACCURACY_KEYS])


def format_table(table: pd.DataFrame, percent: Sequence[str] = ACCURACY_KEYS[1:]) -> str:
    """Render a metrics table for the terminal: fractions as percents with one decimal."""
    shown = table.copy()
    for c in percent:
        if c in shown:
            shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else f"{100 * v:.1f}%")
    return shown.to_string(index=False)
