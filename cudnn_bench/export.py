"""SEER-format Excel workbooks (sheets train and test) from the harness's records.

One workbook per convolution kernel variant, as SEER's MATLAB code reads them: rows of one
(algorithm, kernel role, kernel variant) with the variant label from `seer.data.variants.classify`.
The `time` column is the kernel's own median time where the timing pass traced kernels (SEER's
per-kernel times), else the whole call's. The train/test split is SEER's deterministic rule
within each variant (`seer.data.records.split_rows`). Needs openpyxl (a CPU-side dependency).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.data.records.load import record_files
from seer.data.variants import classify

from .errors import BenchError
from .redo import measured_again, unsplit


def load_records(data: str | Path) -> pd.DataFrame:
    """Every harness CSV of a folder (or one file), validated by seer.data.records.read_csv; an
    empty path, a missing one or a FIFO is refused in one sentence (seer.data.records.data_path)."""
    data = records.data_path(data, "an existing record CSV or data folder")
    files = record_files(data) if data.is_dir() else [data]
    if not files:
        raise BenchError(f"no record files (*.csv, *.csv.gz) in {data}")
    return pd.concat([records.read_csv(f) for f in files], ignore_index=True)


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "call"


def seer_frames(df: pd.DataFrame, math: str = "fma") -> dict[str, pd.DataFrame]:
    """Workbook name -> rows for it: ok convolution rows of one math family, per variant."""
    conv = df[(df["op"] == "conv_fwd") & (df["status"] == "ok") & (df["math"] == math)].copy()
    if conv.empty:
        return {}
    conv["variant"] = [classify(k).label if str(k).strip() else "call" for k in conv["kernel"]]
    kt = pd.to_numeric(conv["kernel_time_ms"], errors="coerce")
    conv["time_ms"] = np.where(kt.notna() & (kt > 0), kt, conv["time_ms"])
    conv["split"] = records.split_rows(conv, by=["algo", "role", "variant"])
    out = {}
    for (algo, role, variant), g in conv.groupby(["algo", "role", "variant"], sort=True):
        out[_safe(f"{algo}__{role}__{variant}")] = g
    return out


def export_seer_excel(data: str | Path, out: str | Path, math: str = "fma") -> list[Path]:
    df = load_records(data)
    frames = seer_frames(df, math)
    if not frames:
        raise BenchError(f"no measured convolution rows with math {math!r} in {data}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return [records.write_seer_excel(g, out / f"{name}.xlsx") for name, g in frames.items()]


def _total(df: pd.DataFrame, column: str) -> float:
    """The column's numbers summed; nan where the records have no such column."""
    return float(pd.to_numeric(df[column], errors="coerce").sum()) if column in df else float("nan")


def report(data: str | Path) -> str:
    """A short account of collected records: per suite and math, configurations, calls by
    status, share of calls with per-kernel rows and with counters, distinct main-kernel
    variants, and the measured wall time against the plan's estimate (to recalibrate
    cost.CostModel)."""
    df = load_records(data)
    lines = []
    for (suite, math), g in df.groupby(["suite", "math"], sort=True):
        calls = g.drop_duplicates("call_id")
        status = calls["status"].value_counts().to_dict()
        ok = g[g["status"] == "ok"]
        traced = ok.groupby("call_id")["kernel"].apply(lambda k: (k.astype(str).str.strip() != "").any())
        counted = ok.groupby("call_id")["fp32_inst"].apply(lambda v: v.notna().any()) if len(ok) else traced
        per_cfg = g.drop_duplicates("config_key")
        est, wall = _total(per_cfg, "est_s"), _total(per_cfg, "wall_s")
        mains = ok[ok["role"] == "main"]["kernel"].astype(str)
        variants = {classify(k).label for k in mains if k.strip()}
        lines.append(
            f"{suite} [{math}]: {per_cfg.shape[0]} configurations, {len(calls)} calls "
            f"({', '.join(f'{k} {v}' for k, v in sorted(status.items()))}); per-kernel rows for "
            f"{traced.mean() * 100 if len(traced) else 0:.0f}% of ok calls, counters for "
            f"{counted.mean() * 100 if len(counted) else 0:.0f}%; {len(variants)} main-kernel variants; "
            f"wall {wall / 60:.1f} min vs estimate {est / 60:.1f} min (x{wall / est if est else float('nan'):.2f})"
        )
    if "host_gap" in df:
        calls = df[df["status"] == "ok"].drop_duplicates("call_id")
        gap = calls["host_gap"].astype(str).str.lower() == "true"
        known = calls["host_gap"].notna() & (calls["host_gap"].astype(str) != "")
        if known.any():
            events = pd.to_numeric(calls["event_time_ms"], errors="coerce").fillna(calls["time_ms"])
            ratio = (events / pd.to_numeric(calls["gpu_span_ms"], errors="coerce"))[known]
            lines.append(
                f"host-bound calls (events > GPU span + 10%): {gap[known].mean() * 100:.1f}% of "
                f"{int(known.sum())}; events / span median {ratio.median():.3f}, "
                f"p95 {ratio.quantile(0.95):.3f}"
            )
    if "compute_type" in df:
        ct = df[df["op"] == "gemm"].drop_duplicates("config_key")["compute_type"].dropna().astype(str)
        if len(ct):
            lines.append("cuBLASLt compute types: " + ", ".join(f"{k} {v}" for k, v in ct.value_counts().items()))
    if "ncu_blocks_per_sm" in df and "model_blocks_per_sm" in df:
        both = df[["ncu_blocks_per_sm", "model_blocks_per_sm"]].apply(pd.to_numeric, errors="coerce").dropna()
        if len(both):
            same = (both["ncu_blocks_per_sm"] == both["model_blocks_per_sm"]).mean()
            lines.append(
                f"resident blocks per SM: seer.hardware.occupancy agrees with ncu on {same * 100:.0f}% "
                f"of {len(both)} kernels"
            )
    unknown = sorted({k for k in df["kernel"].astype(str) if k.strip() and classify(k).kind == "unknown"})
    if unknown:
        lines.append(f"{len(unknown)} kernel names seer.data.variants does not know, e.g. {unknown[0][:120]}")
    data = Path(data)
    again = set().union(*(measured_again(f) for f in record_files(data))) if data.is_dir() else measured_again(data)
    bad = unsplit(df)
    wrong = Counter(suite for suite, _, _ in bad)
    if wrong:
        seen = Counter(k[0] for k in bad if k in again)
        lines.append(
            "configurations whose calls' kernel records did not split into whole calls (collect --redo unsplit "
            "measures each again once: what it still shows then is cuDNN chunking the call): "
            + ", ".join(
                f"{k} {v}" + (f" ({seen[k]} measured again)" if seen[k] else "") for k, v in sorted(wrong.items())
            )
        )
    if data.is_dir() and (data / "census").is_dir():
        lines.append(census_line(data / "census"))
    return "\n".join(lines)


def census_line(folder: Path) -> str:
    """What a GPU's census folder holds (cudnn_bench.census)."""
    from seer.data.census import DIMS, read
    from seer.models.gate import ran_direct

    rows = read(folder)
    configs = len(rows.drop_duplicates(list(DIMS)))
    gemm = rows[(rows["op"] == "conv_fwd") & (rows["algo"] == "GEMM") & (rows["status"] == "ok")]
    direct = int((gemm["workspace_bytes"] == 0).sum())
    captured = rows[rows["capture"] == "ok"]
    fallback = sum(ran_direct(ks) for ks in captured["kernels"] if ks)
    return (
        f"census: {configs} configurations asked, {len(rows)} calls ({(rows['status'] == 'ok').mean() * 100:.0f}% "
        f"answered); forward GEMM without workspace (cuDNN's direct kernel) on {direct} of {len(gemm)}; "
        f"{len(captured)} calls captured, {fallback} of them to a direct kernel"
    )
