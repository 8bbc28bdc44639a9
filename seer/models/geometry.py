"""Launch geometry from the configuration: grid size per axis, learned per kernel variant.

cuDNN and cuBLAS size the grid as ceil(problem size / tile) on each axis; which size goes on
which axis, and the tile, differ per kernel. `fit_geometry` picks, per axis, the rule that best
reproduces the grids measured on training rows: ceil(size / tile), size x ceil(size2 / tile),
a constant, a product of two or three such ceilings flattened onto one axis where one of them
reproduces every row, a size packed by whole units into a tile (Packed), or (where no closed
form fits, e.g. cuBLAS's split-K choice) the nearest training row in log-configuration space.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data import configs
from seer.data.records import GEMM_OPS
from seer.errors import SeerError
from seer.models.knn import condense, decode, encode

TILES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
# Sizes a kernel covers one element per thread, up to 1024 threads to a block: cuDNN's direct
# convolution launches ceil(NKPQ / 1024) blocks. Without them a grid learnt at batch 128 passed
# for K x ceil(PQ / 8): right on a third of the rows, and 128x too many blocks at batch 1. Its
# data gradient (dgrad2d_grouped_direct) launches ceil(NCHW / 1024), a thread per element of dx:
# without that size its grids were guessed (T4 x ceil(C/64), right on 17% of the H100's rows) and
# its variants cross-validated at 8-170% RMSPE on the H100, 4-42% with it.
THREAD_TILES = {"NKPQ": (512, 1024), "NCHW": (512, 1024)}
AXES = ("grid_x", "grid_y", "grid_z")


class AxisRule:
    """How one grid axis follows from the configuration; `match` is the share of training
    rows it reproduces exactly. One subclass per kind, each writing its own JSON."""

    kind: ClassVar[str]
    match: float

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        """The axis of each config, as a new array (`Geometry.grid` clamps it in place)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def to_dict(self) -> dict:
        return {"kind": self.kind, "match": round(self.match, 4), **self._fields()}

    def _fields(self) -> dict:
        raise NotImplementedError

    @property
    def tile(self) -> int:
        """The divisor of a ceil rule (the kernel's tile along this axis), else 1."""
        return 1

    @property
    def factors(self) -> tuple[tuple[str, int], ...]:
        """(size, tile) of each ceil(size / tile) the axis multiplies (none for a constant or
        the nearest row)."""
        return ()

    @staticmethod
    def from_dict(d: dict) -> AxisRule:
        match = d.get("match", 0.0)
        kind = d["kind"]
        if kind == "ceil":
            return Ceil(d["expr"], int(d.get("div", 1)), match)
        if kind == "mulceil":
            return MulCeil(d["expr"], d["expr2"], int(d.get("div", 1)), match)
        if kind == "prod":
            return Product(tuple(d["exprs"]), tuple(int(t) for t in d["divs"]), match, int(d.get("times", 1)))
        if kind == "packed":
            return Packed(d["expr"], d["per"], int(d.get("div", 1)), match)
        if kind == "const":
            return Const(float(d.get("value", 1.0)), match)
        if kind == "knn":
            return Nearest(decode(d["points"]), np.asarray(d["values"], dtype=float), match)
        raise SeerError(f"unknown grid rule kind {kind!r}")


@dataclass
class Ceil(AxisRule):
    """ceil(size / tile): one block per tile of a size."""

    expr: str
    div: int
    match: float = 0.0
    kind: ClassVar[str] = "ceil"

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        x = s[self.expr] / self.div
        return np.ceil(x, out=x)

    def describe(self) -> str:
        return f"ceil({self.expr}/{self.div})" if self.div > 1 else self.expr

    def _fields(self) -> dict:
        return {"expr": self.expr, "div": self.div}

    @property
    def tile(self) -> int:
        return self.div

    @property
    def factors(self) -> tuple[tuple[str, int], ...]:
        return ((self.expr, self.div),)


@dataclass
class MulCeil(AxisRule):
    """size x ceil(size2 / tile): e.g. one block row per image and output tile."""

    expr: str
    expr2: str
    div: int
    match: float = 0.0
    kind: ClassVar[str] = "mulceil"

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        x = s[self.expr2] / self.div
        np.ceil(x, out=x)
        return np.multiply(s[self.expr], x, out=x)

    def describe(self) -> str:
        return f"{self.expr}*ceil({self.expr2}/{self.div})"

    def _fields(self) -> dict:
        return {"expr": self.expr, "expr2": self.expr2, "div": self.div}

    @property
    def tile(self) -> int:
        return self.div

    @property
    def factors(self) -> tuple[tuple[str, int], ...]:
        return ((self.expr, 1), (self.expr2, self.div))


@dataclass
class Product(AxisRule):
    """ceil(size1 / tile1) x ceil(size2 / tile2) [x ceil(size3 / tile3)]: tiles of several sizes
    flattened onto one axis. cuDNN's Winograd data transform gives a block 16 images and 4x4
    output tiles of 4x4 each: ceil(N/16) x ceil(P/16) x ceil(Q/16). Learnt at batch 128 by the
    other rules (P x ceil(H/32), right on a third of the rows), its grid at batch 1 was 8x too
    large. `times` blocks to each such tile (MULTIPLES): the 5x5 filters' transform (F(9x9, 5x5))
    gives 2 blocks to 16 images and 27 x 27 outputs, 2 x ceil(N/16) x ceil(P/27) x ceil(Q/27) on
    every H100 and H200 grid, where the rules found before reproduced 0-62% of them."""

    exprs: tuple[str, ...]
    divs: tuple[int, ...]
    match: float = 0.0
    times: int = 1
    kind: ClassVar[str] = "prod"

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        out = np.full(len(s["one"]), float(self.times))
        for e, t in zip(self.exprs, self.divs):
            out *= np.ceil(s[e] / t)
        return out

    def describe(self) -> str:
        ceils = "*".join(f"ceil({e}/{t})" if t > 1 else e for e, t in self.factors)
        return ceils if self.times == 1 else f"{self.times}*{ceils}"

    def _fields(self) -> dict:
        return {"exprs": list(self.exprs), "divs": list(self.divs), **({"times": self.times} if self.times > 1 else {})}

    @property
    def factors(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.exprs, self.divs))


@dataclass
class Packed(AxisRule):
    """ceil(size / max(floor(tile / per), 1)): a block takes as many whole units of `size` as
    fit its tile, each `per` wide. cuDNN's backward-data ALGO_1 kernels (dgrad2d_alg1_1) give a
    block the filter taps of floor(64 / (R*S)) input channels, one channel where a filter has
    more than 64 taps: 100% of both GPUs' grids, where the best ceiling (ceil(C*R*S / 64))
    reproduced 2-67%. Their 3-channel layers on large images run on a few blocks of 16 x 32
    threads each (6 for a 2-image 800 x 1088 layer, 47.7 ms), and were predicted 50-180x fast;
    4-6x with the packed grid (features.inputs)."""

    expr: str
    per: str
    div: int
    match: float = 0.0
    kind: ClassVar[str] = "packed"

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        return np.ceil(s[self.expr] / np.maximum(np.floor(self.div / s[self.per]), 1.0))

    def describe(self) -> str:
        return f"ceil({self.expr}/max(floor({self.div}/{self.per}),1))"

    def _fields(self) -> dict:
        return {"expr": self.expr, "per": self.per, "div": self.div}


# What a Packed rule packs into a block: channels, each a filter's taps wide.
PACKED = (("C", "RS"), ("K", "RS"))


@dataclass
class Const(AxisRule):
    """The same size for every configuration."""

    value: float
    match: float = 0.0
    kind: ClassVar[str] = "const"

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        return np.full(len(s["one"]), self.value)

    def describe(self) -> str:
        return f"{self.value:g}"

    def _fields(self) -> dict:
        return {"value": self.value}


@dataclass
class Nearest(AxisRule):
    """The value of the nearest training configuration (no closed form fits, e.g. split-K)."""

    points: np.ndarray  # log-config of training rows
    values: np.ndarray
    match: float = 0.0
    kind: ClassVar[str] = "knn"
    _tree: cKDTree | None = field(default=None, repr=False, compare=False)

    def __call__(self, s: Mapping[str, np.ndarray], logcfg: np.ndarray | None) -> np.ndarray:
        if self._tree is None:
            self._tree = cKDTree(self.points)
        _, idx = self._tree.query(logcfg, k=1)
        return self.values[idx]

    def describe(self) -> str:
        return "nearest"

    def _fields(self) -> dict:
        return {"points": encode(self.points), "values": self.values.astype(int).tolist()}


@dataclass
class Geometry:
    op: str
    axes: dict[str, AxisRule]

    def grid(self, batch: configs.ConfigBatch | pd.DataFrame) -> dict[str, np.ndarray]:
        """Each axis of the grid launched for each config."""
        if isinstance(batch, pd.DataFrame):
            batch = configs.ConfigBatch.of(batch, self.op)
        s = batch.sizes
        logcfg = batch.logcfg if any(isinstance(r, Nearest) for r in self.axes.values()) else None
        return {a: np.maximum(g, 1.0, out=g) for a, r in self.axes.items() for g in [r(s, logcfg)]}

    def blocks(self, batch: configs.ConfigBatch | pd.DataFrame) -> np.ndarray:
        return np.prod(list(self.grid(batch).values()), axis=0)

    def batch_tile(self) -> int:
        """How many images one block covers where a grid axis tiles the batch (a ceil(N / t)
        factor; cuDNN's Winograd transform: 16), else 1. Such a kernel works on whole tiles of
        images: at batch 1 its transform fills 16 images' slots, and takes 2/3 of the time of
        16 images (the H100's Test-set-II), not 1/16."""
        tiles = (t for r in self.axes.values() for e, t in r.factors if e in ("N", "batch") and t > 1)
        return next(tiles, 1)

    def packs(self) -> bool:
        """Whether an axis packs whole channels into a block (Packed): a grid that tiles no
        GEMM output."""
        return any(isinstance(r, Packed) for r in self.axes.values())

    def tiles_each(self, *sizes: str) -> bool:
        """Whether the grid's ceil rules tile each of the named sizes (a block per tile of it)."""
        tiled = {e for r in self.axes.values() for e, div in r.factors if div > 1}
        return all(size in tiled for size in sizes)

    def exact(self) -> bool:
        """Whether every axis's rule reproduced every training row's grid."""
        return all(r.match >= 1.0 for r in self.axes.values())

    def tiles(self) -> tuple[float, float]:
        """The two tile divisors of the grid (the output tile of a GEMM-like kernel)."""
        divs = [r.tile for r in self.axes.values() if r.tile > 1] + [1, 1]
        return float(divs[0]), float(divs[1])

    def tile_of(self, size: str) -> float:
        """The tile of a named size (its ceil rule's divisor), 1 where no rule tiles it."""
        return float(max([div for r in self.axes.values() for e, div in r.factors if e == size], default=1))

    def tile_area(self) -> float | None:
        """The outputs one block's tile covers: the product of every ceil rule's tile; None
        where an axis is neither a ceil of sizes nor a constant (the nearest training row's
        grid: the tile is not known)."""
        if not all(r.factors or isinstance(r, Const) for r in self.axes.values()):
            return None
        return float(np.prod([div for r in self.axes.values() for _, div in r.factors]))

    def to_dict(self) -> dict:
        return {"op": self.op, "axes": {a: r.to_dict() for a, r in self.axes.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> Geometry:
        return cls(d["op"], {a: AxisRule.from_dict(r) for a, r in d["axes"].items()})

    def describe(self) -> str:
        return " x ".join(r.describe() for r in self.axes.values())


def _scores(pred: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean |log2 error|, exact-match share) of each row of candidate grids `pred` (one
    candidate per row, C order: each mean sums the same way as for one candidate alone)."""
    err = np.abs(np.log2(np.maximum(pred, 1) / y))
    return err.mean(axis=1), (pred == y).mean(axis=1)


class _Best:
    """The first candidate rule with the lowest error, in the order they are offered."""

    def __init__(self, y: np.ndarray):
        self.y = y
        self.err = np.inf
        self.rule: AxisRule | None = None

    def offer(self, rules: list[AxisRule], pred: np.ndarray, row: np.ndarray | None = None) -> None:
        """Score candidate grids `pred` (one per row); rule i predicts row `row[i]` (default i),
        so rules that predict the same grid are scored once."""
        errs, matches = _scores(pred, self.y)
        which = range(len(rules)) if row is None else row.tolist()
        for rule, i in zip(rules, which):
            err, rule.match = float(errs[i]), float(matches[i])
            if self.rule is None or err < self.err - 1e-12:
                self.err, self.rule = err, rule


def _ceils(x: np.ndarray, tiles: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """ceil(x / tile) for each tile, without repeats: every tile >= max(x) gives the same grid
    (1 wherever x > 0). Returns (the distinct grids, the grid of each tile)."""
    top = float(np.max(x)) if len(x) else 0.0
    k = next((i for i, t in enumerate(tiles) if t >= top), len(tiles) - 1)  # first tile past the sizes
    rows = np.ceil(x[None, :] / np.asarray(tiles[: k + 1], dtype=float)[:, None])
    return rows, np.minimum(np.arange(len(tiles)), k)


def fit_axis(s: Mapping[str, np.ndarray], logcfg: np.ndarray, y: np.ndarray) -> AxisRule:
    """The rule that reproduces one grid axis best on these training rows: ceil(size / tile)
    for every size and tile, then size x ceil(size2 / tile), then the nearest training row."""
    if np.all(y == y[0]):
        return Const(float(y[0]), match=1.0)
    names = [k for k in s if k != "one" and np.all(np.isfinite(s[k]))]
    best = _Best(y)
    for e in names:
        tiles = TILES + THREAD_TILES.get(e, ())
        rows, row = _ceils(s[e], tiles)
        best.offer([Ceil(e, t) for t in tiles], rows, row)
        if best.err == 0 and best.rule is not None:
            return best.rule
    ceils = {e2: _ceils(s[e2], TILES[1:]) for e2 in names}
    for e in names:
        others = [e2 for e2 in names if e2 != e]
        starts = np.cumsum([0] + [len(ceils[e2][0]) for e2 in others])
        pred = s[e] * np.concatenate([ceils[e2][0] for e2 in others])
        row = np.concatenate([start + ceils[e2][1] for start, e2 in zip(starts, others)])
        best.offer([MulCeil(e, e2, t) for e2 in others for t in TILES[1:]], pred, row)
    if best.err > 0 and len(y) >= PRODUCT_MIN_ROWS:
        packed = _packed(s, names, y)
        if packed is not None:
            return packed
        for times in (1, *MULTIPLES):  # a product of ceilings, else a multiple of one
            exact = _exact(s, names, y / times) if np.all(np.mod(y, times) == 0) else None
            if exact is not None:
                if times == 1:
                    return exact
                exprs, divs = zip(*exact.factors)
                return Product(exprs, divs, match=1.0, times=times)
    if best.err > 0 and len(y) > 2:
        # nearest other training row (leave-one-out)
        _, idx = cKDTree(logcfg).query(logcfg, k=2)
        pts = logcfg.astype(np.float32).astype(np.float64)
        keep = condense(pts, y)
        best.offer([Nearest(pts[keep], y[keep].astype(float))], y[idx[:, 1]][None, :])
    assert best.rule is not None
    return best.rule


# Where no rule above reproduces every row, a ceiling with any whole tile up to PRODUCT_TILE, or a
# product of such ceilings, is searched (cuDNN's Winograd 9x9 transform covers 27 outputs a
# block along each side), on this many rows or more: fewer are reproduced by chance.
PRODUCT_MIN_ROWS = 8
PRODUCT_TILE = 1024
MULTIPLES = (2,)  # blocks to a tile a product may give (Product.times), where none reproduces every row


def _packed(s: Mapping[str, np.ndarray], names: list[str], y: np.ndarray) -> Packed | None:
    """The first Packed rule (PACKED's sizes, TILES' tiles) that reproduces every row of `y`;
    None if there is none."""
    rules = (Packed(e, per, t, match=1.0) for e, per in PACKED if e in names and per in names for t in TILES)
    return next((r for r in rules if np.array_equal(r(s, None), y)), None)


def _factors(s: Mapping[str, np.ndarray], names: list[str], y: np.ndarray) -> list[tuple[str, int, np.ndarray]]:
    """Every ceil(size / tile) that divides each row of `y` and is not 1 throughout: the only
    possible factors of an exact product. The smallest tile of each distinct column, in the
    order of `names`; the batch is the convolution's N under another name, so it is left out.
    Judged on each size's distinct values: a ceiling divides every row of a value where it
    divides their greatest common divisor (on every row it took a tenth of a fit's time)."""
    tiles = np.arange(1, PRODUCT_TILE + 1, dtype=float)
    whole = np.all(np.isfinite(y) & (y >= 1) & (y == np.round(y)) & (y < 2**53))
    out = []
    for e in names:
        if e == "batch" and "N" in names:
            continue
        if whole:
            values, at = np.unique(s[e], return_inverse=True)
            per_value = np.zeros(len(values), dtype=np.int64)  # gcd(0, y) = y
            np.gcd.at(per_value, at, y.astype(np.int64))
            cols = np.ceil(values[None, :] / tiles[:, None])
            divides = np.mod(per_value[None, :], cols) == 0
        else:
            cols = np.ceil(s[e][None, :] / tiles[:, None])
            divides = np.mod(y[None, :], cols) == 0
        ok = np.flatnonzero(divides.all(axis=1) & (cols > 1).any(axis=1))
        _, first = np.unique(cols[ok], axis=0, return_index=True)
        out += [(e, int(tiles[i]), np.ceil(s[e] / tiles[i])) for i in ok[np.sort(first)]]
    return out


def _exact(s: Mapping[str, np.ndarray], names: list[str], y: np.ndarray) -> AxisRule | None:
    """The first ceil(size / tile) with any whole tile, else product of two, else of three such
    ceilings of different sizes, that reproduces every row of `y`; None if there is none. Only
    ceilings that divide every row can be factors (`_factors`), and the third factor of a pair
    is looked up by its values."""
    facs = _factors(s, names, y)
    by_values: dict[bytes, list[int]] = {}
    for i, (_, _, c) in enumerate(facs):
        by_values.setdefault(c.tobytes(), []).append(i)
    one = next((f for f in facs if np.array_equal(f[2], y)), None)
    if one is not None:
        return Ceil(one[0], one[1], match=1.0)
    for three in (False, True):
        for i, (ei, _, ci) in enumerate(facs):
            for j in range(i + 1, len(facs)):
                ej, _, cj = facs[j]
                if ej == ei:
                    continue
                rest = y / (ci * cj)
                if not three:
                    if np.all(rest == 1):
                        return _as_product([facs[i], facs[j]])
                    continue
                k = next((k for k in by_values.get(rest.tobytes(), []) if facs[k][0] not in (ei, ej)), None)
                if k is not None:
                    return _as_product([facs[i], facs[j], facs[k]])
    return None


def _as_product(facs: list[tuple[str, int, np.ndarray]]) -> Product:
    return Product(tuple(e for e, _, _ in facs), tuple(t for _, t, _ in facs), match=1.0)


def fit_geometry(train: pd.DataFrame, op: str, batch: configs.ConfigBatch | None = None) -> Geometry:
    """Learn each grid axis of one variant from its training rows (grid columns measured)."""
    batch = configs.ConfigBatch.of(train, op) if batch is None else batch
    s, logcfg = batch.sizes, batch.logcfg
    axes = {}
    picked = library_picked(train, op)
    for a in AXES:
        y = train[a].to_numpy(dtype="float64", na_value=np.nan)
        if np.isnan(y).any():
            if a == "grid_x" and "blocks" in train:
                y = train["blocks"].to_numpy(dtype="float64", na_value=np.nan)
            if np.isnan(y).any():
                continue
        if a == "grid_z" and picked is not None:
            axes[a] = fit_axis({k: v[picked] for k, v in s.items()}, logcfg[picked], y[picked])
        else:
            axes[a] = fit_axis(s, logcfg, y)
    if not axes:  # no wave count without launched blocks: say so, not an IndexError later
        name = ", ".join(str(train[c].iloc[0]) for c in ("algo", "variant") if c in train)
        raise SeerError(
            f"the {op} kernel variant ({name}) cannot be fitted: its training rows need the launch "
            "grid (grid_x, grid_y, grid_z) or the blocks launched (SEER's #block-launch), "
            "and some have neither"
        )
    return Geometry(op, axes)


def library_picked(train: pd.DataFrame, op: str) -> np.ndarray | None:
    """A GEMM variant's training rows cuBLASLt's heuristic ranked first, where there are more
    than two: its grid_z rule is learnt from them. A GEMM's grid_z is its batch times its
    split-K count, which a query that gives none (seer.models.lt_config) has guessed from the
    nearest training configuration; one shape was timed at up to eight counts, and the one the
    library runs (what a trace's GEMM is) is its heuristic's first. None: every row."""
    if op not in GEMM_OPS or "heuristic_rank" not in train:
        return None
    picked = (pd.to_numeric(train["heuristic_rank"], errors="coerce") == 0).to_numpy(dtype=bool, na_value=False)
    return picked if 2 < picked.sum() < len(picked) else None


RULE_KINDS = tuple(r.kind for r in (Ceil, MulCeil, Product, Packed, Const, Nearest))
