"""Memory-bound kernels of a profiler trace: bytes and measured kernel time per op."""

from pathlib import Path

import numpy as np
import pytest

from seer.workload.trace_kernels import COLUMNS, memory_kernels

TRACES = Path(__file__).resolve().parents[3] / "data" / "h100-sxm" / "traces"


@pytest.mark.skipif(not (TRACES / "gpt_b1.pt.trace.json.gz").exists(), reason="the H100 traces are not here")
def test_memory_kernels_of_an_h100_trace():
    k = memory_kernels(TRACES / "gpt_b1.pt.trace.json.gz", TRACES / "gpt_b1.et.json.gz")
    assert list(k.columns) == list(COLUMNS)
    assert (k["gpu"] == "h100-sxm").all()
    assert {"elementwise", "softmax", "layer_norm"} <= set(k["kind"])
    assert (k["kernel_ms"] > 0).all() and (k["bytes"] > 0).all()
    assert np.allclose([sum(b) for b in k["part_bytes"]], k["bytes"])
    assert (k["kind"] != "linear").all()  # GEMMs are not memory-bound kernels
