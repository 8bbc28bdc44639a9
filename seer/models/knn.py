"""Nearest-neighbour lookups stored in fits files (variant choice, split-K, odd grid axes).

Training points are kept compact: points deep inside a region where every neighbour agrees
add nothing to a 1-nearest-neighbour answer, so only the boundary points and a thin sample
of the interior are stored, as base64 float32 (a few kB instead of MBs of JSON numbers).
"""

from __future__ import annotations

import base64

import numpy as np
from scipy.spatial import cKDTree

INTERIOR_KEEP = 10  # keep every 10th interior point (by position) so no region empties


def condense(points: np.ndarray, labels: np.ndarray, k: int = 6) -> np.ndarray:
    """Indices of the points worth keeping for 1-NN: those with a differently labelled point
    among their k nearest neighbours, plus every INTERIOR_KEEP-th other point."""
    n = len(points)
    if n <= 2 * k:
        return np.arange(n)
    _, idx = cKDTree(points).query(points, k=min(k + 1, n))
    boundary = (labels[idx] != labels[:, None]).any(axis=1)
    keep = boundary | (np.arange(n) % INTERIOR_KEEP == 0)
    return np.flatnonzero(keep)


def encode(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a, dtype="<f4")
    return {"shape": list(a.shape), "f4": base64.b64encode(a.tobytes()).decode("ascii")}


def decode(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["f4"]), dtype="<f4").astype(np.float64).reshape(d["shape"])
