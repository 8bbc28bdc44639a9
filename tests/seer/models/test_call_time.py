"""The call-level estimate (seer.models.call_time): what it learns from timed calls, what it leaves
out, how it survives a fits file, and how rankings weigh it."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

import seer
from seer import fitsfile
from seer.errors import SeerError
from seer.fitsfile.check import check
from seer.hardware import gpus
from seer.models.call_time import LIBRARY_PICK, NEIGHBOURS, CallTimes, blend, fit_call_times, joined, roofline_ms

H100 = gpus.lookup("h100-sxm")


def _configs(batches=(1, 8, 32), channels=(16, 64, 256), sizes=(14, 28, 56)) -> pd.DataFrame:
    rows = [
        dict(batch=n, c_in=c, c_out=2 * c, h_in=h, w_in=h, kh=3, kw=3, stride_h=1, stride_w=1, pad_h=1, pad_w=1)
        for n, c, h in itertools.product(batches, channels, sizes)
    ]
    return pd.DataFrame(rows).assign(dil_h=1, dil_w=1, groups=1)


def _calls(cfg: pd.DataFrame, ratios: dict[str, float]) -> pd.DataFrame:
    """Timed calls of each algorithm at `ratio` x the roofline, as the harness's main rows."""
    roof = roofline_ms(cfg, "conv_fwd", H100)
    parts = [cfg.assign(algo=a, time_ms=roof * r) for a, r in ratios.items()]
    return pd.concat(parts, ignore_index=True).assign(op="conv_fwd", role="main", status="ok", math="fma")


def test_a_constant_ratio_to_the_roofline_is_recovered_between_the_calls():
    calls = fit_call_times(_calls(_configs(), {"A": 2.0, "B": 5.0}), H100)["conv_fwd"]
    new = _configs(batches=(4, 16), channels=(32, 128), sizes=(20,))
    got = calls.predict(new, H100, ["B", "A", "FFT"])
    roof = roofline_ms(new, "conv_fwd", H100)
    np.testing.assert_allclose(got[:, 0], 5.0 * roof, rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], 2.0 * roof, rtol=1e-5)
    assert np.isnan(got[:, 2]).all()  # an algorithm never timed has no estimate


def test_rows_that_are_no_calls_time_are_left_out():
    good = _calls(_configs(), {"A": 2.0})
    bad = pd.concat(
        [
            good.assign(role="other", time_ms=good["time_ms"] * 100),
            good.assign(time_basis="unverified", time_ms=good["time_ms"] * 100),
            good.assign(status="failed", time_ms=good["time_ms"] * 100),
            good.assign(math="tf32", time_ms=good["time_ms"] * 100),
        ]
    )
    calls = fit_call_times(pd.concat([good.assign(time_basis="span"), bad], ignore_index=True), H100)["conv_fwd"]
    np.testing.assert_allclose(np.exp(calls.log_ratio[:, 0]), 2.0, rtol=1e-6)


def test_an_algorithm_of_too_few_calls_has_no_estimate():
    cfg = _configs()
    few = _calls(cfg.iloc[: NEIGHBOURS - 1], {"B": 3.0})
    calls = fit_call_times(pd.concat([_calls(cfg, {"A": 2.0}), few], ignore_index=True), H100)["conv_fwd"]
    got = calls.predict(cfg.iloc[:3], H100, ["A", "B"])
    assert np.isfinite(got[:, 0]).all() and np.isnan(got[:, 1]).all()


def test_the_nearest_calls_weigh_most():
    """Two regions of the configuration space with different ratios: each answers its own."""
    small, large = _configs(channels=(16, 32)), _configs(channels=(512, 1024))
    calls = fit_call_times(pd.concat([_calls(small, {"A": 2.0}), _calls(large, {"A": 20.0})]), H100)["conv_fwd"]
    ratio = calls.predict(small.iloc[:5], H100, ["A"])[:, 0] / roofline_ms(small.iloc[:5], "conv_fwd", H100)
    assert (ratio < 4.0).all()


def test_a_fits_document_keeps_the_estimates():
    calls = fit_call_times(_calls(_configs(), {"A": 2.0, "B": 5.0}), H100)["conv_fwd"]
    back = CallTimes.from_dict(json.loads(json.dumps(calls.to_dict())))
    cfg = _configs(batches=(2,))
    np.testing.assert_allclose(back.predict(cfg, H100, ["A", "B"]), calls.predict(cfg, H100, ["A", "B"]), rtol=1e-6)


def test_blend_is_the_geometric_mean_where_both_are_known():
    score = np.array([[1.0, 4.0, np.inf, 2.0]])
    call = np.array([[4.0, np.nan, 1.0, 0.0]])
    np.testing.assert_array_equal(blend(score, call), [[2.0, 4.0, np.inf, 2.0]])


def test_a_damaged_section_is_refused(tmp_path):
    doc = json.loads(fitsfile.dumps(fitsfile.read(fitsfile.resolve("h100-sxm"))))
    section = doc["call_times"]["conv_fwd"]
    section["algos"] = section["algos"][:-1]  # a column fewer than the ratios hold
    with pytest.raises(SeerError, match=r"call_times.conv_fwd.log_ratio must be"):
        check(doc, tmp_path / "h.json")


def test_the_bundled_rank_weighs_the_call_level_estimate():
    """rank_algorithms' pick is the least geometric mean of its score and the estimate, which
    differs from the score's own pick on some of these layers."""
    fits = seer.load("h100-sxm")
    layers = _configs(batches=(1, 32, 128), channels=(3, 64, 512), sizes=(7, 56, 224)).assign(op="conv_fwd")
    ranked = fits.rank_algorithms(layers)
    vp = fits.variant_predictor
    score = ranked.assign(s=ranked["ranked_ms"] * (1 + ranked["cv_rmspe"]))
    wide = score.pivot_table(index="config", columns="algo", values="s", aggfunc="first")
    calls = vp.call_estimates(layers, "conv_fwd", list(wide.columns))
    want = np.asarray(wide.columns)[np.argmin(np.where(np.isnan(b := blend(wide.to_numpy(), calls)), np.inf, b), 1)]
    got = ranked[ranked["rank"] == 1].set_index("config")["algo"].reindex(wide.index).to_numpy()
    np.testing.assert_array_equal(got, want)
    own = np.asarray(wide.columns)[np.argmin(wide.to_numpy(), 1)]
    assert (own != want).any()


def _gemms(batches=(1, 4, 16, 64), sizes=(64, 256, 1024)) -> pd.DataFrame:
    rows = [dict(batch=b, m=m, n=n, k=k) for b, m, n, k in itertools.product(batches, sizes, sizes, sizes)]
    return pd.DataFrame(rows).assign(op="gemm", dtype="float32")


def test_a_gemm_algorithms_tiles_are_one_algorithms_calls_and_the_librarys_picks_its_default():
    """Two tiles of one cuBLASLt algorithm at each shape (their geometric mean) and the
    heuristic's first-ranked call, learnt as the algorithm of a GEMM asked without one."""
    cfg = _gemms()
    roof = roofline_ms(cfg, "gemm", H100)
    base = cfg.assign(role="main", status="ok", math="fma")
    calls = pd.concat(
        [
            base.assign(algo="lt:20", time_ms=2.0 * roof, heuristic_rank=1),
            base.assign(algo="lt:20", time_ms=8.0 * roof, heuristic_rank=2),
            base.assign(algo="lt:55", time_ms=3.0 * roof, heuristic_rank=0),
        ],
        ignore_index=True,
    )
    got = fit_call_times(calls, H100)["gemm"]
    assert sorted(got.algos) == sorted([LIBRARY_PICK, "lt:20", "lt:55"])
    new = _gemms(batches=(2, 32), sizes=(128, 512))
    est = got.predict(new, H100, ["lt:20", LIBRARY_PICK, "lt:55"])
    ratio = est / roofline_ms(new, "gemm", H100)[:, None]
    np.testing.assert_allclose(ratio, np.broadcast_to([4.0, 3.0, 3.0], ratio.shape), rtol=1e-5)


def test_joined_is_the_geometric_mean_within_trust_and_the_estimate_beyond():
    times = np.array([1.0, 1.0, np.nan, 2.0, 1.0])
    inside = np.array([True, False, True, True, False])
    call = np.array([4.0, 4.0, 3.0, np.nan, np.nan])
    np.testing.assert_array_equal(joined(times, inside, call), [2.0, 4.0, 3.0, 2.0, 1.0])


def test_a_batched_gemm_of_a_tile_without_a_model_is_timed_from_its_algorithms_calls():
    """cuBLASLt's lt:20 on the H100: its one modelled tile learnt batch-1 calls only and
    answered 0.107 ms at batch 128 and 200 alike; its 128x32 tile, too rarely timed to model,
    ran them in 0.304 and 0.479 ms (Test-set-I rows, held out of the fit)."""
    h = seer.load("h100-sxm")
    rows = pd.DataFrame(dict(op="gemm", algo="lt:20", batch=[128, 200], m=64, n=512, k=512))
    got = h.predict(rows).to_numpy()
    np.testing.assert_allclose(got, [0.304, 0.479], rtol=0.35)
    assert got[1] / got[0] > 1.3
