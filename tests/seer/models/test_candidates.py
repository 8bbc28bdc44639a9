"""How a convolution algorithm's chooser proposes variants: how many nearest configurations'
variants compete (leave-one-out, the fastest of their models taken), and whether a
classification tree replaces them within the data (cross-validation)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seer import fitsfile
from seer.data.records import CONV_OPS
from seer.errors import SeerError
from seer.fitsfile.check import check
from seer.models import candidates


def test_leave_one_out_prefers_more_candidates_where_the_nearest_misleads():
    # a 1-D grid of alternating variants: a row's nearest other row is always of the other variant,
    # whose model is 3x too slow for it; among its 2 nearest, its own variant's neighbour comes back
    x = np.arange(40, dtype=float)[:, None]
    labels = np.array(["a", "b"] * 20, dtype=object)
    labels[::4] = "c"  # a third variant so that k=2 is not the whole answer
    times = np.ones(40)

    def predict(lab, rows):
        return np.where(labels[rows] == lab, 1.0, 3.0)

    scores = candidates.loo_rmspe(x, labels, times, predict)
    assert scores[1] == pytest.approx(2.0)  # every row predicted by the wrong variant
    assert scores[3] < scores[1]
    assert candidates.choose(scores) == min(k for k, v in scores.items() if v <= min(scores.values()) * 1.05)


def test_a_tie_keeps_the_simpler_rule():
    assert candidates.choose({1: 0.100, 2: 0.104, 3: 0.100}) == 1
    assert candidates.choose({1: 0.2, 2: 0.1, 3: 0.104}) == 2
    assert candidates.choose({}) is None


def test_bundled_conv_choosers_carry_their_count_and_a_bad_one_is_refused(tmp_path):
    doc = fitsfile.read(fitsfile.FITS_DIR / "h100-sxm.json")
    conv = {k: v for k, v in doc["choosers"].items() if v["op"] in CONV_OPS and len(v["labels"]) > 1}
    assert {v["op"] for v in conv.values()} == set(CONV_OPS)  # the gradients' grid measured too
    assert all(v.get("candidates") in candidates.CHOICES for v in conv.values())
    assert all("candidates" not in v and "trees" not in v for v in doc["choosers"].values() if v["op"] not in CONV_OPS)
    assert any("trees" in v for v in conv.values())  # the tree won somewhere on the H100's grid
    key = next(iter(conv))
    doc["choosers"][key]["candidates"] = 0
    with pytest.raises(SeerError, match="candidates"):
        check(json.loads(fitsfile.dumps(doc)), tmp_path / "h.json")


def test_a_copy_with_other_candidates_keeps_them_in_its_per_kind_choosers():
    import dataclasses

    import seer

    ch = seer.load("t4").choosers["conv_fwd:IMPLICIT_PRECOMP_GEMM"]
    assert ch.of_kind(False).candidates == ch.candidates
    one = dataclasses.replace(ch, candidates=1)  # what a transfer does (transfer.nearest_variant)
    assert one.of_kind(False).candidates == 1 and ch.of_kind(False).candidates == ch.candidates


def _threshold_grid(seed=0):
    """Points on a coarse grid of 3 log-sizes whose variant turns on the third alone (a >= 7),
    as the GEMM algorithm's explicit GEMM turns on c_out >= 128: the nearest configurations
    mislead along the other two, where the grid is finer."""
    rng = np.random.default_rng(seed)
    pts = np.column_stack(
        [rng.integers(0, 12, 300) * 0.5, rng.integers(0, 12, 300) * 0.5, rng.choice([2.0, 4.0, 6.0, 7.0, 9.0], 300)]
    )
    labels = np.where(pts[:, 2] >= 7, "big", "small").astype(object)
    return pts, labels


def _cv_scores(*args):
    """Each rule's mean cross-validated |log error| over the scored rows."""
    return {r: float(np.nanmean(e)) for r, e in candidates.cv_errors(*args).items()}


def _wrong_is_3x(labels):
    def predict(lab, rows):
        return np.where(labels[rows] == lab, 1.0, 3.0)

    return predict


def test_a_tree_replaces_the_nearest_where_one_size_decides():
    pts, labels = _threshold_grid()
    pts[:, 2] *= 0.2  # the deciding size varies little next to the others: the nearest mislead
    scores = _cv_scores(
        pts,
        labels,
        np.ones(len(pts)),
        _wrong_is_3x(labels),
        None,
        [candidates.Rule(False, 1), candidates.Rule(True, 1)],
    )
    assert scores[candidates.Rule(True, 1)] == pytest.approx(0.0)  # the tree: every row its own variant
    assert scores[candidates.Rule(False, 1)] > 0.1
    rules = candidates.tree_rules(pts, labels, np.ones(len(pts)), _wrong_is_3x(labels), k=1)
    assert set(rules) == {False} and rules[False].size in candidates.LEAVES and not rules[False].products


def test_the_nearest_stay_where_a_tree_is_no_better():
    # variants in clusters: the nearest configuration is always right, a tree can only tie
    pts = np.repeat(np.arange(20, dtype=float)[:, None], 5, axis=0) + np.tile(np.linspace(0, 0.1, 5), 20)[:, None]
    labels = np.array([f"v{i % 3}" for i in range(20)], dtype=object).repeat(5)
    assert candidates.tree_rules(pts, labels, np.ones(len(pts)), _wrong_is_3x(labels), k=1) == {}


def test_each_kind_wins_its_own_rule():
    # the ungrouped rows' variant turns on one size (a tree wins), the grouped rows' come in
    # clusters (the nearest are right): judged on both kinds at once one rule served both
    pts, labels = _threshold_grid()
    pts[:, 2] *= 0.2
    clusters = np.repeat(np.arange(20, dtype=float)[:, None], 5, axis=0) + np.tile(np.linspace(0, 0.1, 5), 20)[:, None]
    grouped = np.column_stack([clusters[:, 0], clusters[:, 0], clusters[:, 0]])
    glabels = np.array([f"g{i % 3}" for i in range(20)], dtype=object).repeat(5)
    allpts = np.vstack([pts, grouped])
    alllab = np.concatenate([labels, glabels])
    kinds = np.r_[np.zeros(len(pts), dtype=bool), np.ones(len(grouped), dtype=bool)]
    rules = candidates.tree_rules(allpts, alllab, np.ones(len(allpts)), _wrong_is_3x(alllab), k=1, kinds=kinds)
    assert set(rules) == {False} and rules[False].tree
    errors = candidates.cv_errors(
        allpts, alllab, np.ones(len(allpts)), _wrong_is_3x(alllab), kinds, [candidates.Rule(False, 1)]
    )
    assert np.nanmean(errors[candidates.Rule(False, 1)][kinds]) == pytest.approx(0.0)


def test_cross_validation_keeps_each_row_among_its_kind():
    # grouped rows (kind True) carry their own variant: no ungrouped row may be proposed it
    pts, labels = _threshold_grid(seed=1)
    kinds = np.arange(len(pts)) % 4 == 0
    labels = np.where(kinds, "grouped", labels).astype(object)
    seen = []

    def predict(lab, rows):
        seen.append(lab)
        # only the other kind's variant is wrong: it would cost log(1e6)
        return np.where((labels[rows] == "grouped") == (lab == "grouped"), 1.0, 1e6)

    rules = [candidates.Rule(False, 3), candidates.Rule(True, 1)]
    scores = _cv_scores(pts, labels, np.ones(len(pts)), predict, kinds, rules)
    assert set(seen) == {"grouped", "big", "small"}
    assert all(v < np.log(1e6) / len(pts) for v in scores.values())  # not one row got the other kind's


def test_folds_are_fixed_and_even():
    f = candidates.fold_of(103)
    assert (f == candidates.fold_of(103)).all()
    assert sorted(np.bincount(f)) == [20, 20, 21, 21, 21]
    assert (
        _cv_scores(
            np.zeros((0, 2)),
            np.array([], dtype=object),
            np.zeros(0),
            _wrong_is_3x(None),
            None,
            [candidates.Rule(True, 1)],
        )
        == {}
    )


def _grouped_points(seed=0):
    """Log-configurations of grouped convolutions (log_config's 14 columns) whose variant turns
    on whether each group has one channel: depthwise layers of 32-1024 channels and layers of
    2-32 channels per group."""
    rng = np.random.default_rng(seed)
    n = 200
    dw = rng.random(n) < 0.5
    c = rng.choice([32, 64, 128, 256, 512, 1024], n).astype(float)
    g = np.where(dw, c, c / rng.choice([2, 4, 8, 16, 32], n))
    g = np.maximum(g, 2)
    ones = np.ones(n)
    cols = [rng.choice([1, 8, 64], n), c, c, rng.choice([7, 14, 28, 56], n), ones, 3 * ones, 3 * ones, g]
    cols[4] = cols[3]
    cols += [ones, ones, 2 * ones, 2 * ones, ones, ones]
    pts = np.log2(np.column_stack(cols))
    return pts, np.where(g == c, "depthwise", "looped").astype(object)


def test_per_group_channels_win_where_one_channel_per_group_decides():
    pts, labels = _grouped_points()
    kinds = np.ones(len(pts), dtype=bool)
    assert candidates.per_group_wins(pts, labels, np.ones(len(pts)), _wrong_is_3x(labels), 1, kinds)
    assert not candidates.per_group_wins(
        pts, labels, np.ones(len(pts)), _wrong_is_3x(labels), 1, ~kinds
    )  # no grouped rows


def test_a_tie_keeps_the_sizes_as_they_are():
    # the variant turns on the image size alone, far apart: both measures find it every time
    pts, _ = _grouped_points(seed=1)
    labels = np.where(pts[:, 3] >= np.log2(28), "big", "small").astype(object)
    pts[:, 3:5] *= 10
    kinds = np.ones(len(pts), dtype=bool)
    assert not candidates.per_group_wins(pts, labels, np.ones(len(pts)), _wrong_is_3x(labels), 1, kinds)
