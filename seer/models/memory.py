"""The memory-bound model: a roofline with a fitted effective bandwidth and launch floor.

Element-wise functions, softmax, layer norm, concat, transpose and memcpy: per GPU and kernel,

    t = max(floor, const + bytes / bw + rows * row_cost + reread_bytes / bw2, FLOPs / peak FLOP/s)

with the work (bytes, FLOPs, rows) and the formula the closed forms of seer.analytical.memory.
As the per-variant models (seer.models.variant), `MemoryBoundModel(...).fit(records)` returns
the results, a `MemoryBoundFit`: `predict`, `retarget` to another GPU, `bandwidth_fraction`,
and its own serialization (`to_dict`/`from_dict`: a fits file's "memory_bound" section).

The fit (statsmodels WLS, weights 1/t^2 = least squares on relative error), per kernel:
- the floor on the smallest tensors, the streaming line on the rest; the split is a quantile of
  bytes (KNEES), then refined to the rows the line puts below the floor (REFINE);
- per-row kernels (softmax, layer norm) may add a cost per row and a re-read of rows longer
  than a column threshold (multiples of REREAD_STEP);
- the shape with the least relative squared error of max(floor, line) wins, among lines with a
  significantly positive bytes coefficient (t > 2), row costs >= 0 and at least 3 rows clearly
  above the floor; where none qualifies only the floor is kept (the datasheet bandwidth);
- per GPU also pooled element-wise fits (all functions, and each arity), which stand in for a
  function or a DRAM-bound kernel the GPU has no measurements of.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from seer.analytical._inputs import lookup
from seer.analytical.memory import (
    OPS,
    PER_ROW,
    SCHEMA,
    KernelKey,
    Line,
    arity_pool,
    combine,
    fitted_table,
    line_features,
    line_terms,
    measured_work,
    memory_bound_detail,
    predict_memory_bound,
)
from seer.errors import SeerError
from seer.hardware import gpus
from seer.hardware.gpus import GPUSpec
from seer.hardware.peaks import peaks_for, spec_of
from seer.models.options import DEFAULT
from seer.models.solver import wls_relative  # ties between fits: the same rule as the per-variant models

__all__ = [
    "KNEES",
    "MIN_ROWS",
    "MODEL",
    "REFINE",
    "REREAD_STEP",
    "SCALING",
    "SCHEMA",
    "Datasheet",
    "GPUMemoryFit",
    "KernelFit",
    "MemoryBoundFit",
    "MemoryBoundModel",
    "fit_memory_bound",
    "memory_records",
]

MIN_ROWS = 10  # fewer measurements than this for a kernel: no fit, use a fallback
KNEES = tuple(np.linspace(0.0, 0.95, 20).tolist())  # candidate quantiles of bytes splitting floor / streaming
REFINE = 10  # at most this many refinements of the best split
REREAD_STEP = 512  # candidate column thresholds for the re-read term: multiples of this
MODEL = "t = max(floor, const + bytes/bw + rows*row_cost + reread_bytes/bw2, flops/peak_flops); weights 1/t^2"

Ratio = Literal["clock", "bandwidth"]
# How each term of a kernel's line (seer.analytical.memory.TERMS) moves to another GPU
# (MemoryBoundFit.retarget): a cost per byte with the ratio of DRAM bandwidths, a cost per row
# (one warp or block per row) with the clock; the constant (None: unscaled) stays, as does the
# floor: they are the launch's, the host's and the driver's.
SCALING: dict[str, Ratio | None] = {"const": None, "bytes": "bandwidth", "rows": "clock", "reread_bytes": "bandwidth"}


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class KernelFit:
    """One kernel on one GPU: the floor and the streaming line (None: no line rose above the
    floor, the bandwidth is the datasheet's), with how they were fitted. The statistics are
    None only where a hand-written section lacks them (every fit has them)."""

    floor_ms: float
    n: int
    line: Line | None = None
    line_se: Line | None = None  # standard errors of the line's coefficients, term by term
    knee_bytes: float | None = None  # the largest bytes of the rows the floor was fitted on
    floor_se_ms: float | None = None
    n_floor: int | None = None
    train_rmspe: float | None = None
    train_median_ape: float | None = None

    @property
    def bw_source(self) -> str:
        return "datasheet" if self.line is None else "fit"

    @property
    def bw_gbs(self) -> float | None:
        """The fitted effective bandwidth (GB/s), None for a floor only."""
        return None if self.line is None else 1e-6 / self.line.bytes

    def retarget(self, factors: Mapping[str, float]) -> KernelFit:
        """The kernel with each line term (and its standard error) times its factor."""
        if self.line is None:
            return self
        se = None if self.line_se is None else self.line_se.scaled(factors)
        return dataclasses.replace(self, line=self.line.scaled(factors), line_se=se)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"floor_ms": self.floor_ms}
        if self.floor_se_ms is not None:
            out["floor_se_ms"] = self.floor_se_ms
        line, se = self.line, self.line_se
        out["coef"] = None if line is None else line.coef
        if line is not None:
            if se is not None:
                out["coef_se"] = se.coef
            out["reread_cols"] = line.reread_cols
            if self.knee_bytes is not None:
                out["knee_bytes"] = self.knee_bytes
            out["bw_gbs"] = 1e-6 / line.bytes
            if se is not None:
                out["bw_se_gbs"] = 1e-6 * se.bytes / line.bytes**2
            out["latency_us"] = 1e3 * line.const
        out["n"] = self.n
        if self.n_floor is not None:
            out["n_floor"] = self.n_floor
        out["bw_source"] = self.bw_source
        if self.train_rmspe is not None:
            out["train_rmspe"] = self.train_rmspe
        if self.train_median_ape is not None:
            out["train_median_ape"] = self.train_median_ape
        if line is not None and line.rows is not None:
            out["row_ns"] = 1e6 * line.rows
        if line is not None and line.reread_bytes is not None:
            out["reread_gbs"] = 1e-6 / line.reread_bytes if line.reread_bytes > 0 else None
        return out

    @classmethod
    def from_dict(cls, k: Mapping[str, Any]) -> KernelFit:
        coef, se, thr = k.get("coef"), k.get("coef_se"), k.get("reread_cols")

        def opt(name: str, kind: type) -> Any:
            return None if k.get(name) is None else kind(k[name])

        return cls(
            floor_ms=float(k["floor_ms"]),
            n=int(k["n"]),
            line=None if coef is None else Line.from_coef(coef, thr),
            line_se=None if coef is None or se is None else Line.from_coef(se, thr),
            knee_bytes=opt("knee_bytes", float),
            floor_se_ms=opt("floor_se_ms", float),
            n_floor=opt("n_floor", int),
            train_rmspe=opt("train_rmspe", float),
            train_median_ape=opt("train_median_ape", float),
        )


@dataclass(frozen=True)
class Datasheet:
    """The datasheet peaks a GPU's fit is read against (and falls back to)."""

    dram_gbs: float
    fp32_gflops: float
    pcie_gbs: float

    @classmethod
    def of(cls, spec: GPUSpec) -> Datasheet:
        pk = peaks_for(spec)
        return cls(pk.dram_gbs, pk.fp32_gflops, pk.pcie_gbs)

    def to_dict(self) -> dict[str, float]:
        return {"dram_gbs": self.dram_gbs, "fp32_gflops": self.fp32_gflops, "pcie_gbs": self.pcie_gbs}


@dataclass(frozen=True)
class GPUMemoryFit:
    """The fitted kernels of one GPU (key: seer.analytical.memory.kernel_keys, or a pool)."""

    name: str
    cc: str | None
    datasheet: Datasheet
    kernels: dict[str, KernelFit] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.cc is not None:
            out["cc"] = self.cc
        out["datasheet"] = self.datasheet.to_dict()
        out["kernels"] = {key: k.to_dict() for key, k in self.kernels.items()}
        return out

    @classmethod
    def from_dict(cls, g: Mapping[str, Any]) -> GPUMemoryFit:
        ds = g["datasheet"]
        return cls(
            name=str(g["name"]),
            cc=None if g.get("cc") is None else str(g["cc"]),
            datasheet=Datasheet(ds["dram_gbs"], ds["fp32_gflops"], ds["pcie_gbs"]),
            kernels={key: KernelFit.from_dict(k) for key, k in g.get("kernels", {}).items()},
        )


@dataclass(frozen=True, repr=False)
class MemoryBoundFit:
    """Fitted memory-bound kernels, per GPU slug: the results of MemoryBoundModel.fit.

    `predict(configs, gpu)` gives times in ms; `to_dict()` is a fits file's "memory_bound"
    section and `from_dict` reads one back (the same object)."""

    gpus: dict[str, GPUMemoryFit]
    n_rows: int | None = None  # measurements fitted on
    content_sha256: str | None = None  # of those measurements, whatever their order
    model: str = MODEL

    def __repr__(self) -> str:
        per_gpu = ", ".join(
            f"{slug}: {sum(k.line is not None for k in g.kernels.values())}/{len(g.kernels)} kernels with a line"
            for slug, g in self.gpus.items()
        )
        return f"MemoryBoundFit({per_gpu or 'no GPUs'}; {self.n_rows} rows)"

    # ------------------------------------------------------------ prediction
    def kernel_laws(self) -> dict[str, dict[str, KernelFit]]:
        """Per GPU slug, per kernel key: what seer.analytical.memory's predictors read."""
        return {slug: g.kernels for slug, g in self.gpus.items()}

    def predict(self, configs: pd.DataFrame, gpu: str | GPUSpec) -> np.ndarray:
        """Time in ms of each config (columns op, rows, cols, fn, dtype) on `gpu`; a GPU this
        fit lacks (or a kernel it has no stand-in for) takes the datasheet roofline."""
        return np.atleast_1d(np.asarray(predict_memory_bound(configs, self, gpu), dtype=float))

    def detail(self, configs: pd.DataFrame, gpu: str | GPUSpec) -> pd.DataFrame:
        """seer.analytical.memory_bound_detail with these parameters: per config its kernel,
        work, compute, memory and floor times, the bound and where the numbers come from."""
        return memory_bound_detail(configs, self, gpu)

    def table(self) -> pd.DataFrame:
        """The fitted parameters as a table (seer.analytical.fitted_table)."""
        return fitted_table(self)

    def bandwidth_fraction(self, gpu: str | GPUSpec) -> float | None:
        """The median fitted effective bandwidth of `gpu`'s kernels over its datasheet DRAM
        bandwidth (None where no kernel of it has a fitted line)."""
        spec = gpu if isinstance(gpu, GPUSpec) else gpus.lookup(gpu)
        g = self.gpus.get(spec.slug)
        bw = [] if g is None else [k.bw_gbs for k in g.kernels.values() if k.bw_gbs]
        return float(np.median(bw) / spec.dram_gbs) if bw else None

    def retarget(
        self, target: GPUSpec, *, clock: float, bandwidth: float, source: str | GPUSpec | None = None
    ) -> MemoryBoundFit:
        """The source GPU's kernels moved to `target`, each line term scaled as SCALING says:
        `clock` = source clock / target clock, `bandwidth` = source / target bandwidth (with
        any efficiency correction folded in); floors and constants stay. `source`: the GPU
        whose kernels move (default: the fit's only GPU)."""
        for name, v in (("clock", clock), ("bandwidth", bandwidth)):
            if not (np.isfinite(v) and v > 0):
                raise SeerError(f"argument {name}: expected a ratio > 0, got {v!r}")
        g = self.gpus[self._source(source)]
        ratios: dict[Ratio, float] = {"clock": clock, "bandwidth": bandwidth}
        factors = {term: ratios[r] for term, r in SCALING.items() if r is not None}
        moved = GPUMemoryFit(
            name=target.name,
            cc=target.cc,
            datasheet=Datasheet.of(target),
            kernels={key: k.retarget(factors) for key, k in g.kernels.items()},
        )
        return dataclasses.replace(self, gpus={target.slug: moved})

    def _source(self, source: str | GPUSpec | None) -> str:
        if source is None:
            if len(self.gpus) != 1:
                raise SeerError(
                    f"argument source: the memory-bound fit has {len(self.gpus)} GPUs "
                    f"({', '.join(self.gpus) or 'none'}); name the one to move"
                )
            return next(iter(self.gpus))
        slug = source.slug if isinstance(source, GPUSpec) else spec_of(source).slug
        if slug not in self.gpus:
            raise SeerError(f"argument source: the memory-bound fit has no GPU {slug!r} ({', '.join(self.gpus)})")
        return slug

    # ------------------------------------------------------------ serialization
    def to_dict(self) -> dict[str, Any]:
        """The fits file's "memory_bound" section (JSON-serializable)."""
        out: dict[str, Any] = {"schema": SCHEMA, "model": self.model}
        if self.n_rows is not None:
            out["n_rows"] = self.n_rows
        if self.content_sha256 is not None:
            out["content_sha256"] = self.content_sha256
        out["gpus"] = {slug: g.to_dict() for slug, g in self.gpus.items()}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryBoundFit:
        if not isinstance(d, Mapping) or d.get("schema") != SCHEMA:
            got = d.get("schema") if isinstance(d, Mapping) else type(d).__name__
            raise SeerError(f"a memory-bound section has schema {SCHEMA!r}, got {got!r}")
        return cls(
            gpus={slug: GPUMemoryFit.from_dict(g) for slug, g in d.get("gpus", {}).items()},
            n_rows=None if d.get("n_rows") is None else int(d["n_rows"]),
            content_sha256=d.get("content_sha256"),
            model=str(d.get("model", MODEL)),
        )


# ---------------------------------------------------------------- the model
@dataclass(frozen=True)
class MemoryBoundModel:
    """What to fit: the settings of the search (the defaults made every bundled fits file)."""

    min_rows: int = MIN_ROWS  # fewer measurements of a kernel: no fit of its own
    knees: tuple[float, ...] = KNEES  # candidate quantiles of bytes splitting floor / streaming
    refine: int = REFINE  # at most this many refinements of the best split
    reread_step: int = REREAD_STEP  # candidate column thresholds of the re-read term
    tie_rtol: float = DEFAULT.tie_rtol  # errors closer than this (relative) are a tie: the first wins

    def fit(self, records: pd.DataFrame) -> MemoryBoundFit:
        """Fit the effective bandwidth, floor and row terms per GPU and kernel.

        `records`: tidy records (seer.data.records) of memory-bound ops with gpu, op, rows,
        cols, fn, (dtype), time_ms; rows of other ops are left out. The same rows in any order
        give the same fit."""
        rec = memory_records(records)
        cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in rec]
        w = measured_work(rec[cols].reset_index(drop=True))
        names = rec["gpu"].astype(str).to_numpy(dtype=object)
        w["gpu"] = lookup(names, {g: spec_of(g).slug for g in pd.unique(names)})
        w["gpu_name"] = names
        w["time_ms"] = rec["time_ms"].to_numpy(dtype="float64")
        order = ["gpu", "key", "bytes", "rows", "cols", "time_ms"]
        w = w.sort_values(order, kind="mergesort").reset_index(drop=True)
        digest = hashlib.sha256(pd.util.hash_pandas_object(w[order], index=False).to_numpy().tobytes())
        fitted: dict[str, GPUMemoryFit] = {}
        for slug, g in w.groupby("gpu", sort=True):
            name = min(pd.unique(g["gpu_name"]))  # one name per GPU, whatever the row order
            spec = spec_of(slug if slug in gpus.GPUS else name)
            kernels: dict[str, KernelFit] = {}
            for key, k in g.groupby("key", sort=True):
                fit = self._fit_kernel(k, k["time_ms"].to_numpy(), KernelKey.parse(str(key)).op in PER_ROW)
                if fit is not None:
                    kernels[str(key)] = fit
            ew = g[g["op"] == "elementwise"]
            pools = [("elementwise", ew)] + list(ew.groupby(ew["key"].map(arity_pool), sort=True))
            for pool, part in pools:  # all functions, then those of each arity
                if part["key"].nunique() > 1:
                    fit = self._fit_kernel(part, part["time_ms"].to_numpy(), False)
                    if fit is not None:
                        kernels[str(pool)] = fit
            fitted[spec.slug] = GPUMemoryFit(str(name), spec.cc, Datasheet.of(spec), kernels)
        return MemoryBoundFit(fitted, n_rows=len(w), content_sha256=digest.hexdigest())

    def _fit_kernel(self, w: pd.DataFrame, t: np.ndarray, per_row: bool) -> KernelFit | None:
        """Fit one kernel on one GPU: the floor on the smallest tensors, the streaming line on
        the rest. The split (a quantile of bytes) and, for per-row kernels, whether to use the
        row term and which re-read threshold are those with the least relative squared error
        of max(floor, line) over all training rows, among fits with a significantly positive
        bytes coefficient (t > 2), row costs >= 0 and at least 3 rows clearly above the floor."""
        if len(t) < self.min_rows:
            return None
        b = w["bytes"].to_numpy()
        shapes: list[tuple[bool, float | None]] = [(False, None)]
        if per_row:
            lo_c, hi_c = w["cols"].min(), w["cols"].max()
            step = self.reread_step
            thresholds = [None] + [float(m) for m in range(step, int(hi_c), step) if m >= lo_c]
            shapes = [(rt, thr) for thr in thresholds for rt in (False, True)]
        knees = np.unique(np.quantile(b, self.knees))
        floors: dict[float, Any] = {}
        best = None

        def consider(lo: np.ndarray, x: np.ndarray, rows_term: bool, thr: float | None, knee: float, cache=True):
            nonlocal best
            if lo.sum() < 3 or (~lo).sum() < x.shape[1] + 3 or not _full_rank(x[~lo]):
                return
            line = wls_relative(x[~lo], t[~lo])
            if not line.tvalues[1] > 2 or (line.params[2:] < 0).any():
                return  # no (significant) bandwidth term, or a negative row cost: no roofline
            fl = floors.get(knee) if cache else None
            if fl is None:  # the floor depends on the split only: fit it once per knee
                fl = wls_relative(np.ones((lo.sum(), 1)), t[lo])
                if cache:
                    floors[knee] = fl
            lin = combine(x, line.params)
            if (lin > 1.01 * fl.params[0]).sum() < 3:
                return  # the line never clearly rises above the floor: nothing to fit it on
            pred = np.maximum(fl.params[0], lin)
            sse = float(np.sum(((pred - t) / t) ** 2))
            if best is None or sse < best[0] * (1 - self.tie_rtol):  # near-ties keep the first (fixed order)
                best = (sse, rows_term, thr, knee, fl, line, pred, int(lo.sum()))

        for rows_term, thr in shapes:
            x = line_features(w, thr, rows_term)
            for knee in knees:
                consider(b <= knee, x, rows_term, thr, float(knee))
        for _ in range(self.refine):
            # Refine the split: give the floor exactly the rows the chosen line puts below it
            # and refit, while that lowers the error (a quantile of bytes rarely falls on the corner).
            if best is None:
                break
            prev = best
            _, rows_term, thr, _, fl, line, _, _ = best
            x = line_features(w, thr, rows_term)
            lo = combine(x, line.params) <= fl.params[0]
            consider(lo, x, rows_term, thr, float(b[lo].max()) if lo.any() else 0.0, cache=False)
            if best is prev:
                break
        if best is None:  # nothing rises above the floor: a floor only, bandwidth from the datasheet
            fl = wls_relative(np.ones((len(t), 1)), t)
            rmspe, median_ape = _train_err(np.full(len(t), fl.params[0]), t)
            return KernelFit(
                floor_ms=float(fl.params[0]),
                floor_se_ms=float(fl.bse[0]),
                n=len(t),
                n_floor=len(t),
                train_rmspe=rmspe,
                train_median_ape=median_ape,
            )
        _, rows_term, thr, knee, fl, line, pred, n_floor = best
        names = line_terms(rows_term, thr is not None)
        rmspe, median_ape = _train_err(pred, t)
        return KernelFit(
            floor_ms=float(fl.params[0]),
            floor_se_ms=float(fl.bse[0]),
            line=Line.from_coef({k: float(v) for k, v in zip(names, line.params)}, thr),
            line_se=Line.from_coef({k: float(v) for k, v in zip(names, line.bse)}, thr),
            knee_bytes=knee,
            n=len(t),
            n_floor=n_floor,
            train_rmspe=rmspe,
            train_median_ape=median_ape,
        )


def _full_rank(x: np.ndarray) -> bool:
    scale = np.abs(x).max(axis=0)
    if (scale == 0).any():
        return False
    return np.linalg.matrix_rank(x / scale) == x.shape[1]


def _train_err(pred: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """RMSPE and median APE of `pred` on the training times."""
    e = np.abs(pred - t) / t
    return float(np.sqrt(np.mean(e**2))), float(np.median(e))


def memory_records(records: pd.DataFrame) -> pd.DataFrame:
    """The rows of memory-bound ops (ok status) a fit learns from, checked: one SeerError
    naming the column (and row) where a column is missing or a time is not > 0."""
    for c in ("gpu", "op", "rows", "cols", "time_ms"):
        if c not in records:
            raise SeerError(
                f"records: column {c!r} is missing (memory-bound records need gpu, op, rows, cols, fn, time_ms)"
            )
    rec = records[records["op"].isin(OPS)]
    if "status" in rec:
        rec = rec[rec["status"].isin(["ok", ""])]
    if rec.empty:
        raise SeerError(f"records: no rows of a memory-bound op ({', '.join(OPS)})")
    t = rec["time_ms"].to_numpy(dtype="float64", na_value=np.nan)
    bad = ~(np.isfinite(t) & (t > 0))
    if bad.any():
        raise SeerError(
            f"records: column 'time_ms', row {rec.index[np.flatnonzero(bad)[0]]!r}: expected a time in ms > 0"
        )
    return rec


def fit_memory_bound(records: pd.DataFrame) -> dict:
    """`MemoryBoundModel().fit(records).to_dict()`: the fits file's "memory_bound" section."""
    return MemoryBoundModel().fit(records).to_dict()
