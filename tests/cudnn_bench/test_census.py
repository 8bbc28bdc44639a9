"""The census: cuDNN's kernel choices asked of descriptors, for many configurations, without timing."""

from __future__ import annotations

import pandas as pd
import pytest
from fakes import ALGO_KERNELS, BWD_KERNELS, fake_env

from cudnn_bench import census as C
from cudnn_bench.capture import GraphCapture
from cudnn_bench import suites
from cudnn_bench.export import census_line
from seer.data.records import CONV_OPS
from seer.data.variants import CONV_OP_ALGOS
from seer.hardware.gpus import slug_for

ROWS_PER_CONFIG = sum(len(CONV_OP_ALGOS[op]) for op in CONV_OPS)  # every algorithm of every direction


@pytest.fixture(scope="module")
def design() -> C.Census:
    return C.design(exclude=C.held_out())


def test_the_design_alternates_real_layers_and_points_and_holds_out_test_set_ii(design):
    cfgs = design.configs
    dims = [C.dims_of(c) for c in cfgs]
    assert len(cfgs) > 40_000 and len(set(dims)) == len(dims) and all(c.valid for c in cfgs)
    assert not {C.dims_of(c) for c in suites.test_set_ii()} & set(dims)
    first = [c.name.startswith("sobol.") for c in cfgs[:1000]]
    assert 400 < sum(first) < 600  # a stopped census has asked about both halves alike
    assert {c.batch for c in cfgs[:2000] if not c.name.startswith("sobol.")} >= {1, 8, 32, 128, 256}
    assert C.design(exclude=C.held_out()).configs[:50] == cfgs[:50]  # the same on every run


def test_a_census_answers_every_algorithm_of_every_direction_and_resumes(tmp_path, design):
    env = fake_env(tracer=False)
    assert C.run(env, tmp_path, limit=30, log=lambda s: None) == 30
    folder = tmp_path / slug_for(env.device.name) / "census"
    rows = C.read(folder)
    assert len(rows) == 30 * ROWS_PER_CONFIG and set(rows["op"]) == set(CONV_OPS)
    first = design.configs[0]
    fwd = rows[(rows["op"] == "conv_fwd") & (rows[list(C.DIMS)] == list(C.dims_of(first))).all(axis=1)]
    gemm = fwd.set_index("algo").loc["GEMM"]
    # the fake's GEMM workspace is its im2col buffer: N x C/G x R x S x H x W in FP32
    assert gemm["workspace_bytes"] == first.batch * first.c_in * first.kh * first.kw * first.h_in * first.w_in * 4
    direct = fwd.set_index("algo").loc["DIRECT"]
    assert direct["status"] == "not_supported" and pd.isna(direct["workspace_bytes"])
    assert fwd["heuristic_rank"].notna().all() and sorted(fwd["heuristic_rank"]) == list(range(len(fwd)))
    # a second run asks only about what the first did not
    assert len(design.left(folder)) == len(design.configs) - 30
    assert C.run(env, tmp_path, limit=10, log=lambda s: None) == 10
    rows = C.read(folder)
    assert len(rows) == 40 * ROWS_PER_CONFIG and not rows.duplicated(list(C.DIMS) + ["op", "algo"]).any()
    assert len(list(folder.glob("census-*.csv.gz"))) == 2
    assert census_line(folder).startswith(f"census: 40 configurations asked, {40 * ROWS_PER_CONFIG} calls")


def test_a_census_stops_after_its_time_and_keeps_what_it_asked(tmp_path):
    lines: list[str] = []
    env = fake_env(tracer=False)
    n = C.run(env, tmp_path, stop_after=0.3, log=lines.append)
    assert 0 < n < 47_000 and "--stop-after reached" in "\n".join(lines)
    assert len(C.read(tmp_path / slug_for(env.device.name) / "census")) == n * ROWS_PER_CONFIG


def test_a_configuration_cuDNN_refuses_is_a_status_not_a_stop(tmp_path, monkeypatch):
    env = fake_env(tracer=False)
    real = C.ConvProblem

    def refuse_wide(dnn, **dims):
        if dims["c_in"] >= 512:
            raise C.CudnnError(2000, "CUDNN_STATUS_BAD_PARAM", "tensor too large", "cudnnSetTensor4dDescriptor")
        return real(dnn, **dims)

    monkeypatch.setattr(C, "ConvProblem", refuse_wide)
    assert C.run(env, tmp_path, limit=40, log=lambda s: None) == 40
    rows = C.read(tmp_path / slug_for(env.device.name) / "census")
    wide = rows["c_in"] >= 512
    assert wide.any() and (~wide).any() and len(rows) == 40 * ROWS_PER_CONFIG
    assert (rows.loc[wide, "status"] == "failed").all() and rows.loc[wide, "workspace_bytes"].isna().all()


def test_each_accepted_call_is_captured_with_the_kernels_it_would_launch(tmp_path, design):
    env = fake_env(tracer=False)
    C.run(env, tmp_path, limit=12, log=lambda s: None)
    folder = tmp_path / slug_for(env.device.name) / "census"
    rows = C.read(folder)
    ok = rows["status"] == "ok"
    assert (rows.loc[ok, "capture"] == "ok").all() and rows.loc[~ok, "capture"].isna().all()
    assert env.capture.captured == ok.sum() and rows.loc[~ok, "kernels"].isna().all()
    gemm = rows[(rows["op"] == "conv_fwd") & (rows["algo"] == "GEMM")].iloc[0]
    assert gemm["kernels"] == tuple(name for name, _ in ALGO_KERNELS[2]) and gemm["launches"] == 2
    bwd = rows[(rows["op"] == "conv_bwd_filter") & (rows["algo"] == "ALGO_1")].iloc[0]
    assert bwd["kernels"] == tuple(name for name, _ in BWD_KERNELS[("BackwardFilter", 1)])
    # the names are written once a part, the rows number them
    legend = pd.read_csv(folder / "kernels-000000.csv.gz")
    assert legend["name"].is_unique and set(legend["name"]) == {k for ks in rows["kernels"].dropna() for k in ks}
    assert "calls captured" in census_line(folder)


def test_calls_beyond_the_scratch_memory_or_without_a_capture_keep_their_workspace_rows(tmp_path, monkeypatch):
    env = fake_env(tracer=False)
    monkeypatch.setattr(C, "SCRATCH_SHARE", 1e-9 * 50)  # of the fake's 80 GiB free: about 4 KiB
    C.run(env, tmp_path, limit=5, log=lambda s: None)
    rows = C.read(tmp_path / slug_for(env.device.name) / "census")
    assert set(rows.loc[rows["status"] == "ok", "capture"]) == {"too_large"}
    assert rows["workspace_bytes"].notna().any() and rows["kernels"].isna().all()

    env = fake_env(tracer=False)
    env.capture = None  # a driver that cannot name captured kernels: said once, the workspace rows stand

    def old_driver():
        raise C.BenchError("this CUDA driver cannot name captured kernels")

    monkeypatch.setattr(GraphCapture, "open", staticmethod(old_driver))
    lines: list[str] = []
    C.run(env, tmp_path / "bare", limit=5, log=lines.append)
    rows = C.read(tmp_path / "bare" / slug_for(env.device.name) / "census")
    assert "no captured kernels" in "\n".join(lines) and rows["capture"].isna().all() and len(rows) == 5 * ROWS_PER_CONFIG


def test_a_part_without_captures_reads_with_empty_capture_columns(tmp_path):
    part = tmp_path / "census-000000.csv.gz"
    old = [c for c in C.COLUMNS if c not in ("capture", "launches", "kernels")]
    pd.DataFrame([[1] * 14 + ["conv_fwd", "GEMM", "fma", 0, 1, "ok", "gpu", "9"]], columns=old).to_csv(part, index=False)
    rows = C.read(part)
    assert rows["capture"].isna().all() and rows["launches"].isna().all() and rows["kernels"].isna().all()
    assert rows["workspace_bytes"].iat[0] == 0


def test_a_census_stops_capturing_after_captures_fail_in_a_row(tmp_path, monkeypatch):
    env = fake_env(tracer=False)

    class Invalidated:
        def kernels(self, stream, call):
            raise C.CudaError(901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "", "cuStreamEndCapture")

    env.capture = Invalidated()
    monkeypatch.setattr(C, "GIVE_UP", 30)
    lines: list[str] = []
    C.run(env, tmp_path, limit=6, log=lines.append)
    rows = C.read(tmp_path / slug_for(env.device.name) / "census")
    tried = rows["capture"].notna()
    assert 30 <= tried.sum() < (rows["status"] == "ok").sum()
    assert set(rows.loc[tried, "capture"]) == {"capture_failed CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"}
    assert "30 captures failed in a row" in "\n".join(lines)
