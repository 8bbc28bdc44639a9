"""Roofline and efficiency of measured kernels, as PyProf and PyTorch's profile analysis report
them: from a kernel's FLOPs, bytes and measured time, the ideal (roofline) time, whether the
kernel is compute- or memory-bound, and the FLOP/s and bandwidth it achieved as a fraction of
the GPU's peak (0.5 = half the peak; seer keeps ratios as fractions and prints them as percents).

Peaks come from seer's GPU table (docs/reference.md, GPU specifications), not from the seeds' tables, which
have known errors; a `peaks` mapping overrides them (e.g. measured peaks).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from seer.errors import SeerError
from seer.hardware.gpus import GPUSpec
from seer.hardware.peaks import Peaks, peaks_for

_LINKS = ("dram", "l2", "pcie")


def _array(name: str, v, minimum: float, strict: bool) -> np.ndarray:
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    bad = ~np.isfinite(a) | ((a <= minimum) if strict else (a < minimum))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        op = ">" if strict else ">="
        where = "" if a.size == 1 else f" (element {i})"
        raise SeerError(f"argument {name}{where}: expected a number {op} {minimum:g}, got {a[i]!r}")
    return a


def roofline(
    flops,
    bytes_moved,
    time_ms,
    gpu: str | GPUSpec | None = None,
    *,
    peaks: Peaks | Mapping | None = None,
    memory: str = "dram",
) -> pd.DataFrame:
    """Roofline figures per kernel (scalars or equal-length arrays; scalars broadcast).

    Columns: flops, bytes, time_ms, intensity (FLOP/byte), ridge (FLOP/byte where the roofs
    meet), compute_ms and memory_ms (at peak), ideal_ms = max of the two, bound ("compute" or
    "memory"), achieved_gflops, achieved_gbs, flops_fraction_of_peak and bw_fraction_of_peak
    (fractions: 1 = at the peak, above 1 only where the peaks understate the GPU), efficiency =
    ideal_ms / time_ms (a fraction too: 1 = on the roofline). Times are in ms. `memory` picks the roof for bytes:
    "dram" (default), "l2" or "pcie" (host copies).
    """
    if memory not in _LINKS:
        raise SeerError(f"argument memory: expected one of {', '.join(_LINKS)}, got {memory!r}")
    pk = peaks_for(gpu, peaks)
    f = _array("flops", flops, 0, False)
    b = _array("bytes_moved", bytes_moved, 0, False)
    t = _array("time_ms", time_ms, 0, True)
    try:
        f, b, t = np.broadcast_arrays(f, b, t)
    except ValueError:
        raise SeerError(
            "arguments flops, bytes_moved, time_ms: expected equal lengths (or scalars), "
            f"got {np.size(flops)}, {np.size(bytes_moved)}, {np.size(time_ms)}"
        ) from None
    if ((f == 0) & (b == 0)).any():
        i = int(np.flatnonzero((f == 0) & (b == 0))[0])
        raise SeerError(
            f"arguments flops and bytes_moved (element {i}): a kernel with no FLOPs and no bytes has no roofline"
        )
    peak_flops = pk.fp32_gflops * 1e9
    peak_bw = {"dram": pk.dram_gbs, "l2": pk.l2_gbs, "pcie": pk.pcie_gbs}[memory] * 1e9
    compute_ms = f / peak_flops * 1e3
    memory_ms = b / peak_bw * 1e3
    ideal = np.maximum(compute_ms, memory_ms)
    secs = t * 1e-3
    with np.errstate(divide="ignore"):
        intensity = np.where(b > 0, f / np.where(b > 0, b, 1), np.inf)
    return pd.DataFrame(
        {
            "flops": f,
            "bytes": b,
            "time_ms": t,
            "intensity": intensity,
            "ridge": np.full(len(t), peak_flops / peak_bw),
            "compute_ms": compute_ms,
            "memory_ms": memory_ms,
            "ideal_ms": ideal,
            "bound": np.where(compute_ms >= memory_ms, "compute", "memory"),
            "achieved_gflops": f / secs / 1e9,
            "achieved_gbs": b / secs / 1e9,
            "flops_fraction_of_peak": (f / secs) / peak_flops,
            "bw_fraction_of_peak": (b / secs) / peak_bw,
            "efficiency": ideal / t,
        }
    )


def kernel_work(records: pd.DataFrame) -> pd.DataFrame:
    """FLOPs and bytes of measured records whose op seer can count: the memory-bound ops
    (element-wise, softmax, layer norm, concat, transpose, memcpy), GEMMs (gemm, bmm, linear:
    2 m n k FLOPs per product; A and B read, C written once) and convolutions (2 N K C/g R S
    P Q FLOPs; input, filter and output once). Other ops get NaN. Bytes are the minimum
    traffic, so achieved bandwidth is a lower bound of the real one."""
    from seer.analytical.memory import OPS as MEM_OPS
    from seer.analytical.memory import work
    from seer.data.configs import flops_bytes

    n = len(records)
    flops = np.full(n, np.nan)
    nbytes = np.full(n, np.nan)
    op = records["op"].astype(str).to_numpy()
    mem = np.isin(op, MEM_OPS)
    if mem.any():
        cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in records]
        w = work(records.loc[mem, cols].reset_index(drop=True))
        flops[mem] = w["flops"].to_numpy()
        nbytes[mem] = w["bytes"].to_numpy()
    counted = np.isin(op, ["gemm", "bmm", "linear", "conv_fwd"])
    if counted.any():
        sub = records[counted]
        if "batch" in sub:  # a plain GEMM has no batch count
            sub = sub.assign(batch=sub["batch"].astype("Float64").fillna(1.0))
        flops[counted], nbytes[counted] = flops_bytes(sub)
    return pd.DataFrame({"flops": flops, "bytes": nbytes}, index=records.index)


def roofline_records(
    records: pd.DataFrame, gpu: str | GPUSpec | None = None, *, peaks: Peaks | Mapping | None = None
) -> pd.DataFrame:
    """`roofline` for measured records (seer.data.records), one row each, with the records' gpu,
    op, fn and kernel beside it. Rows whose FLOPs and bytes seer cannot count are dropped;
    host copies (memcpy h2d/d2h) are measured against PCIe, everything else against DRAM."""
    if "time_ms" not in records or ("gpu" not in records and gpu is None and peaks is None):
        raise SeerError("records: columns 'time_ms' and 'gpu' are needed (or pass gpu=)")
    wk = kernel_work(records)
    keep = wk["flops"].notna().to_numpy() & wk["bytes"].notna().to_numpy()
    keep &= ~((wk["flops"] == 0) & (wk["bytes"] == 0)).to_numpy()
    rec, wk = records[keep], wk[keep]
    host = (rec["op"].astype(str) == "memcpy").to_numpy().copy()
    if "fn" in rec:
        host &= (rec["fn"].astype(str) != "d2d").to_numpy()
    parts = []
    gpu_col = [gpu] * len(rec) if gpu is not None else list(rec["gpu"])
    key = pd.Series([str(g) for g in gpu_col], index=rec.index)
    for g_name in pd.unique(key):
        for is_host in (False, True):
            sel = (key == g_name).to_numpy() & (host == is_host)
            if not sel.any():
                continue
            g = gpu if gpu is not None else g_name
            r = roofline(
                wk["flops"].to_numpy()[sel],
                wk["bytes"].to_numpy()[sel],
                rec["time_ms"].to_numpy(dtype="float64")[sel],
                g,
                peaks=peaks,
                memory="pcie" if is_host else "dram",
            )
            r.index = rec.index[sel]
            parts.append(r)
    if not parts:
        raise SeerError("records: no row whose FLOPs and bytes seer can count")
    out = pd.concat(parts).reindex(rec.index)
    info = [c for c in ("gpu", "op", "fn", "kernel") if c in rec]
    return pd.concat([rec[info], out.drop(columns=["time_ms"]).assign(time_ms=out["time_ms"])], axis=1)
