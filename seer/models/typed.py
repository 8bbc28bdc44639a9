"""SEER's own scheme where utilizations were measured: one form per kernel type.

SEER splits kernels into compute-bound (t = W (a B_max f + b)), memory-bound (t ~ a DRAM
sectors + b) and under-utilized (t = a B r + d B w + b W B_max f + c) types by their measured
FP32-pipe and DRAM utilizations and fits one linear model per type; a new config takes the
type of its nearest training config.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.models.chooser import Chooser
from seer.models.features import Design
from seer.models.knn import condense
from seer.models.law import TYPES, Regime, TimeLaw, type_of
from seer.models.options import DEFAULT, FitOptions
from seer.models.solver import nonnegative_wls


def seer_types(train: pd.DataFrame, options: FitOptions = DEFAULT) -> np.ndarray | None:
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
    bound = options.util_bound
    return np.where(fp >= bound, "compute", np.where(dr >= bound, "memory", "under"))


def fit_typed(D: Design, y: np.ndarray, types: np.ndarray, floor: float, options: FitOptions = DEFAULT) -> TimeLaw:
    """One WLS per kernel type (its form + the helper terms) on the rows of that measured
    type; the kernel-type chooser keeps the training configs' types."""
    fits = {}
    for ty in TYPES:
        rows = types == ty
        X = np.hstack([D.matrix(ty), D.helpers])
        if rows.sum() >= X.shape[1] + options.row_margin:
            fits[ty] = nonnegative_wls(X[rows], y[rows])
    if not fits:  # no type has rows enough of its own: SEER's additive form for all
        fits["under"] = nonnegative_wls(np.hstack([D.matrix("under"), D.helpers]), y)
        types = np.full(len(y), "under", dtype=object)
    labels = sorted(fits)
    keep = np.isin(types, labels)
    idx = pd.Series(types[keep]).map({t: i for i, t in enumerate(labels)}).to_numpy(dtype=int)
    assert D.logcfg is not None, "typed regimes need the log-configuration"
    pts = D.logcfg[keep].astype(np.float32).astype(np.float64)
    sel = condense(pts, idx)
    chooser = Chooser("kernel_type", "", labels, pts[sel], idx[sel])
    lab = type_of(chooser, D)
    regimes = {
        ty: Regime(D.names[ty] + D.names["helpers"], r.params, int((lab == ty).sum()), r) for ty, r in fits.items()
    }
    return TimeLaw(
        regimes.get("compute"),
        regimes.get("memory"),
        Regime.empty(len(y)),
        floor,
        under=regimes.get("under"),
        type_chooser=chooser,
    )
