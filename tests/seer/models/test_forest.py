"""Bagged trees as the direct-kernel gate: their vote, where it is in doubt, and their file."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from synthetic import DIRECT, EXPLICIT
from synthetic import pointwise_convs as _convs
from synthetic import runs_direct as _runs_direct

from seer.data.configs import log_config
from seer.errors import SeerError
from seer.fitsfile import check
from seer.models import forest, gate
from seer.models.tree import Tree


def _labelled(n=gate.GATE_MIN, seed=0):
    df = _convs(n, seed)
    return log_config(df, "conv_fwd"), _runs_direct(df)


def test_each_tree_answers_what_scikit_learns_tree_answers():
    from sklearn.ensemble import RandomForestClassifier

    x, y = _labelled()
    f = forest.fit_forest(x, y, 3, products=True)
    ref = RandomForestClassifier(forest.TREES, min_samples_leaf=3, max_features=None, random_state=0)
    ref.fit(forest.features(x, True), y.astype(np.int64))
    q = log_config(_convs(300, seed=1), "conv_fwd")
    fq = forest.features(q, True)
    assert len(f.trees) == forest.TREES
    for mine, theirs in zip(f.trees, ref.estimators_):
        assert (mine.predict(q) == theirs.predict(fq).astype(np.int64)).all()
    assert np.allclose(f.votes(q), np.mean([e.predict(fq) for e in ref.estimators_], axis=0))


def test_the_majority_answers_and_a_split_vote_is_in_doubt():
    df = _convs(gate.GATE_MIN)
    y = _runs_direct(df)
    edge = df["c_out"].isin([96, 128]).to_numpy()  # the sides of the threshold: labels a coin toss
    y = np.where(edge, np.random.default_rng(5).random(len(df)) < 0.5, y)
    f = forest.fit_forest(log_config(df, "conv_fwd"), y, 3, products=True)
    test = _convs(600, seed=2)
    q = log_config(test, "conv_fwd")
    sure = ~test["c_out"].isin([96, 128]).to_numpy()
    assert (f.predict(q).astype(bool) == _runs_direct(test))[sure].mean() > 0.97
    v, cand = f.votes(q), f.candidates(q)
    assert (cand[:, 0] == (v > 0.5)).all()
    split = np.minimum(v, 1 - v) >= f.doubt
    assert ((cand[:, 1] != cand[:, 0]) == split).all()  # the other answer where enough trees gave it
    assert split[~sure].mean() > 0.3 > 0.05 > split[sure].mean()


def test_a_forest_survives_a_file_and_the_fits_check():
    x, y = _labelled()
    f = gate.fit_gate(x, y, forest=True)
    assert isinstance(f, forest.Forest)
    d = json.loads(json.dumps(f.to_dict()))
    back = forest.gate_from_dict(d)
    q = log_config(_convs(200, seed=4), "conv_fwd")
    assert isinstance(back, forest.Forest) and (back.candidates(q) == f.candidates(q)).all()
    assert isinstance(forest.gate_from_dict(f.trees[0].to_dict()), Tree)  # a fits file's one-tree gate
    doc = check._Doc("x")
    check._gate(doc, d, "gate", "conv_fwd", x.shape[1])
    for bad in ({**d, "doubt": 0}, {**d, "forest": []}, {"forest": d["forest"]}):
        try:
            check._gate(check._Doc("x"), bad, "gate", "conv_fwd", x.shape[1])
        except SeerError:
            continue
        raise AssertionError(f"accepted {sorted(bad)} with doubt {bad.get('doubt')}")


def test_a_forests_doubt_is_its_vote_not_its_neighbours():
    """The nearest training configurations ran the explicit GEMM; a forest sure of "direct" binds
    (a tree's answer there would be in doubt), a forest whose vote split does not."""
    labels = ["a_" + EXPLICIT, "b_" + DIRECT]
    points = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, 0.5], [9.0, 9.0]])
    label_idx = np.array([0, 0, 0, 0, 0, 1])
    kinds = np.zeros(len(points), dtype=bool)
    q, cand = np.array([[0.2, 0.3]]), np.array([[1]])
    args = (q, cand, labels, points, label_idx, kinds, np.zeros(1, dtype=bool))

    @dataclass(frozen=True)
    class Voted(forest.Forest):
        share: float = 1.0  # every row's share of trees voting "direct"

        def votes(self, x):
            return np.full(len(x), self.share)

    assert set(gate.gated(Voted((), share=1.0), *args)[0]) == {1}
    assert set(gate.gated(Voted((), share=0.6), *args)[0]) == {0, 1}
