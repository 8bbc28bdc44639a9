"""Predicted time of every op of a workload, and of the whole model.

Each op the mapping (seer.workload.ops) gave a config is timed by the GPU's fits: GEMMs by the
per-variant models (the GEMM op the fits cover, seer.predict.gemms: NeuSight's `linear`/`bmm`,
the harness's cuBLASLt `gemm`; the kernel the library's heuristic launches), convolutions by
the algorithm seer picks (what cuDNN's autotuner would pick: the fastest), memory-bound ops by
the analytical models.

The whole model runs ops one after another from one host thread: each op costs the host its
dispatch time and a kernel starts when both the host has launched it and the GPU is free (the
DLRM performance model's rule). Big models are GPU-bound, so this is the sum of kernel times
plus the host time before the first kernel; small ones are host-bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seer.data.records import GEMM_OPS
from seer.errors import SeerError
from seer.predict import Fits
from seer.predict.gemms import timed_as
from seer.workload.ops import GEMM_KINDS, KERNEL_KINDS

DEFAULT_DISPATCH_MS = 0.006  # host time of one op where no measurement says otherwise (6 us)


@dataclass(frozen=True)
class WholeModel:
    """Whole-model time (ms) three ways, and what part of it seer did not model."""

    kernel_sum_ms: float  # every kernel back to back
    replay_ms: float  # host dispatch and GPU in one timeline (the prediction)
    unmodelled_ms: float  # measured time of ops seer has no predictor for (included as measured)
    dispatch_ms: float  # host time per op used


def _predict_group(fits: Fits, op: str, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time, outside the fitted range, the op of the fits that timed it) of configs of one seer
    op; Fits raises a time below what the datasheet allows to that bound."""
    if op == "conv_fwd":
        df = df.assign(algo=fits.best_algorithm(df))
    table = fits.predict_frame(df)
    return (
        table["time_ms"].to_numpy(dtype=float),
        table["extrapolated"].to_numpy(dtype=bool),
        table["timed_as"].to_numpy(dtype=object),
    )


def _seer_op(kind: str, cfg: dict, covered: set[str]) -> str | None:
    """The op of the config (GEMMs: one of seer's GEMM ops) where the fits time it, else None."""
    if kind in GEMM_KINDS:
        op = cfg["op"] if cfg["op"] in GEMM_OPS else kind
        return op if timed_as(op, int(cfg.get("batch", 1)), covered) else None
    return cfg["op"] if cfg["op"] in covered else None


def predict_ops(ops: pd.DataFrame, fits: Fits, dispatch_ms: float = DEFAULT_DISPATCH_MS) -> pd.DataFrame:
    """The op table with `predicted_ms` (GPU time of the op's kernels; the host dispatch time for
    ops that launch none), `predictor` (the seer op that timed it), `extrapolated` (its config
    lies outside the fitted range of the model that timed it) and, for ops seer could not
    time, `kind` = unmodelled with the reason in `why`."""
    out = ops.copy()
    pred = np.full(len(out), np.nan)
    predictor = np.full(len(out), "", dtype=object)
    outside = np.zeros(len(out), dtype=bool)
    kind = out["kind"].to_numpy(dtype=object).copy()
    why = out["why"].to_numpy(dtype=object).copy() if "why" in out else np.full(len(out), "", dtype=object)
    covered = set(fits.ops)  # memory-bound ops: the datasheet where not fitted
    timed = np.flatnonzero(np.isin(kind, KERNEL_KINDS))
    groups: dict[tuple[str, str], list[int]] = {}
    for i in timed:
        cfg = out["config"].iat[i]
        op = _seer_op(kind[i], cfg, covered)
        if op is None:
            kind[i], why[i] = "unmodelled", f"the fits for {fits.gpu.name} do not cover {cfg['op']}"
            continue
        groups.setdefault((op, str(cfg.get("dtype", ""))), []).append(int(i))
    for (op, _), idx in groups.items():
        df = pd.DataFrame([out["config"].iat[i] for i in idx]).assign(op=op)
        try:
            pred[idx], outside[idx], predictor[idx] = _predict_group(fits, op, df)
        except SeerError:  # one config the model refuses: time the others one by one
            for j, row in enumerate(idx):
                try:
                    t, far, by = _predict_group(fits, op, df.iloc[[j]])
                    pred[row], outside[row], predictor[row] = t[0], far[0], by[0]
                except SeerError as exc:
                    kind[row], why[row] = "unmodelled", str(exc)
    pred[kind == "dispatch"] = dispatch_ms
    return out.assign(kind=kind, why=why, predicted_ms=pred, predictor=predictor, extrapolated=outside)


def timeline(host_ms: np.ndarray, gpu_ms: np.ndarray) -> float:
    """End time of ops issued in order by one host thread: op i costs the host host_ms[i] and
    its kernels (gpu_ms[i], 0 for none) start at max(GPU free, host time after its launch)."""
    host_end = np.cumsum(host_ms)
    g = np.cumsum(gpu_ms)
    g_before = g - gpu_ms
    # GPU end after op i = g[i] + max over launched j <= i of (host_end[j] - g_before[j])
    slack = np.where(gpu_ms > 0, host_end - g_before, -np.inf)
    gpu_end = g + np.maximum.accumulate(np.maximum(slack, 0.0))
    return float(max(host_end[-1] if len(host_end) else 0.0, gpu_end[-1] if len(gpu_end) else 0.0))


def whole_model(ops: pd.DataFrame, dispatch_ms: float = DEFAULT_DISPATCH_MS) -> WholeModel:
    """Whole-model time of a predicted op table (predict_ops): each op repeated `count` times in
    graph order (a block's ops run num_layer times in a row, block after block); ops seer does
    not model count with their measured time."""
    k = ops["kind"].to_numpy(dtype=object)
    kernel = np.isin(k, KERNEL_KINDS)
    unmodelled = k == "unmodelled"
    gpu = np.where(kernel, ops["predicted_ms"].to_numpy(dtype=float), 0.0)
    meas = ops["measured_ms"].to_numpy(dtype=float) if "measured_ms" in ops else np.full(len(ops), np.nan)
    gpu = np.where(unmodelled, np.nan_to_num(meas), gpu)
    count = ops["count"].to_numpy(dtype=int) if "count" in ops else np.ones(len(ops), dtype=int)
    part = ops["part"].to_numpy(dtype=object) if "part" in ops else np.full(len(ops), "block", dtype=object)
    order = _unrolled(part, count)
    host = np.full(len(order), dispatch_ms)
    return WholeModel(
        kernel_sum_ms=float((gpu * count).sum()),
        replay_ms=timeline(host, gpu[order]),
        unmodelled_ms=float((np.nan_to_num(meas) * count)[unmodelled].sum()),
        dispatch_ms=dispatch_ms,
    )


def _unrolled(part: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Row positions in execution order: prologue, the block `count` times, epilogue."""
    idx = np.arange(len(part))
    block = idx[part == "block"]
    reps = int(count[block[0]]) if len(block) else 0
    return np.concatenate([idx[part == "prologue"], np.tile(block, reps), idx[part == "epilogue"]]).astype(int)
