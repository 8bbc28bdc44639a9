"""A classification tree over log-configurations: which kernel variant the library launches.

SEER chose the variant with a classification tree; seer's first choosers took the variants of
the nearest training configurations instead. On the H100's grid the nearest configurations
mislead where the library's choice turns on one size: cuDNN's GEMM algorithm runs its explicit
im2col GEMM from c_out = 128 up and a direct kernel below, and a configuration between grid
points is nearer to the wrong side in the other sizes. Axis-aligned splits find such
thresholds (on the H100's Test-set-I the variant chosen is the one cuDNN ran for 95.6% of
the GEMM algorithm's rows instead of 87.6%, for 93.8% of IMPLICIT_PRECOMP_GEMM's instead of
65.5%; `seer.models.candidates` says where the tree is used).

A leaf keeps every variant its training rows ran (`members`), not only its most common one:
where the library's choice turns on something the sizes do not show, a leaf holds rows of two
variants, and `seer.models.candidates` lets them compete as the nearest configurations' do.

The tree is grown by scikit-learn (CART, Gini) at fit time only; a fits file stores its nodes
and prediction walks them with numpy, so loading fits needs no scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from seer.data.configs import conv_products

LEAF = -1  # the feature index of a leaf
MAX_MEMBERS = 62  # label indices a node's member mask holds (bits of an int64 that JSON keeps exact)


@dataclass(frozen=True)
class Tree:
    """The nodes of a fitted tree: a row at node i goes left where x[feature[i]] <= threshold[i],
    else right; at a leaf (feature LEAF) its answer is label[i] (an index into the chooser's labels)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    label: np.ndarray
    min_leaf: int  # the smallest number of training rows in a leaf (how it was grown)
    products: bool = False  # it splits convolutions' products too (configs.conv_products), not sizes only
    # per leaf, a bit mask of the label indices its training rows ran (bit i: label i; 0 at inner
    # nodes); None: a tree stored before leaves kept them (its leaves answer their label alone)
    members: np.ndarray | None = None

    @cached_property
    def depth(self) -> int:
        depth = np.zeros(len(self.feature), dtype=int)
        for i in range(len(self.feature)):  # parents come before their children (pre-order)
            if self.feature[i] != LEAF:
                depth[self.left[i]] = depth[self.right[i]] = depth[i] + 1
        return int(depth.max())

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The label index of each row of x (log-configurations)."""
        return self.label[self.leaf(x)]

    def candidates(self, x: np.ndarray) -> np.ndarray:
        """The label indices of each row's leaf members, a row per config: the leaf's label
        (its most common member) first, then the others, padded with the label to the widest
        leaf's count."""
        return self._member_table[self.leaf(x)]

    @cached_property
    def _member_table(self) -> np.ndarray:
        """Each node's candidates' row, computed once."""
        if self.members is None:
            return self.label[:, None]
        rows = [
            [lab, *(i for i in range(int(m).bit_length()) if (int(m) >> i) & 1 and i != lab)]
            for m, lab in zip(self.members, self.label)
        ]
        width = max(len(r) for r in rows)
        return np.array([r + [r[0]] * (width - len(r)) for r in rows], dtype=self.label.dtype)

    def leaf(self, x: np.ndarray) -> np.ndarray:
        """The leaf node of each row of x (log-configurations). The rows are compared as
        float32, as scikit-learn compared its training points when it placed the thresholds."""
        x = np.asarray(features(x, self.products), dtype=np.float32)
        node = np.zeros(len(x), dtype=np.int64)
        rows = np.arange(len(x))
        for _ in range(self.depth):
            f = self.feature[node]
            inner = f != LEAF
            if not inner.any():
                break
            go_left = x[rows, np.where(inner, f, 0)] <= self.threshold[node]
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
        return node

    def to_dict(self) -> dict:
        return {
            "min_leaf": self.min_leaf,
            **({"products": True} if self.products else {}),
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "label": self.label.tolist(),
            **({"members": self.members.tolist()} if self.members is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Tree:
        return cls(
            np.asarray(d["feature"], dtype=np.int64),
            np.asarray(d["threshold"], dtype=np.float64),
            np.asarray(d["left"], dtype=np.int64),
            np.asarray(d["right"], dtype=np.int64),
            np.asarray(d["label"], dtype=np.int64),
            int(d["min_leaf"]),
            bool(d.get("products", False)),
            np.asarray(d["members"], dtype=np.int64) if "members" in d else None,
        )


def features(points: np.ndarray, products: bool) -> np.ndarray:
    """What a tree splits: the log-configurations, with the convolution's products appended
    where `products`."""
    return conv_products(points) if products else points


def fit_tree(points: np.ndarray, label_idx: np.ndarray, min_leaf: int, products: bool = False) -> Tree:
    """Grow a tree on training points and their label indices (deterministic: a fixed seed
    breaks ties between equally good splits, as between the height and width of square layers);
    with `products`, on the convolutions' products too (configs.conv_products)."""
    from sklearn.tree import DecisionTreeClassifier  # fit time only

    x = features(points, products)
    clf = DecisionTreeClassifier(min_samples_leaf=min_leaf, random_state=0).fit(x, label_idx)
    return of_sklearn(clf.tree_, np.asarray(clf.classes_, dtype=np.int64), min_leaf, products)


def of_sklearn(t, classes: np.ndarray, min_leaf: int, products: bool) -> Tree:
    """A Tree from scikit-learn's fitted `tree_`, whose class j is the label index classes[j]."""
    inner = t.children_left >= 0
    label = classes[t.value[:, 0, :].argmax(axis=1)]
    members = None
    if classes.max() < MAX_MEMBERS:  # one bit per label index
        ran = t.value[:, 0, :] > 0  # the classes each node's training rows ran
        members = np.where(inner, 0, (ran * (np.int64(1) << classes)).sum(axis=1)).astype(np.int64)
    return Tree(
        np.where(inner, t.feature, LEAF).astype(np.int64),
        np.where(inner, t.threshold, 0.0),
        np.where(inner, t.children_left, 0).astype(np.int64),
        np.where(inner, t.children_right, 0).astype(np.int64),
        label,
        min_leaf,
        products,
        members,
    )
