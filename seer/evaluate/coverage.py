"""Whether Test-set-I's error lies where the training data reach, or beyond them.

A variant's model and its chooser are trusted within the fits' trust distance of a configuration
they were fitted on (FitOptions.trust_distance, in log2 units of the sizes); farther out both
extrapolate. SEER's split holds out 30% of every variant's calls at random, so on a dense grid the
held-out rows sit among training rows; on a sparse one most do not. Of the H100's and the H200's
Test-set-I rows of the gradient algorithms their own models time (ALGO_0, ALGO_1, ALGO_3, the
filter gradient's FFT), 71-91% lie beyond the trust distance of every training configuration of
their algorithm and carry 80-99% of its squared error, while the rows within it score 10-27%
RMSPE (docs/results.md, "Where Test-set-I's rows lie"): there the gap to a target is one of
data, which only more measured configurations close. This table says, per algorithm, which of
the two a figure is.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.evaluate.metrics import ape, per_group

COVERAGE_KEYS = ("n", "beyond", "rmspe_within", "rmspe_beyond", "beyond_err_share")


def coverage_table(test: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of `by` (and overall), over the scored Test-set-I rows (`pred_config` not NaN;
    `beyond`: the configuration lies beyond the trust distance of the training configurations
    its prediction drew on): rows; the share beyond; RMSPE of the rows within and of those
    beyond; the share of the squared relative error on the rows beyond."""
    t = test[test["pred_config"].notna()]
    t = t.assign(_se=ape(t["pred_config"], t["time_ms"]) ** 2, _beyond=t["beyond"].astype(bool))
    return per_group(t, by, _row, COVERAGE_KEYS)


def _row(g: pd.DataFrame) -> dict:
    se, far = g["_se"].to_numpy(), g["_beyond"].to_numpy()
    total = se.sum()
    return {
        "n": len(g),
        "beyond": float(far.mean()) if len(g) else np.nan,
        "rmspe_within": _rmspe(se[~far]),
        "rmspe_beyond": _rmspe(se[far]),
        "beyond_err_share": float(se[far].sum() / total) if total > 0 else np.nan,
    }


def _rmspe(se: np.ndarray) -> float:
    return float(np.sqrt(se.mean())) if len(se) else np.nan
