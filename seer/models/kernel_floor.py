"""Memory-bound kernels at kernel level, and the framework's dispatch on the host: kept apart.

A memory-bound kernel (element-wise, copy, softmax, layer norm, gather, reduction, pooling) takes

    t = max(floor, const + bytes / bw)

where, per GPU, the floor (a few us: launch and drain of a tiny grid), the latency `const` and
the effective bandwidth `bw` are fitted on what measures kernels: the GPU durations of the
kernels in profiler traces (seer.workload.trace_kernels), WLS on relative error as the other
models. A GPU without traces takes its DRAM bandwidth times the median efficiency (bw / DRAM
peak) of the GPUs that have them, and their median floor and latency: a launch costs about the
same on every recent GPU (2-4 us in the traces), while streaming follows the DRAM.

The host side is apart: `dispatch_ms` per GPU is what a PyTorch call costs beyond its kernel,
fitted from NeuSight's timings of whole calls (call time minus this kernel-level prediction of
the same config, median over the memory-bound calls of the GPU): NeuSight's call times inform
the host part only. seer.workload.estimate puts each op's dispatch on the host timeline and its
kernel time on the GPU's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seer.errors import SeerError
from seer.hardware.gpus import GPUSpec
from seer.hardware.peaks import spec_of
from seer.models.solver import wls_relative

SCHEMA = "seer.models.kernel_floor/1"
BUNDLED = Path(str(files("seer.models").joinpath("kernel_floors.json")))  # package data
KNEES = tuple(np.linspace(0.05, 0.9, 18).tolist())  # candidate quantiles of bytes splitting floor / streaming
MIN_KERNELS = 20  # fewer single-kernel measurements of a GPU than this: no fit of its own
MODEL = "t = max(floor, const + bytes/bw) per kernel; weights 1/t^2"


@dataclass(frozen=True)
class KernelLine:
    """One GPU's memory-bound kernels: floor and streaming line (ms, GB/s); `source` says whether
    they were fitted on its traces or moved from other GPUs' through the spec."""

    gpu: str  # slug
    floor_ms: float
    const_ms: float
    bw_gbs: float
    n: int = 0  # kernels fitted on (0: transferred)
    source: str = "traces"

    def time(self, nbytes: np.ndarray | float) -> np.ndarray:
        """Kernel time (ms) of kernels moving `nbytes` each."""
        b = np.asarray(nbytes, dtype=float)
        return np.maximum(self.floor_ms, self.const_ms + b / (self.bw_gbs * 1e6))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("floor_ms", "const_ms", "bw_gbs", "n", "source")}


def fit_line(
    nbytes: np.ndarray, t: np.ndarray, gpu: str, knees: tuple[float, ...] = KNEES, min_line_bytes: float = 0.0
) -> KernelLine:
    """Fit max(floor, const + bytes/bw) to kernels of one GPU: for each split of bytes (a quantile),
    the floor on the smaller kernels and the line on the larger; the split with the least relative
    squared error wins among lines with a significantly positive bytes term (t > 2). The line only
    learns from kernels of at least `min_line_bytes` (the L2's size: smaller tensors, re-read
    while still in L2, would make the DRAM look faster than its datasheet)."""
    b, t = np.asarray(nbytes, dtype=float), np.asarray(t, dtype=float)
    ok = np.isfinite(b) & np.isfinite(t) & (t > 0) & (b > 0)
    b, t = b[ok], t[ok]
    if len(t) < MIN_KERNELS:
        raise SeerError(f"{gpu}: {len(t)} memory-bound kernels measured, a fit needs {MIN_KERNELS}")
    best: tuple[float, float, float, float] | None = None
    for knee in np.unique(np.quantile(b, knees)):
        lo = b <= knee
        hi = ~lo & (b >= min_line_bytes)
        if lo.sum() < 3 or hi.sum() < 5:
            continue
        line = wls_relative(np.column_stack([np.ones(hi.sum()), b[hi]]), t[hi])
        if not (line.params[1] > 0 and line.tvalues[1] > 2):
            continue
        floor = float(wls_relative(np.ones((lo.sum(), 1)), t[lo]).params[0])
        pred = np.maximum(floor, line.params[0] + line.params[1] * b)
        sse = float(np.sum(((pred - t) / t) ** 2))
        if best is None or sse < best[0]:
            best = (sse, floor, float(line.params[0]), float(line.params[1]))
    if best is None:
        raise SeerError(f"{gpu}: no streaming line rises above the floor in {len(t)} kernels")
    _, floor, const, per_byte = best
    return KernelLine(gpu, floor, const, 1.0 / (per_byte * 1e6), n=len(t))


def single_kernels(kernels: pd.DataFrame) -> pd.DataFrame:
    """The ops of a memory-kernel table (seer.workload.trace_kernels) that launched as many
    kernels as seer times for them, as one row per kernel: gpu, bytes and time of each."""
    one = kernels[kernels["n_parts"] == kernels["n_kernels"]]
    n = one["n_kernels"].to_numpy(dtype=float)
    return pd.DataFrame(
        {
            "gpu": one["gpu"].to_numpy(object),
            "bytes": one["bytes"].to_numpy(float) / n,
            "time_ms": one["kernel_ms"].to_numpy(float) / n,
        }
    )


@dataclass(frozen=True)
class KernelFloors:
    """Per GPU slug: the fitted kernel line and the fitted host dispatch per call (ms)."""

    lines: dict[str, KernelLine] = field(default_factory=dict)
    dispatch_ms: dict[str, float] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # what the lines were fitted on (trace file names)

    def line(self, gpu: str | GPUSpec) -> KernelLine:
        """The GPU's own fitted line, else one moved to it through the spec (transfer)."""
        spec = gpu if isinstance(gpu, GPUSpec) else spec_of(gpu)
        return self.lines.get(spec.slug) or self.transfer(spec)

    def transfer(self, spec: GPUSpec) -> KernelLine:
        """A line for a GPU without traces: its DRAM bandwidth times the median efficiency of the
        fitted GPUs (other than itself), their median floor and latency."""
        others = [ln for slug, ln in self.lines.items() if slug != spec.slug]
        if not others:
            raise SeerError(f"no kernel-level memory-bound fit to move to {spec.name}: none was fitted")
        eff = float(np.median([ln.bw_gbs / spec_of(ln.gpu).dram_gbs for ln in others]))
        return KernelLine(
            spec.slug,
            floor_ms=float(np.median([ln.floor_ms for ln in others])),
            const_ms=float(np.median([ln.const_ms for ln in others])),
            bw_gbs=eff * spec.dram_gbs,
            n=0,
            source=f"spec: {eff:.0%} of {spec.dram_gbs:g} GB/s from {', '.join(sorted(ln.gpu for ln in others))}",
        )

    def without(self, gpu: str) -> KernelFloors:
        """These floors less one GPU's own line (to score a GPU as one without traces)."""
        return replace(self, lines={k: v for k, v in self.lines.items() if k != gpu})

    def dispatch(self, gpu: str | GPUSpec) -> float | None:
        """The GPU's fitted host time per call (ms), else the median of the fitted GPUs' (None: none fitted)."""
        spec = gpu if isinstance(gpu, GPUSpec) else spec_of(gpu)
        if spec.slug in self.dispatch_ms:
            return self.dispatch_ms[spec.slug]
        return float(np.median(list(self.dispatch_ms.values()))) if self.dispatch_ms else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "model": MODEL,
            "sources": list(self.sources),
            "lines": {slug: ln.to_dict() for slug, ln in sorted(self.lines.items())},
            "dispatch_ms": dict(sorted(self.dispatch_ms.items())),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> KernelFloors:
        if not isinstance(d, Mapping) or d.get("schema") != SCHEMA:
            got = d.get("schema") if isinstance(d, Mapping) else type(d).__name__
            raise SeerError(f"kernel floors: expected schema {SCHEMA!r}, got {got!r}")
        lines = {slug: KernelLine(slug, **{k: v for k, v in ln.items()}) for slug, ln in d.get("lines", {}).items()}
        return cls(lines, {k: float(v) for k, v in d.get("dispatch_ms", {}).items()}, tuple(d.get("sources", ())))


def fit_kernel_floors(kernels: pd.DataFrame, sources: tuple[str, ...] = ()) -> KernelFloors:
    """A line per GPU (slug in column `gpu`) with at least MIN_KERNELS single kernels
    (single_kernels of a memory-kernel table) and a streaming line above its L2's size; the others
    are left to `KernelFloors.transfer`."""
    one = single_kernels(kernels)
    lines = {}
    for gpu, g in one.groupby("gpu", sort=True):
        if len(g) >= MIN_KERNELS:
            l2 = spec_of(str(gpu)).l2_mb * 2**20
            try:
                lines[str(gpu)] = fit_line(g["bytes"].to_numpy(), g["time_ms"].to_numpy(), str(gpu), min_line_bytes=l2)
            except SeerError:
                continue  # nothing streams from DRAM in its traces: moved from the others
    return KernelFloors(lines, {}, sources)


def fit_dispatch(calls: pd.DataFrame, floors: KernelFloors) -> dict[str, float]:
    """Host time per call per GPU slug: the median over NeuSight's memory-bound calls (records with
    gpu, op, rows, cols, fn, dtype, time_ms: whole calls, host included) of the call time less the
    kernel-level prediction of the same config (at least 0)."""
    from seer.analytical.memory import measured_work

    out = {}
    for name, g in calls.groupby("gpu", sort=True):
        spec = spec_of(str(name))
        cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in g]
        nbytes = measured_work(g[cols].reset_index(drop=True))["bytes"].to_numpy()
        host = g["time_ms"].to_numpy(float) - floors.line(spec).time(nbytes)
        out[spec.slug] = max(float(np.median(host)), 0.0)
    return out


@lru_cache(maxsize=1)
def _bundled(mtime: float) -> KernelFloors:
    return KernelFloors.from_dict(json.loads(BUNDLED.read_text()))


def bundled() -> KernelFloors:
    """The bundled kernel floors (seer/models/kernel_floors.json, written by
    `python -m seer.evaluate --set kernel-floors --write`); empty where the file is missing."""
    if not BUNDLED.exists():
        return KernelFloors()
    return _bundled(BUNDLED.stat().st_mtime)
