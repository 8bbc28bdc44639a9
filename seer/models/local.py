"""A variant's time corrected by its own training rows nearby: the linear law's residuals smoothed.

A variant's linear law (seer.models.law) is one formula over every configuration it ran, and
what it leaves is not noise: the H100's forward convolutions' training rows are 14.0% RMSPE off
their laws (`python -m seer.fit` prints it per op), where the same calls measured twice differ
by 1-2% (`python -m seer.evaluate --set noise`). Neighbouring
configurations share most of that miss (a wave's tail, a tile's edge, an L2 that holds one
operand), so a configuration's time is the law's times the weighted mean of the log residuals
of the variant's training rows nearest it (Nadaraya-Watson with a Gaussian kernel, shrunk
towards no correction by a prior weight), the kriging of a parametric model's residuals; or
their local-linear fit, a level and a slope per axis over the 30 nearest, where a residual
trends across the neighbours (session 52: H100 Test-set-I 19.0% -> 18.7% RMSPE, median 4.9% ->
4.5%; docs/results.md, "A residual's trend across its neighbours fitted"). Far
from every training row the weights vanish and the law answers alone: beyond the data nothing
changes.

A convolution variant's rows include those of the variants too few rows modelled whose
configurations its law times (seer.fit.gpu.with_local): near them it is corrected to what ran.

The kernel's length, the prior's weight and the kind of fit are chosen per op by leave-one-out over the
training rows (each row corrected by its neighbours, never itself), on SEER's metric (RMSPE);
an op where no setting beats the law alone gets none (docs/results.md, "A variant's residuals
smoothed over its neighbours").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.spatial import cKDTree

from seer.models import knn

NEIGHBOURS = 10  # training rows whose residuals a local-constant correction weighs
LINEAR_NEIGHBOURS = 30  # and a local-linear one, which fits a slope per axis besides the level
LENGTHS = (0.35, 0.5, 0.75, 1.0, 1.5, 2.0)  # kernel lengths tried, in log2 units of the configuration
PRIORS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)  # weight of "no correction", in units of one neighbour at distance 0
RIDGES = (0.3, 1.0, 3.0)  # a local-linear fit's weight on flat slopes, in the same units


@dataclass(frozen=True, eq=False)
class Smoothing:
    """The kernel's length (log2 units) and the prior's weight one op's corrections use; with a
    `ridge`, a local-linear fit of the residuals (a level and a slope per axis of the
    log-configuration, the slopes shrunk towards flat by the ridge) in place of their weighted
    mean, which a residual that trends across the neighbours biases (the neighbours lie on one
    side of a configuration at the data's edge, or along one axis of a grid)."""

    length: float
    prior: float
    ridge: float | None = None

    @property
    def neighbours(self) -> int:
        return NEIGHBOURS if self.ridge is None else LINEAR_NEIGHBOURS

    def weights(self, d: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * (d / self.length) ** 2)

    def to_dict(self) -> dict:
        return {"length": self.length, "prior": self.prior, **({"ridge": self.ridge} if self.ridge is not None else {})}

    @classmethod
    def from_dict(cls, d: dict) -> Smoothing | None:
        """The smoothing a fits file names (None where its length is null: none was chosen; no
        ridge in files before 2026-12-02, session 52: local-constant)."""
        if d.get("length") is None:
            return None
        return cls(float(d["length"]), float(d["prior"]), None if d.get("ridge") is None else float(d["ridge"]))

    def shift(self, d: np.ndarray, r: np.ndarray, offsets: np.ndarray, normal: Normal | None = None) -> np.ndarray:
        """The log correction of each row (axis 0) from its neighbours' distances, residuals and
        offsets from it (neighbour - row, in the log-configuration; the first `neighbours`).
        `normal`: a local-linear fit's equations of the same rows at this length, if made already."""
        if self.ridge is None:
            k = self.neighbours
            w = self.weights(d[:, :k])
            return (w * r[:, :k]).sum(axis=1) / (self.prior + w.sum(axis=1))
        eq = self.normal(d, r, offsets) if normal is None else normal
        a = eq.zwz.copy()
        a[:, 0, 0] += self.prior
        idx = np.arange(1, a.shape[2])
        a[:, idx, idx] += self.ridge
        return np.linalg.solve(a, eq.zwr)[:, 0, 0]

    def normal(self, d: np.ndarray, r: np.ndarray, offsets: np.ndarray) -> Normal:
        """A local-linear fit's weighted normal equations of each row over its neighbours (`shift`)."""
        k = LINEAR_NEIGHBOURS
        w, r = self.weights(d[:, :k]), r[:, :k]
        z = np.concatenate([np.ones((*w.shape, 1)), offsets[:, :k]], axis=2)  # level, then one slope per axis
        zw = (z * w[:, :, None]).transpose(0, 2, 1)
        return Normal(zw @ z, zw @ r[:, :, None])


@dataclass(frozen=True)
class Normal:
    """z'Wz and z'Wr of a local-linear fit, before its prior and ridge: they depend on the
    kernel's length alone, so choose_smoothing makes them once a length, not once a setting."""

    zwz: np.ndarray  # (rows, 1 + axes, 1 + axes)
    zwr: np.ndarray  # (rows, 1 + axes, 1)


@dataclass(frozen=True, eq=False)
class LocalCorrection:
    """One variant's training log-configurations and the log residuals of its law there, with
    the op's smoothing; stored as the choosers' points are (knn.encode: float32)."""

    points: np.ndarray  # (n, d) log-configurations
    residuals: np.ndarray  # (n,) log(measured / law)
    smoothing: Smoothing
    neighbours: int = NEIGHBOURS

    @cached_property
    def tree(self) -> cKDTree:
        return cKDTree(self.points)

    def factor(self, logcfg: np.ndarray) -> np.ndarray:
        """The factor each configuration's law time is multiplied by (1 far from every training row)."""
        if not len(logcfg):
            return np.ones(0)
        k = min(self.neighbours, len(self.residuals))
        d, i = self.tree.query(logcfg, k=k)
        d, i = d.reshape(len(logcfg), k), i.reshape(len(logcfg), k)
        return np.exp(self.smoothing.shift(d, self.residuals[i], self.points[i] - logcfg[:, None, :]))

    def to_dict(self) -> dict:
        return {
            **self.smoothing.to_dict(),
            "neighbours": self.neighbours,
            "points": knn.encode(self.points),
            "residuals": knn.encode(self.residuals),
        }

    @classmethod
    def from_dict(cls, d: dict) -> LocalCorrection:
        smoothing = Smoothing.from_dict(d)
        assert smoothing is not None, "a variant's correction names its smoothing (fitsfile.check)"
        return cls(knn.decode(d["points"]), knn.decode(d["residuals"]), smoothing, int(d["neighbours"]))


@dataclass(frozen=True)
class Residuals:
    """One variant's training rows: log-configurations, and the law's time over the measured."""

    logcfg: np.ndarray
    ratio: np.ndarray  # law / measured

    @property
    def log_residuals(self) -> np.ndarray:
        return -np.log(self.ratio)

    def loo(self, k: int = LINEAR_NEIGHBOURS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distances, residuals, offsets) of each row's k nearest other rows (never the row itself)."""
        n = len(self.ratio)
        kk = min(k + 1, n)
        d, i = cKDTree(self.logcfg).query(self.logcfg, k=kk)
        d, i = d.reshape(n, kk), i.reshape(n, kk)
        own = i == np.arange(n)[:, None]
        own[:, -1] |= ~own.any(axis=1)  # a duplicate took the row's place: drop the farthest instead
        keep = ~own
        d = d[keep].reshape(n, kk - 1)
        i = i[keep].reshape(n, kk - 1)
        return d, self.log_residuals[i], self.logcfg[i] - self.logcfg[:, None, :]


@dataclass(frozen=True)
class Choice:
    """What one op's leave-one-out said: the smoothing chosen (None: the laws alone), over how
    many training rows, and their RMSPE under the laws alone and corrected (fractions)."""

    smoothing: Smoothing | None
    rows: int
    law_rmspe: float
    rmspe: float
    lent: int = 0  # of the rows, those of variants too few rows modelled, timed by a neighbour's law

    def to_dict(self) -> dict:
        return {
            **(self.smoothing.to_dict() if self.smoothing is not None else {"length": None, "prior": None}),
            "rows": self.rows,
            "lent": self.lent,
            "law_rmspe": round(self.law_rmspe, 5),
            "loo_rmspe": round(self.rmspe, 5),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Choice:
        lent = int(d.get("lent", 0))  # files before 2026-12-02 (session 52) lent none
        return cls(Smoothing.from_dict(d), int(d["rows"]), float(d["law_rmspe"]), float(d["loo_rmspe"]), lent)

    def describe(self) -> str:
        sm = self.smoothing
        how = (
            "the laws alone: no smoothing beat them"
            if sm is None
            else f"length {sm.length:g}, prior {sm.prior:g}"
            + ("" if sm.ridge is None else f", local-linear, ridge {sm.ridge:g}")
        )
        lent = f", {self.lent} of them a thin variant's under its neighbour's law" if self.lent else ""
        said = f"{100 * self.law_rmspe:.1f}% -> {100 * self.rmspe:.1f}% RMSPE leave-one-out"
        return f"{said} on {self.rows} rows{lent} ({how})"


# the order choose_smoothing judges the settings in (ridge, length, prior)
_ORDER = [(ridge, length, prior) for ridge in (None, *RIDGES) for length in LENGTHS for prior in PRIORS]


def choose_smoothing(variants: list[Residuals], rtol: float = 1e-6) -> Choice:
    """The smoothing of LENGTHS x PRIORS, local-constant or local-linear with a ridge of RIDGES,
    whose leave-one-out corrections give the lowest RMSPE over every row of `variants` (one
    op's); none where no setting beats the laws alone by more than `rtol` (relative) or no
    variant has two rows."""
    parts = [(v.ratio, *v.loo()) for v in variants if len(v.ratio) >= 2]
    if not parts:
        return Choice(None, 0, float("nan"), float("nan"))
    ratio = np.concatenate([p[0] for p in parts])
    base = float(np.mean((ratio - 1) ** 2))
    errors: dict[tuple[float | None, float, float], float] = {}  # mean squared error of each setting
    for length in LENGTHS:
        normals = [Smoothing(length, 0.0, 1.0).normal(d, r, x) for _, d, r, x in parts]
        for ridge in (None, *RIDGES):
            for prior in PRIORS:
                s = Smoothing(length, prior, ridge)
                shift = np.concatenate([s.shift(d, r, x, eq) for (_, d, r, x), eq in zip(parts, normals)])
                errors[ridge, length, prior] = float(np.mean((ratio * np.exp(shift) - 1) ** 2))
    best, best_se = None, base
    for ridge, length, prior in _ORDER:  # a later setting is chosen only where it beats by more than rtol
        if errors[ridge, length, prior] < best_se * (1 - rtol):
            best, best_se = Smoothing(length, prior, ridge), errors[ridge, length, prior]
    return Choice(best, len(ratio), float(np.sqrt(base)), float(np.sqrt(best_se)))


def correction(v: Residuals, smoothing: Smoothing) -> LocalCorrection:
    """A variant's correction from its training rows."""
    f4 = np.float32  # what a fits file keeps (knn.encode): the fitted and the loaded predict alike
    pts, res = v.logcfg.astype(f4).astype(float), v.log_residuals.astype(f4).astype(float)
    return LocalCorrection(pts, res, smoothing, smoothing.neighbours)
