"""The fitted time law of one variant, and the one formula every prediction goes through."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from seer.models.chooser import Chooser
from seer.models.features import Design
from seer.models.solver import WLSResult

TYPES = ("compute", "memory", "under")  # SEER's kernel types


@dataclass
class Regime:
    """One linear form t = X @ coef over named features. Standard errors and R^2 come from
    statsmodels' WLS of the fit that produced the coefficients, computed on first use (the
    searches fit thousands of candidates and read only coefficients), or from a fits file."""

    names: list[str]
    coef: np.ndarray
    n: int  # training rows this form explains
    source: WLSResult | None = field(default=None, repr=False)
    cols: slice = field(default_factory=lambda: slice(None))  # this regime's columns of the source fit
    stored: tuple[np.ndarray, float] | None = field(default=None, repr=False)  # (se, r2) as read back

    @property
    def se(self) -> np.ndarray:
        if self.stored is not None:
            return self.stored[0]
        return self.source.bse[self.cols] if self.source is not None else np.zeros(len(self.coef))

    @property
    def r2(self) -> float:
        if self.stored is not None:
            return self.stored[1]
        return self.source.rsquared if self.source is not None else float("nan")

    def to_dict(self) -> dict:
        return {
            "features": list(self.names),
            "coef": [float(f"{c:.9g}") for c in self.coef],
            "se": [float(f"{c:.4g}") for c in self.se],
            "n": self.n,
            "r2": None if np.isnan(self.r2) else round(self.r2, 5),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Regime:
        stored = (np.asarray(d["se"], float), float("nan") if d["r2"] is None else float(d["r2"]))
        return cls(list(d["features"]), np.asarray(d["coef"], float), int(d["n"]), stored=stored)

    @classmethod
    def empty(cls, n: int) -> Regime:
        """No terms (the helper kernels of a variant that has none, or of SEER's typed forms)."""
        return cls([], np.zeros(0), n, stored=(np.zeros(0), float("nan")))


@dataclass
class TimeLaw:
    """A variant's time: the larger of a compute and a memory bound plus the helper kernels'
    terms, or SEER's typed form of each row's kernel type; then the sustained-clock law
    t = exp(c0) * t^(1 + c1) where fitted (GPUs under a power cap slow down the longer a
    kernel runs); never below the floor."""

    compute: Regime | None
    memory: Regime | None
    helpers: Regime
    floor_ms: float
    clock: tuple[float, float] | None = None
    under: Regime | None = None  # SEER's under-utilized form (typed feature sets)
    type_chooser: Chooser | None = None  # kernel type of a config (typed feature sets)

    def time(self, D: Design) -> np.ndarray:
        """Time in ms of each row of the design: the one prediction formula."""
        if self.type_chooser is not None:
            lab = type_of(self.type_chooser, D)
            t = np.empty(len(lab))
            for ty in self.type_chooser.labels:
                rows = lab == ty
                t[rows] = np.hstack([D.matrix(ty)[rows], D.helpers[rows]]) @ self.regime(ty).coef
            t = np.maximum(t, self.floor_ms)
        else:
            t = D.compute @ self.regime("compute").coef
            if self.memory is not None:
                t = np.maximum(t, D.memory @ self.memory.coef)
            t = np.maximum(t + D.helpers @ self.helpers.coef, self.floor_ms)
        if self.clock is not None:
            t = np.exp(self.clock[0]) * t ** (1.0 + self.clock[1])
        return t

    def regime(self, kind: str) -> Regime:
        """The compute, memory or under form (one the law has: a typed law has each form its
        chooser names, bounds always a compute form)."""
        r = {"compute": self.compute, "memory": self.memory, "under": self.under}[kind]
        if r is None:
            raise ValueError(f"this time law has no {kind} form")
        return r


def type_of(types: Chooser, D: Design) -> np.ndarray:
    """The kernel type of each row: the type of its nearest training config (SEER used a
    classification tree on the configuration for the same purpose)."""
    assert D.logcfg is not None, "the kernel type needs the log-configuration"
    return np.asarray(types.labels, dtype=object)[types.nearest(D.logcfg)[1][:, 0]]
