"""fit_gpu: a GEMM measured with several cuBLASLt algorithms also learns the one the library's
heuristic ranks first, as the op's default family (what predict gives a GEMM without an algorithm)."""

import dataclasses

import numpy as np
import pandas as pd
from synthetic import gemm_records

from seer.data import records
from seer.data.prepare import prepare
from seer.fit.gpu import fit_gpu, library_picks, pooled_keys, training_calls
from seer.hardware import gpus
from seer.models import DEFAULT
from seer.models.call_time import LIBRARY_PICK, CallTimes
from seer.predict.load import from_doc


def _two_algorithms(n: int = 300) -> pd.DataFrame:
    """Every config timed with lt:1 (a 128x64 tile kernel) and lt:2 (a 64x64 one, 1.5x slower);
    the heuristic ranks lt:2 first on small k, lt:1 on large k."""
    one = gemm_records(n, seed=3, op="gemm")
    two = one.assign(kernel="volta_sgemm_64x64_nn", time_ms=one["time_ms"] * 1.5)
    small = (one["k"] < 512).to_numpy()
    one = one.assign(algo="lt:1", heuristic_rank=np.where(small, 1, 0))
    two = two.assign(algo="lt:2", heuristic_rank=np.where(small, 0, 1))
    rec = pd.concat([one, two], ignore_index=True).assign(call_id=np.arange(2 * n))
    return records.validate(rec)


def test_the_heuristics_first_choice_is_the_default_family():
    rec = _two_algorithms()
    picks = library_picks(rec)
    assert len(picks) == len(rec) // 2 and (picks["heuristic_rank"] == 0).all()
    doc = fit_gpu(rec, gpus.lookup("t4"))
    assert {"gemm:lt:1", "gemm:lt:2", "gemm:default"} <= set(doc["choosers"])
    labels = doc["choosers"]["gemm:default"]["labels"]
    assert any(k.startswith("gemm:lt:1:") for k in labels) and any(k.startswith("gemm:lt:2:") for k in labels)
    f = from_doc({**doc, "gpu": vars(gpus.lookup("t4"))}, path=None)
    big, small = dict(op="gemm", batch=4, m=512, n=512, k=900), dict(op="gemm", batch=4, m=512, n=512, k=100)
    # the library's pick, not the other (a time near its, not equal: a GEMM's time joins the
    # call-level estimate of its algorithm's calls, the default's of the library's picks)
    for cfg, picked, other in ((big, "lt:1", "lt:2"), (small, "lt:2", "lt:1")):  # the slower one on small k
        t = f.predict(**cfg)
        assert abs(np.log(t / f.predict(**cfg, algo=picked))) < abs(np.log(t / f.predict(**cfg, algo=other)))


def test_a_calls_side_of_the_split_is_its_main_rows():
    timed = pd.DataFrame(dict(gpu="g", source="s", call_id=[1, 1, 2, 3], role=["main", "post", "main", "main"]))
    prepared = pd.DataFrame(dict(gpu="g", source="s", call_id=[1, 2, 3], role="main", split=["train", "test", "train"]))
    assert training_calls(timed, prepared).index.tolist() == [0, 1, 3]


def test_a_gemms_call_level_estimate_learns_from_training_calls_only():
    """Test-set-I's GEMM calls are predicted from it: they are left out of it (every shape here
    was timed once per algorithm, so a shape whose calls all fell in Test-set-I is absent)."""
    rec = _two_algorithms()
    calls = CallTimes.from_dict(fit_gpu(rec, gpus.lookup("t4"))["call_times"]["gemm"])
    assert sorted(calls.algos) == sorted([LIBRARY_PICK, "lt:1", "lt:2"])
    assert 0.5 * len(rec) // 2 < len(calls.points) < len(rec) // 2


def test_rows_without_algorithms_learn_no_second_default():
    rec = gemm_records(200, seed=4, op="bmm")
    assert library_picks(rec).empty
    assert [k for k in fit_gpu(rec, gpus.lookup("t4"))["choosers"] if k.startswith("bmm:")] == ["bmm:default"]


def test_calls_run_once_per_group_get_a_model_of_their_own_only_with_rows_enough():
    many, few, plain = "conv_fwd:FFT:fft/per_group", "conv_fwd:FFT:gemm/per_group", "conv_fwd:FFT:gemm"
    rec = pd.DataFrame(
        {
            "key": [many] * 12 + [few] * 11 + [plain] * 12 + [many],
            "split": ["train"] * 35 + ["test"],
        }
    )
    got = pooled_keys(rec, min_rows=12)
    assert (got[:12] == many).all() and got.iat[-1] == many  # a test row follows its training rows
    assert (got[12:35] == plain).all()  # too few of their own: with the variant's other calls, which have a model
    # both halves too few for a model: not pooled into one model of two regimes
    small = rec[~((rec["key"] == plain) & (rec.index >= 28))].reset_index(drop=True)
    got = pooled_keys(small, min_rows=12)
    assert list(got[12:28]) == [few] * 11 + [plain] * 5


def test_a_variant_too_few_rows_modelled_keeps_its_shapes_in_the_chooser_under_its_neighbours_variant():
    from seer.fit.gpu import nearest_modelled

    base = {"op": "conv_fwd", "h_in": 28, "w_in": 28, "c_out": 64, "stride_h": 1, "stride_w": 1}
    base |= {"pad_h": 0, "pad_w": 0, "dil_h": 1, "dil_w": 1, "batch": 8}
    rows = [
        {"c_in": 64, "kh": 3, "kw": 3, "groups": 1, "key": "a"},
        {"c_in": 512, "kh": 3, "kw": 3, "groups": 1, "key": "b"},
        {"c_in": 64, "kh": 3, "kw": 3, "groups": 64, "key": "g"},
        {"c_in": 480, "kh": 1, "kw": 3, "groups": 1, "key": "rare"},  # a 1x3 filter only this variant ran
        {"c_in": 64, "kh": 1, "kw": 3, "groups": 64, "key": "rare"},
    ]
    g = pd.DataFrame([{**base, **r} for r in rows])
    got = nearest_modelled(g, {"a", "b", "g"}, "conv_fwd")
    assert list(got) == ["a", "b", "g", "b", "g"]  # nearest in the log-configuration, of its kind
    assert nearest_modelled(g, {"a", "b", "g", "rare"}, "conv_fwd").equals(g["key"])


def test_a_rare_variants_rows_take_a_variant_of_their_filter_shape_where_the_shape_decides_the_variant():
    from seer.fit.gpu import nearest_modelled

    base = {"op": "conv_bwd_filter", "h_in": 28, "w_in": 28, "stride_h": 1, "stride_w": 1, "pad_h": 0, "pad_w": 0}
    base |= {"dil_h": 1, "dil_w": 1, "batch": 8, "groups": 1}
    rows = [
        {"c_in": 64, "c_out": 64, "kh": 3, "kw": 3, "key": "gemm"},  # Winograd's 3x3 transform and GEMM
        {"c_in": 512, "c_out": 512, "kh": 5, "kw": 5, "key": "wn_9x9"},  # its 5x5 transform
        {"c_in": 480, "c_out": 512, "kh": 3, "kw": 3, "key": "rare"},  # a rare tile, nearest the 5x5 row
    ]
    g = pd.DataFrame([{**base, **r} for r in rows])
    assert list(nearest_modelled(g, {"gemm", "wn_9x9"}, "conv_bwd_filter")) == ["gemm", "wn_9x9", "gemm"]
    # where the shapes share a variant (the FFT's tiles follow the image), the nearest row of any shape
    shared = pd.concat([g, pd.DataFrame([{**base, **rows[1], "kh": 3, "kw": 3, "c_in": 16, "key": "wn_9x9"}])])
    got = nearest_modelled(shared.reset_index(drop=True), {"gemm", "wn_9x9"}, "conv_bwd_filter")
    assert list(got) == ["gemm", "wn_9x9", "wn_9x9", "wn_9x9"]


@dataclasses.dataclass(frozen=True)
class _Flat:
    """A stand-in variant model: one time everywhere (with_local reads predict and sets local)."""

    ms: float
    local: object = None

    def predict(self, g: pd.DataFrame) -> np.ndarray:
        return np.full(len(g), self.ms)


def test_a_thin_variants_rows_correct_the_law_of_the_variant_that_times_them():
    """A variant too few rows modelled is timed by its nearest modelled variant's law; its rows
    join that variant's correction (seer.models.local), so a configuration among them is timed
    nearer what ran there, and one among the variant's own rows as before."""
    from seer.data.configs import log_config
    from seer.fit.gpu import chooser_keys, with_local

    base = {"op": "conv_fwd", "algo": "FFT", "split": "train", "h_in": 28, "w_in": 28, "stride_h": 1, "stride_w": 1}
    base |= {"pad_h": 0, "pad_w": 0, "dil_h": 1, "dil_w": 1, "batch": 8, "kh": 3, "kw": 3, "groups": 1}
    own = [{"c_in": c, "c_out": k, "key": "a", "time_ms": 1.0} for c in (16, 32, 64, 128) for k in (16, 32, 64, 128)]
    thin = [{"c_in": c, "c_out": 1024, "key": "thin", "time_ms": 3.0} for c in (512, 724, 1024, 1448, 2048)]
    train = pd.DataFrame([{**base, **r} for r in own + thin])
    target = train["time_ms"].to_numpy()
    models, chosen = with_local(train, target, {"a": _Flat(1.0)}, chooser_keys(train, {"a"}))
    assert chosen["conv_fwd"].lent == 5 and chosen["conv_fwd"].rows == 21
    factor = models["a"].local.factor(log_config(train, "conv_fwd"))
    assert (factor[16:] > 2).all() and np.allclose(factor[:16], 1)
    assert "5 of them a thin variant's" in chosen["conv_fwd"].describe()


def test_a_kernel_whose_every_tile_is_too_rare_is_modelled_across_its_tiles_where_nothing_predicts_it_better():
    from synthetic import conv_records

    from seer.fit.gpu import tile_pools

    def with_tiles(rec, algo, kernels, rows, scale):
        """`rows` calls of `algo` given `kernels` (one kernel at several tiles, too few rows
        each for a model) and `scale` x their time; the algorithm's other calls as they were."""
        mine = rec[rec["algo"] == algo].head(rows)
        mine = mine.assign(
            kernel=[kernels[i % len(kernels)] for i in range(len(mine))], kernels="", time_ms=mine["time_ms"] * scale
        )
        rest = rec.drop(index=mine.index)
        return pd.concat([rest, mine], ignore_index=True).assign(call_id=lambda d: np.arange(len(d)))

    rec = conv_records(200, seed=5)
    tiles = [f"volta_scudnn_{t}_relu_small_nn_v1" for t in ("256x64", "128x32", "64x64", "128x128")]
    # IMPLICIT_GEMM's own kernel predicts the tiles' calls 5x their time: worse than no answer
    doc = fit_gpu(with_tiles(rec, "IMPLICIT_GEMM", tiles, 40, 0.2), gpus.lookup("t4"), drift=False)
    assert "conv_fwd:IMPLICIT_GEMM:scudnn" in doc["variants"]  # no tile had 12 rows; all four had 40
    assert not [k for k in doc["too_few_rows"] if k.startswith("conv_fwd:IMPLICIT_GEMM:")]
    # the same where the algorithm's own kernel predicts them within 100% (1/0.6 their time): not pooled
    doc = fit_gpu(with_tiles(rec, "IMPLICIT_GEMM", tiles, 40, 0.6), gpus.lookup("t4"), drift=False)
    assert "conv_fwd:IMPLICIT_GEMM:scudnn" not in doc["variants"]
    assert len([k for k in doc["too_few_rows"] if k.startswith("conv_fwd:IMPLICIT_GEMM:")]) == 4
    # nor where the algorithm has no other model: it stays without one
    alone = with_tiles(rec[rec["algo"] != "IMPLICIT_GEMM"], "IMPLICIT_PRECOMP_GEMM", tiles, 40, 1.0)
    alone = alone[(alone["algo"] != "IMPLICIT_PRECOMP_GEMM") | alone["kernel"].isin(tiles)]
    doc = fit_gpu(alone, gpus.lookup("t4"), drift=False)
    assert not [k for k in doc["variants"] if k.startswith("conv_fwd:IMPLICIT_PRECOMP_GEMM:")]
    # a kind with a tile of its own model is never pooled; nor are tiles too few together
    keys = pd.DataFrame(
        {
            "op": "conv_fwd",
            "algo": "FFT",
            "kind": ["a"] * 12 + ["a"] * 3 + ["b"] * 5 + ["b"] * 5,
            "key": [f"conv_fwd:FFT:{v}" for v in ["a_1"] * 12 + ["a_2"] * 3 + ["b_1"] * 5 + ["b_2"] * 5],
            "split": "train",
        }
    )
    assert tile_pools(keys, min_rows=12).equals(keys["key"])
    assert set(tile_pools(keys, min_rows=10)[15:]) == {"conv_fwd:FFT:b"}


def test_grouped_calls_too_few_to_model_that_loop_are_timed_as_loops_of_their_variants_model():
    # 8 grouped IMPLICIT_PRECOMP_GEMM calls, each launching its kernel once per group (as cuDNN 9
    # runs it): too few for a per-group model, so joined to the variant's ungrouped calls; timed
    # as that model's whole call they come out about G times short, as G of its one-group calls right
    from synthetic import CONV, SMS, conv_records

    rec = conv_records(300, seed=6)
    ipg = rec[rec["algo"] == "IMPLICIT_PRECOMP_GEMM"]
    g = ipg.head(8).copy()
    G = 8
    g = g.assign(groups=G, c_in=(g["c_in"] // G + 1) * G, c_out=(g["c_out"] // G + 1) * G, launches=G)
    _, tm, tn, bps, a, b, c = CONV["IMPLICIT_PRECOMP_GEMM"]
    P, Q = records.conv_output_hw(g)
    gx, gy = np.ceil(g["batch"] * P * Q / tm), np.ceil(g["c_out"] / G / tn)
    one = np.ceil(gx * gy / (bps * SMS)) * (a * g["c_in"] / G * g["kh"] * g["kw"] + b) + c
    g = g.assign(grid_x=gx, grid_y=gy, grid_z=1, time_ms=G * one)
    both = pd.concat([rec, g], ignore_index=True).assign(call_id=lambda d: np.arange(len(d)))
    doc = fit_gpu(both, gpus.lookup("t4"), drift=False)
    looped = [
        k for k in doc["variants"] if k.startswith("conv_fwd:IMPLICIT_PRECOMP_GEMM:") and k.endswith("/per_group")
    ]
    assert len(looped) == 1
    whole = doc["variants"][looped[0].removesuffix("/per_group")]
    assert doc["variants"][looped[0]]["compute"] == whole["compute"]  # the same model, run once per group
    assert doc["variants"][looped[0]]["cv_rmspe"] < 0.2
    f = from_doc({**doc, "gpu": vars(gpus.lookup("t4"))}, path=None)
    got = f.predict(g.assign(op="conv_fwd"), variant=np.full(len(g), looped[0]))
    assert np.allclose(got.to_numpy() / g["time_ms"].to_numpy(), 1, atol=0.25)


def _tiles_and_splits(n: int = 240) -> pd.DataFrame:
    """Every config timed with cuBLASLt algorithm lt:5 three ways: its 128x64 tile (tile id 18)
    undivided and with the reduction split into 4 slices (grid_z = batch x 4, each block a
    quarter of k, plus a reduction of the slices), and its 64x64 tile (15), 3x slower."""
    base = gemm_records(n, seed=5, op="gemm")
    W = lambda d: np.ceil(d["grid_x"] * d["grid_y"] * d["grid_z"] / (2 * 40))  # noqa: E731 (the records' SMS)
    whole = base.assign(lt_tile=18, lt_splitk=1)
    split = base.assign(lt_tile=18, lt_splitk=4, grid_z=base["batch"] * 4)
    split = split.assign(time_ms=W(split) * (2e-4 * split["k"] / 4 + 2e-3) + 0.01 + 1e-5 * split["m"] * split["n"] / 256)
    small = base.assign(lt_tile=15, lt_splitk=1, kernel="volta_sgemm_64x64_nn", time_ms=base["time_ms"] * 3)
    rec = pd.concat([whole, split, small], ignore_index=True)
    rec = rec.assign(algo="lt:5", trans="nn", call_id=np.arange(len(rec)), heuristic_rank=0)
    return records.validate(rec)


def test_a_gemm_that_gives_its_cublaslt_configuration_is_timed_as_that_configuration():
    """The tile names the kernel and the split-K count its slices (seer.models.lt_config): from
    the sizes alone one shape has three times, and the fits answered one of them."""
    rec = _tiles_and_splits()
    doc = fit_gpu(rec, gpus.lookup("t4"))
    assert {(e["tile"], e["trans"]) for e in doc["gemm_tiles"]["gemm:lt:5"]} == {(18, "nn"), (15, "nn")}
    f = from_doc({**doc, "gpu": vars(gpus.lookup("t4"))}, path=None)
    index = ["batch", "m", "n", "k"]
    shapes = rec.drop_duplicates(index).head(40)
    got = {}
    for tile, splitk in ((18, 1), (18, 4), (15, 1)):
        mine = rec[(rec["lt_tile"] == tile) & (rec["lt_splitk"] == splitk)].set_index(index)
        measured = mine.loc[shapes.set_index(index).index, "time_ms"].to_numpy()
        cfg = shapes[["op", *index, "trans"]].assign(algo="lt:5", lt_tile=tile, lt_splitk=splitk)
        named = f.predict_frame(cfg)
        assert (named["kernel"].str.contains("64x64") == (tile == 15)).all()
        # the named kernel's model, its slices given: as measured (the call-level estimate the
        # time joins reads the shape's calls of every configuration alike)
        model = f.predict(cfg, variant=named["kernel"].to_numpy())
        assert np.median(np.abs(model / measured - 1)) < 0.05, (tile, splitk)
        got[tile, splitk] = named["time_ms"].to_numpy()
    assert np.median(got[15, 1] / got[18, 1]) > 1.5  # sqrt(3) after the join: not one answer for both


def test_a_smooth_miss_of_the_law_is_corrected_by_the_training_rows_nearby():
    """A time the law cannot express (a factor that swings with log2 k) is learnt from the
    variant's training rows near each configuration (seer.models.local); held-out rows come
    closer, and without FitOptions.local the fits hold no correction."""
    rec = gemm_records(900, seed=7, op="bmm", noise=0.01)
    rec = rec.assign(time_ms=rec["time_ms"] * np.exp(0.3 * np.sin(np.log2(rec["k"]) * 1.5)))
    spec = gpus.lookup("t4")
    held = prepare(rec)
    test = held[held["split"] == "test"]
    errs = {}
    for on in (True, False):
        doc = fit_gpu(rec, spec, options=dataclasses.replace(DEFAULT, local=on))
        assert ("local" in doc) == on
        assert any("local" in v for v in doc["variants"].values()) == on
        f = from_doc({**doc, "gpu": vars(spec)}, path=None)
        errs[on] = np.sqrt(np.mean((f.predict(test) / test["time_ms"].to_numpy() - 1) ** 2))
    choice = fit_gpu(rec, spec)["local"]["bmm"]
    assert choice["loo_rmspe"] < 0.7 * choice["law_rmspe"] and choice["length"] > 0
    assert errs[True] < 0.7 * errs[False]
