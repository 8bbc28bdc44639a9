"""The one `Fits` facade: every public call works the same on a fitted and a transferred GPU."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import seer
from seer.analytical import embedding_forward
from seer.predict.fits import by_op
from seer.predict.protocol import Predictor

README = Path(__file__).resolve().parents[3] / "README.md"
CONV = dict(op="conv_fwd", batch=32, c_in=64, h_in=56, w_in=56, c_out=64, kh=3, kw=3, pad_h=1, pad_w=1)


def _readme_api_block() -> str:
    text = README.read_text()
    block = re.search(r"```python\n(import pandas as pd\nimport seer\n.*?)```", text, re.S)
    assert block, "the README's API example is gone"
    return block.group(1)


@pytest.mark.parametrize("gpu", ["t4", "l4"])
def test_the_readme_api_examples_run_on_fitted_and_transferred_gpus(gpu, neusight_path):
    code = _readme_api_block().replace('"t4"', f'"{gpu}"')  # on l4: a T4 graph timed on the L4
    code = code.replace("../shared/datasets/neusight", str(neusight_path))  # wherever the data lie
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # every line must run
    f = ns["f"]
    assert f.source == ("fitted" if gpu == "t4" else "transferred")
    assert np.isfinite(f.predict(ns["df"])).all()


def test_fitted_and_transferred_answer_alike():
    own, moved = seer.load("t4"), seer.load("l4")
    tables = []
    for f in (own, moved):
        assert isinstance(f, seer.Fits) and all(isinstance(p, Predictor) for p in f.predictors.values())
        r = f.rank_algorithms(CONV, extrapolate=True)
        assert list(r["rank"]) == list(range(1, len(r) + 1))  # ranked from 1, in rank order
        sub = f.rank_algorithms(CONV, algorithms=["WINOGRAD", "IMPLICIT_PRECOMP_GEMM"])
        assert list(sub["algo"]) == ["IMPLICIT_PRECOMP_GEMM", "WINOGRAD"] or set(sub["algo"]) == {
            "WINOGRAD", "IMPLICIT_PRECOMP_GEMM"}  # fmt: skip
        assert f.best_algorithm(CONV, algorithms=["WINOGRAD"]) == "WINOGRAD"
        tables.append(r)
        with pytest.raises(seer.SeerError, match="no models of algorithm"):
            f.rank_algorithms(CONV, algorithms=["NO_SUCH_ALGO"])
        assert len(repr(f)) < 300 and "\n" not in repr(f)
        summary = f.summary()
        assert all(op in summary for op in f.ops)
        at = f.algorithm_times(pd.DataFrame([CONV]).drop(columns="op"), "conv_fwd")
        assert at.times.shape == at.inside.shape == at.variants.shape == (1, len(at.algos))
    assert list(tables[0].columns) == list(tables[1].columns)
    # algorithms in cuDNN's enum order on both
    from seer.data.variants import CONV_ALGO_ID

    for f in (own, moved):
        assert f.algorithms == sorted(f.algorithms, key=CONV_ALGO_ID.__getitem__)


def test_every_op_of_the_record_is_predicted_on_both():
    emb = dict(batch=4096, num_embeddings=500_000, num_tables=8, bag_size=32, emb_dim=64, rows_per_block=128)
    for f in (seer.load("h100-sxm"), seer.load("l4")):
        assert f.predict(op="embedding_fwd", **emb) == pytest.approx(embedding_forward(**emb, gpu=f.gpu))
        assert f.predict(op="embedding_bwd_sgd", **emb) > 0
        assert f.predict(op="softmax", rows=4096, cols=1024) > 0  # the datasheet where not fitted
        assert {"embedding_fwd", "embedding_bwd_sgd", "softmax", "conv_fwd"} <= set(f.ops)


def test_variant_keys_are_a_fitted_gpus():
    own = seer.load("t4")
    key = next(k for k in own.variants if k.startswith("bmm"))
    cfg = dict(op="bmm", batch=8, m=512, n=512, k=512)
    assert own.predict(cfg, variant=key) > 0
    with pytest.raises(seer.SeerError, match="variant keys"):
        seer.load("l4").predict(cfg, variant=key)


def test_an_op_claimed_twice_is_refused():
    f = seer.load("t4")
    mem = f.predictors["softmax"]
    with pytest.raises(ValueError, match="two predictors"):
        by_op([mem, mem])


def test_a_grouped_convolution_gets_no_ungrouped_kernel():
    """The T4's fits learnt from ungrouped convolutions only: a depthwise layer has no model of
    any algorithm there (ranking leaves them out, predict says why), an ungrouped one keeps its.
    The H100's (conv_grid has groups) time it with variants learnt from grouped calls only."""
    f = seer.load("t4")
    depthwise = dict(CONV, c_in=64, c_out=64, groups=64)
    r = f.rank_algorithms(depthwise)
    assert r["time_ms"].isna().all() and not r["fitted_range"].any() and (r["variant"] == "").all()
    with pytest.raises(seer.SeerError, match="no model of a grouped one"):
        f.predict(**depthwise, algo="IMPLICIT_PRECOMP_GEMM")
    assert np.isfinite(f.rank_algorithms(CONV)["time_ms"]).all()
    h = seer.load("h100-sxm")
    r = h.rank_algorithms(depthwise).dropna(subset=["time_ms"])
    assert len(r) >= 3
    for algo, variant in zip(r["algo"], r["variant"]):
        grouped = h.choosers[f"conv_fwd:{algo}"].of_kind(True)
        assert variant in {grouped.labels[i] for i in np.unique(grouped.label_idx)}


def test_dilation_is_an_axis_of_the_trust_distance():
    f = seer.load("h100-sxm")
    grid = dict(CONV, batch=128, h_in=28, w_in=28, pad_h=0, pad_w=0)  # the H100 grid's kind of layer
    plain = f.rank_algorithms(grid, extrapolate=True)
    dilated = f.rank_algorithms(dict(grid, dil_h=2, dil_w=2), extrapolate=True)
    # a 3x3 filter padded by 3: the grid's undilated 3x3 layers pad 0 or 1 (pad 1 is in range since its 3,327)
    padded = f.rank_algorithms(dict(grid, pad_h=3, pad_w=3), extrapolate=True)
    assert plain["fitted_range"].any() and not dilated["fitted_range"].any() and not padded["fitted_range"].any()


@pytest.mark.parametrize("gpu", ["h100-sxm", "t4", "l4"])
def test_a_dtype_the_models_did_not_learn_is_refused(gpu):
    f = seer.load(gpu)
    for cfg in (
        dict(CONV, algo=f.algorithms[0]),
        dict(
            op="gemm" if gpu == "h100-sxm" else "bmm",
            batch=8,
            m=512,
            n=512,
            k=64,
            algo="lt:55" if gpu == "h100-sxm" else "",
        ),
    ):
        assert f.predict(**cfg, dtype="float32") == f.predict(**cfg)
        with pytest.raises(seer.SeerError, match="learnt float32 only, not float16"):
            f.predict(**cfg, dtype="float16")
    assert f.predict(op="softmax", rows=64, cols=1024, dtype="float16") > 0  # bytes follow the element size


def test_configs_beyond_what_a_record_holds_are_refused():
    with pytest.raises(seer.SeerError, match="'m' must be below 2\\*\\*63"):
        seer.load("h100-sxm").predict(op="gemm", batch=1, m=1e30, n=64, k=64, algo="lt:55")


def test_a_linear_layers_batch_is_folded_into_its_rows():
    f = seer.load("t4")
    for b in (2, 8, 64):
        assert f.predict(op="linear", batch=b, m=512, n=1024, k=1024) == f.predict(
            op="linear", batch=1, m=512 * b, n=1024, k=1024
        )


def test_a_filter_shape_an_algorithm_never_ran_is_said_not_predicted():
    h = seer.load("h100-sxm")
    assert h.predict(**dict(CONV, algo="WINOGRAD_NONFUSED")) > 0  # 3x3, stride 1: it runs
    seven = dict(CONV, kh=7, kw=7, pad_h=3, pad_w=3)
    with pytest.raises(seer.SeerError, match="WINOGRAD_NONFUSED does not run a 7x7 filter, stride 1x1"):
        h.predict(**dict(seven, algo="WINOGRAD_NONFUSED"))
    r = h.rank_algorithms(seven).set_index("algo")
    assert np.isnan(r.loc["WINOGRAD_NONFUSED", "time_ms"]) and r.loc["WINOGRAD_NONFUSED", "rank"] == len(r)
    assert h.best_algorithm(seven) != "WINOGRAD_NONFUSED"
    assert seer.load("t4").variant_predictor.support is None  # autotuner picks only: nothing to say


def test_one_config_outside_the_fitted_range_warns():
    with pytest.warns(seer.SeerWarning, match="outside the fitted range"):
        seer.load("h100-sxm").predict(**dict(CONV, algo="IMPLICIT_GEMM", batch=1, c_in=3000))


GEMM_NAMES = [dict(op="gemm", batch=1, m=1024, n=1024, k=1024), dict(op="bmm", batch=8, m=512, n=512, k=64),
              dict(op="linear", batch=8, m=128, n=1024, k=1024)]  # fmt: skip


@pytest.mark.parametrize("gpu", ["h100-sxm", "t4", "a100", "l4", "h200"])
def test_a_gemm_is_answered_under_each_of_its_names_on_every_gpu(gpu):
    """H100's data are cuBLASLt GEMMs (op gemm), NeuSight's torch bmm/linear: each GPU times
    all three names, as the library launches them (no algorithm given)."""
    f = seer.load(gpu)
    table = f.predict_frame(pd.DataFrame(GEMM_NAMES))
    assert (table["time_ms"] > 0).all() and set(table["timed_as"]) <= set(f.ops)
    linear, gemm = GEMM_NAMES[2], dict(GEMM_NAMES[2], op="gemm", batch=1, m=8 * 128)
    if f.source == "fitted":  # a transfer's gemm and linear are medians over different sources
        assert f.predict(**linear) == f.predict(**gemm)  # one product of 1024 rows, whichever its name


def test_the_library_pick_on_h100_is_one_of_the_timed_cublaslt_algorithms():
    h = seer.load("h100-sxm")
    assert h.algorithms_of("gemm") == h.algorithms_of("bmm") == ["lt:20", "lt:55"]
    cfg = dict(op="gemm", batch=4, m=2048, n=2048, k=512)
    r = h.rank_algorithms(**cfg)
    assert list(r["algo"]) != [] and set(r["algo"]) == {"lt:20", "lt:55"} and list(r["rank"]) == [1, 2]
    assert r["time_ms"].is_monotonic_increasing or not r["fitted_range"].all()
    assert h.predict(**cfg) in [pytest.approx(t) for t in r["time_ms"]]  # what one algorithm launches
    with pytest.raises(seer.SeerError, match="no algorithms to rank: their data timed the kernel the library"):
        seer.load("t4").rank_algorithms(**cfg)
    with pytest.raises(seer.SeerError, match="one op at a time"):
        h.rank_algorithms(pd.DataFrame([cfg, CONV]))


def test_answers_are_aligned_on_the_frames_index_and_ranked_from_one():
    f = seer.load("t4")
    df = pd.DataFrame([dict(CONV, batch=b) for b in (8, 16, 32)], index=["a", "b", "c"])
    t = f.predict(df.assign(algo="GEMM"))
    assert isinstance(t, pd.Series) and list(t.index) == ["a", "b", "c"] and t.name == "time_ms"
    assert t.is_monotonic_increasing  # more batch, more time: the rows kept their labels
    best = f.best_algorithm(df)
    assert isinstance(best, pd.Series) and list(best.index) == ["a", "b", "c"]
    r = f.rank_algorithms(df)
    k = len(f.algorithms)
    assert list(r["config"]) == [c for c in "abc" for _ in range(k)] and list(r["rank"]) == list(range(1, k + 1)) * 3
    assert list(r.loc[r["rank"] == 1, "algo"]) == list(best)


def test_ranking_weighs_each_time_by_its_models_cross_validated_error(monkeypatch):
    """rank = order of time_ms x (1 + RISK x cv_rmspe), blended with the call-level estimate
    (seer.models.call_time); cv_rmspe is the answering variant's own."""
    import seer.predict.fits as F
    from seer.data.records import CONV_DEFAULTS
    from seer.models.call_time import blend

    f = seer.load("h100-sxm")
    shapes = [dict(batch=b, kh=k, kw=k, pad_h=k // 2, pad_w=k // 2) for b in (1, 32, 128) for k in (1, 3, 5)]
    df = pd.DataFrame([dict(CONV, **s) for s in shapes])
    r = f.rank_algorithms(df).dropna(subset=["time_ms"])
    assert (r["cv_rmspe"] == [f.variants[v].cv_rmspe for v in r["variant"]]).all()
    assert (r["cv_rmspe"] > 0).all()
    vp = f.variant_predictor
    for i, g in r.groupby("config"):
        score = (g["time_ms"] * (1 + F.RISK * g["cv_rmspe"])).to_numpy()
        one = df.iloc[[i]].assign(**{k: v for k, v in CONV_DEFAULTS.items() if k not in df})
        calls = vp.call_estimates(one, "conv_fwd", list(g["algo"]))[0]
        untrusted = np.where(g["fitted_range"] | vp.extrapolates, 0.0, F.UNTRUSTED)  # beyond the data: last
        assert (np.diff(blend(score, calls) + untrusted) >= 0).all()
    monkeypatch.setattr(F, "RISK", 0.0)  # by time alone (no call-level estimate) the order is the times'
    monkeypatch.setattr(vp, "call_times", {})
    for _, g in f.rank_algorithms(df).dropna(subset=["time_ms"]).groupby("config"):
        assert g["time_ms"].is_monotonic_increasing


def test_grouped_convolutions_of_several_channels_a_group_rank_by_the_slowest_variant_proposed():
    """cuDNN loops over the groups on most such calls, and sometimes runs them once, on nothing
    the sizes show: ranked by its fastest proposed variant, an algorithm that would loop was
    picked at 10-20x the fastest time (seer.predict.variants.may_loop)."""
    from seer.data.configs import ConfigBatch
    from seer.predict.variants import may_loop

    h100 = seer.load("h100-sxm")
    # a conv_grid configuration: GEMM the fastest measured (4.70 ms), IMPLICIT_PRECOMP_GEMM 12.3 ms.
    # Until the sixteenth session's data IMPLICIT_PRECOMP_GEMM's chooser proposed its direct
    # kernel (2.2 ms) and the looping one only ranked it; now it proposes the loop itself
    layer = dict(batch=128, c_in=128, h_in=128, w_in=128, c_out=128, kh=3, kw=3, groups=64)
    r = h100.rank_algorithms(**layer).set_index("algo")
    assert r.loc["IMPLICIT_PRECOMP_GEMM", "ranked_ms"] > 2 * 4.70 and h100.best_algorithm(**layer) == "GEMM"
    assert (r["ranked_ms"] >= r["time_ms"]).all()
    # where an algorithm's proposed variants differ, it ranks by the slowest (at batch 128 every
    # algorithm's proposals for this layer agree since FFT_TILING's once-a-call terms, session 41)
    r = h100.rank_algorithms(**dict(layer, batch=32)).set_index("algo")
    assert (r["ranked_ms"] >= r["time_ms"]).all() and (r["ranked_ms"] > r["time_ms"]).any()
    # ungrouped and depthwise layers rank by their predicted time
    for other in (dict(layer, groups=1), dict(layer, groups=128)):
        o = h100.rank_algorithms(**other)
        assert np.array_equal(o["ranked_ms"].to_numpy(), o["time_ms"].to_numpy(), equal_nan=True)
    cfgs = pd.DataFrame([dict(layer, groups=g, c_in=c) for g, c in ((1, 16), (16, 16), (8, 16), (4, 64))])
    assert may_loop(ConfigBatch.of(cfgs.assign(op="conv_fwd"), "conv_fwd")).tolist() == [False, False, True, True]
    gemm = pd.DataFrame([dict(op="gemm", batch=1, m=64, n=64, k=64)])
    assert not may_loop(ConfigBatch.of(gemm, "gemm")).any()
