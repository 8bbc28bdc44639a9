"""Which filter shapes a convolution algorithm runs on a GPU, learnt from where it ran.

cuDNN documents few of its algorithms' limits (docs/reference.md, cuDNN convolution forward: probe, never assume),
and a model asked about a shape its algorithm never runs answers anyway: WINOGRAD_NONFUSED,
fitted on 3x3 and 5x5 filters, predicts a 1x1 or 7x7 one as if it ran. Where the harness timed
every algorithm on every configuration, a filter shape (size, stride, dilation, grouped or not)
measured on several configurations with other algorithms, but never with this one, is one the
library does not run it on: `Support` says so instead of predicting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from seer.data.configs import GROUPS_COLUMN

# log-config columns of a filter's shape: kh, kw, stride_h, stride_w, dil_h, dil_w
SHAPE_COLUMNS = (5, 6, 8, 9, 12, 13)
MIN_SEEN = 3  # configurations of a shape, timed with other algorithms, before "never runs" is said
_BITS = 10  # bits per size in a shape's key (sizes up to 1023)


def shape_keys(logcfg: np.ndarray) -> np.ndarray:
    """One integer per row for its filter shape: the sizes of SHAPE_COLUMNS and whether the
    convolution is grouped, packed (a vectorized set lookup over 100k rows)."""
    sizes = np.clip(np.rint(np.exp2(logcfg[:, SHAPE_COLUMNS])), 0, 2**_BITS - 1).astype(np.int64)
    key = (logcfg[:, GROUPS_COLUMN] > 0).astype(np.int64)
    for j in range(sizes.shape[1]):
        key = (key << _BITS) | sizes[:, j]
    return key


def describe(key: int) -> str:
    """A shape key in words: '7x7 filter, stride 1x1, dilation 1x1, ungrouped'."""
    sizes = [(int(key) >> (_BITS * (5 - j))) & (2**_BITS - 1) for j in range(6)]
    grouped = (int(key) >> (_BITS * 6)) & 1
    kh, kw, sh, sw, dh, dw = sizes
    return f"{kh}x{kw} filter, stride {sh}x{sw}, dilation {dh}x{dw}, {'grouped' if grouped else 'ungrouped'}"


@dataclass(frozen=True)
class Support:
    """Per algorithm, the filter shapes it ran; and how many configurations of each shape were
    timed with any algorithm (only fits of data timed with every algorithm have one)."""

    ran: dict[str, np.ndarray]  # algo -> sorted shape keys it ran on
    seen: dict[int, int]  # shape key -> configurations timed with some algorithm

    @classmethod
    def of(cls, points_by_algo: dict[str, np.ndarray]) -> Support:
        """From each algorithm's training configurations (log-configs)."""
        ran = {a: np.unique(shape_keys(p)) for a, p in points_by_algo.items() if len(p)}
        every = [p for p in points_by_algo.values() if len(p)]
        configs = np.unique(np.vstack(every), axis=0) if every else np.empty((0, 14))
        keys, counts = np.unique(shape_keys(configs), return_counts=True)
        return cls(ran, dict(zip(keys.tolist(), counts.tolist(), strict=True)))

    def never_runs(self, algo: str, logcfg: np.ndarray) -> np.ndarray:
        """Rows whose filter shape `algo` never ran on, though other algorithms ran it on at
        least MIN_SEEN configurations."""
        ran = self.ran.get(algo)
        if ran is None:
            return np.zeros(len(logcfg), dtype=bool)
        keys = shape_keys(logcfg)
        known = np.array([k for k, n in self.seen.items() if n >= MIN_SEEN], dtype=np.int64)
        return np.isin(keys, known) & ~np.isin(keys, ran)

    def explain(self, algo: str, logcfg_row: np.ndarray, gpu: str) -> str:
        """Why `algo` has no time for this configuration, in one sentence."""
        key = int(shape_keys(logcfg_row[None, :])[0])
        runs = _listing(describe(int(k)) for k in self.ran.get(algo, [])[:6])
        return (
            f"{algo} does not run a {describe(key)} on {gpu}: the {self.seen.get(key, 0)} such "
            f"configurations measured ran other algorithms, never it (it ran: {runs})"
        )


def _listing(items: Iterable[str]) -> str:
    return "; ".join(items) or "nothing"
