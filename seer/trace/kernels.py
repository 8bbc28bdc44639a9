"""One row per GPU event of a trace: its op, layer and direction, FLOPs, bytes, roofline, and seer's time.

What `summary`, `augment` and `diff` read. The work and the prediction are the op's, from the
pipeline `python -m seer.predict TRACE` runs (seer.workload.model_time.predict_trace_ops: every
launching op mapped by seer.workload.ops and timed by the GPU's fits), shared among the op's
kernels, as the `split` column says:

- `one`: the op launched one kernel and seer times it as one: the op's FLOPs, bytes and time;
- `part`: seer times the op as several kernels (`Mapped.parts`: a convolution's dgrad and wgrad, a
  norm's dx and dgamma/dbeta) and it launched as many (memsets and copies aside, which then get
  none): each kernel takes one part, a part whose label (dgrad, wgrad) its name carries first, the
  others in launch order;
- `time`: any other count: the op's FLOPs, bytes and time shared in proportion to the kernels'
  measured durations (equal shares where they all last 0);
- `none`: no prediction: a kernel no op launched (its launch lies outside every cpu op), or whose
  op seer does not time (`kind` unmodelled, dispatch, host_copy; `why` says why): null FLOPs,
  bytes and prediction, never a made-up one.

FLOPs and bytes are the minimum work of the op's config (seer.analytical.roofline.kernel_work:
GEMMs 2mnk, convolutions 2NKCRSPQ/g, memory-bound kernels their compulsory traffic), so achieved
bandwidth is a lower bound. Achieved rates are against seer's datasheet peaks
(seer.hardware.peaks: FP32 FLOP/s and DRAM bandwidth; host copies against PCIe), the GPU the
trace was taken on where seer knows it, else the GPU predicted for; a tensor-core kernel can show
more than 100% of the FP32 peak.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from seer.analytical.roofline import kernel_work, roofline
from seer.hardware.gpus import GPUSpec
from seer.predict import Fits
from seer.workload.estimate import predict_ops
from seer.workload.ops import KERNEL_KINDS, Mapped

SPLITS = ("one", "part", "time", "none")
COLUMNS = [
    "name", "cat", "ts", "dur_us", "stream", "step", "op", "op_name", "site", "direction", "kind", "shapes", "split",
    "flops", "bytes", "predicted_us", "ratio", "bound", "achieved_tflops", "achieved_gbs", "frac_peak_flops",
    "frac_peak_bw", "efficiency", "why",
]  # fmt: skip
# words a part's label and the kernel that runs it share (cuDNN's and CUTLASS's names say dgrad, wgrad)
_LABEL_WORDS = ("dgrad", "wgrad")


@dataclass
class Explained:
    """A trace kernel by kernel (`kernels`, one row per GPU event of trace.kernels, same order;
    columns COLUMNS, times in us, FLOPs and bytes per kernel) and the op table it came from."""

    path: Path
    gpu: str  # the GPU the prediction is for (its fits' name)
    measured_on: str  # the GPU the trace was taken on ('' where it does not say)
    peaks_of: str  # the GPU whose peaks the achieved rates are against
    kernels: pd.DataFrame
    ops: pd.DataFrame  # seer.workload.model_time.predict_trace_ops
    steps: int  # iterations in the trace (1 where it marks none)
    notes: list[str] = field(default_factory=list)


def explain(
    path: str | Path,
    gpu: str | None = None,
    *,
    execution_trace: str | Path | None = None,
    fits: Fits | None = None,
    stage: Callable[[str], None] = lambda _: None,
) -> Explained:
    """Read, map and time a trace, then share each op's work and time among its kernels.
    `stage(name)` is called before each long step (a progress bar)."""
    from seer.workload.kineto import read_trace
    from seer.workload.model_time import predict_trace_ops, trace_fits

    stage("read")
    trace = read_trace(path, execution_trace)
    fits, measured_on, note = trace_fits(trace, gpu, fits)
    stage("predict")
    ops = predict_trace_ops(trace, fits)
    stage("kernels")
    spec = measured_on or fits.gpu
    table = _kernel_table(trace, ops, fits, spec)
    return Explained(
        Path(path), fits.gpu.name, trace.device, spec.name, table, ops, max(len(trace.steps), 1),
        [note] if note else [],
    )  # fmt: skip


def _units(ops: pd.DataFrame, timed: np.ndarray) -> list[list[Mapped]]:
    """The kernels seer times for each op row (its parts, or itself), none for an op it does not time."""
    out: list[list[Mapped]] = []
    for t, kind, cfg, parts in zip(timed, ops["kind"], ops["config"], ops["parts"]):
        if not t:
            out.append([])
        elif parts:
            out.append(list(parts))
        else:
            out.append([Mapped(kind, cfg)] if cfg is not None else [])
    return out


def _part_times(units: list[list[Mapped]], multi: np.ndarray, fits: Fits) -> dict[tuple[int, int], float]:
    """(op row, part) -> predicted ms of each part of the ops with several, by predict_ops on one row per part."""
    rows = [(i, j, u) for i in np.flatnonzero(multi) for j, u in enumerate(units[i])]
    if not rows:
        return {}
    table = pd.DataFrame(
        {"kind": [u.kind for _, _, u in rows], "config": [u.config for _, _, u in rows], "why": "", "measured_ms": 0.0}
    )
    pred = predict_ops(table, fits)["predicted_ms"].to_numpy(float)
    return {(int(i), j): float(p) for (i, j, _), p in zip(rows, pred)}


def _match(labels: list[str], names: list[str]) -> list[int]:
    """Which part each kernel runs: a part whose label word its name carries, else the next left."""
    left = list(range(len(labels)))
    out = [-1] * len(names)
    for k, name in enumerate(names):
        low = name.lower()
        hit = next((p for p in left if any(w in labels[p] and w in low for w in _LABEL_WORDS)), None)
        if hit is not None:
            out[k] = hit
            left.remove(hit)
    for k in range(len(names)):
        if out[k] < 0:
            out[k] = left.pop(0)
    return out


def _kernel_table(trace, ops: pd.DataFrame, fits: Fits, spec: GPUSpec) -> pd.DataFrame:
    k = trace.kernels
    dur = k["dur"].to_numpy(float)
    kop = k["op"].to_numpy(np.int64)
    timed = ops["kind"].isin(KERNEL_KINDS).to_numpy()
    units = _units(ops, timed)
    n_units = np.array([len(u) for u in units], dtype=np.int64)
    # work of each op row (all its units), and of each unit of the ops with several
    flat = [u for us in units for u in us]
    work = kernel_work(pd.DataFrame([u.config for u in flat])) if flat else pd.DataFrame({"flops": [], "bytes": []})
    owner = np.repeat(np.arange(len(ops)), n_units)
    op_flops = np.bincount(owner, weights=np.nan_to_num(work["flops"].to_numpy(float)), minlength=len(ops))
    op_bytes = np.bincount(owner, weights=np.nan_to_num(work["bytes"].to_numpy(float)), minlength=len(ops))
    counted = np.bincount(owner, weights=work["flops"].notna().to_numpy(float), minlength=len(ops)) == n_units
    op_pred = np.where(timed, ops["predicted_ms"].to_numpy(float) * 1e3, np.nan)
    # op row of each kernel (-1: launched by no op); ops are one row per call
    row_of = pd.Series(np.arange(len(ops)), index=ops["op"].to_numpy())
    krow = pd.Series(kop).map(row_of).fillna(-1).astype(np.int64).to_numpy()
    linked = krow >= 0
    r = np.clip(krow, 0, None)
    n_kern = np.bincount(krow[linked], minlength=len(ops))
    d_sum = np.bincount(krow[linked], weights=dur[linked], minlength=len(ops))
    share = np.where(d_sum[r] > 0, dur / np.where(d_sum[r] > 0, d_sum[r], 1), 1.0 / np.maximum(n_kern[r], 1))
    has = linked & (n_units[r] > 0)
    flops = np.where(has & counted[r], op_flops[r] * share, np.nan)
    nbytes = np.where(has & counted[r], op_bytes[r] * share, np.nan)
    pred = np.where(has, op_pred[r] * share, np.nan)
    split = np.where(has, np.where(n_kern[r] == 1, "one", "time"), "none").astype(object)
    col = {c: ops[c].to_numpy(object) for c in ("kind", "shapes", "why")}
    why = np.where(linked, col["why"][r], "launched outside every cpu op").astype(object)
    # ops of several parts that launched one kernel per part (memsets and copies aside): each kernel its part
    is_kernel = k["cat"].to_numpy(object) == "kernel"
    n_compute = np.bincount(krow[linked & is_kernel], minlength=len(ops))
    multi = (n_units > 1) & (n_units == n_compute)
    if multi.any():
        times = _part_times(units, multi, fits)
        starts = np.concatenate([[0], np.cumsum(n_units)])
        names = k["name"].to_numpy(object)
        where = np.flatnonzero(linked & multi[r])
        for i, idx in pd.Series(where).groupby(krow[where]).groups.items():
            kid = where[np.asarray(idx)]  # the op's GPU events, in start order
            helpers, kid = kid[~is_kernel[kid]], kid[is_kernel[kid]]
            flops[helpers], nbytes[helpers], pred[helpers], split[helpers] = np.nan, np.nan, np.nan, "none"
            why[helpers] = "a memset or copy inside an op seer times as its kernels' parts"
            parts = _match([u.label for u in units[i]], [names[j] for j in kid])
            for j, p in zip(kid, parts):
                w = starts[i] + p
                flops[j], nbytes[j] = work["flops"].iat[w], work["bytes"].iat[w]
                pred[j], split[j] = times[(int(i), p)] * 1e3, "part"
    roof = _roofline(flops, nbytes, dur, k["cat"].to_numpy(object), ops, krow, spec)
    opi = np.where(linked, kop, 0)
    tops = trace.ops
    op_name = np.where(linked, tops["name"].to_numpy(object)[opi] if len(tops) else "", "")
    site = np.where(linked, tops["site"].to_numpy(object)[opi] if len(tops) else "", "")
    direction = np.where(linked, tops["direction"].to_numpy(object)[opi] if len(tops) else "", "")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pred > 0, dur / pred, np.nan)
    return pd.DataFrame(
        {
            "name": k["name"].to_numpy(object),
            "cat": k["cat"].to_numpy(object),
            "ts": k["ts"].to_numpy(float),
            "dur_us": dur,
            "stream": k["stream"].to_numpy(object),
            "step": k["step"].to_numpy(np.int64),
            "op": kop,
            "op_name": op_name,
            "site": site,
            "direction": direction,
            "kind": np.where(linked, col["kind"][r], "unlinked"),
            "shapes": np.where(linked, col["shapes"][r], ""),
            "split": split,
            "flops": flops,
            "bytes": nbytes,
            "predicted_us": pred,
            "ratio": ratio,
            **roof,
            "why": why,
        },
        columns=COLUMNS,
    )


def _roofline(flops, nbytes, dur, cat, ops, krow, spec: GPUSpec) -> dict[str, np.ndarray]:
    """Bound, achieved TFLOP/s and GB/s, fractions of the peaks and roofline efficiency of the
    kernels with work and a duration (NaN / '' elsewhere); host copies against PCIe."""
    n = len(dur)
    out = {
        "bound": np.full(n, "", dtype=object),
        "achieved_tflops": np.full(n, np.nan),
        "achieved_gbs": np.full(n, np.nan),
        "frac_peak_flops": np.full(n, np.nan),
        "frac_peak_bw": np.full(n, np.nan),
        "efficiency": np.full(n, np.nan),
    }
    ok = np.isfinite(flops) & np.isfinite(nbytes) & ((flops > 0) | (nbytes > 0)) & (dur > 0)
    fn = ops["config"].map(lambda c: c.get("fn") if isinstance(c, dict) and c.get("op") == "memcpy" else "")
    host = np.isin(fn.to_numpy(object)[np.clip(krow, 0, None)], ["h2d", "d2h"]) & (krow >= 0)
    host &= np.array(["memcpy" in str(c) for c in cat], dtype=bool) if n else host
    for link, rows in (("dram", ok & ~host), ("pcie", ok & host)):
        if not rows.any():
            continue
        rf = roofline(flops[rows], nbytes[rows], dur[rows] / 1e3, spec, memory=link)
        out["bound"][rows] = rf["bound"].to_numpy(object)
        out["achieved_tflops"][rows] = rf["achieved_gflops"].to_numpy() / 1e3
        out["achieved_gbs"][rows] = rf["achieved_gbs"].to_numpy()
        out["frac_peak_flops"][rows] = rf["flops_fraction_of_peak"].to_numpy()
        out["frac_peak_bw"][rows] = rf["bw_fraction_of_peak"].to_numpy()
        out["efficiency"][rows] = rf["efficiency"].to_numpy()
    return out
