"""Which kernel variant the library launches for a configuration.

cuDNN and cuBLAS pick a kernel (tile size, split-K) by heuristics we cannot read; the choice
is learned from the training rows instead: the variant of the nearest training configuration
in log-configuration space (SEER used a classification tree for the same purpose).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from . import configs
from .knn import condense, decode, encode


@dataclass
class Chooser:
    op: str
    algo: str
    labels: list[str]  # variant keys
    points: np.ndarray  # log-configurations of training rows
    label_idx: np.ndarray  # index into labels per point
    _tree: cKDTree | None = field(default=None, repr=False, compare=False)
    _dims: np.ndarray | None = field(default=None, repr=False, compare=False)

    def choose(self, df: pd.DataFrame, logcfg: np.ndarray | None = None) -> np.ndarray:
        """The variant key for each config row (logcfg: its log-configuration, if at hand)."""
        if len(self.labels) == 1:
            return np.full(len(df), self.labels[0], dtype=object)
        if self._tree is None:  # sizes that never vary in training cannot tell variants apart
            p = self.points
            self._dims = np.array([j for j in range(p.shape[1]) if np.ptp(p[:, j]) > 0
                                   and not any(np.array_equal(p[:, j], p[:, i]) for i in range(j))], dtype=int)
            self._tree = cKDTree(p[:, self._dims], leafsize=32)
        logcfg = configs.log_config(df, self.op) if logcfg is None else logcfg
        _, idx = self._tree.query(logcfg[:, self._dims], k=1)
        return np.asarray(self.labels, dtype=object)[self.label_idx[idx]]

    def to_dict(self) -> dict:
        d = {"op": self.op, "algo": self.algo, "labels": self.labels}
        if len(self.labels) > 1:
            d["points"] = encode(self.points)
            d["label_idx"] = self.label_idx.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Chooser":
        pts = decode(d["points"]) if "points" in d else np.zeros((0, 0))
        return cls(d["op"], d["algo"], list(d["labels"]), pts,
                   np.asarray(d.get("label_idx", []), dtype=int))


def fit_chooser(train: pd.DataFrame, op: str, algo: str, keys: pd.Series) -> Chooser:
    """Learn the variant choice from training rows (`keys`: each row's variant key)."""
    labels = sorted(pd.unique(keys))
    lookup = {k: i for i, k in enumerate(labels)}
    idx = keys.map(lookup).to_numpy(dtype=int)
    pts = configs.log_config(train, op).astype(np.float32).astype(np.float64)
    keep = condense(pts, idx)
    return Chooser(op, algo, labels, pts[keep], idx[keep])
