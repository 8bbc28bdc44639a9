"""Embedding-bag predictors of the DLRM performance model (seed 000): exact reproduction of
its printed numbers, vectorization, the hit rate at extreme sizes, bad input."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from seer.analytical import (
    SEED_V100,
    Peaks,
    embedding_backward_sgd,
    embedding_forward,
    forward_traffic,
    hit_rate,
    peaks_for,
)
from seer.errors import SeerError, UnknownGPUError

FWD = dict(batch=4096, num_embeddings=500000, num_tables=197, bag_size=32, emb_dim=32, rows_per_block=128)
BWD = dict(batch=2048, num_embeddings=200000, num_tables=128, bag_size=128, emb_dim=128, rows_per_block=32)
SEED_OVERRIDES = {
    "peak_dram_bw": 809,
    "peak_l2_bw": 2888,
    "L2_size": 6 * 1024 * 1024 * 4,
    "num_SM": 80,
    "peak_throughput": 12200,
}


def test_forward_reproduces_seed():
    # docs/reference.md, the DLRM predictors: 4340.7676 us (measured 4789) with the seed's V100 figures
    assert embedding_forward(**FWD, peaks=SEED_V100, unit="us") == pytest.approx(4340.7676, rel=1e-6)


def test_backward_sgd_reproduces_seed():
    assert embedding_backward_sgd(**BWD, peaks=SEED_V100, unit="us") == pytest.approx(42834.78, rel=1e-6)


def test_seed_figures_as_overrides_of_a_table_gpu():
    f = embedding_forward(**FWD, gpu="v100-sxm2", peaks=SEED_OVERRIDES, unit="us")
    b = embedding_backward_sgd(**BWD, gpu="Tesla V100-SXM2-16GB", peaks=SEED_OVERRIDES, unit="us")
    assert f == pytest.approx(4340.7676, rel=1e-6)
    assert b == pytest.approx(42834.78, rel=1e-6)


def test_seed_argument_names_and_units():
    seed_names = dict(FWD)
    seed_names["batch_size"] = seed_names.pop("batch")
    seed_names["embedding_dim"] = seed_names.pop("emb_dim")
    us = embedding_forward(**seed_names, peaks=SEED_V100, unit="us")
    assert embedding_forward(**FWD, peaks=SEED_V100) == pytest.approx(us / 1e3, rel=1e-12)  # ms default
    assert embedding_forward(**FWD, peaks=SEED_V100, unit="s") == pytest.approx(us / 1e6, rel=1e-12)


def test_table_gpu_gives_datasheet_prediction():
    pk = peaks_for("h100-sxm")
    assert pk.dram_gbs == 3350 and pk.sms == 132
    t = embedding_forward(**FWD, gpu="h100-sxm")
    assert 0 < t < embedding_forward(**FWD, gpu="t4")  # faster memory, shorter time


def test_dataframe_equals_one_at_a_time():
    rng = np.random.default_rng(7)
    n = 60
    e = rng.integers(10, 2_000_000, n)
    df = pd.DataFrame(
        {
            "batch": rng.integers(1, 5000, n),
            "num_embeddings": e,
            "num_tables": rng.integers(1, 300, n),
            "bag_size": np.minimum(rng.integers(1, 200, n), e),
            "emb_dim": rng.choice([4, 16, 32, 64, 128], n),
            "rows_per_block": rng.choice([1, 4, 32, 128], n),
        },
        index=np.arange(100, 100 + n),
    )
    for fn in (embedding_forward, embedding_backward_sgd):
        vec = fn(df, gpu="a100-40gb", unit="us")
        assert isinstance(vec, np.ndarray) and vec.shape == (n,)
        one = [fn(**{k: int(v) for k, v in row.items()}, gpu="a100-40gb", unit="us") for _, row in df.iterrows()]
        np.testing.assert_array_equal(vec, np.array(one))


def _seed_loop(x: int, e: int, l: int) -> float:
    # The seed's definition of C(X, L) / C(E, L), as a reference for the closed form.
    ret = 1.0
    for _ in range(l):
        ret *= x / e
        x -= 1
        e -= 1
    return ret


def test_hit_rate_matches_seed_definition():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(400):
        e = int(10 ** rng.uniform(0.5, 7))
        l = int(rng.integers(1, min(e, 300) + 1))
        x = int(rng.integers(l, e + 1))
        ref = _seed_loop(x, e, l)
        got = float(hit_rate(x, e, l))
        if ref > 1e-280:
            worst = max(worst, abs(got / ref - 1))
        else:
            assert got < 1e-270
    assert worst < 1e-9
    assert hit_rate(10, 10, 10) == 1.0 and hit_rate(9, 10, 10) == 0.0 and hit_rate(0, 10, 1) == 0.0


def test_large_tables_and_bags_stay_finite_and_fast():
    t0 = time.perf_counter()
    hr = hit_rate(np.array([10**9 - 10**5, 10**9 - 1, 10**6]), 10**9, np.array([1000, 1000, 1000]))
    t = embedding_forward(
        batch=65536,
        num_embeddings=10**9,
        num_tables=100,
        bag_size=1000,
        emb_dim=128,
        rows_per_block=128,
        gpu="h100-sxm",
    )
    assert time.perf_counter() - t0 < 1.0
    assert np.isfinite(hr).all() and 0 < hr[0] < hr[1] < 1 and hr[2] == 0.0
    assert hr[1] == pytest.approx(1 - 1000 / 10**9, rel=1e-9)
    assert np.isfinite(t) and t > 0


def test_forward_traffic_exposes_the_model():
    tr = forward_traffic(**FWD, peaks=SEED_V100)
    assert tr.shape[0] == 1
    assert tr["time_ms"].iloc[0] == pytest.approx(4.3407676, rel=1e-6)  # ms, as every time seer returns
    assert tr["time_ms"].iloc[0] == pytest.approx(embedding_forward(**FWD, peaks=SEED_V100), rel=1e-12)
    assert tr["time_ms"].iloc[0] == max(tr["dram_ms"].iloc[0], tr["l2_ms"].iloc[0])
    assert not any(c.endswith("_us") for c in tr.columns)
    assert tr["rows_in_l2"].iloc[0] == 65536  # 24 MiB / 3 tables at once / 4 B / 32
    assert 0 <= tr["hit_rate"].iloc[0] < 1e-20


@pytest.mark.parametrize(
    "field,value",
    [
        ("batch", 0),
        ("num_embeddings", -5),
        ("num_tables", 0),
        ("bag_size", 0),
        ("emb_dim", -1),
        ("rows_per_block", 0),
        ("emb_dim", 2.5),
    ],
)
def test_bad_sizes_name_the_argument(field, value):
    cfg = dict(FWD, **{field: value})
    with pytest.raises(SeerError, match=field):
        embedding_forward(**cfg, gpu="v100-sxm2")


def test_bag_larger_than_table():
    with pytest.raises(SeerError, match="bag_size"):
        embedding_forward(**dict(FWD, num_embeddings=10, bag_size=11), gpu="v100-sxm2")
    df = pd.DataFrame([FWD, dict(FWD, num_embeddings=5, bag_size=6)])
    with pytest.raises(SeerError, match=r"column 'bag_size', row 1"):
        embedding_backward_sgd(df, gpu="v100-sxm2")


def test_unknown_gpu_and_other_bad_arguments():
    with pytest.raises(UnknownGPUError, match="argument gpu"):
        embedding_forward(**FWD, gpu="Voodoo 5")
    with pytest.raises(SeerError, match="gpu"):
        embedding_forward(**FWD)  # no GPU and no peaks
    with pytest.raises(SeerError, match="unit"):
        embedding_forward(**FWD, peaks=SEED_V100, unit="h")
    with pytest.raises(SeerError, match="peak_l2"):
        embedding_forward(**FWD, gpu="v100-sxm2", peaks={"peak_l2_bw": -1})
    with pytest.raises(SeerError, match="rows_per_block"):
        embedding_forward(**{k: v for k, v in FWD.items() if k != "rows_per_block"}, peaks=SEED_V100)
    with pytest.raises(SeerError, match="'batch', row 0"):
        embedding_forward(pd.DataFrame([dict(FWD, batch=None)]), peaks=SEED_V100)


def test_peaks_dataclass_is_explicit():
    pk = Peaks(
        name="mine", sms=80, fp32_gflops=12200, dram_gbs=809, l2_gbs=2888, l2_bytes=6 * 1024 * 1024 * 4, pcie_gbs=16
    )
    assert embedding_forward(**FWD, peaks=pk, unit="us") == pytest.approx(4340.7676, rel=1e-6)
    dl = peaks_for("v100-sxm2", measured=True)
    assert (dl.dram_gbs, dl.l2_gbs, dl.fp32_gflops) == (804.5, 2847.5, 15441.5)
    with pytest.raises(SeerError, match="gpu"):
        peaks_for("t4", measured=True)
