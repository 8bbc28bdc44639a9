"""cuDNN's FFT looping its complex GEMM over the frequency bins: such calls timed as the bins'
count times one launch (VariantFit.binned), and the choosers naming a loop only where the
nearest training configuration ran one (Chooser.by_bins)."""

import numpy as np
import pandas as pd
from synthetic import SMS, fft_calls

from seer import models
from seer.data import configs
from seer.data.keys import PER_BIN
from seer.data.records.schema import CONV_DEFAULTS
from seer.models import chooser

BATCHED, LOOP = "conv_fwd:FFT:xmma_gemm_32x32x8_s3_tn", "conv_fwd:FFT:xmma_gemm_32x32x8_s3_tn" + PER_BIN


def _per_bin(n, seed, sides):
    """FFT calls that launch a 1 x ceil(K/32) grid once per bin of their square FFT (F x (F/2 + 1),
    F the least power of two holding the padded image), each launch 6 us and its waves' work."""
    df = fft_calls(n, seed, sides, "FFT", "sm80_xmma_gemm_cf32cf32_f32f32_cf32_tn_n_tilesize32x32x8",
                   batch=[1, 2, 4, 8], c_in=[128, 256, 512], c_out=[128, 384, 1024])
    df["grid_x"], df["grid_y"], df["grid_z"] = 1, np.ceil(df["c_out"] / 32), 1
    waves = np.ceil(df["grid_y"] / (2 * SMS))
    bins = configs.ConfigBatch.of(df, "conv_fwd").sizes["FB"]
    df["time_ms"] = bins * (waves * (2e-5 * df["c_in"]) + 0.006)
    return df


def _fit(df, variant):
    return models.VariantModel(models.VariantKey("conv_fwd", "FFT", variant), cc="9.0", sms=SMS).fit(df)


def test_a_bin_loop_is_timed_per_bin_at_any_fft_size():
    train, test = _per_bin(300, 0, [10, 14, 24, 30, 48]), _per_bin(100, 1, [100, 120])
    assert configs.ConfigBatch.of(test, "conv_fwd").sizes["FB"].min() == 128 * 65  # 16 x 33 at most in training
    m = _fit(train, "xmma_gemm_32x32x8_s3_tn" + PER_BIN)
    back = models.VariantFit.from_dict(m.to_dict())
    assert m.binned and back.binned and m.to_dict()["bins"] is True
    err = np.abs(back.predict(test) / test["time_ms"] - 1)
    assert np.median(err) < 0.02, np.median(err)
    whole = _fit(train, "xmma_gemm_32x32x8_s3_tn")  # the same calls fitted as whole calls: no bins term
    assert not whole.binned and "bins" not in whole.to_dict()
    assert np.median(np.abs(whole.predict(test) / test["time_ms"] - 1)) > 0.25


def _conv(n, h, k):
    return pd.DataFrame({"op": "conv_fwd", "batch": n, "c_in": 256, "h_in": h, "w_in": h, "c_out": k,
                         "kh": 1, "kw": 1, **CONV_DEFAULTS, "groups": 1})


def test_a_loop_is_named_only_where_the_nearest_training_configuration_looped():
    loops, batched = _conv(2, np.arange(40, 52), 512), _conv(32, np.arange(40, 52), 512)
    other = _conv(32, np.arange(40, 52), 64)  # a third variant, no loop of its own
    train = pd.concat([loops, batched, other], ignore_index=True)
    keys = pd.Series([LOOP] * 12 + [BATCHED] * 12 + ["conv_fwd:FFT:fft_r2c_64x64"] * 12)
    ch = chooser.fit_chooser(train, "conv_fwd", "FFT", keys, candidates=1)
    idx = {k: i for i, k in enumerate(ch.labels)}
    rows = pd.concat([_conv(2, [45], 512), _conv(24, [45], 512), _conv(32, [45], 64)], ignore_index=True)
    x = configs.log_config(rows, "conv_fwd")
    cand = np.full((3, 2), idx[LOOP])
    labels = np.asarray(ch.labels, dtype=object)
    # near the loops: kept; elsewhere the same kernel batched, near its calls or another variant's
    got = labels[ch.by_bins(x, cand)].tolist()
    assert got == [[LOOP, LOOP], [BATCHED, BATCHED], [BATCHED, BATCHED]]
    plain = np.full((3, 1), idx[BATCHED])
    assert (ch.by_bins(x, plain) == plain).all()  # no loop proposed: nothing to keep
    # where the kernel never ran batched, the nearest configuration's variant
    alone = chooser.fit_chooser(train.iloc[[*range(12), *range(24, 36)]], "conv_fwd", "FFT",
                                keys.iloc[[*range(12), *range(24, 36)]], candidates=1)
    labels = np.asarray(alone.labels, dtype=object)
    cand = np.full((3, 1), alone.labels.index(LOOP))
    assert labels[alone.by_bins(x, cand)[:, 0]].tolist() == [LOOP, *["conv_fwd:FFT:fft_r2c_64x64"] * 2]
