"""seer.trace.summary: the per-kernel table (inductor's profile_analysis columns) and seer's furthest kernels."""

from __future__ import annotations

import numpy as np
import pytest

from seer.trace.kernels import explain
from seer.trace.summary import COLUMNS, furthest, kernel_summary, totals

SHARED = ["hta/v100_recsys_rank1_test.json.gz", "hta/triton_example_triton_example.json.gz",
          "hta/execution_trace_benchmark_simple_add_trace.json.gz"]  # fmt: skip


def _check(ex, raw):
    t = kernel_summary(ex)
    assert list(t.columns) == COLUMNS
    assert t["name"].is_unique and t["count"].sum() == len(raw)
    # the kernels' times add up to the trace's: nothing dropped, nothing counted twice
    assert t["total_ms"].sum() * 1e3 == pytest.approx(sum(float(e.get("dur", 0)) for e in raw), rel=1e-9)
    assert t["gpu_share"].sum() == pytest.approx(1.0)
    assert (np.diff(t["total_ms"].to_numpy()) <= 0).all()  # longest first
    assert t["mean_us"].to_numpy() * t["count"].to_numpy() == pytest.approx(t["total_ms"].to_numpy() * 1e3)
    tot = totals(ex)
    assert tot["predicted_kernels_measured_ms"] + tot["unpredicted_ms"] == pytest.approx(tot["gpu_ms"])
    return t


def test_the_bundled_h100_trace(gpt_b8, h100, raw_gpu_events):
    t = _check(gpt_b8, raw_gpu_events(h100 / "gpt_b8.pt.trace.json.gz"))
    gemm = t[t["kind"] == "linear"].iloc[0]
    assert gemm["flops"] > 0 and 0 < gemm["frac_peak_flops"] < 1.5 and gemm["predicted_ms"] > 0
    assert gemm["ratio"] == pytest.approx(gemm["total_ms"] / gemm["predicted_ms"])
    assert t["predicted_ms"].notna().all()  # every kernel of this trace is one seer times


@pytest.mark.parametrize("name", SHARED)
def test_the_shared_traces(name, shared, raw_gpu_events):
    path = shared(name)
    _check(explain(path), raw_gpu_events(path))


def test_furthest_ranks_by_log_ratio_times_time(gpt_b8):
    t = kernel_summary(gpt_b8)
    far = furthest(t, 5)
    assert len(far) == 5 and (np.diff(far["off_ms"].to_numpy()) <= 0).all()
    want = np.abs(np.log(t["ratio"])) * t["total_ms"]
    assert far["off_ms"].iat[0] == pytest.approx(want.max())
    assert furthest(t, 0).empty
