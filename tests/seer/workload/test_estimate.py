"""Kernel time and host time kept apart: memory-bound ops at kernel level, the dispatch on the host."""

import pandas as pd
import pytest

import seer
from seer.models.kernel_floor import KernelFloors, KernelLine
from seer.workload.estimate import predict_ops, whole_model


def _ops():
    relu = {"op": "elementwise", "fn": "relu", "rows": 1024, "cols": 1024, "dtype": "float32"}
    gemm = {"op": "linear", "batch": 1, "m": 1024, "k": 1024, "n": 1024, "dtype": "float32"}
    return pd.DataFrame({"name": ["relu", "linear"], "kind": ["elementwise", "linear"], "config": [relu, gemm],
                         "count": 1, "measured_ms": [0.05, 0.2]})  # fmt: skip


def test_memory_bound_ops_are_timed_at_kernel_level():
    line = KernelLine("t4", floor_ms=0.002, const_ms=0.0, bw_gbs=250.0)
    out = predict_ops(_ops(), seer.load("t4"), floors=KernelFloors({"t4": line}))
    relu = out.iloc[0]
    assert bool(relu["kernel_level"]) and not bool(out.iloc[1]["kernel_level"])
    assert relu["predicted_ms"] == pytest.approx(2 * 4 * 1024 * 1024 / 250e6)  # read + write at 250 GB/s
    assert relu["predictor"] == "kernel:elementwise"


def test_whole_model_puts_dispatch_on_the_host_and_keeps_kernel_time_whole():
    line = KernelLine("t4", floor_ms=0.002, const_ms=0.0, bw_gbs=250.0)
    out = predict_ops(_ops(), seer.load("t4"), floors=KernelFloors({"t4": line}))
    relu_only = out.iloc[[0]]
    w = whole_model(relu_only, dispatch_ms=0.03, host_in_times=True)
    # host 30 us, then the kernel: nothing of the kernel-level time is taken off as host time
    assert w.replay_ms == pytest.approx(0.03 + relu_only["predicted_ms"].iat[0])
    gemm_only = out.iloc[[1]]
    g = whole_model(gemm_only, dispatch_ms=0.03, host_in_times=True)
    assert g.replay_ms == pytest.approx(max(gemm_only["predicted_ms"].iat[0], 0.03 + 0.002))
    assert bundled_dispatch_positive()


def bundled_dispatch_positive() -> bool:
    from seer.models.kernel_floor import bundled

    return all(v > 0 for v in bundled().dispatch_ms.values()) and bool(bundled().dispatch_ms)


def test_dispatch_for_is_the_fitted_one_else_the_fitted_median_else_the_default():
    from seer.hardware.peaks import spec_of
    from seer.models.kernel_floor import KernelFloors
    from seer.workload.estimate import DEFAULT_DISPATCH_MS, dispatch_for

    floors = KernelFloors(dispatch_ms={"t4": 0.03, "p4": 0.05, "v100-pcie": 0.02})
    assert dispatch_for(spec_of("t4"), floors) == 0.03
    assert dispatch_for(spec_of("h100-sxm"), floors) == 0.03  # the median of the fitted GPUs
    assert dispatch_for(spec_of("h100-sxm"), KernelFloors()) == DEFAULT_DISPATCH_MS
