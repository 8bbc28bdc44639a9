"""The classification tree that chooses a convolution's variant: grown by scikit-learn, stored
as plain node lists, walked with numpy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seer.models.tree import LEAF, Tree, fit_tree


def _grid(seed=0, n=400):
    rng = np.random.default_rng(seed)
    x = np.log2(rng.choice([3, 16, 64, 128, 512, 1024], size=(n, 4)).astype(float)).astype(np.float32).astype(float)
    return x


def test_the_walk_answers_what_scikit_learn_answers():
    from sklearn.tree import DecisionTreeClassifier

    x = _grid()
    y = ((x[:, 1] >= 7) & (x[:, 2] < 9)).astype(int) + (x[:, 0] > 5).astype(int)
    y[::17] = 0  # some noise so that the tree grows leaves of mixed rows
    tree = fit_tree(x, y, min_leaf=3)
    ref = DecisionTreeClassifier(min_samples_leaf=3, random_state=0).fit(x, y)
    q = np.vstack([_grid(seed=1), x])  # new points and the training points (on the thresholds' sides)
    assert (tree.predict(q) == ref.predict(q)).all()
    assert tree.depth == ref.get_depth() and tree.min_leaf == 3


def test_a_threshold_on_one_size_is_found_and_survives_a_file():
    x = _grid(seed=2)
    y = np.where(x[:, 2] >= 7, 1, 0)  # the GEMM algorithm's c_out >= 128 rule, in log2
    tree = fit_tree(x, y, min_leaf=1)
    assert tree.depth == 1 and tree.feature[0] == 2 and 6 < tree.threshold[0] < 7
    back = Tree.from_dict(json.loads(json.dumps(tree.to_dict())))
    q = _grid(seed=3)
    assert (back.predict(q) == np.where(q[:, 2] >= 7, 1, 0)).all()


def test_labels_are_the_callers_indices_even_where_some_are_missing():
    x = _grid(seed=4, n=50)
    y = np.where(x[:, 0] > 5, 7, 2)  # label indices 2 and 7 of a chooser with more labels
    assert set(fit_tree(x, y, 1).predict(x)) == {2, 7}


def test_one_label_is_one_leaf():
    tree = fit_tree(_grid(n=20), np.full(20, 3), 1)
    assert list(tree.feature) == [LEAF] and tree.depth == 0
    assert (tree.predict(_grid(seed=5, n=7)) == 3).all()


@pytest.mark.parametrize("n", [0, 1])
def test_few_rows_to_walk(n):
    tree = fit_tree(_grid(n=30), np.arange(30) % 2, 1)
    assert tree.predict(_grid(seed=6, n=30)[:n]).shape == (n,)
