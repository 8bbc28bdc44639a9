"""The one solver behind every regime: least squares on relative error, coefficients >= 0."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import lsq_linear, nnls


def wls_relative(X: np.ndarray, y: np.ndarray):
    """statsmodels' WLS with weights 1/t^2: least squares on relative error (SEER's nlinfit objective)."""
    import statsmodels.api as sm  # fitting only: predicting never loads statsmodels (1 s)

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
    rep: np.ndarray | None = None  # each column's set of equal columns by its first (_same_columns)

    @cached_property
    def _stats(self) -> tuple[np.ndarray, float]:
        """On the columns solved (one of each set of equal columns: statsmodels' pseudo-inverse
        of a singular design would leave the split to rounding); a set's members share the
        standard error as they share its weight."""
        idx = np.arange(len(self.params))
        rep = idx if self.rep is None else self.rep
        se = np.zeros(len(self.params))
        kept = (self.params > 0) & (rep == idx)
        if not kept.any():
            return se, float("nan")
        r = wls_relative(self.X[:, kept], self.y)
        se[kept] = np.nan_to_num(r.bse, nan=0.0)
        shared = (np.bincount(rep, minlength=len(rep))[rep] > 1) & (self.params > 0)
        if shared.any():
            whole = np.zeros(len(self.params))
            whole[kept] = r.params  # the set's whole weight, on its first column
            se[shared] = se[rep[shared]] * self.params[shared] / whole[rep[shared]]
        return se, float(r.rsquared)

    @property
    def bse(self) -> np.ndarray:
        return self._stats[0]

    @property
    def rsquared(self) -> float:
        return self._stats[1]


def nonnegative_wls(X: np.ndarray, y: np.ndarray) -> WLSResult:
    """WLS on relative error with every coefficient >= 0: time never falls as waves, work,
    bytes or launches grow (a negative coefficient is what collinear terms or an unmodelled
    curvature produce, and it extrapolates into negative or exploding times).

    The exact non-negative optimum comes from scipy's NNLS on the weighted system (rows
    divided by t, columns scaled to unit norm so the solver's tolerances mean the same for
    every feature); statsmodels' WLS on the columns it keeps gives the standard errors (at
    the optimum the kept coefficients solve that unconstrained problem)."""
    Xw = X / y[:, None]
    norm = np.sqrt(np.add.reduce(Xw * Xw, axis=0))  # np.linalg.norm(Xw, axis=0), without its checks
    usable = norm > 0
    p = np.zeros(X.shape[1])
    rep = np.arange(X.shape[1])
    if usable.any():
        usable &= ~_constant_but_last(X, usable)
        A = Xw[:, usable] / norm[usable]
        first, copies = _same_columns(A)
        B = A[:, first]
        try:
            sol = nnls(B, np.ones(len(y)), maxiter=50 * B.shape[1])[0]
        except RuntimeError:  # NNLS did not converge (degenerate columns): the bounded solver
            sol = lsq_linear(B, np.ones(len(y)), bounds=(0.0, np.inf), method="bvls").x
        p[usable] = sol[copies] / np.bincount(copies)[copies] / norm[usable]
        cols = np.flatnonzero(usable)
        rep[cols] = cols[first[copies]]
    return WLSResult(p, X, y, rep)


def _same_columns(A: np.ndarray, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """(the first of each set of equal unit-norm columns, each column's set): features the
    rows never told apart (waves W and blocks per SM S of a variant that holds one block an SM,
    a helper's bytes a multiple of another's over the rows). NNLS gave such a set's weight to
    one of them by the last bits of the BLAS, so the fits changed with the CPU (the H100's
    grouped direct kernels took W*Kb on one machine, S*Kb on another, and a helper term
    direct_G or out_MB); the weight is split evenly instead, the least-norm answer, the same on
    every machine."""
    sums = A.sum(axis=0)  # equal columns have equal sums: only those pairs are compared
    maybe = np.abs(sums[:, None] - sums[None, :]) <= tol * len(A)
    copies = np.arange(A.shape[1])
    for j in np.flatnonzero(np.triu(maybe, 1).any(axis=0)):
        for i in np.flatnonzero(maybe[:j, j] & (copies[:j] == np.arange(j))):
            if np.max(np.abs(A[:, j] - A[:, i])) <= tol:
                copies[j] = i
                break
    first, copies = np.unique(copies, return_inverse=True)
    return first, copies


def _constant_but_last(X: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Columns constant over the rows but the last of them (waves where every row launches one
    wave, beside the constant term, which comes last): NNLS splits the weight of such columns by
    the last bits of the BLAS, and the rows never varied them, so only the last is fitted."""
    const = usable & (X.max(axis=0) == X.min(axis=0))
    out = np.zeros(len(usable), dtype=bool)
    idx = np.flatnonzero(const)
    out[idx[:-1]] = True
    return out


def rmspe(pred: np.ndarray, y: np.ndarray) -> float:
    """Root mean square of the relative errors."""
    return float(np.sqrt(np.mean(((pred - y) / y) ** 2)))
