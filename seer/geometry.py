"""Launch geometry from the configuration: grid size per axis, learned per kernel variant.

cuDNN and cuBLAS size the grid as ceil(problem size / tile) on each axis; which size goes on
which axis, and the tile, differ per kernel. `fit_geometry` picks, per axis, the rule that best
reproduces the grids measured on training rows: ceil(size / tile), size x ceil(size2 / tile),
a constant, or (where no closed form fits, e.g. cuBLAS's split-K choice) the nearest training
row in log-configuration space.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from . import configs
from .errors import SeerError
from .knn import condense, decode, encode

TILES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
AXES = ("grid_x", "grid_y", "grid_z")


@dataclass
class AxisRule:
    kind: str  # "ceil", "mulceil", "const", "knn"
    expr: str = ""
    expr2: str = ""
    div: int = 1
    value: float = 1.0
    points: np.ndarray | None = None  # knn: log-config of training rows
    values: np.ndarray | None = None
    match: float = 0.0  # share of training rows reproduced exactly
    _tree: cKDTree | None = field(default=None, repr=False, compare=False)

    def __call__(self, s: dict[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        if self.kind == "ceil":
            return np.ceil(s[self.expr] / self.div)
        if self.kind == "mulceil":
            return s[self.expr] * np.ceil(s[self.expr2] / self.div)
        if self.kind == "const":
            return np.full(len(s["one"]), self.value)
        if self._tree is None:
            self._tree = cKDTree(self.points)
        _, idx = self._tree.query(logcfg, k=1)
        return self.values[idx]

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "match": round(self.match, 4)}
        if self.kind in ("ceil", "mulceil"):
            d.update(expr=self.expr, div=self.div)
            if self.kind == "mulceil":
                d["expr2"] = self.expr2
        elif self.kind == "const":
            d["value"] = self.value
        else:
            d.update(points=encode(self.points), values=self.values.astype(int).tolist())
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "AxisRule":
        if d["kind"] == "knn":
            return cls("knn", points=decode(d["points"]),
                       values=np.asarray(d["values"], dtype=float), match=d.get("match", 0.0))
        return cls(d["kind"], expr=d.get("expr", ""), expr2=d.get("expr2", ""),
                   div=int(d.get("div", 1)), value=float(d.get("value", 1.0)), match=d.get("match", 0.0))

    def describe(self) -> str:
        if self.kind == "ceil":
            return f"ceil({self.expr}/{self.div})" if self.div > 1 else self.expr
        if self.kind == "mulceil":
            return f"{self.expr}*ceil({self.expr2}/{self.div})"
        if self.kind == "const":
            return f"{self.value:g}"
        return "nearest"


@dataclass
class Geometry:
    op: str
    axes: dict[str, AxisRule]

    def grid(self, df: pd.DataFrame, s: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        s = configs.sizes(df) if s is None else s
        logcfg = configs.log_config(df, self.op, s) if any(r.kind == "knn" for r in self.axes.values()) else None
        return {a: np.maximum(r(s, logcfg), 1.0) for a, r in self.axes.items()}

    def blocks(self, df: pd.DataFrame) -> np.ndarray:
        return np.prod(list(self.grid(df).values()), axis=0)

    def tiles(self) -> tuple[float, float]:
        """The two tile divisors of the grid (the output tile of a GEMM-like kernel)."""
        divs = [r.div for r in self.axes.values() if r.kind in ("ceil", "mulceil") and r.div > 1]
        divs += [1, 1]
        return float(divs[0]), float(divs[1])

    def to_dict(self) -> dict:
        return {"op": self.op, "axes": {a: r.to_dict() for a, r in self.axes.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "Geometry":
        return cls(d["op"], {a: AxisRule.from_dict(r) for a, r in d["axes"].items()})

    def describe(self) -> str:
        return " x ".join(r.describe() for r in self.axes.values())


def _score(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(mean |log2 error|, exact-match share): lower error first."""
    err = np.abs(np.log2(np.maximum(pred, 1) / y))
    return float(np.mean(err)), float(np.mean(pred == y))


def fit_axis(s: dict[str, np.ndarray], logcfg: np.ndarray, y: np.ndarray) -> AxisRule:
    """The rule that reproduces one grid axis best on these training rows."""
    if np.all(y == y[0]):
        return AxisRule("const", value=float(y[0]), match=1.0)
    names = [k for k in s if k != "one" and np.all(np.isfinite(s[k]))]
    best: tuple[float, float, AxisRule] | None = None

    def consider(rule: AxisRule, pred: np.ndarray):
        nonlocal best
        err, match = _score(pred, y)
        rule.match = match
        if best is None or err < best[0] - 1e-12:
            best = (err, match, rule)

    for e in names:
        for t in TILES:
            consider(AxisRule("ceil", expr=e, div=t), np.ceil(s[e] / t))
        if best is not None and best[0] == 0:
            return best[2]
    for e in names:
        for e2 in names:
            if e2 == e:
                continue
            for t in TILES[1:]:
                consider(AxisRule("mulceil", expr=e, expr2=e2, div=t), s[e] * np.ceil(s[e2] / t))
    if best[0] > 0 and len(y) > 2:
        # nearest other training row (leave-one-out)
        tree = cKDTree(logcfg)
        _, idx = tree.query(logcfg, k=2)
        pts = logcfg.astype(np.float32).astype(np.float64)
        keep = condense(pts, y)
        consider(AxisRule("knn", points=pts[keep], values=y[keep].astype(float)), y[idx[:, 1]])
    return best[2]


def fit_geometry(train: pd.DataFrame, op: str) -> Geometry:
    """Learn each grid axis of one variant from its training rows (grid columns measured)."""
    s = configs.sizes(train)
    logcfg = configs.log_config(train, op, s)
    axes = {}
    for a in AXES:
        y = train[a].to_numpy(dtype="float64", na_value=np.nan)
        if np.isnan(y).any():
            if a == "grid_x" and "blocks" in train:
                y = train["blocks"].to_numpy(dtype="float64", na_value=np.nan)
            if np.isnan(y).any():
                continue
        axes[a] = fit_axis(s, logcfg, y)
    if not axes:  # no wave count without launched blocks: say so, not an IndexError later
        name = ", ".join(str(train[c].iloc[0]) for c in ("algo", "variant") if c in train)
        raise SeerError(f"the {op} kernel variant ({name}) cannot be fitted: its training rows need the launch "
                        "grid (grid_x, grid_y, grid_z) or the blocks launched (SEER's #block-launch), "
                        "and some have neither")
    return Geometry(op, axes)
