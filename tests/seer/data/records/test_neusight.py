"""NeuSight element-wise files with functions seer has no row for (pow, ...): loaded, fitted, predicted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seer.analytical import memory_bound_detail, predict_memory_bound
from seer.analytical.memory import DEFAULT_FN
from seer.data import records
from seer.errors import DataError, SeerError
from seer.evaluate.bench_analytical import synthetic_records
from seer.models.memory import fit_memory_bound

HEADER = (
    "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,Blocks per SM,"
    "Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,B,H\n"
)
KERNEL = '"void at::native::vectorized_elementwise_kernel<4, Functor<float> >(int, Functor<float>)"'


def _row(fn: str, b: int = 127, h: int = 168, t: float = 0.026) -> str:
    return f"{fn},{t},Tesla T4,p2.1.0,8902,{KERNEL},4.2,1.05,42,1,1,128,1,1,cu121,{b},{h}\n"


def _file(tmp_path, body: str):
    p = tmp_path / "pow" / "Tesla_T4.csv"
    p.parent.mkdir(exist_ok=True)
    p.write_text(HEADER + body)
    return p


def test_unknown_functions_load_as_elementwise_and_predict(tmp_path):
    df = records.read_neusight_csv(_file(tmp_path, _row("pow") + _row("sigmoid") + _row("my_fn", 64, 4096)))
    assert list(df["op"]) == ["elementwise"] * 3 and list(df["fn"]) == ["pow", "sigmoid", "my_fn"]
    assert list(df["rows"]) == [127, 127, 64] and list(df["cols"]) == [168, 168, 4096]
    t = predict_memory_bound(df.iloc[:2][["op", "rows", "cols", "fn"]], None, "t4")
    assert np.isfinite(t).all() and (t > 0).all()


def test_a_function_in_no_table_is_fitted_and_then_predicted(tmp_path):
    sizes = [(2**i, 1024) for i in range(4, 20)]  # a roofline at 200 GB/s above a 20 us floor
    body = "".join(_row("my_fn", b, h, max(0.02, 0.005 + 8 * b * h / 200e6)) for b, h in sizes)
    df = records.read_neusight_csv(_file(tmp_path, body))
    params = fit_memory_bound(df)
    k = params["gpus"]["t4"]["kernels"]["elementwise:my_fn"]
    assert k["bw_gbs"] == pytest.approx(200, rel=1e-3)  # bytes counted as DEFAULT_FN: read + write
    t = predict_memory_bound(op="elementwise", fn="my_fn", rows=4096, cols=4096, params=params, gpu="t4")
    assert t == pytest.approx(0.005 + 8 * 4096 * 4096 / 200e6, rel=1e-3)


def test_a_function_with_no_fit_falls_back_to_its_aritys_pool():
    a, b = synthetic_records("Tesla T4", seed=1), synthetic_records("Tesla T4", seed=2)
    rec = pd.concat([a, b.assign(fn=b["fn"].map({"add": "mul", "relu": "gelu"}))], ignore_index=True)
    params = fit_memory_bound(rec)
    kernels = params["gpus"]["t4"]["kernels"]
    assert {"elementwise(unary)", "elementwise(binary)", "elementwise"} <= set(kernels)
    d = memory_bound_detail(
        pd.DataFrame({"op": "elementwise", "fn": ["pow", "sub", "where"], "rows": 4096, "cols": 4096}), params, "t4"
    )
    assert list(d["source"]) == [
        "fit:elementwise(unary) (pooled stand-in)",
        "fit:elementwise(binary) (pooled stand-in)",
        "fit:elementwise (pooled stand-in)",
    ]
    assert (d["time_ms"] > 0).all() and d["time_ms"].is_monotonic_increasing  # 2, 3, 4 tensors moved


def test_default_work_of_a_function_the_table_lacks():
    rec = pd.concat(
        [synthetic_records("Tesla T4"), synthetic_records("Tesla T4", seed=3).assign(fn="frob")], ignore_index=True
    )
    params = fit_memory_bound(rec)
    d = memory_bound_detail(op="elementwise", fn="frob", rows=1000, cols=1000, params=params, gpu="t4")
    assert d["flops"].iloc[0] == DEFAULT_FN[0] * 1e6 and d["bytes"].iloc[0] == DEFAULT_FN[1] * 4e6
    with pytest.raises(SeerError, match="fn"):  # without parameters fitted on it, a typo stays an error
        predict_memory_bound(op="elementwise", fn="frob", rows=5, cols=5, gpu="t4")


@pytest.mark.parametrize("name", ["matmul", "conv2d", "batch_norm", "x-y", ""])
def test_what_is_no_elementwise_function_is_refused(tmp_path, name):
    with pytest.raises(DataError) as e:
        records.read_neusight_csv(_file(tmp_path, _row("add") + _row(name)))
    assert e.value.row == 3 and e.value.column == "OPName" and "element-wise function" in str(e.value)
