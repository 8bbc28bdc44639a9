"""The per-kernel table of a trace, as PyTorch inductor's profile_analysis.py prints it, with seer's prediction.

One row per kernel name (every GPU event: kernels, copies, sets): how often it ran, its total and
mean time and share of the GPU time, its FLOPs and bytes, the TFLOP/s and GB/s it achieved and
what fraction of the GPU's peaks that is, and seer's predicted time beside the measured one.
`furthest` ranks the kernels seer is furthest from: |log(measured / predicted)| weighted by the
kernel's measured time, so a long kernel off by 30% ranks above a 2 us one off by 3x.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.trace.kernels import Explained

COLUMNS = [
    "name", "op", "kind", "count", "total_ms", "mean_us", "gpu_share", "flops", "bytes", "achieved_tflops",
    "achieved_gbs", "frac_peak_flops", "frac_peak_bw", "predicted_ms", "ratio",
]  # fmt: skip


def _mode(s: pd.Series) -> str:
    """The most frequent value (the first on a tie)."""
    return str(s.value_counts(sort=True).index[0]) if len(s) else ""


def group(kernels: pd.DataFrame, by: str) -> pd.DataFrame:
    """Kernels of one `by` value (kernel name, op name) together: counts, times (ms), work, rates
    from the totals (the fractions of the peaks: the kernels' own, weighted by their time, so a
    host copy stays against PCIe), and seer's prediction. Rates are over the kernels seer has work
    for; predicted_ms and ratio over those it predicts (NaN where it predicts none)."""
    k = kernels
    pred = k["predicted_us"].to_numpy(float)
    has = np.isfinite(pred)
    with_work = np.isfinite(k["flops"].to_numpy(float))
    t = pd.DataFrame(
        {
            by: k[by].to_numpy(object),
            "dur": k["dur_us"].to_numpy(float),
            "flops": np.where(with_work, k["flops"].to_numpy(float), 0.0),
            "bytes": np.where(with_work, k["bytes"].to_numpy(float), 0.0),
            "work_dur": np.where(with_work, k["dur_us"].to_numpy(float), 0.0),
            "fpf": np.nan_to_num(k["frac_peak_flops"].to_numpy(float) * k["dur_us"].to_numpy(float)),
            "fpb": np.nan_to_num(k["frac_peak_bw"].to_numpy(float) * k["dur_us"].to_numpy(float)),
            "n_work": with_work.astype(int),
            "pred": np.where(has, pred, 0.0),
            "pred_dur": np.where(has, k["dur_us"].to_numpy(float), 0.0),
            "n_pred": has.astype(int),
        }
    )
    g = t.groupby(by, sort=False)
    s = g[["dur", "flops", "bytes", "work_dur", "fpf", "fpb", "n_work", "pred", "pred_dur", "n_pred"]].sum()
    s["count"] = g.size()
    total = float(t["dur"].sum())
    secs = s["work_dur"].to_numpy(float) / 1e6
    work = (s["n_work"] > 0).to_numpy() & (secs > 0)
    predicted = (s["n_pred"] > 0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        flops_s = np.where(work, s["flops"] / np.where(work, secs, 1), np.nan)
        bytes_s = np.where(work, s["bytes"] / np.where(work, secs, 1), np.nan)
        ratio = np.where(predicted & (s["pred"] > 0), s["pred_dur"] / s["pred"], np.nan)
    out = pd.DataFrame(
        {
            by: s.index.to_numpy(object),
            "count": s["count"].to_numpy(np.int64),
            "total_ms": s["dur"].to_numpy(float) / 1e3,
            "mean_us": s["dur"].to_numpy(float) / s["count"].to_numpy(float),
            "gpu_share": s["dur"].to_numpy(float) / total if total > 0 else np.nan,
            "flops": np.where(s["n_work"] > 0, s["flops"], np.nan),
            "bytes": np.where(s["n_work"] > 0, s["bytes"], np.nan),
            "achieved_tflops": flops_s / 1e12,
            "achieved_gbs": bytes_s / 1e9,
            "frac_peak_flops": np.where(work, s["fpf"] / np.where(work, s["work_dur"], 1), np.nan),
            "frac_peak_bw": np.where(work, s["fpb"] / np.where(work, s["work_dur"], 1), np.nan),
            "predicted_ms": np.where(predicted, s["pred"] / 1e3, np.nan),
            "ratio": ratio,
        }
    )
    return out.sort_values("total_ms", ascending=False, kind="stable").reset_index(drop=True)


def kernel_summary(ex: Explained) -> pd.DataFrame:
    """One row per kernel name (COLUMNS), longest total first; `op` and `kind` are those of most of
    its launches. Rates and fractions are of the kernels seer has work for."""
    k = ex.kernels
    table = group(k, "name")
    first = k.groupby("name", sort=False).agg(op=("op_name", _mode), kind=("kind", _mode))
    table = table.join(first, on="name")
    return table[COLUMNS]


def furthest(table: pd.DataFrame, top: int) -> pd.DataFrame:
    """The `top` rows of a summary seer is furthest from: |log(measured / predicted)| x measured time."""
    t = table[np.isfinite(table["ratio"].to_numpy(float)) & (table["ratio"] > 0)]
    score = np.abs(np.log(t["ratio"].to_numpy(float))) * t["total_ms"].to_numpy(float)
    t = t.assign(off_ms=score)
    return t.sort_values("off_ms", ascending=False, kind="stable").head(top).reset_index(drop=True)


def totals(ex: Explained) -> dict[str, float]:
    """Whole-trace figures (ms): GPU time (every GPU event), the part seer predicts and its
    prediction of it, and the time of kernels it does not."""
    k = ex.kernels
    dur = k["dur_us"].to_numpy(float)
    pred = k["predicted_us"].to_numpy(float)
    has = np.isfinite(pred)
    return {
        "gpu_ms": float(dur.sum()) / 1e3,
        "predicted_kernels_measured_ms": float(dur[has].sum()) / 1e3,
        "predicted_ms": float(pred[has].sum()) / 1e3,
        "unpredicted_ms": float(dur[~has].sum()) / 1e3,
        "kernels": float(len(k)),
        "steps": float(ex.steps),
    }
