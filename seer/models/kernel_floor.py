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

Kernels of one kind of op do not all stream alike: a layer norm or a reduction reads its rows in
passes and synchronises between them, a pooling window re-reads its input, a gather touches
scattered rows. Per op kind (`KindScale`, pooled over every traced GPU) the floor and the streaming
term are scaled: t = max(floor_scale x floor, const + stream_scale x bytes / bw), both fitted on
the log of measured / predicted per op, each (trace, kind) weighing the same. The scales are
ratios to a GPU's own line, so they move to a GPU without traces unchanged.
"""

from __future__ import annotations

import dataclasses
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
MODEL = "t = max(floor_scale*floor, const + stream_scale*bytes/bw) per kernel; line weights 1/t^2"
PLAIN_KINDS = ("elementwise",)  # the bulk of the kernels the line is fitted on: they stream as it says
MIN_KIND_OPS = 20  # fewer measured ops of a kind than this: its kernels stream as the GPU's line says
SCALE_BOUNDS = (0.5, 20.0)  # what a kind's scales may be: a kind is never far faster than plain streaming


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

    def scaled(self, nbytes: np.ndarray, floor_scale: np.ndarray, stream_scale: np.ndarray) -> np.ndarray:
        """Kernel time (ms) with each kernel's kind's scales (KindScale) on the floor and the streaming term."""
        b = np.asarray(nbytes, dtype=float)
        return np.maximum(self.floor_ms * floor_scale, self.const_ms + stream_scale * b / (self.bw_gbs * 1e6))


@dataclass(frozen=True)
class KindScale:
    """How one op kind's kernels differ from the GPU's plain streaming line (module docstring)."""

    floor: float = 1.0
    stream: float = 1.0
    n: int = 0  # ops fitted on (0: none, the line as it is)


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
    kinds: dict[str, KindScale] = field(default_factory=dict)  # op kind -> its scales (KindScale)

    def times(self, gpu: str | GPUSpec, nbytes: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        """Kernel time (ms) on `gpu` of kernels moving `nbytes`, each of the op kind in `kinds`."""
        scales = [self.kinds.get(str(k), KindScale()) for k in kinds]
        floor = np.array([s.floor for s in scales], dtype=float)
        stream = np.array([s.stream for s in scales], dtype=float)
        return self.line(gpu).scaled(np.asarray(nbytes, dtype=float), floor, stream)

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
        """These floors less one GPU's own line and dispatch (to score a GPU as one nobody measured)."""
        return replace(
            self,
            lines={k: v for k, v in self.lines.items() if k != gpu},
            dispatch_ms={k: v for k, v in self.dispatch_ms.items() if k != gpu},
        )

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
            "kinds": {k: dataclasses.asdict(v) for k, v in sorted(self.kinds.items())},
            "dispatch_ms": dict(sorted(self.dispatch_ms.items())),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> KernelFloors:
        if not isinstance(d, Mapping) or d.get("schema") != SCHEMA:
            got = d.get("schema") if isinstance(d, Mapping) else type(d).__name__
            raise SeerError(f"kernel floors: expected schema {SCHEMA!r}, got {got!r}")
        lines = {slug: KernelLine(slug, **{k: v for k, v in ln.items()}) for slug, ln in d.get("lines", {}).items()}
        kinds = {k: KindScale(**v) for k, v in d.get("kinds", {}).items()}
        return cls(
            lines, {k: float(v) for k, v in d.get("dispatch_ms", {}).items()}, tuple(d.get("sources", ())), kinds
        )


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
    floors = KernelFloors(lines, {}, sources)
    return replace(floors, kinds=fit_kind_scales(kernels, floors))


def _exploded(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, row, gpu) of every kernel seer times for the ops of a memory-kernel table."""
    sizes = kernels["part_bytes"].map(len).to_numpy(dtype=int)
    nbytes = np.fromiter((b for parts in kernels["part_bytes"] for b in parts), dtype=float, count=int(sizes.sum()))
    row = np.repeat(np.arange(len(kernels)), sizes)
    return nbytes, row, kernels["gpu"].to_numpy(dtype=object)[row]


def op_times(kernels: pd.DataFrame, floors: KernelFloors) -> np.ndarray:
    """Each op's kernel time (ms) of a memory-kernel table: its kernels' bytes through its GPU's
    line, scaled as its kind streams."""
    nbytes, row, gpu = _exploded(kernels)
    kinds = kernels["kind"].to_numpy(dtype=object)[row]
    t = np.zeros(len(nbytes))
    for g in np.unique(gpu):
        at = gpu == g
        t[at] = floors.times(str(g), nbytes[at], kinds[at])
    return np.bincount(row, weights=t, minlength=len(kernels))


def fit_kind_scales(kernels: pd.DataFrame, floors: KernelFloors) -> dict[str, KindScale]:
    """Per op kind with at least MIN_KIND_OPS ops measured, pooled over the GPUs: the floor and
    streaming scales that minimise the squared log of measured / predicted op time (scipy
    least_squares, soft L1 so a few odd calls do not steer it), every (trace, kind) group weighing
    the same."""
    from scipy.optimize import least_squares

    if not len(kernels) or not {"trace", "kind"} <= set(kernels) or not floors.lines:
        return {}  # no line to scale
    nbytes, row, gpu = _exploded(kernels)
    base_floor = np.empty(len(nbytes))
    const = np.empty(len(nbytes))
    per_byte = np.empty(len(nbytes))
    for g in np.unique(gpu):
        at = gpu == g
        line = floors.line(str(g))
        base_floor[at], const[at], per_byte[at] = line.floor_ms, line.const_ms, 1.0 / (line.bw_gbs * 1e6)
    measured = kernels["kernel_ms"].to_numpy(dtype=float)
    group = kernels.groupby(["trace", "kind"]).ngroup().to_numpy()
    weight = 1.0 / np.sqrt(np.bincount(group)[group])
    out = {}
    lo, hi = np.log(SCALE_BOUNDS)
    # pooled over the GPUs: scales of each GPU's own (tried) were worse leave-one-trace-out
    for key, idx in kernels.groupby("kind").indices.items():
        ok = idx[measured[idx] > 0]
        if key in PLAIN_KINDS or len(ok) < MIN_KIND_OPS:
            continue
        at = np.isin(row, ok)
        local = np.searchsorted(ok, row[at])

        def residual(x: np.ndarray, at=at, local=local, ok=ok) -> np.ndarray:
            t = np.maximum(np.exp(x[0]) * base_floor[at], const[at] + np.exp(x[1]) * nbytes[at] * per_byte[at])
            pred = np.bincount(local, weights=t, minlength=len(ok))
            return weight[ok] * np.log(np.maximum(pred, 1e-9) / measured[ok])

        fit = least_squares(residual, np.zeros(2), bounds=([lo, lo], [hi, hi]), loss="soft_l1", f_scale=0.1)
        out[str(key)] = KindScale(float(np.exp(fit.x[0])), float(np.exp(fit.x[1])), len(ok))
    return out


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
        host = g["time_ms"].to_numpy(float) - floors.times(spec, nbytes, g["op"].to_numpy(dtype=object))
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
