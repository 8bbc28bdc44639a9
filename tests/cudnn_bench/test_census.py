"""The census: cuDNN's kernel choices asked of descriptors, for many configurations, without timing."""

from __future__ import annotations

import pandas as pd
import pytest
from fakes import fake_env

from cudnn_bench import census as C
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
