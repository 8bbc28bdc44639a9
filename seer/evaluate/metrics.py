"""Accuracy metrics with the names and definitions of docs/results.md (Metrics), used by every report.

APE = |t_pred - t_meas| / t_meas. Results are fractions, not percents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

ACCURACY_KEYS = ("n", "rmspe", "mape", "median_ape", "p90_ape", "gmae", "within_10pct")
INTERVAL_KEYS = ("rmspe_lo", "rmspe_hi")  # RMSPE's bootstrap interval (rmspe_interval)
GMAE_FLOOR = 1e-6
DRAWS = 1000  # bootstrap resamples of a table's rows
LEVEL = 0.95


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


def rmspe_interval(pred, meas, draws: int = DRAWS, level: float = LEVEL, seed: int = 0) -> tuple[float, float]:
    """The central `level` interval of RMSPE over `draws` bootstrap resamples of the rows.

    RMSPE is a mean of squares, so a few rows carry it: on the H100's Test-set-I, keying
    FFT_TILING's calls otherwise changed nothing of IMPLICIT_PRECOMP_GEMM but which of its rows
    SEER's split held out (it goes by kernel name, and algorithms share kernels), and its RMSPE
    read 24.5% instead of 29.8%. A figure or a difference inside this interval is no evidence.
    Seeded, so a rerun prints the same interval."""
    e2 = ape(pred, meas) ** 2
    n = len(e2)
    if n == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = np.empty(draws)
    for i in range(0, draws, 100):  # a block of resamples at a time: memory stays n x 100
        k = min(100, draws - i)
        means[i : i + k] = e2[rng.integers(0, n, size=(k, n))].mean(axis=1)
    lo, hi = np.quantile(np.sqrt(means), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def accuracy_table(
    df: pd.DataFrame,
    pred: str,
    meas: str,
    by: Sequence[str] | str = (),
    overall: bool = True,
    interval: bool = False,
) -> pd.DataFrame:
    """One row of accuracy metrics per group of `by`, plus an `overall` row; with `interval`,
    RMSPE's bootstrap interval beside it (INTERVAL_KEYS, rmspe_interval)."""
    by = [by] if isinstance(by, str) else list(by)

    def metrics(rows: pd.DataFrame) -> dict:
        out = accuracy(rows[pred], rows[meas])
        if interval:
            out.update(zip(INTERVAL_KEYS, rmspe_interval(rows[pred], rows[meas]), strict=True))
        return out

    rows = []
    if by:
        for key, g in df.groupby(by, sort=True, observed=True):
            key = key if isinstance(key, tuple) else (key,)
            rows.append({**dict(zip(by, key)), **metrics(g)})
    if overall or not by:
        rows.append({**{b: "overall" for b in by}, **metrics(df)})
    keys = [*ACCURACY_KEYS[:2], *INTERVAL_KEYS, *ACCURACY_KEYS[2:]] if interval else list(ACCURACY_KEYS)
    return pd.DataFrame(rows, columns=[*by, *keys])


def per_group(
    df: pd.DataFrame, by: list[str], row: Callable[[pd.DataFrame], dict], keys: Sequence[str]
) -> pd.DataFrame:
    """A table of `row`'s figures (columns `keys`) for each group of `by`, then for every row
    together (labelled "overall")."""
    rows = [{**dict(zip(by, k if isinstance(k, tuple) else (k,))), **row(g)} for k, g in df.groupby(by, sort=True)]
    rows.append({**dict.fromkeys(by, "overall"), **row(df)})
    return pd.DataFrame(rows, columns=[*by, *keys])


def format_table(table: pd.DataFrame, percent: Sequence[str] = (*ACCURACY_KEYS[1:], *INTERVAL_KEYS)) -> str:
    """Render a metrics table for the terminal: fractions as percents with one decimal."""
    shown = table.copy()
    for c in percent:
        if c in shown:
            shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else f"{100 * v:.1f}%")
    return shown.to_string(index=False)
