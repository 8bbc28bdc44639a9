"""Records from the bundled H100 profiler traces (seer.workload.trace_records)."""

from pathlib import Path

import pandas as pd
import pytest

from seer.data import records, variants
from seer.errors import DataError
from seer.fit import __main__ as fit_cli
from seer.workload.kineto import read_trace
from seer.workload.trace_records import is_trace_file, read_trace_records, read_traces

TRACES = Path(__file__).parents[3] / "data" / "h100-sxm" / "traces"
GPT_B1 = TRACES / "gpt_b1.pt.trace.json.gz"


@pytest.fixture(scope="module")
def gpt_b1():
    return read_trace_records(GPT_B1)


def test_one_record_per_kernel_and_their_times_sum_to_the_traces(gpt_b1):
    k = read_trace(GPT_B1, TRACES / "gpt_b1.et.json.gz").kernels
    assert len(gpt_b1) == len(k)
    assert gpt_b1["kernel_time_ms"].sum() == pytest.approx(k["dur"].sum() / 1e3, rel=1e-12)
    assert (gpt_b1["suite"] == "trace").all() and (gpt_b1["source"] == GPT_B1.name).all()
    assert set(gpt_b1["gpu"]) == {"NVIDIA H100 80GB HBM3"} and set(gpt_b1["cc"]) == {"9.0"}
    assert set(gpt_b1["torch_version"]) == {"2.11.0+cu130"} and set(gpt_b1["cudnn_version"]) == {"9.19.0"}
    # a call's rows carry the call's time; one-kernel calls: the kernel's
    calls = gpt_b1.groupby("call_id").agg(t=("time_ms", "first"), s=("kernel_time_ms", "sum"))
    assert (calls["t"] - calls["s"]).abs().max() < 1e-12


def test_gemms_are_cublas_records_with_geometry_and_occupancy(gpt_b1):
    g = gpt_b1[gpt_b1["op"] == "gemm"]
    qkv = g[(g["k"] == 768) & (g["m"] == 2304)]  # x[512, 768] @ W^T[768, 2304]: cuBLAS m = 2304 outputs, n = 512 rows
    assert len(qkv) == 12 and set(qkv["n"]) == {512} and set(qkv["trans"]) == {"tn"}
    assert (g["blocks"] == g["grid_x"] * g["grid_y"] * g["grid_z"]).all()
    assert (g["blocks_per_sm"] >= 1).all() and (g["b_max"] == g["blocks_per_sm"] * 132).all()
    assert (g["waves"] >= 1).all()
    records.validate(gpt_b1)  # a valid record frame


def test_variants_are_named_as_the_harness_names_them():
    """Every main GEMM and convolution kernel of the bundled traces is a variant the harness ran."""
    rec = read_traces(TRACES)
    main = rec[(rec["role"] == "main") & rec["op"].isin(["gemm", "conv_fwd"])]
    harness = pd.concat(
        [pd.read_csv(TRACES.parent / f, usecols=["kernel"]) for f in ("gemm_layers.csv", "seer_grid.csv.gz")]
    )
    known = {variants.classify(k).label for k in harness["kernel"].dropna().unique()}
    labels = {variants.classify(k).label for k in main["kernel"].unique()}
    assert labels and labels <= known
    assert {"conv_fwd", "gemm", "elementwise", "softmax", "layer_norm"} <= set(rec["op"])


def test_a_trace_is_told_from_other_files(tmp_path):
    assert is_trace_file(GPT_B1) and not is_trace_file(TRACES / "gpt_b1.et.json.gz")
    assert not is_trace_file(TRACES / "traces.json")
    assert len(fit_cli.load_all([GPT_B1])) == len(read_trace_records(GPT_B1))
    (tmp_path / "t.json").write_text('{"traceEvents": []}')
    with pytest.raises(DataError):
        read_trace_records(tmp_path / "t.json")


def test_a_winograd_call_in_a_trace_is_keyed_by_its_transform_as_the_harness_calls_are():
    import numpy as np

    from seer.workload.trace_records import _roles

    names = [
        "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(Params)",
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_execute_kernel__5x_cublas",
        "void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>(Params)",
    ]
    assert _roles(names, np.array([1.0, 5.0, 2.0])) == ["main", "post", "post"]
    assert _roles(names[1:], np.array([5.0, 2.0])) == ["main", "post"]  # no transform: the GEMM, a main kernel
