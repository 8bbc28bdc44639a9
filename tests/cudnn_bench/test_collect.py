"""The collection loop on a simulated GPU: what the records hold for every kind of outcome."""
from __future__ import annotations

import ctypes
import errno
import math
import os

import pandas as pd
import pytest
from fakes import fake_env

from cudnn_bench import collect as K
from cudnn_bench import suites as S
from cudnn_bench.configs import ConvConfig, GemmConfig
from cudnn_bench.plan import Budget, Plan, PlanItem
from seer.data import records
from seer.data.variants import CONV_ALGOS
from seer.hardware import occupancy

CFG = ConvConfig(32, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, name="layer")


def _opts(**kw):
    base = dict(progress=False, timing=K.TimingOptions(warmup=1, reps=4, min_reps=2))
    base.update(kw)
    return K.Options(**base)


def _measure(cfg=CFG, math_mode="fma", env=None, **kw):
    env = env or fake_env()
    rows = K.measure(env, PlanItem("test_set_ii", cfg, math_mode, 0.5), _opts(**kw))
    return pd.DataFrame(rows), env


def test_conv_rows_per_kernel_validate_and_carry_everything():
    df, env = _measure()
    rec = records.validate(df.copy())
    assert set(rec["algo"]) == set(CONV_ALGOS.values())
    ok = rec[rec["status"] == "ok"]
    # one row per kernel launch, exactly one main kernel per call, and the call's time on every row
    assert (ok.groupby("call_id")["role"].apply(lambda r: (r == "main").sum()) == 1).all()
    assert (ok.groupby("call_id")["time_ms"].nunique() == 1).all()
    prec = ok[ok["algo"] == "IMPLICIT_PRECOMP_GEMM"]
    assert list(prec["role"]) == ["pre", "main"] and list(prec["kernel_index"]) == [0, 1]
    assert prec["kernels"].iloc[0].count(";") == 1
    sums = ok.groupby("call_id").agg(k=("kernel_time_ms", "sum"), t=("time_ms", "first"))
    assert (sums["k"] <= sums["t"] * 1.001).all()
    # occupancy of the traced launch (256 threads, 96 regs, 16 KiB dynamic smem on sm_90)
    bps = int(occupancy.blocks_per_sm("9.0", 256, 96, 16384))
    assert (ok["blocks_per_sm"] == bps).all() and (ok["b_max"] == bps * 132).all()
    assert (ok["waves"] == [math.ceil(b / (bps * 132)) for b in ok["blocks"]]).all()
    # versions, clock, variant family, heuristic
    assert set(ok["cudnn_version"]) == {"9.28.0"} and (ok["sm_clock_mhz"] == 1755.0).all()
    assert set(rec["math"]) == {"fma"} and set(rec["dtype"]) == {"float32"} and set(rec["layer"]) == {"layer"}
    ranks = rec.drop_duplicates("call_id")["heuristic_rank"]
    assert sorted(ranks) == list(range(8))
    pick = rec.drop_duplicates("call_id").sort_values("heuristic_rank")["algo"].iloc[0]
    assert set(rec["heuristic_pick"]) == {pick}


def test_unsupported_failed_and_too_large_are_statuses():
    df, _ = _measure(ConvConfig(8, 16, 20, 20, 16, 5, 5, 2, 2), workspace_limit=1 << 20)
    st = df.drop_duplicates("call_id").set_index("algo")["status"]
    assert st["DIRECT"] == "not_supported" and st["FFT"] == "not_supported"  # stride 2
    assert st["GEMM"] == "workspace_too_large"  # im2col needs more than 1 MiB here
    assert st["IMPLICIT_GEMM"] == "ok"
    msg = df.set_index("algo").loc["DIRECT", "message"]
    assert "CUDNN_STATUS_NOT_SUPPORTED (3000)" in msg
    df, _ = _measure(env=fake_env(fail={0: 5000, 1: 4004}))
    st = df.drop_duplicates("call_id").set_index("algo")
    assert st.loc["IMPLICIT_GEMM", "status"] == "failed" and "injected failure" in st.loc["IMPLICIT_GEMM", "message"]
    assert st.loc["IMPLICIT_PRECOMP_GEMM", "status"] == "out_of_memory"
    assert st.loc["GEMM", "status"] == "ok"


def test_out_of_device_memory_for_the_tensors():
    df, _ = _measure(ConvConfig(128, 512, 224, 224, 512, 3, 3), env=fake_env(mem_bytes=1 << 30))
    assert set(df["status"]) == {"out_of_memory"} and len(df) == 8


def test_without_a_tracer_each_call_is_one_row():
    df, _ = _measure(env=fake_env(tracer=False))
    ok = records.conform(df)
    ok = ok[ok["status"] == "ok"]
    assert ok.groupby("call_id").size().max() == 1 and (ok["kernel"].fillna("") == "").all()
    assert ok["time_ms"].notna().all()


def test_half_precision_is_its_own_family():
    env = fake_env()
    df, _ = _measure(math_mode="fp16", env=env)
    assert set(df["math"]) == {"fp16"} and set(df["dtype"]) == {"float16"}
    calls = env.dnn.lib.named("cudnnSetTensor4dDescriptor")
    assert {c[2] for c in calls} == {2}  # CUDNN_DATA_HALF


def test_gemm_rows():
    env = fake_env(n_algos=3)
    rows = K.measure(env, PlanItem("gemm_grid", GemmConfig(2, 512, 256, 128, "nn"), "fma", 0.1), _opts())
    df = records.validate(pd.DataFrame(rows))
    assert list(df["algo"]) == ["lt:20", "lt:21", "lt:22"] and list(df["heuristic_rank"]) == [0, 1, 2]
    assert set(df["heuristic_pick"]) == {"lt:20"} and list(df["lt_tile"]) == [10, 11, 12]
    assert list(df["workspace_bytes"]) == [0, 1 << 20, 0] and (df["status"] == "ok").all()
    assert df["call_key"].nunique() == 3 and df["kernel"].str.startswith("nvjet").all()
    (mm, *_) = env.lt.lib.named("cublasLtMatmul")
    assert mm[-1] == env.stream


def test_call_ids_are_stable_across_runs():
    a, _ = _measure()
    b, _ = _measure()
    assert list(a["call_id"]) == list(b["call_id"]) and a["call_id"].nunique() == 8


def test_time_budget_stops_the_run_and_a_rerun_continues(tmp_path, monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(K.time, "monotonic", lambda: clock["t"])
    real = K.measure

    def slow(env, item, opts):
        clock["t"] += 10.0  # every configuration takes 10 s of wall time
        return real(env, item, opts)

    monkeypatch.setattr(K, "measure", slow)
    opts = _opts(out=tmp_path, suites=["gemm_layers"], budget=Budget(seconds=35), limit=20)
    monkeypatch.setattr(K, "plan_for", lambda o, **kw: Plan(
        [PlanItem("gemm_layers", c, "fma", 1.0) for c in S.gemm_layers()[:8]], {}, {"gemm_layers": 8}))
    res = K.run(opts, fake_env())
    assert res.measured == 4 and res.left == 4  # the 5th starts after the deadline
    res = K.run(opts, fake_env())
    assert res.skipped == 4 and res.measured == 4 and res.left == 0


def test_stop_after_limits_one_invocation(tmp_path, monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(K.time, "monotonic", lambda: clock["t"])
    real = K.measure

    def slow(env, item, opts):
        clock["t"] += 10.0
        return real(env, item, opts)

    monkeypatch.setattr(K, "measure", slow)
    opts = _opts(out=tmp_path, suites=["gemm_layers"], budget=Budget(count=5), stop_after=15.0)
    res = K.run(opts, fake_env(), log=lambda s: None)
    assert (res.measured, res.left) == (2, 3)
    res = K.run(_opts(out=tmp_path, suites=["gemm_layers"], budget=Budget(count=5)), fake_env(), log=lambda s: None)
    assert (res.skipped, res.measured) == (2, 3)


def test_stop_after_counts_the_start_up_and_leaves_what_would_not_end_in_time(tmp_path, monkeypatch):
    clock = {"t": 0.0}
    monkeypatch.setattr(K.time, "monotonic", lambda: clock["t"])
    real = K.measure

    def as_estimated(env, item, opts):  # each configuration takes what the cost model says
        clock["t"] += item.est_s
        return real(env, item, opts)

    monkeypatch.setattr(K, "measure", as_estimated)
    cfgs = S.gemm_layers()[:4]
    monkeypatch.setattr(K, "plan_for", lambda o, **kw: Plan(
        [PlanItem("gemm_layers", c, "fma", e) for c, e in zip(cfgs, (10.0, 20.0, 5.0, 5.0))], {}, {"gemm_layers": 4}))
    # 10 s of start-up spent of 35: the 20 s one would end at 30, past 25; the two 5 s ones fit after it
    opts = _opts(out=tmp_path, suites=["gemm_layers"], budget=Budget(count=4), stop_after=35.0, started=-10.0)
    res = K.run(opts, fake_env(), log=lambda s: None)
    assert (res.measured, res.left) == (3, 1)
    got = set(pd.read_csv(res.folder / "gemm_layers.csv")["config_key"])
    assert got == {cfgs[0].key(), cfgs[2].key(), cfgs[3].key()}


def _disk_full(*args, **kw):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_stops_collect_in_one_sentence_and_a_rerun_resumes(tmp_path, monkeypatch):
    from cudnn_bench.errors import DiskFull
    from cudnn_bench.store import Store

    real, appends = Store.append, []

    def filling(self, rows):  # the disk fills during the 4th configuration's write
        appends.append(rows)
        if len(appends) == 4:
            monkeypatch.setattr(os, "fsync", _disk_full)
        real(self, rows)

    monkeypatch.setattr(Store, "append", filling)
    opts = _opts(out=tmp_path, suites=["test_set_ii"], budget=Budget(count=6), counters="none")
    with pytest.raises(DiskFull) as info:
        K.run(opts, fake_env(), log=lambda s: None)
    rows = sum(len(r) for r in appends[:3])
    msg = str(info.value)
    assert "\n" not in msg and f"3 configurations ({rows} rows)" in msg and "rerun the same command to resume" in msg
    monkeypatch.undo()
    res = K.run(opts, fake_env(), log=lambda s: None)
    assert res.skipped >= 3 and res.skipped + res.measured == 6 and res.left == 0
    df = records.read_csv(res.folder / "test_set_ii.csv")
    assert df["config_key"].nunique() == 6 and not df.duplicated(["call_key", "kernel_index"]).any()


def test_progress_line():
    import io

    p = K.Progress(4, est_total=40.0, deadline=None, stream=io.StringIO())
    p.update(10.0, 20.0)
    assert p.eta() == pytest.approx(60.0)  # 30 s of estimate left, running 2x slower
    assert "1/4" in p.line() and "ETA" in p.line()


@pytest.mark.gpu
def test_smoke_collection_on_a_real_gpu(tmp_path):
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        pytest.skip("no NVIDIA driver here")
    opts = _opts(out=tmp_path, suites=["test_set_ii", "gemm_layers"], budget=Budget(count=4), counters="none")
    res = K.collect(opts)
    for f in res.folder.glob("*.csv"):
        df = records.read_csv(f)
        assert (df["status"] == "ok").any()


def test_device_json_keeps_a_version_only_an_earlier_run_read():
    """A convolution-only run opens no cuBLASLt and reads no version of it: device.json keeps the
    one an earlier run recorded for the same file, but never for another file, and never over a
    version this run read."""
    lt, lt2 = "/w/libcublasLt.so.13", "/other/libcublasLt.so.13"
    old = {"libraries": {"cublaslt": {"path": lt, "version": "13.1.0"}, "cudnn": {"path": "/w/cudnn", "version": "9.1"}},
           "versions": {"cublas_version": "13.1.0", "cudnn_version": "9.1", "driver_version": "580"}}
    libs_now = {"cublaslt": {"path": lt, "version": ""}, "cudnn": {"path": "/w/cudnn", "version": "9.19.0"}}
    libraries, versions = K.known_versions(old, libs_now, {"cublas_version": "", "cudnn_version": "9.19.0",
                                                             "driver_version": ""})
    assert libraries["cublaslt"]["version"] == "13.1.0" and versions["cublas_version"] == "13.1.0"
    assert libraries["cudnn"]["version"] == versions["cudnn_version"] == "9.19.0"  # this run's wins
    assert versions["driver_version"] == ""  # no library file vouches for it
    moved = {**libs_now, "cublaslt": {"path": lt2, "version": ""}}
    libraries, versions = K.known_versions(old, moved, {"cublas_version": ""})
    assert libraries["cublaslt"]["version"] == versions["cublas_version"] == ""
    assert K.known_versions({}, libs_now, {"cublas_version": ""}) == (libs_now, {"cublas_version": ""})
