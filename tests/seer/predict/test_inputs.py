"""Impossible or misspelt configurations are refused, not predicted: one SeerError sentence that
names the field (and the row of a DataFrame) and the value, from predict, rank_algorithms,
best_algorithm and configs.check_configs alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import seer
from seer.data import configs
from seer.errors import SeerError

CONV = dict(op="conv_fwd", batch=16, c_in=64, h_in=56, w_in=56, c_out=64, kh=3, kw=3, pad_h=1, pad_w=1)
BMM = dict(op="bmm", batch=8, m=256, n=256, k=256)


@pytest.fixture(scope="module")
def f():
    if "t4" not in seer.available():
        pytest.skip("no bundled t4 fits")
    return seer.load("t4")


def _every_entry(f, cfg):
    """Each public way of predicting a convolution config."""
    algo = f.algorithms[0]
    return [
        lambda: f.predict(**cfg, algo=algo),
        lambda: f.rank_algorithms(**cfg),
        lambda: f.best_algorithm(cfg),
        lambda: seer.best_algorithm(cfg, gpu="t4"),
        lambda: seer.rank_algorithms(pd.DataFrame([cfg]), gpu="t4"),
    ]


@pytest.mark.parametrize(
    "change,match",
    [
        (
            dict(kh=100, kw=100),
            r"config row 0: a 100x100 filter .* on a 56x56 input .* gives a -41x-41 output; "
            r"expected an output of at least 1x1",
        ),
        (dict(h_in=2, w_in=2, pad_h=0, pad_w=0), r"on a 2x2 input .* gives a 0x0 output"),
        (dict(kh=5, dil_h=20), r"dilation 20x1"),
        (dict(batch=2.5), r"config row 0: 'batch' must be a whole number for op conv_fwd, got 2\.5"),
        (dict(batch=True), r"'batch' must be a number >= 1 for op conv_fwd, got True"),
        (dict(c_in="64"), r"'c_in' must be a number >= 1 for op conv_fwd, got '64'"),
        (dict(pad_h=-1), r"'pad_h' must be a number >= 0 for op conv_fwd, got -1"),
        (dict(stride_h=0.5), r"'stride_h' must be a number >= 1"),
        (dict(groups=3), r"'groups' must divide 'c_in' for op conv_fwd, got groups=3, c_in=64"),
        (dict(groups=2, c_out=63), r"'groups' must divide 'c_out' for op conv_fwd, got groups=2, c_out=63"),
        (dict(dtype="int8"), r"'dtype' must be one of float32, float16, bfloat16 for op conv_fwd, got 'int8'"),
    ],
)
def test_bad_conv_configs_refused_everywhere(f, change, match):
    cfg = {**CONV, **change}
    for call in _every_entry(f, cfg):
        with pytest.raises(SeerError, match=match) as info:
            call()
        assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(K=7), r"unknown config keyword 'K' \(did you mean 'c_out'\?\); configs of conv_fwd take op, batch"),
        (dict(stride=2), r"unknown config keyword 'stride' \(did you mean 'stride_[hw]'\?\)"),
        (dict(zzz=2), r"unknown config keyword 'zzz'; configs of conv_fwd take"),
    ],
)
def test_misspelt_keywords_refused(f, change, match):
    """Keywords, not DataFrame columns: a frame of records carries other columns by design."""
    cfg = {**CONV, **change}
    for call in _every_entry(f, cfg)[:-1]:
        with pytest.raises(SeerError, match=match):
            call()
    with pytest.raises(SeerError, match=match):  # a keyword beside a frame
        f.rank_algorithms(pd.DataFrame([CONV]), **change)


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(batch=2.5), r"'batch' must be a whole number for op bmm, got 2\.5"),
        (dict(batch=True), r"'batch' must be a number >= 1 for op bmm, got True"),
        (dict(m="abc"), r"'m' must be a number >= 1 for op bmm, got 'abc'"),
        (dict(m=None), r"'m' must be a number >= 1 for op bmm, got None"),
        (dict(k=np.nan), r"'k' must be a number >= 1 for op bmm, got nan"),
        (dict(dtype="int8"), r"'dtype' must be one of float32, float16, bfloat16 for op bmm, got 'int8'"),
        (dict(K=7), r"unknown config keyword 'K' \(did you mean 'k'\?\); configs of bmm take op, batch, m, n, k"),
        (dict(kh=3), r"unknown config keyword 'kh'"),
    ],
)
def test_bad_gemm_configs(f, change, match):
    with pytest.raises(SeerError, match=match):
        f.predict(**{**BMM, **change})
    with pytest.raises(SeerError, match=match):  # the same keyword through a config dict
        f.predict(dict(BMM, **change))


def test_good_configs_still_predicted(f):
    assert f.predict(**BMM) > 0
    assert f.predict(**BMM, dtype="float32") == f.predict(**BMM)
    assert f.predict(**{**BMM, "batch": np.int64(8), "m": 256.0}) == pytest.approx(f.predict(**BMM))
    cfg = {**CONV, "groups": 2, "dtype": "float32"}
    assert f.best_algorithm(cfg) in f.algorithms
    assert f.best_algorithm({**CONV, "kh": 58, "kw": 58}) in f.algorithms  # a 1x1 output is fine
    r = f.rank_algorithms(CONV, algorithms=f.algorithms[0])  # one name, not its letters
    assert list(r["algo"]) == [f.algorithms[0]]


def test_a_frame_names_its_first_bad_row(f):
    df = pd.DataFrame([CONV] * 6)
    df.loc[3, ["kh", "kw"]] = 70
    df.loc[5, "batch"] = 0
    for call in (
        lambda: f.rank_algorithms(df),
        lambda: f.best_algorithm(df),
        lambda: f.predict(df.assign(algo=f.algorithms[0])),
        lambda: configs.check_configs(df.assign(stride_h=1, stride_w=1, dil_h=1, dil_w=1, groups=1), "conv_fwd"),
    ):
        with pytest.raises(SeerError, match=r"config row 3: a 70x70 filter"):
            call()


def test_a_mixed_frame_names_the_row_of_the_whole_frame(f):
    """predict splits a frame by op; the row named is still the row of the frame given."""
    df = pd.DataFrame([BMM, {**CONV, "algo": f.algorithms[0]}, {**BMM, "n": 5.5}, BMM])
    with pytest.raises(SeerError, match=r"config row 2: 'n' must be a whole number for op bmm, got 5\.5"):
        f.predict(df)
    with pytest.raises(
        SeerError,
        match=r"unknown config keyword 'K' \(did you mean 'c_out'\?\); configs of bmm, "
        r"conv_fwd take",
    ):
        f.predict(df.iloc[[0, 1]], K=3)


def test_a_frame_may_carry_other_columns(f):
    """Records carry time_ms, kernel, ... beside the configuration: only keywords are checked."""
    df = pd.DataFrame([BMM, BMM]).assign(time_ms=1.0, kernel="sgemm", Batch=3)
    assert np.isfinite(f.predict(df)).all()


def test_bool_column_in_a_frame(f):
    df = pd.DataFrame([BMM, BMM]).assign(batch=[True, False])
    with pytest.raises(SeerError, match=r"config row 0: 'batch' must be a number >= 1 for op bmm, got True"):
        f.predict(df)


@pytest.mark.parametrize("name", [123, 4.5, b"t4", ["t4"], "", "   "])
def test_load_needs_a_name_or_a_path(name):
    with pytest.raises(
        SeerError,
        match=r"argument name: expected a GPU name \(bundled: .*\) or the path of a "
        r"fits file, got ",
    ):
        seer.load(name)


def test_load_takes_a_path_object(f):
    assert seer.load(f.path).gpu.name == f.gpu.name
