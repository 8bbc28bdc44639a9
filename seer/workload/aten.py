"""Handlers for the ATen ops only a graph captured from a live model has (seer.workload.capture):
allocations with a fill, logical ops, advanced indexing, bookkeeping, fused attention.

A captured graph names ops as ATen overloads (`aten.addmm.default`); most map through the
handlers of seer.workload.ops, and its backward, normalization, pooling, loss and optimizer ops
through seer.workload.trace_ops, which a profiler trace of a training step needs too (the same
ATen ops, their arguments passed the same way: trace_ops.named_args). These are the rest.
"""

from __future__ import annotations

import math

from seer.workload.backward import stream
from seer.workload.ops import Mapped, OpCall, _elementwise, _rows_cols, register


@register("new_zeros", "new_ones", "new_full", "scalar_tensor", "empty_like", "new_empty")
def _new_fill(c: OpCall) -> Mapped | None:
    """Allocation with a fill (empty ones allocate only)."""
    if c.name in ("empty_like", "new_empty"):
        return Mapped("dispatch")
    if c.out is None and c.name != "scalar_tensor":
        return None
    return stream("fill", **_rows_cols(c.out or [1]), dtype=c.dtype, label="")


@register(
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and", "logical_or", "logical_not",
    "__and__", "__or__", "isnan", "isinf",
)  # fmt: skip
def _logical(c: OpCall) -> Mapped | None:
    result = c.result
    return _elementwise(c.name, c.tensors, result, c.dtype) if result else None


@register("index", "index_select")
def _index(c: OpCall) -> Mapped | None:
    """Advanced indexing: a gather of the result's elements (an element-wise kernel, not a table lookup)."""
    out = c.out
    return (
        Mapped("elementwise", {"op": "elementwise", "fn": "copy", **_rows_cols(out), "dtype": c.dtype}) if out else None
    )


@register("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size", "_local_scalar_dense")
def _bookkeeping(c: OpCall) -> Mapped | None:
    return Mapped("dispatch")


@register(
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention", "scaled_dot_product_attention",
)  # fmt: skip
def _attention(c: OpCall) -> Mapped | None:
    """Fused attention, timed as the unfused kernels it replaces (Q K^T, softmax, P V): an upper
    bound, since seer has no fits for fused attention kernels."""
    if len(c.tensors) < 3 or len(c.tensors[0]) < 3:
        return None
    q, k, v = c.tensors[:3]
    batch = max(math.prod(q[:-2]), 1)
    lq, d, lk, dv = q[-2], q[-1], k[-2], v[-1]
    scores = {"op": "bmm", "batch": batch, "m": lq, "k": d, "n": lk, "dtype": c.dtype}
    out = {"op": "bmm", "batch": batch, "m": lq, "k": lk, "n": dv, "dtype": c.dtype}
    soft = {"op": "softmax", "rows": batch * lq, "cols": lk, "dtype": c.dtype}
    parts = (
        Mapped("bmm", scores, label="Q K^T, unfused"),
        Mapped("softmax", soft, label="softmax, unfused"),
        Mapped("bmm", out, label="P V, unfused"),
    )
    return Mapped("bmm", scores, parts=parts)
