"""Nearest-neighbour lookups stored in fits files (variant choice, split-K, odd grid axes).

Training points are kept compact: points deep inside a region where every neighbour agrees
add nothing to a 1-nearest-neighbour answer, so only the boundary points and a thin sample
of the interior are stored, as base64 float32 (a few kB instead of MBs of JSON numbers).
"""

from __future__ import annotations

import base64
import os

import numpy as np
from scipy.spatial import cKDTree

INTERIOR_KEEP = 10  # keep every 10th interior point (by position) so no region empties
PARALLEL_ROWS = 8192  # queries per thread worth a k-d tree query's hand-off to threads


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def query_workers(n: int) -> int:
    """Threads for a k-d tree query of n points: one where the process has one core or the
    query is small (a hand-off to threads costs more than it saves), else one per core."""
    return max(1, min(usable_cores(), n // PARALLEL_ROWS))


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


ORDER_MIN_ROWS = 4096  # queries worth sorting (locality_order)
ORDER_MIN_POINTS = 640  # trees worth it: in smaller ones a query visits few nodes, in any order
_SPREAD: dict[tuple[int, int], np.ndarray] = {}


def _spread(dims: int, bits: int) -> np.ndarray:
    """Each `bits`-bit number with its bits moved `dims` apart (bit b to bit b * dims)."""
    key = (dims, bits)
    if key not in _SPREAD:
        v = np.arange(1 << bits, dtype=np.int64)
        t = np.zeros(1 << bits, dtype=np.int64)
        for b in range(bits):
            t |= ((v >> b) & 1) << (b * dims)
        _SPREAD[key] = t
    return _SPREAD[key]


def locality_order(points: np.ndarray) -> np.ndarray | None:
    """An order of the rows of `points` that keeps nearby points together (Z-order over the
    columns that vary), or None for too few rows to be worth it.

    A k-d tree answers each query on its own, so the order changes no answer; queries close
    to each other visit the same nodes, and in this order they run about a quarter faster."""
    n = len(points)
    if n < ORDER_MIN_ROWS or points.ndim != 2:
        return None
    sample = points[:: max(1, n // 4096)]  # the ranges only scale the cells: a sample's will do
    lo, hi = sample.min(axis=0), sample.max(axis=0)
    cols = np.flatnonzero((hi > lo) & np.isfinite(lo) & np.isfinite(hi))
    if len(cols) == 0:
        return None
    bits = min(10, 62 // len(cols))
    top = (1 << bits) - 1
    table = _spread(len(cols), bits)
    code = np.zeros(n, dtype=np.int64)
    for i, j in enumerate(cols):
        cell = (points[:, j] - lo[j]) * (top / (hi[j] - lo[j]))
        np.nan_to_num(cell, copy=False, nan=0.0)
        code |= table[np.clip(cell, 0, top).astype(np.int64)] << i
    return np.argsort(code)
