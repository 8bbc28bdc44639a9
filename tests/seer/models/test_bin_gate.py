"""The FFT's bin-loop gate: the census's captured launch counts label which calls loop their GEMM
over the frequency bins, and a tree of that one question names the loops (seer.models.bin_gate)."""

import numpy as np
import pandas as pd

from seer.data import configs
from seer.data.configs import log_config
from seer.data.keys import PER_BIN
from seer.data.records.schema import CONV_DEFAULTS
from seer.fit.gpu import _bin_gate
from seer.models import bin_gate, chooser, gate

BATCHED = "conv_fwd:FFT:xmma_gemm_32x32x8_s3_tn"
LOOP = BATCHED + PER_BIN


def _convs(n, seed=0, groups=1):
    rng = np.random.default_rng(seed)
    h = rng.choice([7, 10, 14, 20, 28, 40, 56], n)
    return pd.DataFrame(
        {
            "op": "conv_fwd",
            "batch": rng.choice([1, 2, 4, 8, 16, 32, 64, 128], n),
            "c_in": rng.choice([64, 128, 256, 512], n) * groups,
            "h_in": h,
            "w_in": h,
            "c_out": rng.choice([32, 64, 128, 256, 384, 512, 1024], n) * groups,
            "kh": 3,
            "kw": 3,
            **CONV_DEFAULTS,
            "pad_h": 1,
            "pad_w": 1,
            "groups": groups,
        }
    )


def _loops(df):
    """The rule of the synthetic library: a loop over the bins at small batches of many output
    channels (a rule of two sizes together)."""
    return ((df["batch"] <= 4) & (df["c_out"] / df["groups"] >= 256)).to_numpy()


def _captured(df, loops=None):
    """Census rows of captured FFT calls: a loop launches one GEMM a bin and its transforms, a
    batched call four kernels."""
    loops = _loops(df) if loops is None else loops
    bins = configs.ConfigBatch.of(df, "conv_fwd").sizes["FB"]
    launches = np.where(loops, bins + 3, 4).astype(int)
    return df.assign(algo="FFT", math="fma", status="ok", capture="ok", launches=launches)


def test_a_call_loops_where_it_launched_its_bins():
    df = _convs(300)
    got = bin_gate.census_loops(_captured(df), "conv_fwd")
    assert got["loop"].tolist() == _loops(df).tolist() and 0 < _loops(df).sum() < len(df)
    # launches short of the bins by one: no loop (a batched call of many kernels is no loop)
    bins = configs.ConfigBatch.of(df, "conv_fwd").sizes["FB"]
    short = _captured(df).assign(launches=(bins - 1).astype(int))
    assert not bin_gate.census_loops(short, "conv_fwd")["loop"].any()
    # left out: grouped calls (their launches count groups too), uncaptured ones, other algorithms and directions
    grouped = _captured(_convs(20, seed=1, groups=4))
    uncaptured = _captured(df).assign(capture="no kernel names")
    other = _captured(df).assign(algo="FFT_TILING")
    rows = pd.concat([grouped, uncaptured, other, _captured(df).assign(op="conv_bwd_data")])
    assert bin_gate.census_loops(rows, "conv_fwd").empty
    assert bin_gate.census_loops(df, "conv_fwd").empty  # a census without captures: no labels


def _sparse_chooser(bins=None, n=80):
    """An FFT chooser of a few timed calls (as the grid gives), with a bin gate where given."""
    tr = _convs(n, seed=4)
    keys = pd.Series(np.where(_loops(tr), LOOP, BATCHED))
    return chooser.fit_chooser(tr, "conv_fwd", "FFT", keys, candidates=1, bin_gate=bins)


def test_the_census_gate_names_loops_the_few_timed_calls_miss():
    census_rows = _convs(3000, seed=3)
    g = gate.fit_gate(log_config(census_rows, "conv_fwd"), _loops(census_rows))
    plain, gated = _sparse_chooser(), _sparse_chooser(g)
    q = _convs(600, seed=2)
    truth = np.where(_loops(q), LOOP, BATCHED)
    got, before = gated.choose(q), plain.choose(q)
    right = (got == truth).mean()
    assert right > 0.96 and right > (before == truth).mean() + 0.03
    assert not ((got == LOOP) & (truth == BATCHED)).any()  # no false loop (the nearest rule named 17)
    back = chooser.Chooser.from_dict(gated.to_dict())
    assert back.bin_gate is not None and (back.choose(q) == got).all()
    assert "bin_gate" not in plain.to_dict() and "census" in back.rule and "census" not in plain.rule


class _Always:
    """A gate that always answers `answer`."""

    def __init__(self, answer):
        self.answer = answer

    def predict(self, x):
        return np.full(len(x), int(self.answer))


def _conv(n, h, groups=1):
    return _convs(len(h)).assign(batch=n, c_in=256 * groups, h_in=h, w_in=h, c_out=512 * groups, groups=groups)


def test_the_gate_names_a_loop_where_the_nearest_looped_and_answers_ungrouped_rows_only():
    train = pd.concat([_conv(2, np.arange(40, 52)), _conv(32, np.arange(40, 52))], ignore_index=True)
    keys = pd.Series([LOOP] * 12 + [BATCHED] * 12)
    ch = chooser.fit_chooser(train, "conv_fwd", "FFT", keys, candidates=1, bin_gate=_Always(True))
    loop, batched = ch.labels.index(LOOP), ch.labels.index(BATCHED)
    # near the loops, near the batched calls, and grouped near the loops
    rows = pd.concat([_conv(2, [45]), _conv(24, [45]), _conv(2, [45], groups=4)], ignore_index=True)
    x = log_config(rows, "conv_fwd")
    assert ch.by_bins(x, np.full((3, 1), batched))[:, 0].tolist() == [loop, batched, batched]
    ch.bin_gate = _Always(False)
    assert ch.by_bins(x[:2], np.full((2, 1), loop))[:, 0].tolist() == [batched, batched]


def _family(n, seed, split="train"):
    df = _convs(n, seed)
    return df.assign(
        algo="FFT",
        split=split,
        call_id=[f"{split}{seed}-{i}" for i in range(n)],
        key=np.where(_loops(df), LOOP, BATCHED),
    )


def test_the_fit_grows_a_bin_gate_from_the_census_captures():
    timed = pd.concat([_family(300, 0), _family(100, 1, split="test")], ignore_index=True)
    asked = _captured(_convs(3000, seed=3))
    assert _bin_gate(timed, "conv_fwd", "FFT", None) is None  # no census
    assert _bin_gate(timed, "conv_fwd", "FFT", asked.iloc[:1000]) is None  # too few labels
    assert _bin_gate(timed.assign(algo="GEMM"), "conv_fwd", "GEMM", asked.assign(algo="GEMM")) is None
    g = _bin_gate(timed, "conv_fwd", "FFT", asked)
    q = _convs(500, seed=7)
    assert (g.predict(log_config(q, "conv_fwd")).astype(bool) == _loops(q)).mean() > 0.98
    # a census row of a timed configuration, held out or not, is left out: its calls label it
    clash = _captured(timed[list(_convs(1).columns)], loops=~_loops(timed))
    g2 = _bin_gate(timed, "conv_fwd", "FFT", pd.concat([asked, clash]))
    pts = log_config(timed, "conv_fwd")
    assert np.array_equal(g2.predict(pts), g.predict(pts))
