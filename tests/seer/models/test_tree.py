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


def _convs(seed, n=400):
    import pandas as pd

    from seer.models.chooser import points_of

    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "op": "conv_fwd",
            "batch": rng.choice([1, 4, 32, 128], n),
            "c_in": rng.choice([16, 64, 256, 1024], n),
            "h_in": rng.choice([7, 14, 28, 56, 112], n),
            "c_out": rng.choice([16, 64, 256, 1024], n),
            "kh": rng.choice([1, 3, 5], n),
            "stride_h": rng.choice([1, 2], n),
            "pad_h": rng.choice([0, 1, 2], n),
            "dil_h": 1,
            "groups": 1,
        }
    )
    df = df.assign(w_in=df["h_in"], kw=df["kh"], stride_w=df["stride_h"], pad_w=df["pad_h"], dil_w=1)
    return df, points_of(df, "conv_fwd")


def test_the_products_are_the_convolutions_gemm_sizes():
    from seer.data import configs, records

    df, pts = _convs(7, 50)
    x = configs.conv_products(pts)
    p, q = records.conv_output_hw(df)
    npq, crs = df["batch"] * p * q, df["c_in"] * df["kh"] * df["kw"]
    names = dict(zip(configs.CONV_PRODUCTS, x[:, pts.shape[1] :].T))
    assert np.allclose(names["P"], np.log2(p)) and np.allclose(names["NPQ"], np.log2(npq))
    assert np.allclose(names["im2col"], np.log2(npq * crs)) and np.allclose(names["K/G"], np.log2(df["c_out"]))
    assert np.array_equal(x[:, : pts.shape[1]], pts)


def test_a_tree_on_the_products_finds_a_threshold_no_single_size_has():
    from seer.data import configs

    def label(points):  # explicit GEMM where its im2col buffer is small enough: a product's threshold
        return (configs.conv_products(points)[:, points.shape[1] + 7] <= 22).astype(int)

    _, train = _convs(8)
    _, test = _convs(9)
    sizes, products = fit_tree(train, label(train), 3), fit_tree(train, label(train), 3, products=True)
    assert products.depth == 1 and products.feature[0] == train.shape[1] + 7
    assert (products.predict(test) == label(test)).all()
    assert (sizes.predict(test) == label(test)).mean() < 0.95  # the sizes alone stair-step around it
    back = Tree.from_dict(json.loads(json.dumps(products.to_dict())))
    assert back.products and (back.predict(test) == products.predict(test)).all()


def test_a_leaf_keeps_every_variant_its_rows_ran_and_answers_its_label_first():
    x = _grid(seed=10)
    y = np.where(x[:, 2] >= 7, 5, 1)
    y[x[:, 0] == x[:, 0].min()] = 3  # a variant the sizes barely show: a minority in leaves of 50 rows
    tree = fit_tree(x, y, min_leaf=50)
    cand = tree.candidates(x)
    assert (cand[:, 0] == tree.predict(x)).all()  # the label first
    assert set(cand.ravel()) == {1, 3, 5}
    mixed = (cand != cand[:, :1]).any(axis=1)
    assert mixed.any() and (np.isin(cand[mixed], [1, 3, 5])).all()
    for row, label in zip(cand, y):  # each row's own variant is among its leaf's members
        assert label in row
    back = Tree.from_dict(json.loads(json.dumps(tree.to_dict())))
    assert (back.candidates(x) == cand).all()
    old = tree.to_dict()
    del old["members"]  # a file from before leaves kept their members: the label alone
    assert (Tree.from_dict(old).candidates(x) == tree.predict(x)[:, None]).all()


def test_a_pure_leaf_has_one_candidate():
    x = _grid(seed=11)
    tree = fit_tree(x, np.where(x[:, 2] >= 7, 1, 0), min_leaf=1)
    assert tree.candidates(x).shape == (len(x), 1)
