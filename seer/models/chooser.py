"""Which kernel variant the library launches for a configuration.

cuDNN and cuBLAS pick a kernel (tile size, split-K) by heuristics we cannot read; the choice
is learned from the training rows instead (SEER used a classification tree for the same
purpose): the candidates are the variants the library launched for the nearest training
configurations in log-configuration space. For cuBLAS, whose heuristics aim at the fastest
kernel for each shape, the candidates of the 5 nearest configs compete and `seer.predict` takes
the one its models predict fastest; for cuDNN's kernel choice inside one algorithm the nearest
config's variant is taken (on NeuSight's held-out rows each rule was the better one for its
library: cuBLAS linear on the A100 4.1% -> 3.6% median APE, conv 10.5% -> 10.8% the other way).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data import configs
from seer.models.knn import condense, decode, encode

CANDIDATES = {"conv_fwd": 1}  # nearest training configs whose variants compete (default 5)


@dataclass
class Chooser:
    op: str
    algo: str
    labels: list[str]  # variant keys
    points: np.ndarray  # log-configurations of training rows
    label_idx: np.ndarray  # index into labels per point
    _tree: cKDTree | None = field(default=None, repr=False, compare=False)
    _varying: np.ndarray | None = field(default=None, repr=False, compare=False)  # sizes in the tree
    _fixed: np.ndarray | None = field(default=None, repr=False, compare=False)  # constant over the points

    def _index(self) -> cKDTree:
        """The k-d tree over the sizes that tell training points apart. A size that always
        equals another adds nothing to distances and is dropped; one that is constant over the
        training points adds the same amount to every distance from a config, so it is left out
        of the tree and added to the distance afterwards (the same neighbours, a smaller tree)."""
        if self._tree is None:
            p = self.points
            dims = [j for j in range(p.shape[1]) if not any(np.array_equal(p[:, j], p[:, i]) for i in range(j))]
            const = np.array([np.all(p[:, j] == p[0, j]) for j in dims], dtype=bool)
            if const.all():
                const[0] = False  # a tree needs a dimension
            self._varying, self._fixed = np.asarray(dims)[~const], np.asarray(dims)[const]
            self._tree = cKDTree(p[:, self._varying], leafsize=32, balanced_tree=False, compact_nodes=False)
        return self._tree

    def nearest(self, logcfg: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(log2 distance to the nearest training config, label indices of the k nearest)."""
        tree = self._index()
        assert self._varying is not None and self._fixed is not None
        k = min(k, len(self.points))
        dist, idx = tree.query(logcfg[:, self._varying], k=k, workers=-1)
        nearest = dist if k == 1 else dist[:, 0]
        if len(self._fixed):  # the constant sizes' share of every distance
            off = ((logcfg[:, self._fixed] - self.points[0, self._fixed]) ** 2).sum(axis=1)
            nearest = np.sqrt(nearest**2 + off)
        if k == 1:
            return nearest, self.label_idx[idx][:, None]
        return nearest, self.label_idx[idx]

    def choose(self, batch: configs.ConfigBatch | pd.DataFrame) -> np.ndarray:
        """The variant key for each config row."""
        if len(self.labels) == 1:
            return np.full(len(batch), self.labels[0], dtype=object)
        if isinstance(batch, pd.DataFrame):
            batch = configs.ConfigBatch.of(batch, self.op)
        return np.asarray(self.labels, dtype=object)[self.nearest(batch.logcfg)[1][:, 0]]

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "algo": self.algo,
            "labels": self.labels,
            "points": encode(self.points),
            "label_idx": self.label_idx.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Chooser:
        return cls(d["op"], d["algo"], list(d["labels"]), decode(d["points"]), np.asarray(d["label_idx"], dtype=int))


def fit_chooser(train: pd.DataFrame, op: str, algo: str, keys: pd.Series) -> Chooser:
    """Learn the variant choice from training rows (`keys`: each row's variant key)."""
    labels = sorted(pd.unique(keys))
    lookup = {k: i for i, k in enumerate(labels)}
    idx = keys.map(lookup).to_numpy(dtype=int)
    pts = configs.log_config(train, op).astype(np.float32).astype(np.float64)
    keep = condense(pts, idx)
    return Chooser(op, algo, labels, pts[keep], idx[keep])
