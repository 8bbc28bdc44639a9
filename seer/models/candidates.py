"""How many nearest training configurations' variants compete for a new configuration.

A variant chooser proposes the variants the library launched for the k nearest training
configurations, and prediction takes the fastest of them (cuBLAS and cuDNN pick fast kernels).
k = 1 trusts the nearest configuration alone: where a regular grid leaves a configuration
between two of different variants, one wrong pick puts a variant's model far outside its data
(on the H100's grid, 10 such rows of the GEMM algorithm carried most of its squared error).
Larger k guards against that and costs accuracy where the nearest is right. k is chosen per
convolution algorithm by leave-one-out on its training rows: each row's variant proposed by its
k nearest other rows, its time the fastest of their models' predictions, scored by RMSPE (the
smallest k within TOLERANCE of the best, so a tie keeps the simpler rule).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.spatial import cKDTree

CHOICES = (1, 2, 3, 5)
TOLERANCE = 0.05  # relative RMSPE within which the smaller k wins


def loo_rmspe(
    points: np.ndarray, labels: np.ndarray, times: np.ndarray, predict: Callable[[str, np.ndarray], np.ndarray]
) -> dict[int, float]:
    """Leave-one-out RMSPE of each candidate count: `predict(label, rows)` is a variant model's
    time for the training rows `rows`; a row's own point is left out of its neighbours."""
    n = len(points)
    ks = [k for k in CHOICES if k < n]
    if not ks:
        return {}
    _, idx = cKDTree(points).query(points, k=max(ks) + 1)
    idx = idx[:, 1:]  # not the row itself (a duplicate configuration stays a neighbour)
    uniq = list(dict.fromkeys(labels.tolist()))
    pos = {lab: i for i, lab in enumerate(uniq)}
    pred = np.column_stack([predict(lab, np.arange(n)) for lab in uniq])
    code = np.vectorize(pos.__getitem__, otypes=[int])(labels[idx])
    out = {}
    for k in ks:
        t = np.take_along_axis(pred, code[:, :k], axis=1).min(axis=1)
        out[k] = float(np.sqrt(np.mean((t / times - 1) ** 2)))
    return out


def choose(scores: dict[int, float], choices: Sequence[int] = CHOICES) -> int | None:
    """The smallest candidate count within TOLERANCE of the best score (None: nothing scored)."""
    finite = {k: v for k, v in scores.items() if np.isfinite(v)}
    if not finite:
        return None
    best = min(finite.values())
    return min(k for k, v in finite.items() if v <= best * (1 + TOLERANCE))
