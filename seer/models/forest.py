"""Bagged trees for a yes-or-no question about configurations, and how sure their vote is.

A gate (seer.models.gate) asks whether cuDNN runs its direct kernel, a choice that turns on
sizes in a way one tree learns with a few percent of errors; each error costs 10-20x in time.
Trees grown on bootstrap samples of the same labelled configurations and voting err less, and
their split vote says where the answer is in doubt, which one tree's leaf says only where its
training rows were of both kinds (docs/results.md, "A forest for the direct-kernel gate").

Grown by scikit-learn (a random forest with every axis open at each split: bagging) at fit
time only; a fits file stores each tree's nodes (seer.models.tree.Tree) and prediction walks
them with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seer.models.tree import Tree, features, of_sklearn

TREES = 15  # trees in a forest (odd: a yes-or-no vote has no tie)
# the share of the trees that must vote against the majority for its answer to be in doubt
DOUBT_SHARE = 0.25


@dataclass(frozen=True)
class Forest:
    """Trees voting yes (1) or no (0) on each configuration; the majority answers."""

    trees: tuple[Tree, ...]
    doubt: float = DOUBT_SHARE

    def votes(self, x: np.ndarray) -> np.ndarray:
        """The share of the trees answering yes for each row of x (log-configurations)."""
        return np.mean([t.predict(x) for t in self.trees], axis=0) if len(x) else np.zeros(0)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The majority's answer (0 or 1) for each row."""
        return (self.votes(x) > 0.5).astype(np.int64)

    def candidates(self, x: np.ndarray) -> np.ndarray:
        """Two columns per row, as a tree's leaf members (Tree.candidates): the majority's
        answer, then the other answer where at least `doubt` of the trees voted for it, else
        the majority's again."""
        v = self.votes(x)
        yes = v > 0.5
        minority = np.where(yes, 1 - v, v)
        other = np.where(minority >= self.doubt - 1e-12, ~yes, yes)
        return np.column_stack([yes, other]).astype(np.int64)

    def to_dict(self) -> dict:
        return {"forest": [t.to_dict() for t in self.trees], "doubt": self.doubt}

    @classmethod
    def from_dict(cls, d: dict) -> Forest:
        return cls(tuple(Tree.from_dict(t) for t in d["forest"]), float(d["doubt"]))


def fit_forest(points: np.ndarray, yes: np.ndarray, min_leaf: int, products: bool = False) -> Forest:
    """TREES trees, each grown on a bootstrap sample of the labelled log-configurations (with
    `products`, and the convolutions' products: configs.conv_products), every axis open at each
    split; deterministic (a fixed seed)."""
    from sklearn.ensemble import RandomForestClassifier  # fit time only

    x = features(points, products)
    y = np.asarray(yes, dtype=np.int64)
    clf = RandomForestClassifier(TREES, min_samples_leaf=min_leaf, max_features=None, random_state=0).fit(x, y)
    classes = np.asarray(clf.classes_, dtype=np.int64)
    return Forest(tuple(of_sklearn(e.tree_, classes, min_leaf, products) for e in clf.estimators_))


Gate = Tree | Forest  # what a chooser's gate is: one tree (fits files before forests), or a forest


def gate_from_dict(d: dict) -> Gate:
    """A stored gate: a forest, or a tree."""
    return Forest.from_dict(d) if "forest" in d else Tree.from_dict(d)
