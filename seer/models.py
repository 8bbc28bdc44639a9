"""SEER-style per-variant time models, fitted with statsmodels.

SEER splits kernels into compute-bound (t = W (a B_max f + b)), memory-bound (t ~ a DRAM
sectors + b) and under-utilized (t = a B r + d B w + b W B_max f + c) types by their measured
FP32-pipe and DRAM utilizations and fits one linear model per type by least squares on
relative error (WLS with weights 1/t^2). Where utilizations were measured (ncu counters, SEER
workbooks) that is one of the candidate models here ("types"; a new config takes the type of
its nearest training config). Where they were not (NeuSight), a compute bound and a memory
bound are fitted on every variant and a kernel's time is the larger of the two: the regime a
training row belongs to is re-assigned until stable (segmented regression), so the type needs
no hardware counters and follows from the configuration at prediction time.

Features come from the configuration alone (`seer.configs`, `seer.geometry`):
  W  = ceil(blocks / B_max)     waves, with B_max = resident blocks per SM x SMs
  S  = ceil(blocks / SMs)       blocks per SM: the partial last wave at SM granularity
  Kb = reduction length of one block (the GEMM K, divided by split-K)
compute:  W*Kb, W, S*Kb, S, 1  (+ helper-kernel terms for convolutions)
memory:   compulsory bytes, tile traffic (blocks x Kb x (tile_m + tile_n)), W, 1
B_max is unknown without registers and shared memory: it is the value of resident blocks
per SM that best explains the wave staircase of the training rows.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.optimize import lsq_linear, nnls

from . import configs
from .chooser import Chooser
from .geometry import Geometry, fit_geometry
from .knn import condense
from .occupancy import arch

MIN_ROWS = 12  # fewer training rows: the variant gets no model of its own


@dataclass
class Regime:
    """One linear bound: t = X @ coef, with statsmodels' standard errors."""

    names: list[str]
    coef: np.ndarray
    se: np.ndarray
    n: int
    r2: float

    def to_dict(self) -> dict:
        return {"features": self.names, "coef": [float(f"{c:.9g}") for c in self.coef],
                "se": [float(f"{c:.4g}") for c in self.se], "n": self.n,
                "r2": None if np.isnan(self.r2) else round(self.r2, 5)}

    @classmethod
    def from_dict(cls, d: dict) -> "Regime":
        return cls(list(d["features"]), np.asarray(d["coef"], float), np.asarray(d["se"], float),
                   int(d["n"]), float("nan") if d["r2"] is None else float(d["r2"]))


@dataclass
class VariantModel:
    op: str
    algo: str
    variant: str
    kernel: str
    geometry: Geometry
    blocks_per_sm: int
    bmax_source: str
    feature_set: str
    compute: Regime | None
    memory: Regime | None
    helpers: Regime
    clock: tuple[float, float] | None
    floor_ms: float
    n_train: int
    train_rmspe: float
    cv_rmspe: float
    compute_share: float  # training rows on the compute bound
    sms: int
    notes: list[str] = field(default_factory=list)
    under: Regime | None = None  # SEER's under-utilized form (typed feature sets)
    type_chooser: Chooser | None = None  # kernel type of a config (typed feature sets)

    @property
    def b_max(self) -> int:
        return self.blocks_per_sm * self.sms

    def predict(self, df: pd.DataFrame, s: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Time in ms of configs `df` (s: their configs.sizes, if already computed)."""
        x = inputs(df, self.geometry, self.algo, s=s, logcfg=self.type_chooser is not None)
        D = design(x, self.blocks_per_sm, self.sms, self.feature_set)
        if self.type_chooser is not None:  # SEER's typed regimes
            regimes = {"compute": self.compute, "memory": self.memory, "under": self.under}
            t = typed_time(D, self.type_chooser, {ty: regimes[ty].coef for ty in self.type_chooser.labels},
                           self.floor_ms)
        else:
            t = D.compute @ self.compute.coef
            if self.memory is not None:
                t = np.maximum(t, D.memory @ self.memory.coef)
            t = np.maximum(t + D.helpers @ self.helpers.coef, self.floor_ms)
        if self.clock is not None:
            t = np.exp(self.clock[0]) * t ** (1.0 + self.clock[1])
        return t

    def to_dict(self) -> dict:
        return {
            "op": self.op, "algo": self.algo, "variant": self.variant, "kernel": self.kernel,
            "geometry": self.geometry.to_dict(), "blocks_per_sm": self.blocks_per_sm,
            "b_max": self.b_max, "b_max_source": self.bmax_source, "feature_set": self.feature_set,
            "type": {"compute_bound_share": round(self.compute_share, 4)},
            "compute": None if self.compute is None else self.compute.to_dict(),
            "memory": None if self.memory is None else self.memory.to_dict(),
            "under": None if self.under is None else self.under.to_dict(),
            "type_chooser": None if self.type_chooser is None else self.type_chooser.to_dict(),
            "helpers": self.helpers.to_dict(),
            "clock": None if self.clock is None else [float(f"{c:.9g}") for c in self.clock],
            "floor_ms": float(f"{self.floor_ms:.6g}"), "n": self.n_train,
            "train_rmspe": round(self.train_rmspe, 5), "cv_rmspe": round(self.cv_rmspe, 5),
            "sms": self.sms, "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "VariantModel":
        return cls(d["op"], d["algo"], d["variant"], d["kernel"], Geometry.from_dict(d["geometry"]),
                   int(d["blocks_per_sm"]), d["b_max_source"], d["feature_set"],
                   None if d["compute"] is None else Regime.from_dict(d["compute"]),
                   None if d["memory"] is None else Regime.from_dict(d["memory"]),
                   Regime.from_dict(d["helpers"]),
                   None if d.get("clock") is None else (float(d["clock"][0]), float(d["clock"][1])),
                   float(d["floor_ms"]), int(d["n"]), float(d["train_rmspe"]),
                   float(d["cv_rmspe"]), float(d["type"]["compute_bound_share"]), int(d["sms"]),
                   list(d.get("notes", [])),
                   None if d.get("under") is None else Regime.from_dict(d["under"]),
                   None if d.get("type_chooser") is None else Chooser.from_dict(d["type_chooser"]))


# ------------------------------------------------------------------ features
HELPERS = {
    "gemm": ["splitk_MB", "splitk"],
    "WINOGRAD_NONFUSED": ["in_MB", "out_MB", "xin_MB", "xout_MB", "xfilter_MB"],
    "GEMM": ["in_MB", "out_MB", "im2col_MB"],
    "conv": ["in_MB", "out_MB", "filter_MB"],
}


@dataclass
class Inputs:
    """What the features of one variant need from configs, computed once (B_max aside)."""

    blocks: np.ndarray
    kb: np.ndarray  # reduction length per block
    read_mb: np.ndarray  # compulsory DRAM reads (operands), MB
    write_mb: np.ndarray  # compulsory DRAM writes (result), MB
    tile_mb: np.ndarray  # operand tiles the blocks load, MB
    helpers: dict[str, np.ndarray]
    logcfg: np.ndarray | None  # log-configuration, for the kernel-type chooser where one is used

    @property
    def mb(self) -> np.ndarray:
        return self.read_mb + self.write_mb

    def take(self, rows: np.ndarray) -> "Inputs":
        return Inputs(self.blocks[rows], self.kb[rows], self.read_mb[rows], self.write_mb[rows],
                      self.tile_mb[rows], {k: v[rows] for k, v in self.helpers.items()},
                      None if self.logcfg is None else self.logcfg[rows])


def inputs(df: pd.DataFrame, geom: Geometry, algo: str, grid: dict[str, np.ndarray] | None = None,
           s: dict[str, np.ndarray] | None = None, logcfg: bool = False) -> Inputs:
    s = configs.sizes(df) if s is None else s
    grid = geom.grid(df, s) if grid is None else grid
    blocks = np.prod(list(grid.values()), axis=0)
    kb = s["gk"]
    if geom.op in configs.GEMM_OPS:
        split = np.maximum(np.round(grid.get("grid_z", s["gbatch"]) / s["gbatch"]), 1.0)
        kb = kb / split
        extra = np.where(split > 1, 1.0, 0.0)
        h = [4e-6 * extra * split * s["gm"] * s["gn"] * s["gbatch"], extra]
        names = HELPERS["gemm"]
    else:  # helper kernels of a convolution: layout and Winograd transforms, im2col
        h = [4e-6 * s["N"] * s["C"] * s["H"] * s["W"], 4e-6 * s["NPQ"] * s["K"]]
        if algo == "WINOGRAD_NONFUSED":
            names = HELPERS[algo]
            h += [36 * 4e-6 * s["C"] * s["T4"], 36 * 4e-6 * s["K"] * s["T4"], 36 * 4e-6 * s["K"] * s["C"]]
        elif algo == "GEMM":
            names = HELPERS[algo]
            h += [4e-6 * s["NPQ"] * s["CRS"]]
        else:
            names = HELPERS["conv"]
            h += [4e-6 * s["K"] * s["CRS"]]
    tm, tn = geom.tiles()
    return Inputs(blocks, kb, s["read_bytes"] * 1e-6, s["write_bytes"] * 1e-6, 4e-6 * blocks * kb * (tm + tn),
                  dict(zip(names, h)), configs.log_config(df, geom.op, s) if logcfg else None)


@dataclass
class Design:
    compute: np.ndarray
    memory: np.ndarray
    helpers: np.ndarray
    names: dict[str, list[str]]
    under: np.ndarray | None = None  # SEER's under-utilized form (types feature sets)
    logcfg: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> "Design":
        return Design(self.compute[rows], self.memory[rows], self.helpers[rows], self.names,
                      None if self.under is None else self.under[rows],
                      None if self.logcfg is None else self.logcfg[rows])

    def matrix(self, kind: str) -> np.ndarray:
        return {"compute": self.compute, "memory": self.memory, "under": self.under}[kind]


def design(x: Inputs, bps: int, sms: int, feature_set: str) -> Design:
    """Design matrices for one variant: the compute bound, the memory bound (the larger of
    the two is the main kernel's time) and the helper kernels (their time adds).
    Feature sets: "seer" (SEER's terms) or "waves" (plus per-SM partial waves and tile
    traffic), each optionally "+helpers" and "+clock" (see `Fit`)."""
    W = np.ceil(x.blocks / (bps * sms))
    S = np.ceil(x.blocks / sms)
    one = np.ones(len(W))
    kb = x.kb
    under = None
    if feature_set.split("+")[0] in ("seer", "types"):
        comp, mem = [W * kb, W, one], [x.mb, one]
        names = {"compute": ["W*Kb", "W", "1"], "memory": ["MB", "1"]}
        if feature_set.startswith("types"):  # SEER: t = a B r + d B w + b W B_max f + c
            under = np.column_stack([x.read_mb, x.write_mb, W * kb, one])
            names["under"] = ["read_MB", "write_MB", "W*Kb", "1"]
    else:
        comp, mem = [W * kb, W, S * kb, S, one], [x.mb, x.tile_mb, W, one]
        names = {"compute": ["W*Kb", "W", "S*Kb", "S", "1"], "memory": ["MB", "tile_MB", "W", "1"]}
    helpers = x.helpers if "+helpers" in feature_set else {}
    names["helpers"] = list(helpers)
    return Design(np.column_stack(comp), np.column_stack(mem),
                  np.column_stack(list(helpers.values())) if helpers else np.zeros((len(W), 0)), names,
                  under, x.logcfg)


# ------------------------------------------------------------------ fitting
def _wls_fit(X: np.ndarray, y: np.ndarray):
    """Least squares on relative error: WLS with weights 1/t^2 (SEER's nlinfit objective)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.WLS(y, X, weights=1.0 / y**2).fit()


@dataclass
class WLSResult:
    """Non-negative WLS coefficients; their standard errors and R^2 (one statsmodels WLS on
    the kept columns) are computed on first use: the B_max and feature-set searches fit
    hundreds of candidates and read only the coefficients."""

    params: np.ndarray
    X: np.ndarray
    y: np.ndarray

    @cached_property
    def _stats(self) -> tuple[np.ndarray, float]:
        se = np.zeros(len(self.params))
        kept = self.params > 0
        if not kept.any():
            return se, float("nan")
        r = _wls_fit(self.X[:, kept], self.y)
        se[kept] = np.nan_to_num(r.bse, nan=0.0)
        return se, float(r.rsquared)

    @property
    def bse(self) -> np.ndarray:
        return self._stats[0]

    @property
    def rsquared(self) -> float:
        return self._stats[1]


def _wls(X: np.ndarray, y: np.ndarray) -> WLSResult:
    """WLS on relative error with every coefficient >= 0: time never falls as waves, work,
    bytes or launches grow (a negative coefficient is what collinear terms or an unmodelled
    curvature produce, and it extrapolates into negative or exploding times).

    The exact non-negative optimum comes from scipy's NNLS on the weighted system (rows
    divided by t, columns scaled to unit norm so the solver's tolerances mean the same for
    every feature); statsmodels' WLS on the columns it keeps gives the standard errors (at
    the optimum the kept coefficients solve that unconstrained problem)."""
    Xw = X / y[:, None]
    norm = np.linalg.norm(Xw, axis=0)
    usable = norm > 0
    p = np.zeros(X.shape[1])
    if usable.any():
        A = Xw[:, usable] / norm[usable]
        try:
            sol = nnls(A, np.ones(len(y)), maxiter=50 * A.shape[1])[0]
        except RuntimeError:  # NNLS did not converge (degenerate columns): the bounded solver
            sol = lsq_linear(A, np.ones(len(y)), bounds=(0.0, np.inf), method="bvls").x
        p[usable] = sol / norm[usable]
    return WLSResult(p, X, y)


@dataclass
class Bounds:
    """A fitted variant: time = max(compute @ a, memory @ b) + helpers @ c."""

    a: np.ndarray
    b: np.ndarray | None
    c: np.ndarray
    fit: WLSResult  # the joint WLS of (a, b, c), in that order
    memory_rows: np.ndarray

    @property
    def se(self) -> np.ndarray:
        return self.fit.bse

    @property
    def r2(self) -> float:
        return self.fit.rsquared

    def predict(self, D: Design, floor: float) -> np.ndarray:
        t = D.compute @ self.a
        if self.b is not None:
            t = np.maximum(t, D.memory @ self.b)
        return np.maximum(t + D.helpers @ self.c, floor)


def fit_bounds(D: Design, y: np.ndarray, iters: int = 8, start: np.ndarray | None = None) -> Bounds:
    """Segmented WLS on relative error: every row is explained by the larger of the two bounds
    plus the helper terms; rows are re-assigned to bounds and all refitted together until the
    assignment is stable. `start`: a first guess of the memory-bound rows."""
    nc, nm = D.compute.shape[1], D.memory.shape[1]

    def compute_only() -> Bounds:
        r = _wls(np.hstack([D.compute, D.helpers]), y)
        return Bounds(r.params[:nc], None, r.params[nc:], r, np.zeros(len(y), bool))

    if start is None:
        fit = compute_only()
        ratio = y / np.maximum(D.compute @ fit.a + D.helpers @ fit.c, 1e-12)
        mem = ratio > np.quantile(ratio, 0.8)  # start: the rows the compute bound explains worst
    else:
        mem = start
    for _ in range(iters):
        if mem.sum() < nm + 3 or (~mem).sum() < nc + 3:
            return compute_only()
        X = np.hstack([D.compute * ~mem[:, None], D.memory * mem[:, None], D.helpers])
        r = _wls(X, y)
        fit = Bounds(r.params[:nc], r.params[nc:nc + nm], r.params[nc + nm:], r, mem)
        new = D.memory @ fit.b > D.compute @ fit.a
        if (new == mem).all():
            break
        mem = new
    return fit


def _rmspe(p, y):
    return float(np.sqrt(np.mean(((p - y) / y) ** 2)))


TYPES = ("compute", "memory", "under")
UTIL_BOUND = 80.0  # percent of peak: SEER's level 8 of nvprof's 0-10 utilization scale


def seer_types(train: pd.DataFrame) -> np.ndarray | None:
    """SEER's type of each training row: compute-bound where the FP32 pipe ran at >= 80%,
    else memory-bound where DRAM did, else under-utilized (or the type a SEER workbook gives).
    None where utilizations were not measured (NeuSight's data, a harness run without ncu)."""
    kt = train["kernel_type"].to_numpy(dtype=object) if "kernel_type" in train else None
    if kt is not None and np.isin(kt, TYPES).all():
        return kt
    if "fp32_util_pct" not in train or "dram_util_pct" not in train:
        return None
    fp = train["fp32_util_pct"].to_numpy(dtype=float)
    dr = train["dram_util_pct"].to_numpy(dtype=float)
    if np.mean(np.isnan(fp) | np.isnan(dr)) > 0.1:
        return None
    return np.where(fp >= UTIL_BOUND, "compute", np.where(dr >= UTIL_BOUND, "memory", "under"))


@dataclass
class Typed:
    """SEER's own scheme: one WLS per kernel type (its form + the helper terms), fitted on the
    rows of that measured type; a new config gets the type of its nearest training config
    (SEER used a classification tree on the configuration for the same purpose)."""

    regimes: dict[str, WLSResult]
    types: Chooser

    def labels(self, D: Design) -> np.ndarray:
        return type_of(self.types, D)

    def predict(self, D: Design, floor: float) -> np.ndarray:
        return typed_time(D, self.types, {ty: r.params for ty, r in self.regimes.items()}, floor)


def type_of(types: Chooser, D: Design) -> np.ndarray:
    """The kernel type of each row: the type of its nearest training config."""
    return np.asarray(types.labels, dtype=object)[types.nearest(D.logcfg)[1][:, 0]]


def typed_time(D: Design, types: Chooser, coefs: dict[str, np.ndarray], floor: float) -> np.ndarray:
    """SEER's typed prediction: each row by the form of its type (plus the helper terms)."""
    lab = type_of(types, D)
    t = np.empty(len(lab))
    for ty, c in coefs.items():
        rows = lab == ty
        t[rows] = np.hstack([D.matrix(ty)[rows], D.helpers[rows]]) @ c
    return np.maximum(t, floor)


def fit_typed(D: Design, y: np.ndarray, types: np.ndarray) -> Typed:
    regimes = {}
    for ty in TYPES:
        rows = types == ty
        X = np.hstack([D.matrix(ty), D.helpers])
        if rows.sum() >= X.shape[1] + 3:
            regimes[ty] = _wls(X[rows], y[rows])
    if not regimes:  # no type has rows enough of its own: SEER's additive form for all
        regimes["under"] = _wls(np.hstack([D.under, D.helpers]), y)
        types = np.full(len(y), "under", dtype=object)
    labels = sorted(regimes)
    keep = np.isin(types, labels)
    idx = pd.Series(types[keep]).map({t: i for i, t in enumerate(labels)}).to_numpy(dtype=int)
    pts = D.logcfg[keep].astype(np.float32).astype(np.float64)
    sel = condense(pts, idx)
    return Typed(regimes, Chooser("kernel_type", "", labels, pts[sel], idx[sel]))


@dataclass
class Fit:
    """Bounds (or SEER's typed regimes) plus an optional sustained-clock calibration
    t = exp(c0) * t_bounds^(1 + c1): GPUs under a power cap (T4, P4) slow down the longer a
    kernel runs, so time grows faster than the work; c1 = 0 is a GPU that holds its clock."""

    bounds: Bounds | None
    clock: tuple[float, float] | None = None
    typed: Typed | None = None

    def predict(self, D: Design, floor: float) -> np.ndarray:
        t = self.typed.predict(D, floor) if self.typed is not None else self.bounds.predict(D, floor)
        if self.clock is not None:
            t = np.exp(self.clock[0]) * t ** (1.0 + self.clock[1])
        return t


def fit_model(D: Design, y: np.ndarray, clock: bool, floor: float, iters: int = 12,
              types: np.ndarray | None = None) -> Fit:
    """Fit the bounds (or, given measured `types`, SEER's typed regimes); with `clock`,
    alternate between the bounds (on times mapped back through the clock law) and the law
    itself (OLS of log t on log t_bounds) until the exponent settles."""
    if types is not None:
        return Fit(None, typed=fit_typed(D, y, types))
    if not clock:
        return Fit(fit_bounds(D, y))
    target, c, b = y, (0.0, 0.0), None
    for _ in range(iters):
        b = fit_bounds(D, target, start=None if b is None else b.memory_rows)
        lt = np.log(b.predict(D, floor))
        r = sm.OLS(np.log(y) - lt, np.column_stack([np.ones_like(lt), lt])).fit()
        new = (float(r.params[0]), float(r.params[1]))
        if not -0.5 < new[1] < 1.0:  # not a plausible clock law: leave the bounds alone
            return Fit(fit_bounds(D, y))
        done = abs(new[1] - c[1]) < 1e-3
        c = new
        target = np.exp((np.log(y) - c[0]) / (1.0 + c[1]))
        if done:
            break
    return Fit(fit_bounds(D, target, start=b.memory_rows), c)


def bps_candidates(train: pd.DataFrame, cc: str) -> list[int]:
    """Resident blocks per SM that the launch allows (warp and block limits)."""
    a = arch(cc)
    threads = (train["block_x"].astype("Float64").fillna(1) * train["block_y"].astype("Float64").fillna(1)
               * train["block_z"].astype("Float64").fillna(1)).to_numpy(dtype=float)
    warps = np.ceil(np.nanmax(threads) / 32) if np.isfinite(threads).any() else 1
    hi = int(min(a.max_blocks, a.max_warps // max(warps, 1)))
    return list(range(1, max(hi, 1) + 1))


CV_CLOCK_ITERS = 4  # enough to rank feature sets; the final fit iterates to convergence
STAIRCASE_ROWS = 2000  # rows enough to place the wave steps; more only cost time


TIE_RTOL = 1e-6  # objectives closer than this (relative) are a tie, whatever the BLAS build


def near_best(scores: dict, rtol: float = TIE_RTOL):
    """The first key (in the dict's order: the fixed tie rule) whose score is within `rtol` of
    the best: a discrete choice that floating-point noise between machines cannot flip."""
    lo = min(scores.values())
    return next(k for k, v in scores.items() if v <= lo + rtol * abs(lo) + 1e-15)


@dataclass
class Staircase:
    """The resident blocks per SM that explain the wave steps best, and whether the data
    tells the candidates apart at all (they cannot where every training row launches the same
    number of waves under each of them, e.g. every row one grid)."""

    bps: int
    rmspe: float
    identified: bool


def _staircase(x: Inputs, y: np.ndarray, cands: list[int], sms: int, fs: str, floor: float) -> Staircase:
    """The B_max that explains the steps best: a coarse pass over the candidates, then their
    neighbours, on an evenly spaced subsample. Candidates that give the same wave counts up to
    a constant factor fit identically; each such class is fitted once and stands for its
    smallest member, and near-ties go to the smallest resident-block count."""
    rows = np.linspace(0, len(y) - 1, min(len(y), STAIRCASE_ROWS)).round().astype(int)
    xs, ys = x.take(rows), y[rows]
    waves = {b: np.ceil(xs.blocks / (b * sms)) for b in sorted(cands)}
    cls = {b: (w / max(w.max(), 1.0)).tobytes() for b, w in waves.items()}
    seen: dict[bytes, float] = {}

    def err(bps: int) -> float:
        if cls[bps] not in seen:
            D = design(xs, bps, sms, fs)
            seen[cls[bps]] = _rmspe(fit_bounds(D, ys).predict(D, floor), ys)
        return seen[cls[bps]]

    coarse = [c for c in sorted(cands) if c <= 6 or c in (8, 10, 12, 16, 20, 24, 28, 32)] or sorted(cands)
    best = near_best({b: err(b) for b in coarse})
    tried = {b: err(b) for b in sorted({*coarse, best - 1, best + 1} & set(cands))}
    bps = near_best(tried)
    return Staircase(bps, tried[bps], identified=len(set(cls.values())) > 1)


def feature_sets(helpers: bool = True, types: bool = False) -> list[str]:
    """The candidate feature sets; "+helpers" only where helper kernels ran, SEER's typed
    regimes ("types") only where utilizations were measured."""
    hs = ("", "+helpers")[: 1 + helpers]
    out = [f"{b}{h}{c}" for b in ("seer", "waves") for h in hs for c in ("", "+clock")]
    return out + ([f"types{h}" for h in hs] if types else [])


def _select(x: Inputs, y: np.ndarray, cands: list[int], sms: int, op: str, floor: float,
            folds: int, types: np.ndarray | None = None) -> tuple[float, str, Staircase]:
    """(cross-validated RMSPE, feature set, B_max staircase) of the best model."""
    fold = np.arange(len(y)) % folds
    # B_max: the staircase that the richest bounds fit best on the training rows
    helpers = any(np.any(v != 0) for v in x.helpers.values())  # e.g. no split-K: no helpers
    stair = _staircase(x, y, cands, sms, "waves+helpers" if helpers else "waves", floor)
    bps = stair.bps
    scores: dict[str, float] = {}
    for fs in feature_sets(helpers, types is not None):
        D = design(x, bps, sms, fs)
        typed = types if fs.startswith("types") else None
        k = D.compute.shape[1] + D.memory.shape[1] + D.helpers.shape[1]
        errs = np.full(len(y), np.inf)
        for f in range(folds):
            te = fold == f
            if (~te).sum() < k + 3:
                continue
            m = fit_model(D.take(~te), y[~te], "+clock" in fs, floor, iters=CV_CLOCK_ITERS,
                          types=None if typed is None else typed[~te])
            errs[te] = (m.predict(D.take(te), floor) - y[te]) / y[te]
        scores[fs] = float(np.sqrt(np.mean(errs**2)))
    fs = near_best(scores)  # near-ties go to the simpler set, listed first
    return scores[fs], fs, stair


def fit_variant(train: pd.DataFrame, *, op: str, algo: str, variant: str, cc: str, sms: int,
                known_bps: int | None = None, folds: int = 3) -> VariantModel:
    """Fit one kernel variant on its training rows (time_ms = the measured call time).

    B_max comes from the wave staircase (training error), the feature set from a
    deterministic k-fold cross-validation inside the training rows (held-out error)."""
    y = train["time_ms"].to_numpy(dtype=float)
    floor = float(0.5 * y.min())
    geom = fit_geometry(train, op)
    types = seer_types(train)
    x = inputs(train, geom, algo, logcfg=types is not None)
    cv, fs, stair = _select(x, y, bps_candidates(train, cc) if not known_bps else [known_bps],
                            sms, op, floor, folds, types)
    bps = stair.bps
    D = design(x, bps, sms, fs)
    fit = fit_model(D, y, "+clock" in fs, floor, types=types if fs.startswith("types") else None)
    tr_err = _rmspe(fit.predict(D, floor), y)
    regimes = _regimes(fit, D, len(y))
    notes = [f"{a} rule {r.describe()} reproduces {100 * r.match:.0f}% of training grids"
             for a, r in geom.axes.items() if r.match < 0.95]
    if known_bps:
        source = "measured occupancy"
    elif stair.identified:
        source = "wave staircase of training rows"
    else:
        source = "not identified: the smallest candidate"
        notes.append("B_max not identified: every candidate gives the training rows the same wave "
                     "steps (up to a factor), so the data cannot tell them apart; the smallest "
                     f"({bps} block(s) per SM) is taken")
    return VariantModel(op=op, algo=algo, variant=variant, kernel=str(train["kernel"].iloc[0]),
                        geometry=geom, blocks_per_sm=bps, bmax_source=source,
                        feature_set=fs, **regimes, clock=fit.clock, floor_ms=floor, n_train=len(y),
                        train_rmspe=tr_err, cv_rmspe=cv, sms=sms, notes=notes)


def _regimes(fit: Fit, D: Design, n: int) -> dict:
    """The fitted regimes as VariantModel fields (coefficients with standard errors)."""
    if fit.typed is not None:
        t = fit.typed
        lab = t.labels(D)
        regs = {ty: Regime(D.names[ty] + D.names["helpers"], r.params, r.bse, int((lab == ty).sum()), r.rsquared)
                for ty, r in t.regimes.items()}
        return {"compute": regs.get("compute"), "memory": regs.get("memory"), "under": regs.get("under"),
                "helpers": Regime([], np.zeros(0), np.zeros(0), n, float("nan")), "type_chooser": t.types,
                "compute_share": float(np.mean(lab == "compute"))}
    b = fit.bounds
    nc, nm = D.compute.shape[1], D.memory.shape[1]
    se_h = b.se[nc + nm:] if b.b is not None else b.se[nc:]
    return {"compute": Regime(D.names["compute"], b.a, b.se[:nc], int((~b.memory_rows).sum()), b.r2),
            "memory": None if b.b is None else Regime(D.names["memory"], b.b, b.se[nc:nc + nm],
                                                       int(b.memory_rows.sum()), b.r2),
            "helpers": Regime(D.names["helpers"], b.c, se_h, n, b.r2),
            "compute_share": float(1 - b.memory_rows.mean())}
