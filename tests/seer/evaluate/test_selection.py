import json

import numpy as np
import pandas as pd
import pytest
from synthetic import conv_records

from seer.data import records
from seer.errors import SeerError
from seer.evaluate import __main__ as evaluate_cli
from seer.evaluate import selection
from seer.fit import __main__ as fit_cli


def test_selection_metrics_by_hand():
    nan = np.nan
    meas = np.array([[1.0, 2.0, nan], [3.0, 1.0, 1.04], [2.0, 2.0, 1.0], [1.0, 1.09, 5.0]])
    m = selection.selection_metrics(meas, np.array([0, 2, 0, 1]))
    assert m["n"] == 4
    assert m["top1"] == 0.25
    assert m["within_5pct"] == 0.5 and m["within_10pct"] == 0.75
    assert m["slowdown_mean"] == pytest.approx((0 + 0.04 + 1.0 + 0.09) / 4)
    assert m["slowdown_max"] == pytest.approx(1.0)
    assert m["total_time_ratio"] == pytest.approx((1 + 1.04 + 2 + 1.09) / 4)
    with pytest.raises(SeerError):
        selection.selection_metrics(meas, np.array([2, 0, 0, 0]))  # picks an unmeasured algo


def test_the_heuristic_pick_stands_where_the_model_has_no_time_for_it():
    """The filter gradient's Winograd calls too few to model: where cuDNN's heuristic ranks that
    algorithm first, the model cannot weigh it, and its pick is the heuristic's."""
    algos = selection.op_algos("conv_bwd_filter")
    a0, a1, wn = (algos.index(a) for a in ("ALGO_0", "ALGO_1", "WINOGRAD_NONFUSED"))

    class Fits:  # models of ALGO_0 and ALGO_1 only, ALGO_0 predicted the faster
        def algorithms_of(self, op):
            return ["ALGO_0", "ALGO_1"]

        def rank_algorithms(self, df):
            n = len(df)
            return pd.DataFrame(
                {"algo": ["ALGO_0", "ALGO_1"] * n, "time_ms": [1.0, 2.0] * n, "rank": [1, 2] * n, "fitted_range": True}
            )

    meas = np.full((3, len(algos)), np.nan)
    meas[:, [a0, a1, wn]] = [[1.0, 2.0, 0.5], [1.0, 2.0, 0.5], [1.0, 2.0, np.nan]]
    rank = np.full((3, len(algos)), np.nan)
    rank[:, [a0, a1, wn]] = [[2, 1, 0], [1, 2, 3], [1, 0, np.nan]]  # the heuristic: WN, ALGO_0, ALGO_1
    table = pd.concat(
        [
            pd.DataFrame({"gpu": "g", "math": "fma"}, index=range(3)),
            pd.DataFrame(meas, columns=[f"t:{a}" for a in algos]),
            pd.DataFrame(rank, columns=[f"rank:{a}" for a in algos]),
        ],
        axis=1,
    )
    table.attrs["op"] = "conv_bwd_filter"
    pk, pred = selection.picks(table, {"g": Fits()})
    assert list(pk["cudnn_heuristic"]) == [wn, a0, a1]
    assert list(pk["model"]) == [wn, a0, a0] and list(pk["model_fallback"]) == [True, False, False]
    assert np.isnan(pred[:, wn]).all()
    heur = pk["cudnn_heuristic"].to_numpy()
    assert list(selection.unmodelled_first(pred, heur, np.array([False, False, True]))) == [True, False, False]


def test_each_method_gets_a_line_of_its_picks_figures():
    algos = selection.op_algos("conv_bwd_filter")  # a gradient's columns, not the forward's
    meas = np.full((2, len(algos)), np.nan)
    meas[:, 0], meas[:, 1] = [1.0, 4.0], [2.0, 1.0]
    table = pd.DataFrame(meas, columns=[f"t:{a}" for a in algos])
    pk = pd.DataFrame({"model": [0, 1], "cudnn_heuristic": [1, 1], "fixed_default": [0, 0]})
    lines = selection.method_lines(table, pk, "conv_bwd_filter", indent="> ")
    assert [line.split()[1] for line in lines] == list(selection.METHODS)
    assert "top-1 100.0%" in lines[0] and "total time 1.000x" in lines[0]
    assert "top-1 50.0%" in lines[1] and "mean slowdown 50.0%" in lines[1] and lines[2].startswith("> fixed_default")


def test_workspace_limit_excludes_for_everyone():
    rec = conv_records(60, seed=4, suite="test_set_ii")
    full = selection.measured_table(rec)
    limited = selection.measured_table(rec, workspace_limit=1e6)
    assert full["t:GEMM"].notna().sum() > limited["t:GEMM"].notna().sum()
    big = rec[(rec["algo"] == "GEMM") & (rec["workspace_bytes"] > 1e6)]
    assert len(big) > 0


@pytest.fixture(scope="module")
def synthetic_fits(tmp_path_factory):
    d = tmp_path_factory.mktemp("syn")
    train = conv_records(400, seed=0)
    records.write_csv(train, d / "train.csv")
    assert fit_cli.main(["--data", str(d / "train.csv"), "--out", str(d / "fits"), "--quiet"]) == 0
    test = conv_records(150, seed=7, suite="test_set_ii")
    records.write_csv(test, d / "test_set_ii.csv")
    return d


def test_set_two_beats_the_heuristic(synthetic_fits, capsys):
    d = synthetic_fits
    out = d / "set2.json"
    rc = evaluate_cli.main(
        [
            "--set",
            "II",
            "--data",
            str(d / "test_set_ii.csv"),
            "--fits",
            str(d / "fits"),
            "--out",
            str(out),
            "--plots",
            str(d / "plots"),
        ]
    )
    assert rc == 0
    r = json.loads(out.read_text())["overall"]
    for m in ("model", "cudnn_heuristic", "fixed_default"):
        assert set(r[m]) == set(selection.SELECTION_KEYS)
    assert r["model"]["top1"] >= 0.85
    assert r["model"]["within_10pct"] > r["cudnn_heuristic"]["within_10pct"]
    assert r["model"]["slowdown_mean"] < r["cudnn_heuristic"]["slowdown_mean"]
    assert (d / "plots" / "set2_slowdown.png").stat().st_size > 1000
    text = capsys.readouterr().out
    assert "Whole-network convolution time" in text and "netB" in text


def test_a_layer_unverified_on_one_gpu_is_still_scored_on_another():
    a = conv_records(30, seed=5, suite="test_set_ii").assign(gpu="Tesla T4", time_basis="span")
    b = a.assign(gpu="Tesla V100-PCIE-32GB")
    first = a["config_key"].iloc[0]
    a.loc[a["config_key"] == first, "time_basis"] = "unverified"
    table = selection.measured_table(pd.concat([a, b], ignore_index=True))
    assert table.attrs["unverified_layers"] == 1
    kept = table.groupby("gpu")["config_key"].apply(set)
    assert first not in kept["Tesla T4"] and first in kept["Tesla V100-PCIE-32GB"]


def test_tensor_core_layers_are_reported_apart_with_the_heuristic_as_the_model(synthetic_fits, tmp_path, capsys):
    """The models learn FMA times only (prepare.TENSOR_MATH): a TF32 layer gets its own report,
    its model column cuDNN's heuristic, and the FMA report stays as it was."""
    d = synthetic_fits
    fma = records.load(d / "test_set_ii.csv")
    tf32 = fma.assign(math="tf32")  # the same layers in TF32, twice as fast
    tf32["time_ms"] = tf32["time_ms"] / 2
    records.write_csv(pd.concat([fma, tf32], ignore_index=True), tmp_path / "test_set_ii.csv")
    out = tmp_path / "set2.json"
    args = ["--set", "II", "--data", str(tmp_path / "test_set_ii.csv"), "--fits", str(d / "fits"), "--out", str(out)]
    assert evaluate_cli.main(args) == 0
    text = capsys.readouterr().out
    assert "Test-set-II in TF32 math (tensor cores)" in text and "models learn FMA (FP32) times only" in text
    r = json.loads(out.read_text())
    alone = tmp_path / "fma.json"
    assert evaluate_cli.main([*args[:3], str(d / "test_set_ii.csv"), *args[4:-1], str(alone)]) == 0
    assert r["overall"]["model"] == json.loads(alone.read_text())["overall"]["model"]
    assert "tensor_math" not in json.loads(alone.read_text())
    part = r["tensor_math"]["conv_fwd_tf32"]
    assert part["model_fallback"] == part["overall"]["model"]["n"] > 0
    assert part["overall"]["model"] == part["overall"]["cudnn_heuristic"]
    table = selection.measured_table(pd.concat([fma, tf32], ignore_index=True))
    assert set(table["math"]) == {"fma", "tf32"} and len(table) == 2 * len(selection.measured_table(fma))


def test_the_floor_filters_by_each_column_a_run_has():
    """A run without a math column is still narrowed to the scored suite (and the reverse)."""
    runs = pd.DataFrame({"suite": ["test_set_ii", "conv_grid"], "math": ["fma", "fma"], "x": [1, 2]})
    assert list(selection._only(runs.drop(columns="math"), suite="test_set_ii", math="fma")["x"]) == [1]
    assert list(selection._only(runs.drop(columns="suite"), suite="test_set_ii", math="fma")["x"]) == [1, 2]
    assert list(selection._only(runs.assign(math=["bf16", "fma"]), suite="test_set_ii", math="fma")["x"]) == []


def test_the_misses_are_the_layers_picked_beyond_ten_percent_worst_first_with_where_they_lie():
    algos = selection.op_algos("conv_bwd_data")
    a0, a1 = algos.index("ALGO_0"), algos.index("ALGO_1")

    class Fits:  # ALGO_1 predicted the faster everywhere; the second layer beyond the data
        def algorithms_of(self, op):
            return ["ALGO_0", "ALGO_1"]

        def rank_algorithms(self, df):
            n = len(df)
            inside = [True, True, False, False, True, True]
            return pd.DataFrame(
                {
                    "algo": ["ALGO_1", "ALGO_0"] * n,
                    "time_ms": [1.0, 2.0] * n,
                    "rank": [1, 2] * n,
                    "fitted_range": inside[: 2 * n],
                }
            )

    meas = np.full((3, len(algos)), np.nan)
    meas[:, [a0, a1]] = [[1.0, 1.05], [1.0, 4.0], [1.0, 1.5]]  # ALGO_1 5%, 300%, 50% slower
    table = pd.concat(
        [
            pd.DataFrame({"gpu": "g", "math": "fma", "layer": ["x", "y", "z"], "batch": 8}, index=range(3)),
            pd.DataFrame(meas, columns=[f"t:{a}" for a in algos]),
            pd.DataFrame(np.ones((3, len(algos))), columns=[f"rank:{a}" for a in algos]),
        ],
        axis=1,
    )
    table.attrs["op"] = "conv_bwd_data"
    pk, pred = selection.picks(table, {"g": Fits()})
    assert list(pk["model_inside"]) == [True, False, True]
    m = selection.misses(table, pk, pred)
    assert list(m["layer"]) == ["y", "z"] and np.allclose(m["slowdown"], [3.0, 0.5])
    assert list(m["pick"]) == ["ALGO_1", "ALGO_1"] and list(m["fastest"]) == ["ALGO_0", "ALGO_0"]
    assert list(m["pick_pred_ms"]) == [1.0, 1.0] and list(m["fastest_ms"]) == [1.0, 1.0]
    assert list(m["beyond_trust"]) == [True, False]
    assert "misses" in selection.selection_tables(table, pk, pred)
