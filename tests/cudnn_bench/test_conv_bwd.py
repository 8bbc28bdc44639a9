"""The convolution gradients (backward-data, backward-filter): configurations named apart from
the forward, every algorithm of each direction timed through cuDNN's backward calls, stored and
read like the forward, measured again in the calls that were wrong, fitted per kernel variant
from their grid and scored on Test-set-II's layers."""
from __future__ import annotations

import collections
import json
from dataclasses import replace

import pandas as pd
import pytest
from fakes import fake_env

import seer
from cudnn_bench import collect as K
from cudnn_bench import suites as S
from cudnn_bench.configs import ConvConfig, config_from_key
from cudnn_bench.cost import CostModel
from cudnn_bench.plan import Budget, make_plan
from cudnn_bench.redo import unsplit
from cudnn_bench.suites import BWD_TEST_SET_II_BATCHES, RUN_ORDER, SUITES, conv_bwd, conv_bwd_grid
from seer.data import records
from seer.data.prepare import training_records
from seer.data.variants import CONV_BWD_DATA_ALGOS, CONV_BWD_FILTER_ALGOS
from seer.evaluate import __main__ as evaluate_cli
from seer.fit import __main__ as fit_cli
from seer.fit.gpu import fit_gpu
from seer.hardware import gpus

LAYER = ConvConfig(32, 64, 28, 28, 128, 3, 3, 1, 1, 1, 1)


def test_a_gradient_is_its_own_configuration_with_the_forwards_shape():
    data, filt = replace(LAYER, op="conv_bwd_data"), replace(LAYER, op="conv_bwd_filter")
    assert len({LAYER.key(), data.key(), filt.key()}) == 3 and data.key().startswith("conv_bwd_data:n32:")
    assert config_from_key(filt.key()) == filt and config_from_key(LAYER.key()) == LAYER
    assert data.flops() == LAYER.flops() and data.tensor_bytes() == LAYER.tensor_bytes()
    assert data.fields()["op"] == "conv_bwd_data" and data.valid and not replace(LAYER, op="conv_bwd").valid


def test_the_suites_hold_both_gradients_of_test_set_ii_and_of_conv_grids_core():
    want = {c.key() for c in S.test_set_ii(BWD_TEST_SET_II_BATCHES)}
    grid = {c.key() for c in S.conv_grid() if S.conv_grid_tier(c) == 0}
    for cfgs, layers in ((conv_bwd(), want), (conv_bwd_grid(), grid)):
        assert len(cfgs) == len({c.key() for c in cfgs})
        assert {replace(c, op="conv_fwd").key() for c in cfgs} == layers
        assert collections.Counter(c.op for c in cfgs) == {"conv_bwd_data": len(layers), "conv_bwd_filter": len(layers)}
    cost = CostModel.for_gpu(gpus.lookup("h100-sxm"))
    head = make_plan(["conv_bwd"], ["fma"], Budget(), cost).items[:10]  # both directions from the start
    assert {i.config.op for i in head} == {"conv_bwd_data", "conv_bwd_filter"}
    assert SUITES["conv_bwd"].op == SUITES["conv_bwd_grid"].op == "conv_bwd"
    assert RUN_ORDER.index("conv_bwd_grid") > RUN_ORDER.index("conv_grid")  # the forward's grid first


def test_a_gradient_costs_every_algorithm_of_its_direction():
    cost = CostModel.for_gpu(gpus.lookup("h100-sxm"))
    data, filt = replace(LAYER, op="conv_bwd_data"), replace(LAYER, op="conv_bwd_filter")
    assert not cost.supported(filt, "WINOGRAD") and cost.supported(data, "ALGO_0")
    assert not cost.supported(replace(data, stride_h=2, stride_w=2), "FFT_TILING")
    factor = cost.bwd_factor["conv_bwd_data"]
    assert cost.algo_s(data, "FFT") == pytest.approx(factor * (cost.algo_s(LAYER, "FFT") - 39e-6) + 39e-6)
    one = cost.config_s(filt, algos=["ALGO_1"])
    assert cost.config_s(filt) > one > cost.conv_overhead_s


def _collect(tmp_path, env, limit: int):
    opts = K.Options(out=tmp_path, suites=["conv_bwd"], limit=limit, budget=Budget(), progress=False,
                     timing=K.TimingOptions(warmup=1, reps=3, min_reps=1))
    return K.run(opts, env, log=lambda s: None)


def test_the_harness_times_every_algorithm_of_both_gradients_and_seer_reads_them(tmp_path):
    env = fake_env()
    run = _collect(tmp_path, env, limit=12)
    assert run.measured == 12
    rec = records.read_csv(run.folder / "conv_bwd.csv")  # validated: ops and their algorithm names
    assert set(rec["op"]) == {"conv_bwd_data", "conv_bwd_filter"}
    for op, algos in (("conv_bwd_data", CONV_BWD_DATA_ALGOS), ("conv_bwd_filter", CONV_BWD_FILTER_ALGOS)):
        calls = rec[rec["op"] == op].drop_duplicates("call_id")
        per = calls.groupby("config_key")["algo"].agg(set)
        assert (per == set(algos.values())).all()  # every algorithm of the direction, once
        ok = calls[calls["status"] == "ok"]
        assert not ok.empty and (ok["time_ms"] > 0).all() and ok["heuristic_rank"].notna().all()
    filt = rec[rec["op"] == "conv_bwd_filter"]
    assert (filt.loc[filt["algo"] == "WINOGRAD", "status"] == "not_supported").all()
    names = rec.loc[rec["status"] == "ok", "kernel"].astype(str)
    assert names.str.contains("dgrad").any() and names.str.contains("wgrad").any()
    # each direction called cuDNN's own function, never the forward
    lib = env.dnn.lib
    assert lib.named("cudnnConvolutionBackwardData") and lib.named("cudnnConvolutionBackwardFilter")
    assert not lib.named("cudnnConvolutionForward")


def test_the_gradients_are_fitted_from_their_grid_and_scored_on_test_set_iis_layers(tmp_path, capsys):
    """conv_bwd_grid trains per-variant models of each direction; conv_bwd (Test-set-II's layers)
    is held out like Test-set-II, and --set II scores each direction's picks beside the forward."""
    opts = K.Options(out=tmp_path / "data", suites=["test_set_ii", "conv_bwd", "conv_bwd_grid"], limit=80,
                     budget=Budget(), progress=False, timing=K.TimingOptions(warmup=1, reps=3, min_reps=1))
    folder = K.run(opts, fake_env(), log=lambda s: None).folder
    rec = records.load(folder)
    assert {"conv_fwd", "conv_bwd_data", "conv_bwd_filter"} <= set(rec["op"])
    train = training_records(rec)
    assert set(train["suite"]) == {"conv_bwd_grid"}  # Test-set-II and its gradients held out
    fits = fit_gpu(train, gpus.lookup("h100-sxm"))
    fitted = {k.split(":")[0] for k in fits["choosers"]}
    assert fitted == {"conv_bwd_data", "conv_bwd_filter"}, fitted
    assert fit_cli.main(["--data", str(folder), "--out", str(tmp_path / "fits"), "--quiet"]) == 0
    out_json = tmp_path / "set2.json"
    args = ["--set", "II", "--data", str(folder), "--fits", str(tmp_path / "fits"), "--out", str(out_json)]
    assert evaluate_cli.main(args) == 0
    out = capsys.readouterr().out
    assert "backward-data gradients (conv_bwd)" in out and "backward-filter gradients (conv_bwd)" in out
    assert "have no models of conv_bwd" not in out  # the gradients' picks are the model's
    assert "have no models of conv_fwd" in out  # the forward's grid was not measured here
    payload = json.loads(out_json.read_text())
    for op in ("conv_bwd_data", "conv_bwd_filter"):
        part = payload["gradients"][op]
        assert part["overall"]["model"]["n"] > 0 and part["model_fallback"] < part["overall"]["model"]["n"]
    h = seer.load(tmp_path / "fits" / "h100-sxm.json")
    ranked = h.rank_algorithms(op="conv_bwd_filter", batch=32, c_in=64, h_in=28, w_in=28, c_out=128, kh=3, kw=3)
    assert set(ranked["algo"]) <= set(CONV_BWD_FILTER_ALGOS.values()) and ranked["rank"].min() == 1


def test_a_gradients_wrong_calls_are_measured_again_alone(tmp_path):
    run = _collect(tmp_path, fake_env(), limit=4)
    raw = pd.read_csv(run.folder / "conv_bwd.csv", dtype=str, keep_default_na=False)
    assert unsplit(raw) == {}
    # a gradient's call flagged for a redo names its own algorithms
    ok = raw[(raw["status"] == "ok") & (raw["op"] == "conv_bwd_filter")]
    one = ok[ok["call_id"] == ok["call_id"].iloc[0]].copy()
    one["kernel"] = ""
    rows = pd.concat([raw[~raw.index.isin(one.index)], one])
    key = next(iter(unsplit(rows)))
    assert unsplit(rows)[key] == frozenset({one["algo"].iloc[0]})


def test_a_gradients_call_with_a_host_gap_keeps_its_event_time_and_is_measured_again(tmp_path):
    """The span replaces the event time only where the main kernel covers the written tensor,
    which the geometry tells for the forward's GEMM-like algorithms alone."""
    run = _collect(tmp_path, fake_env(host_gap_ms=0.5), limit=2)
    rec = records.read_csv(run.folder / "conv_bwd.csv")
    ok = rec[rec["status"] == "ok"]
    # short calls: the gap exceeds the slack; long ones keep their span
    assert set(ok["time_basis"]) == {"span", "unverified"}
    wrong = ok[ok["time_basis"] == "unverified"].groupby("config_key")["algo"].agg(frozenset).to_dict()
    raw = pd.read_csv(run.folder / "conv_bwd.csv", dtype=str, keep_default_na=False)
    assert {k[1]: v for k, v in unsplit(raw).items()} == wrong
