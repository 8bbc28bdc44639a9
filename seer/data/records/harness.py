"""The harness's CSV (python -m cudnn_bench collect): written atomically, read and validated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data.records.blocks import read_raw
from seer.data.records.files import atomic_write
from seer.data.records.schema import ALWAYS, FIELDS, conform
from seer.data.records.validate import drop_duplicates, numeric, require_columns, validate


def write_csv(df: pd.DataFrame, path: str | Path) -> Path:
    """Write records as the harness CSV (gzip if the name ends in .gz), atomically."""
    rec = conform(df)
    gz = "gzip" if str(path).endswith(".gz") else None
    return atomic_write(path, lambda p: rec.to_csv(p, index=False, compression=gz))


def read_csv(path: str | Path) -> pd.DataFrame:
    """Read a harness CSV (columns = record fields; .csv or .csv.gz) and validate it."""
    path = Path(path)
    raw, lines = read_raw(path)
    require_columns(raw, ALWAYS, str(path))
    for f in FIELDS:
        if f.name in raw and f.kind != "str":
            raw[f.name] = numeric(raw[f.name], str(path), f.name, lines, integer=f.kind == "int", required=False)
    df = validate(raw, str(path), lines)
    if (df["source"] == "").all():
        df["source"] = path.name
    return drop_duplicates(kernel_time(df), str(path), lines)


PARTIAL_SLACK_MS = 0.1  # host enqueue gaps stay below this (the H100 run: p99 0.03 ms on GEMMs)
PARTIAL_RATIO = 1.25


def span_partial(event_ms: np.ndarray, span_ms: np.ndarray) -> np.ndarray:
    """Calls whose CUDA-event time exceeds their kernels' GPU span by more than host gaps can
    explain (0.1 ms and 25%): cuDNN looped the call over chunks of the batch and the tracer's
    records split at a chunk, not at a call, so the span covers one chunk (on the H100 run: 7x
    median, up to 224x). Their event time stands and their kernel rows are not used."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(span_ms) & (event_ms - span_ms > PARTIAL_SLACK_MS) & (event_ms > PARTIAL_RATIO * span_ms)


def kernel_time(df: pd.DataFrame) -> pd.DataFrame:
    """Models learn and are scored on the call's kernel time, as SEER's were: where the harness
    measured the GPU span of a call's kernels, `time_ms` becomes that span and the CUDA-event
    time moves to `event_time_ms` (events also hold the host's enqueue gaps, which dominate
    calls of a few microseconds). Idempotent: a second pass changes nothing."""
    span = df["gpu_span_ms"].to_numpy(dtype=float, na_value=np.nan)
    event = df["time_ms"].to_numpy(dtype=float)
    partial = span_partial(event, span)
    if partial.any():  # the kernel rows of such a call are wrong too: seer.fit treats it as unnamed
        df = df.assign(span_partial=partial)
    use = np.isfinite(span) & (span > 0) & ~np.isclose(span, event) & ~partial
    if use.any():
        df = df.copy()
        df.loc[use, "event_time_ms"] = df.loc[use, "time_ms"]
        df.loc[use, "time_ms"] = span[use]
    return df
