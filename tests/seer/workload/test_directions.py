"""Forward, backward and optimizer labels of a trace's ops, on a small synthetic training step."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seer.workload.kineto import kernel_ops, read_trace

MAIN, BACK = 1, 2  # the Python thread and the autograd engine's device thread


def _x(cat: str, name: str, ts: float, dur: float, tid: int = MAIN, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _op(name: str, ts: float, corr: int, tid: int = MAIN, dims: list | None = None) -> list[dict]:
    """A cpu op of 40 us launching one 10 us kernel."""
    dims = dims or [[64, 64], [64, 64]]
    return [
        _x("cpu_op", name, ts, 40, tid, **{"Input Dims": dims, "Input type": ["float"] * len(dims)}),
        _x("cuda_runtime", "cudaLaunchKernel", ts + 10, 5, tid, correlation=corr),
        _x("kernel", f"k{corr}", ts + 20, 10, 7, correlation=corr, stream=7, device=0),
    ]


def _step(tmp_path: Path) -> Path:
    ev = [_x("user_annotation", "ProfilerStep#0", 0, 1000)]
    ev += _op("aten::mm", 10, 1)  # forward
    ev += _op("aten::relu", 60, 2, dims=[[64, 64]])  # forward
    # backward thread: two autograd nodes, and a zeroing of a gradient buffer outside any node
    ev.append(_x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 200, 100, BACK))
    ev += _op("aten::mm", 210, 3, BACK)
    ev.append(_x("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", 310, 100, BACK))
    ev += _op("aten::threshold_backward", 320, 4, BACK)
    ev += _op("aten::fill_", 420, 5, BACK, dims=[[64, 64], []])
    # the optimizer: a record function around a multi-tensor op
    ev.append(_x("user_annotation", "Optimizer.step#SGD.step", 600, 100))
    ev += _op("aten::_foreach_add_", 610, 6, dims=[[[64, 64], [64]], [[64, 64], [64]], []])
    ev += _op("aten::add_", 800, 7, dims=[[1], [], []])  # after the step: forward again (a counter)
    path = tmp_path / "train.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)
    return path


def test_directions_from_autograd_nodes_backward_thread_and_optimizer(tmp_path):
    ko = kernel_ops(read_trace(_step(tmp_path)))
    assert ko["name"].tolist() == ["mm", "relu", "mm", "threshold_backward", "fill_", "_foreach_add_", "add_"]
    assert ko["direction"].tolist() == [
        "forward", "forward", "backward", "backward", "backward", "optimizer", "forward"]  # fmt: skip
    # the tensor lists of the optimizer's op: every tensor's shape
    assert ko["tensor_lists"].iat[5] == [[[64, 64], [64]], [[64, 64], [64]]]


def test_a_thread_of_mostly_forward_ops_is_not_a_backward_thread(tmp_path):
    """An autograd node on the main thread (CPU autograd) marks its own ops only."""
    ev = [_x("user_annotation", "ProfilerStep#0", 0, 1000)]
    ev += _op("aten::mm", 10, 1) + _op("aten::mm", 60, 2) + _op("aten::mm", 110, 3)
    ev.append(_x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 200, 50))
    ev += _op("aten::mm", 205, 4)
    ev += _op("aten::relu", 300, 5, dims=[[64, 64]])
    path = tmp_path / "cpu.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)
    ko = kernel_ops(read_trace(path))
    assert ko["direction"].tolist() == ["forward"] * 3 + ["backward", "forward"]


def test_model_time_totals_per_direction(tmp_path):
    from seer.workload.model_time import model_time

    mt = model_time(_step(tmp_path), "h100-sxm")
    t = mt.totals
    assert mt.ops["direction"].tolist()[:2] == ["forward", "forward"] and "predictor" in mt.ops
    parts = [t[f"kernel_sum_ms_{d}"] for d in ("forward", "backward", "optimizer")]
    assert sum(parts) == pytest.approx(t["kernel_sum_ms"]) and all(p > 0 for p in parts)
    assert t["unmodelled_ms"] == 0 and t["host_copy_ms"] == 0
    assert "measured_kernel_sum_ms_backward" not in t  # measured on no named GPU: no measurement of the H100's
