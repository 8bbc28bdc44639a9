import json

import numpy as np
import pandas as pd
import pytest
from synthetic import conv_records, gemm_records

import seer
from seer.data import records
from seer.errors import SeerError
from seer.fit import __main__ as fit_cli


@pytest.fixture(scope="module")
def fits_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("fits")
    rec = pd.concat([conv_records(300), gemm_records(400)], ignore_index=True)
    records.write_csv(rec, d / "train.csv")
    assert fit_cli.main(["--data", str(d / "train.csv"), "--out", str(d), "--quiet"]) == 0
    return d / "t4.json"


def test_one_config_and_frame_agree(fits_path):
    f = seer.load(fits_path)
    one = f.predict(op="bmm", batch=8, m=512, n=512, k=512)
    frame = f.predict(
        pd.DataFrame(
            {"op": ["bmm"] * 3, "batch": [8, 1, 8], "m": [512, 64, 512], "n": [512, 64, 512], "k": [512, 64, 512]}
        )
    )
    assert isinstance(one, float) and frame[0] == pytest.approx(one) and frame[2] == pytest.approx(one)
    assert frame[1] < one
    # the law of the synthetic kernel: W * (2e-4 k + 2e-3) + 0.01 with B_max 80 (6.6 TFLOP/s, below the T4 peak)
    W = np.ceil(4 * 8 * 8 / 80)
    assert one == pytest.approx(W * (2e-4 * 512 + 2e-3) + 0.01, rel=0.05)


def test_rank_and_best(fits_path):
    f = seer.load(fits_path)
    cfg = dict(op="conv_fwd", batch=32, c_in=64, h_in=28, w_in=28, c_out=128, kh=3, kw=3, pad_h=1, pad_w=1)
    r = f.rank_algorithms(**cfg)
    assert set(r["algo"]) == set(f.algorithms) and list(r["rank"]) == list(range(1, len(f.algorithms) + 1))
    best = r["algo"].iat[0]
    assert best == f.best_algorithm(cfg) == seer.best_algorithm(cfg, gpu=fits_path)
    assert r.loc[r["rank"] == 1, "time_ms"].item() == r["time_ms"].min()
    many = pd.DataFrame([cfg] * 4)
    assert list(f.best_algorithm(many)) == [best] * 4
    assert f.predict(**cfg, algo=best) == pytest.approx(r["time_ms"].min())


def test_vectorized_equals_one_at_a_time(fits_path):
    f = seer.load(fits_path)
    test = conv_records(20, seed=11)
    test = test[test["status"] == "ok"].reset_index(drop=True)
    together = f.predict(test)
    alone = [
        f.predict(
            **{
                c: test[c].iloc[i]
                for c in (
                    "op",
                    "algo",
                    "batch",
                    "c_in",
                    "h_in",
                    "w_in",
                    "c_out",
                    "kh",
                    "kw",
                    "stride_h",
                    "stride_w",
                    "pad_h",
                    "pad_w",
                )
            }
        )
        for i in range(len(test))
    ]
    assert np.allclose(together, alone)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(op="bmm", batch=8, m=-5, n=5, k=5), "'m' must be a number >= 1"),
        (dict(op="bmm", batch=8, m=5, n=5), "need a column 'k'"),
        (dict(op="conv_fwd", batch=1, c_in=3, h_in=8, w_in=8, c_out=8, kh=3, kw=3), "need an 'algo'"),
        (
            dict(op="conv_fwd", batch=1, c_in=3, h_in=8, w_in=8, c_out=8, kh=3, kw=3, algo="FFT"),
            "no models of algorithm",
        ),
        (dict(op="matmul", m=5), "unknown op"),
        (dict(batch=1), "needs an 'op'"),
    ],
)
def test_bad_configs_are_one_sentence(fits_path, kw, match):
    with pytest.raises(SeerError, match=match):
        seer.load(fits_path).predict(**kw)


def test_bad_fits_files(tmp_path, fits_path):
    with pytest.raises(SeerError, match="does not exist"):
        seer.load(tmp_path / "nope.json")
    trunc = tmp_path / "trunc.json"
    trunc.write_text(fits_path.read_text()[:500])
    with pytest.raises(SeerError, match="not valid JSON"):
        seer.load(trunc)
    other = tmp_path / "other.json"
    doc = json.loads(fits_path.read_text())
    doc["schema"] = "seer.fits/0"
    other.write_text(json.dumps(doc))
    with pytest.raises(SeerError, match="schema 'seer.fits/0'"):
        seer.load(other)
    with pytest.raises(SeerError, match="no fits for GPU"):
        seer.load("Tesla K80-ish unknown")


def test_bundled_fits_load_and_predict():
    names = seer.available()
    if not names:
        pytest.skip("no bundled fits")
    for name in names:
        f = seer.load(name)
        if "bmm" in f.ops:
            assert 0 < f.predict(op="bmm", batch=4, m=256, n=256, k=256) < 100
        if f.algorithms:
            r = f.rank_algorithms(
                op="conv_fwd", batch=16, c_in=64, h_in=56, w_in=56, c_out=64, kh=3, kw=3, pad_h=1, pad_w=1
            )
            assert (r["time_ms"] > 0).all()
