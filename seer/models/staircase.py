"""B_max, the resident blocks per wave, from the wave staircase of the training times.

B_max is unknown without registers and shared memory: it is the value of resident blocks
per SM that best explains the steps in time as the grid grows by whole waves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seer.hardware.occupancy import arch
from seer.models.bounds import fit_bounds
from seer.models.features import Inputs, design
from seer.models.keys import FeatureSet
from seer.models.options import DEFAULT, FitOptions
from seer.models.solver import rmspe


def bps_candidates(train: pd.DataFrame, cc: str) -> list[int]:
    """Resident blocks per SM that the launch allows (warp and block limits)."""
    a = arch(cc)
    threads = (
        train["block_x"].astype("Float64").fillna(1)
        * train["block_y"].astype("Float64").fillna(1)
        * train["block_z"].astype("Float64").fillna(1)
    ).to_numpy(dtype=float)
    warps = np.ceil(np.nanmax(threads) / 32) if np.isfinite(threads).any() else 1
    hi = int(min(a.max_blocks, a.max_warps // max(warps, 1)))
    return list(range(1, max(hi, 1) + 1))


def near_best(scores: dict, rtol: float = DEFAULT.tie_rtol):
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


COARSE = (8, 10, 12, 16, 20, 24, 28, 32)  # candidates above 6 tried first; their neighbours next


def staircase(
    x: Inputs, y: np.ndarray, cands: list[int], sms: int, fs: FeatureSet, floor: float, options: FitOptions = DEFAULT
) -> Staircase:
    """The B_max that explains the steps best: a coarse pass over the candidates, then their
    neighbours, on an evenly spaced subsample. Candidates that give the same wave counts up to
    a constant factor fit identically; each such class is fitted once and stands for its
    smallest member, and near-ties go to the smallest resident-block count."""
    rows = np.linspace(0, len(y) - 1, min(len(y), options.staircase_rows)).round().astype(int)
    xs, ys = x.take(rows), y[rows]
    waves = {b: np.ceil(xs.blocks / (b * sms)) for b in sorted(cands)}
    cls = {b: (w / max(w.max(), 1.0)).tobytes() for b, w in waves.items()}
    seen: dict[bytes, float] = {}

    def err(bps: int) -> float:
        if cls[bps] not in seen:
            D = design(xs, bps, sms, fs)
            seen[cls[bps]] = rmspe(fit_bounds(D, ys, floor, options=options).law.time(D), ys)
        return seen[cls[bps]]

    coarse = [c for c in sorted(cands) if c <= 6 or c in COARSE] or sorted(cands)
    best = near_best({b: err(b) for b in coarse}, options.tie_rtol)
    tried = {b: err(b) for b in sorted({*coarse, best - 1, best + 1} & set(cands))}
    bps = near_best(tried, options.tie_rtol)
    return Staircase(bps, tried[bps], identified=len(set(cls.values())) > 1)
