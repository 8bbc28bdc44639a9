"""Which features a variant's model uses: deterministic k-fold cross-validation on its rows."""

from __future__ import annotations

import numpy as np

from seer.models.bounds import Segmented, fit_law
from seer.models.features import Design, Inputs, design
from seer.models.keys import FeatureSet
from seer.models.options import DEFAULT, FitOptions
from seer.models.staircase import Staircase, near_best, staircase


def select(
    x: Inputs,
    y: np.ndarray,
    cands: list[int],
    sms: int,
    floor: float,
    types: np.ndarray | None = None,
    options: FitOptions = DEFAULT,
) -> tuple[float, FeatureSet, Staircase]:
    """(cross-validated RMSPE, feature set, B_max staircase) of the best model. B_max is the
    staircase the richest bounds fit best on the training rows; each candidate feature set is
    then scored on held-out folds (row i in fold i mod k), near-ties going to the simpler set."""
    folds = options.folds
    fold = np.arange(len(y)) % folds
    helpers = any(np.any(v != 0) for v in x.helpers.values())  # e.g. no split-K: no helpers
    stair = staircase(x, y, cands, sms, FeatureSet("waves", helpers), floor, options)
    scores: dict[FeatureSet, float] = {}
    designs: dict[tuple[str, bool, bool], Design] = {}  # a clock changes the law, not the design
    plain: dict[tuple[str, bool, bool, int], Segmented] = {}  # each fold's bounds without a clock
    # the blocks' loops over outputs, where each held-out fold has a variant's worth of rows
    # (min_rows): on fewer, 3 folds chose them for Winograd's 15-row transforms on noise
    loops = x.varied_loops and len(y) >= folds * options.min_rows
    for fs in FeatureSet.candidates(helpers, types is not None, loops):
        terms = (fs.base, fs.helpers, fs.loops)
        if terms not in designs:  # built once: the clock's candidates share it
            designs[terms] = design(x, stair.bps, sms, fs)
        D = designs[terms]
        typed = types if fs.typed else None
        errs = np.full(len(y), np.inf)
        for f in range(folds):
            te = fold == f
            if (~te).sum() < D.columns + options.row_margin:
                continue
            fitted = fit_law(
                D.take(~te),
                y[~te],
                floor,
                clock=fs.clock,
                iters=options.cv_clock_iters,
                types=None if typed is None else typed[~te],
                options=options,
                plain=plain.get((*terms, f)),
            )
            if not fs.clock and typed is None:
                plain[(*terms, f)] = fitted
            errs[te] = (fitted.law.time(D.take(te)) - y[te]) / y[te]
        scores[fs] = float(np.sqrt(np.mean(errs**2)))
    fs = near_best({k: v for k, v in scores.items() if not k.loops}, options.tie_rtol)
    if loops:  # the loops where they win by a margin: not on a hair of noise in the folds
        looped = near_best({k: v for k, v in scores.items() if k.loops}, options.tie_rtol)
        if scores[looped] < (1 - options.loops_gain) * scores[fs]:
            fs = looped
    return scores[fs], fs, stair
