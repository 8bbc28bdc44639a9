"""seer.trace.diff: two traces kernel by kernel and op by op."""

from __future__ import annotations

import numpy as np
import pytest

from seer.trace.diff import COLUMNS, compare, totals


@pytest.mark.parametrize("by", ["name", "op_name"])
def test_a_trace_against_itself_changes_nothing(gpt_b8, by):
    t = compare(gpt_b8, gpt_b8, by)
    assert list(t.columns) == [by, *COLUMNS]
    assert (t["delta_ms"] == 0).all() and (t["count_a"] == t["count_b"]).all() and (t["only_in"] == "").all()
    assert np.allclose(t["ratio"], 1.0) and np.allclose(t["efficiency_a"], t["efficiency_b"], equal_nan=True)
    assert totals(gpt_b8, gpt_b8)["delta_ms"] == 0


def test_batch_1_against_batch_8(gpt_b1, gpt_b8):
    """Same model, eight times the tokens: the same GEMM ops, each slower; cuBLAS picks other tiles."""
    ops = compare(gpt_b1, gpt_b8, "op_name").set_index("op_name")
    for op in ("aten::addmm", "aten::mm", "aten::bmm"):
        assert ops.loc[op, "count_a"] == ops.loc[op, "count_b"] > 0 and ops.loc[op, "ratio"] > 2
    assert ops["delta_ms"].sum() == pytest.approx(totals(gpt_b1, gpt_b8)["delta_ms"])
    assert (np.diff(np.abs(ops["delta_ms"].to_numpy())) <= 0).all()  # largest change first
    kernels = compare(gpt_b1, gpt_b8, "name")
    assert set(kernels["only_in"]) == {"", "a", "b"}  # kernels only one of the runs launched
    assert kernels["count_b"].sum() == len(gpt_b8.kernels) and kernels["count_a"].sum() == len(gpt_b1.kernels)
    assert totals(gpt_b1, gpt_b8)["gpu_ms_b"] > 4 * totals(gpt_b1, gpt_b8)["gpu_ms_a"]
