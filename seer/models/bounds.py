"""Fitting a variant's time law: segmented bounds (which rows are compute- or memory-bound
follows from the fit), SEER's typed regimes where types were measured, and the clock law."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from seer.models.features import Design
from seer.models.law import Regime, TimeLaw
from seer.models.options import DEFAULT, FitOptions
from seer.models.solver import WLSResult, nonnegative_wls
from seer.models.typed import fit_typed


class Segmented(NamedTuple):
    """A fitted law and the training rows it puts on the memory bound."""

    law: TimeLaw
    memory_rows: np.ndarray


def _law(D: Design, r: WLSResult, floor: float, mem: np.ndarray | None) -> TimeLaw:
    """The bounds of one joint WLS whose columns are compute, [memory,] helpers."""
    nc, n = D.compute.shape[1], len(r.y)
    on_mem = 0 if mem is None else int(mem.sum())
    compute = Regime(D.names["compute"], r.params[:nc], n - on_mem, r, slice(0, nc))
    if mem is None:
        return TimeLaw(compute, None, Regime(D.names["helpers"], r.params[nc:], n, r, slice(nc, None)), floor)
    nm = D.memory.shape[1]
    memory = Regime(D.names["memory"], r.params[nc : nc + nm], on_mem, r, slice(nc, nc + nm))
    return TimeLaw(compute, memory, Regime(D.names["helpers"], r.params[nc + nm :], n, r, slice(nc + nm, None)), floor)


def fit_bounds(
    D: Design, y: np.ndarray, floor: float, start: np.ndarray | None = None, options: FitOptions = DEFAULT
) -> Segmented:
    """Segmented WLS on relative error: every row is explained by the larger of the two bounds
    plus the helper terms; rows are re-assigned to bounds and all refitted together until the
    assignment is stable. `start`: a first guess of the memory-bound rows.

    The re-assignment is not a descent either: on the H100's FFT 32x64x8 complex GEMM it settled
    on two bounds with 142% RMSPE on their own training rows, where the compute bound alone has
    22%. Two bounds that fit the training rows worse than the compute bound alone are dropped."""
    nc, nm = D.compute.shape[1], D.memory.shape[1]
    margin = options.row_margin

    r = nonnegative_wls(np.hstack([D.compute, D.helpers]), y)
    alone = Segmented(_law(D, r, floor, None), np.zeros(len(y), bool))  # the compute bound alone
    if start is None:
        law = alone.law
        ratio = y / np.maximum(D.compute @ law.regime("compute").coef + D.helpers @ law.helpers.coef, 1e-12)
        mem = ratio > np.quantile(ratio, options.memory_start)  # the rows the compute bound explains worst
    else:
        mem = start
    fit = None
    for _ in range(options.segment_iters):
        if mem.sum() < nm + margin or (~mem).sum() < nc + margin:
            return alone
        X = np.hstack([D.compute * ~mem[:, None], D.memory * mem[:, None], D.helpers])
        fit = Segmented(_law(D, nonnegative_wls(X, y), floor, mem), mem)
        new = D.memory @ fit.law.regime("memory").coef > D.compute @ fit.law.regime("compute").coef
        if (new == mem).all():
            break
        mem = new
    assert fit is not None
    return fit if _sq_rel_error(fit.law.time(D), y) <= _sq_rel_error(alone.law.time(D), y) else alone


def fit_law(
    D: Design,
    y: np.ndarray,
    floor: float,
    *,
    clock: bool,
    iters: int | None = None,
    types: np.ndarray | None = None,
    options: FitOptions = DEFAULT,
    plain: Segmented | None = None,
) -> Segmented:
    """Fit the bounds (or, given measured `types`, SEER's typed regimes); with `clock`,
    alternate between the bounds (on times mapped back through the clock law) and the law
    itself (OLS of log t on log t_bounds) until the exponent settles. `plain`: the bounds
    fitted to (D, y) without the clock, where already at hand (the clock's first step).

    The alternation is not a descent, and can wander off: on the H100's 32x32x8
    IMPLICIT_PRECOMP_GEMM rows it settled on t = 0.03 t_b^1.43 with an 8.5 ms intercept, 3,067%
    RMSPE on its own training rows (every batch-1 1x1 layer at 0.64 ms, measured 0.02). A clock
    law that fits the measured times worse than the plain bounds is therefore dropped."""
    if types is not None:
        law = fit_typed(D, y, types, floor, options)
        return Segmented(law, np.zeros(len(y), bool))
    first = fit_bounds(D, y, floor, options=options) if plain is None else plain
    if not clock:
        return first
    target, c, b = y, (0.0, 0.0), first  # the clock's first step: the plain bounds
    for i in range(options.clock_iters if iters is None else iters):
        if i:
            b = fit_bounds(D, target, floor, start=b.memory_rows, options=options)
        lt = np.log(b.law.time(D))
        if np.ptp(lt) <= 1e-12 * max(1.0, float(np.abs(lt).max())):  # a constant law: no clock slope to fit
            return first
        import statsmodels.api as sm  # fitting only: predicting never loads statsmodels (1 s)

        # hasconst: the first column is the constant (statsmodels need not search for one)
        r = sm.OLS(np.log(y) - lt, np.column_stack([np.ones_like(lt), lt]), hasconst=True).fit()
        new = (float(r.params[0]), float(r.params[1]))
        if not -0.5 < new[1] < 1.0:  # not a plausible clock law: leave the bounds alone
            return first
        done = abs(new[1] - c[1]) < 1e-3
        c = new
        target = np.exp((np.log(y) - c[0]) / (1.0 + c[1]))
        if done:
            break
    final = fit_bounds(D, target, floor, start=b.memory_rows, options=options)
    final.law.clock = c
    return final if _sq_rel_error(final.law.time(D), y) <= _sq_rel_error(first.law.time(D), y) else first


def _sq_rel_error(t: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(((t - y) / y) ** 2))
