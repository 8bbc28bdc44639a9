"""The law's residuals smoothed over a configuration's neighbours (seer.models.local)."""

import json

import numpy as np
import pytest

from seer.models.local import (
    LINEAR_NEIGHBOURS,
    NEIGHBOURS,
    Choice,
    LocalCorrection,
    Residuals,
    Smoothing,
    choose_smoothing,
    correction,
)


def _grid(n: int = 12) -> np.ndarray:
    """Log-configurations of a 2-D grid of whole sizes (2 ** 0 .. 2 ** (n - 1) on each axis)."""
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.column_stack([a.ravel(), b.ravel()]).astype(float)


def test_factor_is_the_residual_at_a_training_row_and_one_far_away():
    pts = _grid(4)
    r = np.full(len(pts), np.log(1.5))
    c = LocalCorrection(pts, r, Smoothing(length=1.0, prior=1e-9))
    assert c.factor(pts[:3]) == pytest.approx(1.5)
    assert c.factor(np.array([[40.0, 40.0]])) == pytest.approx(1.0)
    assert c.factor(np.zeros((0, 2))).shape == (0,)


def test_prior_shrinks_towards_no_correction():
    pts = np.array([[0.0, 0.0]])
    c = LocalCorrection(pts, np.array([np.log(2.0)]), Smoothing(length=1.0, prior=1.0))
    # one neighbour at distance 0 (weight 1) against a prior of weight 1: half the log residual
    assert c.factor(pts)[0] == pytest.approx(np.sqrt(2.0))


def test_round_trip_predicts_as_the_fitted():
    pts = _grid(3) + 0.1234567  # not whole: float32 in the file, and the fitted one rounded alike
    r = np.linspace(-0.3, 0.3, len(pts))
    c = correction(Residuals(pts, np.exp(-r)), Smoothing(0.75, 0.25))
    back = LocalCorrection.from_dict(json.loads(json.dumps(c.to_dict())))
    assert np.array_equal(back.points, c.points) and np.array_equal(back.residuals, c.residuals)
    assert back.residuals == pytest.approx(r, abs=1e-6)
    assert (back.smoothing.length, back.smoothing.prior, back.neighbours) == (0.75, 0.25, NEIGHBOURS)
    q = pts + 0.3
    assert np.array_equal(back.factor(q), c.factor(q))
    lin = correction(Residuals(pts, np.exp(-r)), Smoothing(0.75, 0.25, ridge=1.0))
    back = LocalCorrection.from_dict(json.loads(json.dumps(lin.to_dict())))
    assert (back.smoothing.ridge, back.neighbours) == (1.0, LINEAR_NEIGHBOURS)
    assert np.array_equal(back.factor(q), lin.factor(q))
    assert Smoothing.from_dict({"length": 1.0, "prior": 0.5}).ridge is None  # files before: local-constant


def test_leave_one_out_never_sees_the_row_itself():
    pts = _grid(3)
    ratio = np.ones(len(pts))
    ratio[4] = 3.0  # only the centre row is off: its own residual must not reach it
    d, r, x = Residuals(pts, ratio).loo(k=4)
    assert d.shape == r.shape == (len(pts), 4) and x.shape == (len(pts), 4, 2)
    assert (d > 0).all()
    assert np.allclose(r[4], 0.0)
    assert np.allclose(np.linalg.norm(x, axis=2), d)  # offsets from the row to its neighbours


def test_duplicate_rows_are_each_others_neighbours():
    pts = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 3.0]])
    ratio = np.array([0.5, 2.0, 1.0])
    d, r, _ = Residuals(pts, ratio).loo(k=1)
    assert d[:2, 0] == pytest.approx([0.0, 0.0])
    assert r[0, 0] == pytest.approx(-np.log(2.0)) and r[1, 0] == pytest.approx(-np.log(0.5))


def test_smooth_residuals_are_corrected_and_noise_is_not():
    pts = _grid()
    smooth = np.exp(-0.4 * np.sin(pts[:, 0] / 2))  # the law's miss varies slowly with one size
    choice = choose_smoothing([Residuals(pts, smooth)])
    picked = choice.smoothing
    assert picked is not None
    assert choice.rows == len(pts) and choice.rmspe < 0.5 * choice.law_rmspe
    before = np.sqrt(np.mean((smooth - 1) ** 2))
    after = np.sqrt(np.mean((smooth * np.exp(picked.shift(*Residuals(pts, smooth).loo())) - 1) ** 2))
    assert after < 0.5 * before
    for seed in range(5):  # independent from row to row: neighbours say nothing, so next to no gain
        noise = np.exp(np.random.default_rng(seed).normal(0, 0.1, len(pts)))
        got = choose_smoothing([Residuals(pts, noise)]).smoothing
        if got is not None:
            shift = got.shift(*Residuals(pts, noise).loo())
            gain = 1 - np.sqrt(np.mean((noise * np.exp(shift) - 1) ** 2) / np.mean((noise - 1) ** 2))
            assert gain < 0.02


def test_a_trend_at_the_datas_edge_is_carried_by_the_local_linear_fit():
    """Residuals that grow along one axis: past the last training rows the weighted mean of the
    neighbours lags the trend (they all lie on one side); the local-linear fit follows it."""
    pts = _grid(8)
    r = 0.1 * pts[:, 0]  # the law's miss grows 10% (in log) per doubling of one size
    res = Residuals(pts, np.exp(-r))
    edge = np.array([[8.0, 3.5]])  # one step past the data, where the trend says 0.8
    flat = correction(res, Smoothing(1.0, 1e-3)).factor(edge)[0]
    sloped = correction(res, Smoothing(1.0, 1e-3, ridge=0.01)).factor(edge)[0]
    assert np.log(sloped) == pytest.approx(0.8, abs=0.01)
    assert np.log(flat) < 0.7
    assert choose_smoothing([res]).smoothing.ridge is not None  # and leave-one-out picks it


def test_no_rows_enough_no_smoothing():
    assert choose_smoothing([Residuals(np.zeros((1, 2)), np.array([2.0]))]).smoothing is None
    assert choose_smoothing([]).rows == 0


def test_choice_round_trips_and_says_what_it_chose():
    pts = _grid(6)
    choice = choose_smoothing([Residuals(pts, np.exp(-0.3 * np.sin(pts[:, 0])))])
    back = Choice.from_dict(choice.to_dict())
    assert (back.smoothing.length, back.smoothing.prior, back.rows) == (
        choice.smoothing.length,
        choice.smoothing.prior,
        choice.rows,
    )
    assert "leave-one-out on 36 rows (length" in back.describe()
    none = Choice(None, 5, 0.1, 0.1, lent=2)
    assert Choice.from_dict(none.to_dict()).smoothing is None and Choice.from_dict(none.to_dict()).lent == 2
    assert Choice.from_dict({k: v for k, v in none.to_dict().items() if k != "lent"}).lent == 0  # older files
    assert "no smoothing beat them" in none.describe()
