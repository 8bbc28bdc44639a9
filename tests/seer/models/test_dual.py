"""seer.models.dual: a gradient transform algorithm timed as the forward of the same configuration,
scaled by the median ratio of its training calls, and used only where it errs less than the
gradient's own models."""

import numpy as np
import pandas as pd
import pytest

from seer.data.configs import ConfigBatch
from seer.models.dual import ForwardDual, blend_share, fit_dual, unstrided


def test_the_scale_is_the_median_ratio_and_an_outlier_does_not_pull_it():
    forward = np.array([1.0, 2.0, 4.0, 8.0, 1.0])
    measured = np.array([0.9, 1.8, 3.6, 7.2, 10.0])  # the last call: the forward's model 10x short
    own = measured * 2.0
    d = fit_dual("conv_bwd_filter", "FFT", measured, forward, own)
    assert d.scale == pytest.approx(0.9)
    want = np.sqrt(np.mean((0.9 * forward / measured - 1) ** 2))
    assert d.rmspe == pytest.approx(want) and d.own_rmspe == pytest.approx(1.0) and d.n == 5
    assert d.used  # 0.40 < 1.0


def test_calls_a_model_cannot_answer_are_left_out_and_none_is_no_dual():
    nan = np.nan
    measured, forward, own = np.array([1.0, 2.0, 3.0]), np.array([1.0, nan, 3.0]), np.array([nan, 2.0, 3.0])
    d = fit_dual("conv_bwd_data", "FFT", measured, forward, own)
    assert d.n == 1 and d.scale == pytest.approx(1.0)
    assert fit_dual("conv_bwd_data", "FFT", np.array([1.0]), np.array([nan]), np.array([1.0])) is None


def test_a_dual_that_errs_more_than_the_gradients_own_models_is_not_used():
    forward = np.array([1.0, 1.0, 1.0])
    measured = np.array([0.5, 1.0, 2.0])
    d = fit_dual("conv_bwd_data", "WINOGRAD_NONFUSED", measured, forward, measured * 1.05)
    assert not d.used
    assert ForwardDual.from_dict(d.to_dict()) == ForwardDual(**{**d.to_dict()})


def test_only_unstrided_configurations_are_timed_as_the_forward():
    df = pd.DataFrame(
        [dict(op="conv_bwd_data", batch=8, c_in=64, h_in=56, w_in=56, c_out=64, kh=3, kw=3, pad_h=1, pad_w=1)] * 3
    ).assign(stride_h=[1, 2, 1], stride_w=[1, 1, 2])
    assert unstrided(ConfigBatch.of(df)).tolist() == [True, False, False]


def test_the_ranking_weighs_a_dual_by_its_typical_error_not_a_few_calls():
    """The H100's backward-filter Winograd dual: 149.5% RMSPE, 84% of it from 3 of 87 calls;
    weighed by that, Winograd lost 7 Test-set-II picks it was the fastest on."""
    measured = np.ones(20)
    forward = np.full(20, 1.1)
    forward[:2] = 10.0  # two calls the forward times 10x over
    d = fit_dual("conv_bwd_filter", "WINOGRAD_NONFUSED", measured, forward, measured * 3)
    assert d.scale == pytest.approx(1 / 1.1) and d.rmspe > 2.5
    assert d.risk == pytest.approx(d.spread) and d.spread == pytest.approx(0.0)
    older = {k: v for k, v in d.to_dict().items() if k != "spread"}  # a file fitted before the spread
    assert ForwardDual.from_dict(older).risk == pytest.approx(d.rmspe)
    assert ForwardDual.from_dict(d.to_dict()).to_dict() == d.to_dict()


def test_a_dual_is_used_where_it_errs_less_typically_though_a_few_calls_carry_its_rmspe():
    """The H200's backward-filter Winograd: the dual's RMSPE on its training calls 146%, the
    own models' (fitted to those calls) 87%, and typically 29.4% against 29.6%; on held-out
    calls the own models erred 74.9% RMSPE, the dual 30.6%."""
    measured = np.ones(20)
    forward = np.where(np.arange(20) % 2, 0.95, 1.05)  # the dual within 10% on most calls
    forward[:2] = 8.0  # and two calls 8x over
    own = np.where(np.arange(20) % 2, 1.25, 0.75)  # the own models off by 25% on every call
    d = fit_dual("conv_bwd_filter", "WINOGRAD_NONFUSED", measured, forward, own)
    assert d.rmspe > d.own_rmspe and d.spread < d.own_spread
    assert d.used
    older = {k: v for k, v in d.to_dict().items() if k not in ("spread", "own_spread")}  # before 2026-11-27
    assert not ForwardDual.from_dict(older).used
    assert ForwardDual.from_dict(d.to_dict()).to_dict() == d.to_dict() and ForwardDual.from_dict(d.to_dict()).used


def test_the_own_models_are_judged_by_their_held_out_error():
    """The H100's backward-data FFT: its own models' in-sample typical error 23.3%, the dual's
    23.8%; on Test-set-I's held-out calls the own models erred 43.1% RMSPE, the dual 24.8%."""
    forward = np.ones(10)
    measured = np.linspace(0.8, 1.2, 10)
    own = measured * 1.1
    d = fit_dual("conv_bwd_data", "FFT", measured, forward, own)
    assert not d.used  # in-sample the own models look better
    held = fit_dual("conv_bwd_data", "FFT", measured, forward, own, held_out=np.full(10, 2.0))
    assert held.own_spread == pytest.approx(2 * d.own_spread) and held.used
    assert held.own_rmspe == pytest.approx(d.own_rmspe)  # the RMSPE stays in-sample
    less = fit_dual("conv_bwd_data", "FFT", measured, forward, own, held_out=np.full(10, 0.5))
    assert less.own_spread == pytest.approx(d.own_spread)  # never below in-sample


def _filter_gradient_layers(channels: list[int], sides: list[int]) -> ConfigBatch:
    rows = [
        dict(op="conv_bwd_filter", batch=32, c_in=c, h_in=h, w_in=h, c_out=c, kh=3, kw=3, pad_h=1, pad_w=1)
        for c, h in zip(channels, sides, strict=True)
    ]
    df = pd.DataFrame(rows).assign(stride_h=1, stride_w=1, dil_h=1, dil_w=1, groups=1)
    return ConfigBatch.of(df)


def test_a_filter_gradient_of_few_channels_and_many_positions_takes_its_reductions_chain():
    """The H100's backward-filter Winograd: measured over the scaled forward 0.9 where its GEMM's
    blocks sum few positions each, 3.4 where they sum 2^10 and more; VGG-16's 64-channel 224 x 224
    layer predicted 8.7 ms against 17.6."""
    channels = [512, 256, 64, 32, 16, 512, 256, 64, 32, 16, 128, 128]
    sides = [14, 28, 56, 112, 224, 7, 14, 224, 56, 112, 28, 112]
    batch = _filter_gradient_layers(channels, sides)
    npq = np.asarray(batch.sizes["NPQ"], dtype=float)
    forward = np.asarray(channels, dtype=float) ** 2 * npq * 1e-9  # a throughput-bound forward
    measured = np.hypot(0.9 * forward, 2.0e-6 * npq)  # and the chain of 2 ns a position
    d = fit_dual("conv_bwd_filter", "WINOGRAD_NONFUSED", measured, forward, measured * 1.5, npq=npq)
    assert d.scale == pytest.approx(0.9, rel=1e-3) and d.per_position_ns == pytest.approx(2.0, rel=1e-3)
    assert d.time(forward, batch) == pytest.approx(measured, rel=1e-3)
    assert d.spread == pytest.approx(0.0, abs=1e-3) and d.used
    scaled = fit_dual("conv_bwd_filter", "WINOGRAD_NONFUSED", measured, forward, measured * 1.5)  # no positions
    assert scaled.per_position_ns == 0.0 and scaled.spread > 0.1
    assert (measured / (scaled.scale * forward)).max() > 2  # the scale alone: a layer over twice short
    # the data gradient's GEMM sums over the channels, as the forward's: no chain
    assert fit_dual("conv_bwd_data", "WINOGRAD_NONFUSED", measured, forward, measured, npq=npq).per_position_ns == 0.0
    back = ForwardDual.from_dict(d.to_dict())
    assert back.per_position_ns == pytest.approx(d.per_position_ns) and back.time(forward, batch) == pytest.approx(
        measured, rel=1e-3
    )


def test_a_chain_that_does_not_lower_the_typical_error_is_not_kept():
    batch = _filter_gradient_layers([64, 128, 256, 512], [56, 28, 14, 7])
    npq = np.asarray(batch.sizes["NPQ"], dtype=float)
    forward = np.array([1.0, 2.0, 3.0, 4.0])
    d = fit_dual("conv_bwd_filter", "WINOGRAD_NONFUSED", 0.8 * forward, forward, forward, npq=npq)
    assert d.per_position_ns == 0.0 and d.scale == pytest.approx(0.8)
    assert "per_position_ns" not in d.to_dict()  # as files before the chain, which load with none
    assert d.time(forward, batch) == pytest.approx(0.8 * forward)


def test_the_blends_share_is_the_dual_where_it_errs_less_and_between_where_both_err_apart():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.3, (2, 400))
    assert blend_share(np.zeros(400), noise[0]) == 1.0  # the dual exact: the dual alone
    assert blend_share(noise[0], np.zeros(400)) == 0.0  # the own models exact: they alone
    assert 0.3 <= blend_share(noise[0], noise[1]) <= 0.7  # equal and independent: about half each
    assert blend_share(noise[0], 2 * noise[0]) == 1.0  # the same miss, larger: no help in it


def test_a_dual_and_the_own_models_are_blended_by_its_share():
    forward = np.ones(200)
    rng = np.random.default_rng(1)
    measured = np.exp(rng.normal(0, 0.3, 200))
    own = measured * np.exp(rng.normal(0, 0.3, 200))
    d = fit_dual("conv_bwd_data", "FFT", measured, forward, own)
    assert 0 < d.share < 1 and d.weight == d.share
    dual_t, own_t = np.array([1.0, 4.0]), np.array([4.0, 1.0])
    got = d.blend(dual_t, own_t)
    assert got == pytest.approx(dual_t**d.share * own_t ** (1 - d.share))
    assert d.blended_error(np.array([d.risk])) == pytest.approx(d.risk / np.sqrt(2))  # equal errors: sqrt 2 less
    older = {k: v for k, v in d.to_dict().items() if k != "share"}  # a file fitted before the blend
    assert ForwardDual.from_dict(older).weight == float(ForwardDual.from_dict(older).used)
    assert ForwardDual.from_dict(d.to_dict()).share == pytest.approx(d.share)
