"""Names on trace ops (seer.workload.sites): the module, the call site or the op's occurrence, from
whatever the trace records, so that twelve `addmm` rows can be told apart."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seer.workload.kineto import kernel_ops, read_trace
from seer.workload.sites import user_frame

H100 = Path(__file__).resolve().parents[3] / "data" / "h100-sxm" / "traces"


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, pid: int = 1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _linear(t: float, corr: int, **args) -> list[dict]:
    """aten::linear around aten::addmm at `t`, launching one kernel."""
    return [
        _x("cpu_op", "aten::linear", t, 50),
        _x("cpu_op", "aten::addmm", t + 5, 40, **{"Input Dims": [[8], [4, 16], [16, 8]], **args}),
        _x("cuda_runtime", "cudaLaunchKernel", t + 10, 5, correlation=corr),
        _x("kernel", f"gemm{corr}", t + 20, 10, tid=7, pid=0, correlation=corr, stream=7, device=0),
    ]


def _read(tmp_path: Path, events: list[dict]) -> list[str]:
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return kernel_ops(read_trace(path))["site"].tolist()


def test_without_modules_the_outermost_op_and_its_occurrence_per_step(tmp_path):
    ev = [_x("user_annotation", "ProfilerStep#1", 0, 500), _x("user_annotation", "ProfilerStep#2", 500, 500)]
    for step in (0, 500):
        ev += _linear(step + 100, step + 1) + _linear(step + 200, step + 2)
    assert _read(tmp_path, ev) == ["linear#1", "linear#2", "linear#1", "linear#2"]  # counted again each step


def test_module_events_and_user_code_frames_name_the_op(tmp_path):
    """with_modules / with_stack: nn.Module python_function events and the innermost user frame."""
    ev = [
        _x("user_annotation", "ProfilerStep#1", 0, 1000),
        _x("user_annotation", "## forward ##", 50, 900),
        _x("python_function", "nn.Module: GPT_0", 60, 800),
    ]
    for i, t in enumerate((100, 400)):
        ev += [
            _x("python_function", f"nn.Module: Block_{i}", t - 20, 200),
            _x("python_function", "model.py(42): forward", t - 15, 190),
            _x("python_function", "nn.Module: Linear_0", t - 10, 180),
            _x(
                "python_function", "/usr/lib/python3/site-packages/torch/nn/modules/linear.py(125): forward", t - 5, 170
            ),
            _x("python_function", "<built-in function linear>", t - 2, 160),
            *_linear(t, i + 1),
        ]
    assert _read(tmp_path, ev) == [
        "## forward ## > GPT_0/Block_0/Linear_0 > model.py(42): forward",
        "## forward ## > GPT_0/Block_1/Linear_0 > model.py(42): forward",
    ]


def test_the_ops_own_module_hierarchy_and_call_stack(tmp_path):
    ev = [_x("user_annotation", "ProfilerStep#1", 0, 1000)]
    ev += _linear(
        100,
        1,
        **{
            "Module Hierarchy": "top(Net)::fc1(Linear)",
            "Call stack": "torch/nn/functional.py(10): linear;/home/u/net.py(7): forward",
        },
    )
    ev += _linear(300, 2, **{"Module Hierarchy": "", "Call stack": ""})  # recorded empty, as HTA's traces have it
    assert _read(tmp_path, ev) == ["top(Net)::fc1(Linear) > net.py(7): forward", "linear#2"]


@pytest.mark.parametrize(
    ("frame", "site"),
    [
        ("model.py(42): forward", "model.py(42): forward"),
        ("/home/u/proj/net.py(7): fwd", "net.py(7): fwd"),
        ("torch/nn/modules/linear.py(125): forward", ""),
        ("<built-in method addmm>", ""),
        ("/usr/lib/python3.11/threading.py(1002): run", ""),
        ("nn.Module: Linear_0", ""),
    ],
)
def test_user_frame(frame, site):
    assert user_frame(frame) == site


def test_the_bundled_gpt_traces_addmm_are_told_apart():
    """The bundled traces record shapes only: every GEMM of a step gets its own site."""
    ops = kernel_ops(read_trace(H100 / "gpt_b8.pt.trace.json.gz"))
    step = ops[ops["step"] == ops["step"].min()]
    gemms = step[step["name"].isin(["addmm", "mm"])]
    assert len(gemms) == 17 and gemms["site"].is_unique
    assert gemms["site"].tolist() == [f"linear#{i}" for i in range(1, 18)]
