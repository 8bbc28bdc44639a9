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

An op's predicted time from fits of NeuSight's data is what timing the op alone gives (its
per-node times and kernel data are times of whole calls): its host call, then its kernels. On
the timeline the host part is the dispatch time and the GPU's share is the rest (at least
KERNEL_FLOOR_MS): in a whole run the next call is issued while the kernels run. Without this
split a whole model is predicted as the sum of its ops timed alone, which on NeuSight's graphs
exceeds the measured whole by 3-54% (docs/results.md, Whole models). Fits of the GPU's time
alone (the harness's records: times_calls is False) keep all of it on the GPU.
A training step (seer.workload.training) is the forward ops, then the backward and gradient
accumulation ops in reverse order, on the same timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer.analytical.memory import work
from seer.data.records import GEMM_OPS, MEMORY_OPS
from seer.errors import SeerError
from seer.hardware.gpus import GPUSpec
from seer.predict import Fits
from seer.predict.gemms import timed_as
from seer.predict.kernel_level import KernelFloors, bundled, kernel_floors
from seer.workload.ops import GEMM_KINDS, KERNEL_KINDS

DEFAULT_DISPATCH_MS = 0.006  # host time of one op where no measurement says otherwise (6 us)
KERNEL_FLOOR_MS = 0.002  # the least a launched kernel occupies the GPU (an assumed 2 us)


def dispatch_for(gpu: GPUSpec, floors: KernelFloors | None = None) -> float:
    """Host time of one op on `gpu` (ms): the dispatch fitted on NeuSight's calls
    (seer.models.kernel_floor: a call's time less its kernel's), the fitted GPUs' median for
    another GPU, DEFAULT_DISPATCH_MS where none was fitted; one rule for every whole-model path."""
    fitted = (bundled() if floors is None else floors).dispatch(gpu)
    return DEFAULT_DISPATCH_MS if fitted is None else fitted


@dataclass(frozen=True)
class WholeModel:
    """Whole-model time (ms) three ways, and what part of it seer did not model."""

    kernel_sum_ms: float  # every kernel back to back
    replay_ms: float  # host dispatch and GPU in one timeline (the prediction)
    unmodelled_ms: float  # measured time of ops seer has no predictor for (included as measured)
    dispatch_ms: float  # host time per op used
    by_direction: dict[str, float] = field(
        default_factory=dict
    )  # training: forward, backward (+ accumulation) on the timeline


def _predict_group(fits: Fits, op: str, df: pd.DataFrame, autotune: bool = False) -> tuple[np.ndarray, ...]:
    """(time, outside the fitted range, the op of the fits that timed it, what it assumed, the
    kernel variant) of configs of one seer op: a GEMM or convolution is the kernel traces saw the
    framework launch, or the fastest fitted algorithm (`autotune`, or where no trace says;
    Fits.predict_frame); Fits raises a time below what the datasheet allows to that bound."""
    table = fits.predict_frame(df, autotune=autotune)
    return tuple(table[c].to_numpy() for c in ("time_ms", "extrapolated", "timed_as", "assumed", "kernel"))


def _seer_op(kind: str, cfg: dict, covered: set[str]) -> str | None:
    """The op of the config (GEMMs: one of seer's GEMM ops) where the fits time it, else None."""
    if kind in GEMM_KINDS:
        op = cfg["op"] if cfg["op"] in GEMM_OPS else kind
        return op if timed_as(op, int(cfg.get("batch", 1)), covered) else None
    return cfg["op"] if cfg["op"] in covered else None


def _kernels(parts: object, config: dict, kind: str) -> list[tuple[str, dict, str]]:
    """(kind, config, label) of each kernel of a row: its `parts` (an op of several kernels,
    seer.workload.ops.Mapped) or its own kind and config."""
    if parts:
        return [(p.kind, p.config, p.label) for p in parts]  # type: ignore[attr-defined]
    return [(kind, config, "")]


def _kernel_level(cfg: dict) -> bool:
    """Whether a kernel's config is a memory-bound kernel on the GPU's DRAM (timed at kernel level,
    seer.models.kernel_floor), not a copy over the host link."""
    op = cfg.get("op")
    return op in MEMORY_OPS and not (op == "memcpy" and cfg.get("fn") != "d2d")


def predict_ops(
    ops: pd.DataFrame,
    fits: Fits,
    dispatch_ms: float = DEFAULT_DISPATCH_MS,
    floors: KernelFloors | None = None,
    autotune: bool = False,
) -> pd.DataFrame:
    """The op table with `predicted_ms` (GPU time of the op's kernels, summed where it has several
    `parts`; the host dispatch time for ops that launch none), `predictor` (the seer op that
    timed each kernel, with its label: `linear[dgrad]+linear[wgrad]`), `extrapolated` (a config
    lies outside the fitted range of the model that timed it), `assumed` and `kernel` (a GEMM's or
    convolution's: the kernel the framework launches or the fastest, `autotune`: Fits.predict_frame),
    `kernel_level` (every kernel of the
    op was timed at kernel level: memory-bound kernels by `floors`, default the bundled
    seer.models.kernel_floor, GPU time alone whatever the fits time; `call_ms`: what the fits give
    for them, a whole call's time where they time calls, NaN where they do not time it) and, for
    ops seer could not time, `kind` = unmodelled with the reason in `why`."""
    lines = kernel_floors(floors)
    out = ops.copy()
    pred = np.full(len(out), np.nan)
    outside = np.zeros(len(out), dtype=bool)
    kind = out["kind"].to_numpy(dtype=object).copy()
    why = out["why"].to_numpy(dtype=object).copy() if "why" in out else np.full(len(out), "", dtype=object)
    covered = set(fits.ops)  # memory-bound ops: the datasheet where not fitted
    items: list[tuple[int, str, dict, str]] = []  # (row, kind, config, label) of every kernel
    parts = out["parts"].to_numpy(object) if "parts" in out else np.full(len(out), None, dtype=object)
    config = out["config"].to_numpy(object)  # arrays, not a pandas lookup per row
    for i in np.flatnonzero(np.isin(kind, KERNEL_KINDS)):
        items += [(int(i), k, c, lab) for k, c, lab in _kernels(parts[i], config[i], kind[i])]
    t = np.full(len(items), np.nan)
    far = np.zeros(len(items), dtype=bool)
    by = np.full(len(items), "", dtype=object)
    assumed = np.full(len(items), "", dtype=object)
    kernel = np.full(len(items), "", dtype=object)
    failed: dict[int, str] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    level = np.zeros(len(items), dtype=bool)
    for j, (row, k, cfg, _) in enumerate(items):
        level[j] = lines is not None and _kernel_level(cfg)
        op = _seer_op(k, cfg, covered)
        if op is None:
            if not level[j]:
                failed.setdefault(row, f"the fits for {fits.gpu.name} do not cover {cfg['op']}")
            continue
        groups.setdefault((op, str(cfg.get("dtype", ""))), []).append(j)
    for (op, _), idx in groups.items():
        df = pd.DataFrame([items[j][2] for j in idx]).assign(op=op)
        try:
            t[idx], far[idx], by[idx], assumed[idx], kernel[idx] = _predict_group(fits, op, df, autotune)
        except SeerError:  # one config the model refuses: time the others one by one
            for n, j in enumerate(idx):
                try:
                    a, b, c, d, e = _predict_group(fits, op, df.iloc[[n]], autotune)
                    t[j], far[j], by[j], assumed[j], kernel[j] = a[0], b[0], c[0], d[0], e[0]
                except SeerError as exc:
                    if not level[j]:
                        failed.setdefault(items[j][0], str(exc))
    t_call = t.copy()  # what the fits give: a whole call's time where they time calls
    if level.any():  # bytes per kernel through the GPU's kernel line, as its op's kind streams
        assert lines is not None
        at = np.flatnonzero(level)
        cfgs = pd.DataFrame([items[j][2] for j in at])
        cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in cfgs]
        op_kind = kind[[items[j][0] for j in at]]
        t[level] = lines.times(fits.gpu, work(cfgs[cols])["bytes"].to_numpy(dtype=float), op_kind)
        by[level] = "kernel:" + cfgs["op"].astype(str).to_numpy(dtype=object)
    rows = np.array([it[0] for it in items], dtype=int)
    all_level = np.zeros(len(out), dtype=bool)
    call_ms = np.full(len(out), np.nan)
    if len(items):
        sums = np.bincount(rows, weights=np.nan_to_num(t), minlength=len(out))
        has = np.bincount(rows, minlength=len(out)) > 0
        pred[has] = sums[has]
        np.logical_or.at(outside, rows, far)
        all_level = np.bincount(rows, weights=level, minlength=len(out)) == np.bincount(rows, minlength=len(out))
        all_level &= np.bincount(rows, minlength=len(out)) > 0
        call_ms[all_level] = np.bincount(rows, weights=t_call, minlength=len(out))[all_level]
    label = [f"{b}[{it[3]}]" if it[3] else str(b) for it, b in zip(items, by)]
    predictor = np.full(len(out), "", dtype=object)
    assumed_op = np.full(len(out), "", dtype=object)
    kernel_op = np.full(len(out), "", dtype=object)
    for target, values in ((predictor, label), (assumed_op, assumed), (kernel_op, kernel)):
        for row, name in zip(rows, values):
            if name:
                target[row] = f"{target[row]}+{name}" if target[row] else name
    for row, reason in failed.items():
        kind[row], why[row], pred[row], predictor[row] = "unmodelled", reason, np.nan, ""
        assumed_op[row] = kernel_op[row] = ""
    pred[kind == "dispatch"] = dispatch_ms
    return out.assign(
        kind=kind,
        why=why,
        predicted_ms=pred,
        predictor=predictor,
        extrapolated=outside,
        assumed=assumed_op,
        kernel=kernel_op,
        kernel_level=all_level,
        call_ms=call_ms,
    )


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


def times_calls(fits: Fits) -> bool:
    """Whether the fits' times are of whole calls, host included (NeuSight timed each PyTorch call)
    rather than of the GPU's work alone (the harness's records); transferred fits as their sources
    (any that times calls)."""
    if fits.source == "transferred":
        from seer.predict import load

        return any(times_calls(load(s)) for s in fits.transferred_from or [])
    dataset = (fits.meta or {}).get("dataset") or {}
    return "neusight" in str(dataset.get("path", "")) or any(
        str(s).startswith("neusight") for s in dataset.get("sources", [])
    )


def whole_model(ops: pd.DataFrame, dispatch_ms: float = DEFAULT_DISPATCH_MS, host_in_times: bool = True) -> WholeModel:
    """Whole-model time of a predicted op table (predict_ops): each op repeated `count` times in
    graph order (a block's ops run num_layer times in a row, block after block; a training step's
    backward rows, which come after the forward ones in reverse order, run epilogue first); ops seer
    does not model count with their measured time. `host_in_times`: the predictions are times of
    whole calls (times_calls), so the GPU's share of each is the rest after its dispatch."""
    k = ops["kind"].to_numpy(dtype=object)
    kernel = np.isin(k, KERNEL_KINDS)
    unmodelled = k == "unmodelled"
    pred = ops["predicted_ms"].to_numpy(dtype=float)
    gpu = np.where(kernel, pred, 0.0)
    meas = ops["measured_ms"].to_numpy(dtype=float) if "measured_ms" in ops else np.full(len(ops), np.nan)
    gpu = np.where(unmodelled, np.nan_to_num(meas), gpu)
    count = ops["count"].to_numpy(dtype=int) if "count" in ops else np.ones(len(ops), dtype=int)
    part = ops["part"].to_numpy(dtype=object) if "part" in ops else np.full(len(ops), "block", dtype=object)
    direction = ops["direction"].to_numpy(dtype=object) if "direction" in ops else np.full(len(ops), "forward")
    back = direction != "forward"
    order = _unrolled(part, count, back)
    host = np.full(len(order), dispatch_ms)
    # on the timeline an op's host call overlaps the previous kernels: the GPU's share is the rest
    host_part = dispatch_ms if host_in_times else 0.0
    level = ops["kernel_level"].to_numpy(dtype=bool) if "kernel_level" in ops else np.zeros(len(ops), dtype=bool)
    call = kernel & ~level  # kernel-level times are the GPU's already: nothing to take off
    device = np.where(call, np.maximum(gpu - host_part, KERNEL_FLOOR_MS), gpu)[order]
    total = timeline(host, device)
    n_forward = int((~back[order]).sum())
    forward = timeline(host[:n_forward], device[:n_forward])
    by_direction = {"forward": forward, "backward": total - forward} if back.any() else {}
    return WholeModel(
        kernel_sum_ms=float((gpu * count).sum()),
        replay_ms=total,
        unmodelled_ms=float((np.nan_to_num(meas) * count)[unmodelled].sum()),
        dispatch_ms=dispatch_ms,
        by_direction=by_direction,
    )


def _unrolled(part: np.ndarray, count: np.ndarray, backward: np.ndarray | None = None) -> np.ndarray:
    """Row positions in execution order: prologue, the block `count` times, epilogue; then the
    backward rows (already in reverse order) epilogue, the block `count` times, prologue."""
    idx = np.arange(len(part))
    back = np.zeros(len(part), dtype=bool) if backward is None else backward

    def run(rows: np.ndarray, sections: tuple[str, str]) -> list[np.ndarray]:
        block = rows[part[rows] == "block"]
        reps = int(count[block[0]]) if len(block) else 0
        return [rows[part[rows] == sections[0]], np.tile(block, reps), rows[part[rows] == sections[1]]]

    forward = run(idx[~back], ("prologue", "epilogue"))
    reverse = run(idx[back], ("epilogue", "prologue"))
    return np.concatenate([*forward, *reverse]).astype(int)
