"""The harness's CSV (python -m cudnn_bench collect): written atomically, read and validated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import variants
from seer.data.records.blocks import read_raw
from seer.data.records.files import atomic_write
from seer.data.records.schema import ALWAYS, FIELDS, conform, conv_output_hw
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


# what a call's time_ms is (column time_basis)
SPAN = "span"  # the GPU span of its kernels: what the GPU did
BUSY = "busy"  # its kernels' times and the GPU's own launch gaps: the span less the host's gaps between launches
EVENT = "event"  # CUDA events: no kernel span was measured (or it equals the events)
CHUNKED = "chunked"  # CUDA events: cuDNN looped over chunks of the batch and the span is one chunk's
UNVERIFIED = "unverified"  # events exceed the span and the kernels' geometry cannot say why: not scored
GEMM_LIKE = ("IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM")  # one output tile per block of the main kernel
COVER_SLACK = 0.999


def output_cover(df: pd.DataFrame) -> np.ndarray:
    """Per row, the share of the call's output its kernel's blocks cover (blocks x tile_m x
    tile_n over the output's elements), where the kernel tiles the output as a GEMM does
    (implicit-GEMM and GEMM convolutions, cuBLASLt GEMMs, with tile sizes in the kernel name);
    NaN elsewhere (FFT, Winograd, kernels without tile sizes: their grid says nothing)."""
    tiles = variants.annotate(df[["kernel"]].fillna(""))
    area = (tiles["tile_m"] * tiles["tile_n"]).to_numpy(dtype=float)
    blocks = pd.to_numeric(df["blocks"], errors="coerce").to_numpy(dtype=float)
    n = pd.to_numeric(df["batch"], errors="coerce").to_numpy(dtype=float)
    conv = (df["op"] == "conv_fwd").to_numpy() & df["algo"].isin(GEMM_LIKE).to_numpy()
    gemm = df["op"].isin(("gemm", "bmm", "linear")).to_numpy()
    out = np.full(len(df), np.nan)
    if conv.any():
        p, q = conv_output_hw(df[conv])
        out[conv] = blocks[conv] * area[conv] / (n[conv] * p * q * df.loc[conv, "c_out"].to_numpy(dtype=float))
    if gemm.any():
        m, k = (df.loc[gemm, c].to_numpy(dtype=float) for c in ("m", "n"))
        out[gemm] = blocks[gemm] * area[gemm] / (n[gemm] * m * k)
    return out


def time_basis(df: pd.DataFrame, partial: np.ndarray) -> np.ndarray:
    """span, event, chunked or unverified per row (see the constants). A call whose event time
    exceeds its kernels' span beyond host gaps (span_partial) is `chunked` where its main
    kernel's blocks cover less than the output, and was not chunked where they cover all of it
    (its time is the span: the events hold a host gap of 0.1-2 ms that comes and goes between
    runs); where the geometry cannot tell, `unverified`."""
    basis = np.full(len(df), EVENT, dtype=object)
    if not partial.any():
        return basis
    rows = np.flatnonzero(partial)
    sub = df.iloc[rows]
    cover = output_cover(sub)
    main = (sub["role"] == "main").to_numpy() if "role" in sub else np.ones(len(sub), dtype=bool)
    per_call = pd.Series(np.where(main, cover, np.nan)).groupby(sub["call_id"].to_numpy()).transform("max").to_numpy()
    basis[rows] = np.where(per_call >= COVER_SLACK, SPAN, np.where(per_call < COVER_SLACK, CHUNKED, UNVERIFIED))
    return basis


# The GPU's own gap between consecutive kernels of a stream while the host is ahead of it: the
# median gap of calls whose kernels run one after another and average over 100 us each (the host
# has enqueued the next launch long before), 1.8 us on both the H100 and the H200
# (python -m seer.evaluate --set noise prints it per GPU).
LAUNCH_GAP_MS = 0.0018


def busy_ms(df: pd.DataFrame) -> np.ndarray:
    """Per row, its call's GPU time without the host's gaps: the time its kernels ran plus
    LAUNCH_GAP_MS for each idle gap between them. The harness measures both since 2026-11-27
    (`gpu_busy_ms`, `gpu_gaps`: cudnn_bench.cupti.busy, per call); for records without them,
    the kernels' times summed (each launch's median) and a gap between consecutive launches.
    NaN for a call of one launch (its span is its kernel) or with a row that has no kernel time.

    cuDNN's FFT, FFT_TILING and Winograd calls launch 4 to 100 short kernels; where the host
    enqueues them slower than the GPU runs them, the span holds idle gaps that come and go
    between runs (run-to-run p90 of 25% for the H100's FFT_TILING, against 6.9% for this time)."""
    measured = _measured_busy(df)
    if "kernel_time_ms" not in df or "call_id" not in df:
        return measured
    c = call_kernels(df, ["call_id"]).reindex(df["call_id"].to_numpy())  # each row's call
    busy = c["kernel_ms"] + (c["launches"] - 1) * LAUNCH_GAP_MS
    summed = busy.where(c["whole"] & (c["launches"] > 1)).to_numpy(dtype=float, na_value=np.nan)
    return np.where(np.isfinite(measured), measured, summed)


def call_kernels(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per call (rows grouped by the columns `keys`; rows of no call left out): its kernels'
    times summed (`kernel_ms`: each launch's median, rows without one left out), its launches
    (`launches`; a row without the column is one) and whether every row has a kernel time
    (`whole`). What a call's busy time (busy_ms) and the GPU's own launch gap
    (seer.evaluate.noise.launch_gaps) are worked out from."""
    kernel = pd.to_numeric(df["kernel_time_ms"], errors="coerce")
    launches = pd.to_numeric(df["launches"], errors="coerce").fillna(1) if "launches" in df else 1.0
    calls = pd.DataFrame({"k": kernel, "n": launches}, index=df.index).groupby([df[k] for k in keys], sort=False)
    out = calls.agg(kernel_ms=("k", "sum"), launches=("n", "sum"), timed=("k", "count"), rows=("k", "size"))
    return out.assign(whole=out["timed"] == out["rows"]).drop(columns=["timed", "rows"])


def _measured_busy(df: pd.DataFrame) -> np.ndarray:
    """The harness's busy time of each row's call where it measured one (NaN elsewhere): the
    time its kernels ran, with the GPU's own gap for each idle gap between them."""
    if "gpu_busy_ms" not in df or "gpu_gaps" not in df:
        return np.full(len(df), np.nan)
    ran = pd.to_numeric(df["gpu_busy_ms"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    gaps = pd.to_numeric(df["gpu_gaps"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return ran + gaps * LAUNCH_GAP_MS


def kernel_time(df: pd.DataFrame) -> pd.DataFrame:
    """Models learn and are scored on what the GPU did, as SEER's were: where the harness
    measured the GPU span of a call's kernels, `time_ms` becomes that span and the CUDA-event
    time moves to `event_time_ms` (events also hold the host's enqueue gaps, which dominate
    calls of a few microseconds), unless cuDNN chunked the batch (time_basis). Where the span
    exceeds the call's kernel times and the GPU's own launch gaps (busy_ms), the host left the
    GPU idle between launches, and `time_ms` is that busy time instead (basis busy). Calls whose
    span is no call (chunked, unverified) keep their event time and are marked span_partial:
    their kernel rows are not learned from. Idempotent: a second pass changes nothing."""
    if "time_basis" in df:
        return df
    span = df["gpu_span_ms"].to_numpy(dtype=float, na_value=np.nan)
    if not np.isfinite(span).any():  # no kernel spans (NeuSight, untraced runs): event time is all there is
        return df
    event = df["time_ms"].to_numpy(dtype=float)
    flagged = span_partial(event, span)
    basis = time_basis(df, flagged)
    partial = flagged & (basis != SPAN)
    use = np.isfinite(span) & (span > 0) & ~np.isclose(span, event) & ~partial
    basis[use] = SPAN
    # calls timed by their span, or by events that equal it: busy time replaces the time they have
    spanned = (basis == SPAN) | (np.isfinite(span) & np.isclose(span, event) & ~partial)
    busy = busy_ms(df)
    with np.errstate(invalid="ignore"):
        idle = spanned & (busy < np.where(use, span, event))
    basis[idle] = BUSY
    use |= idle
    df = df.assign(time_basis=basis)
    if partial.any():  # the kernel rows of such a call are wrong too: seer.fit treats it as unnamed
        df["span_partial"] = partial
    if use.any():
        df.loc[use, "event_time_ms"] = df.loc[use, "time_ms"]
        df.loc[use, "time_ms"] = np.where(idle, busy, span)[use]
    return df
