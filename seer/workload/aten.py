"""Handlers for the ATen ops a captured graph has and the fx/trace names do not: the backward ops
of AOTAutograd's joint graph, batch norm and pooling as ATen spells them, the loss, fills.

A graph captured by seer.workload.capture names ops as ATen overloads (`aten.addmm.default`);
most map through the handlers of seer.workload.ops, these are the rest. Each backward op is timed
as the kernels of its autograd formula (seer.workload.backward), now from the op itself rather
than from its forward: the joint graph says which gradients are computed (`output_mask`).

An op's non-tensor arguments reach a handler as `OpCall.params["scalars"]` (capture puts them
there, in argument order). A name another module has registered already is left to it
(`_register_missing`): the handlers for a profiler trace's backward ops may land there too.
"""

from __future__ import annotations

import math

from seer.workload.backward import backward_of, conv_backward, embedding_backward, norm_backward
from seer.workload.ops import OPS, Handler, Mapped, OpCall, _conv, _elementwise, _rows_cols, classify


def _register_missing(*names: str):
    """Register the handler for the names no other handler serves yet."""

    def decorate(fn: Handler) -> Handler:
        free = [n for n in names if n not in OPS]
        if free:
            OPS.register(*free)(fn)
        return fn

    return decorate


def _scalars(c: OpCall) -> list:
    return list((c.params or {}).get("scalars", []))


def _stream(fn: str, shape: list[int], dtype: str, label: str, kind: str = "elementwise") -> Mapped:
    return Mapped(kind, {"op": "elementwise", "fn": fn, **_rows_cols(shape), "dtype": dtype}, label=label)


def _compound(kind: str, parts: tuple[Mapped, ...]) -> Mapped:
    parts = tuple(p for p in parts if p.config is not None)
    return Mapped(kind, parts[0].config, parts=parts) if parts else Mapped("dispatch")


def _mask(c: OpCall, n: int) -> list[bool]:
    """The `output_mask` of a backward op (which gradients it computes): its last list of bools."""
    for s in reversed(_scalars(c)):
        if isinstance(s, (list, tuple)) and s and all(isinstance(b, bool) for b in s):
            return [bool(b) for b in s][:n] + [True] * max(n - len(s), 0)
    return [True] * n


# ---- forward ops ---------------------------------------------------------------------------------------------------


@_register_missing("_native_batch_norm_legit_no_training", "_native_batch_norm_legit_no_stats")
def _batch_norm_inference(c: OpCall) -> Mapped | None:
    """Batch norm with running statistics: one pass, scale and shift (as NORM_INFERENCE)."""
    return _stream("copy", c.tensors[0], c.dtype, "") if c.tensors else None


@_register_missing("_native_batch_norm_legit_functional", "_native_batch_norm_legit", "native_batch_norm")
def _batch_norm_training(c: OpCall) -> Mapped | None:
    """Batch norm in training: the batch's statistics (one read of x), then normalize (x -> y)."""
    if not c.tensors:
        return None
    x = c.tensors[0]
    parts = (_stream("fill", x, c.dtype, "statistics", "reduction"), _stream("copy", x, c.dtype, "normalize"))
    return _compound("elementwise", parts)


@_register_missing(
    "max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "_adaptive_avg_pool2d", "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
)  # fmt: skip
def _pool(c: OpCall) -> Mapped | None:
    """Pooling: one pass over the input (the windows overlap in cache), a smaller output."""
    return _stream("fill", c.tensors[0], c.dtype, "one read of the input", "reduction") if c.tensors else None


@_register_missing("nll_loss_forward", "nll_loss", "nll_loss2d_forward")
def _nll_loss(c: OpCall) -> Mapped | None:
    """The loss: one gathered element per row, summed."""
    if len(c.tensors) < 2:
        return None
    return _stream("fill", [max(math.prod(c.tensors[1]), 1), 1], c.dtype, "gather and sum", "reduction")


@_register_missing("new_zeros", "new_ones", "new_full", "scalar_tensor", "empty_like", "new_empty")
def _new_fill(c: OpCall) -> Mapped | None:
    """Allocation with a fill (empty ones allocate only)."""
    if c.name in ("empty_like", "new_empty"):
        return Mapped("dispatch")
    return _stream("fill", c.out or [1], c.dtype, "") if c.out is not None or c.name == "scalar_tensor" else None


@_register_missing(
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and", "logical_or", "logical_not",
    "__and__", "__or__", "isnan", "isinf",
)  # fmt: skip
def _logical(c: OpCall) -> Mapped | None:
    result = c.result
    return _elementwise(c.name, c.tensors, result, c.dtype) if result else None


@_register_missing("index", "index_select")
def _index(c: OpCall) -> Mapped | None:
    """Advanced indexing: a gather of the result's elements (an element-wise kernel, not a table lookup)."""
    out = c.out
    return (
        Mapped("elementwise", {"op": "elementwise", "fn": "copy", **_rows_cols(out), "dtype": c.dtype}) if out else None
    )


@_register_missing("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size", "_local_scalar_dense")
def _bookkeeping(c: OpCall) -> Mapped | None:
    return Mapped("dispatch")


@_register_missing(
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


# ---- backward ops (AOTAutograd's joint graph) ----------------------------------------------------------------------


@_register_missing(
    "threshold_backward", "tanh_backward", "sigmoid_backward", "gelu_backward", "silu_backward",
    "native_dropout_backward", "hardtanh_backward", "leaky_relu_backward", "elu_backward", "softplus_backward",
    "hardswish_backward", "hardsigmoid_backward", "mish_backward",
)  # fmt: skip
def _activation_backward(c: OpCall) -> Mapped | None:
    """dx = dy * f'(x): one binary stream."""
    result = c.result
    return _stream("mul", result, c.dtype, "dy * f'(x)") if result else None


@_register_missing("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(c: OpCall) -> Mapped | None:
    """dx from y and dy, row by row (seer.workload.backward's softmax rule)."""
    result = c.result
    if not result:
        return None
    return backward_of(classify("_softmax", [result], result, dtype=c.dtype), "softmax")


@_register_missing("native_layer_norm_backward")
def _layer_norm_backward(c: OpCall) -> Mapped | None:
    """dx from dy and x, and the gamma/beta sums where asked (output_mask)."""
    if len(c.tensors) < 2:
        return None
    dx, dw, db = _mask(c, 3)
    cfg = _rows_cols(c.tensors[1])
    parts = norm_backward(cfg["rows"], cfg["cols"], c.dtype)
    return _compound(
        "layer_norm", (parts[0] if dx else Mapped("dispatch"), parts[1] if dw or db else Mapped("dispatch"))
    )


@_register_missing("native_batch_norm_backward", "cudnn_batch_norm_backward", "_native_batch_norm_legit_backward")
def _batch_norm_backward(c: OpCall) -> Mapped | None:
    if len(c.tensors) < 2:
        return None
    cfg = _rows_cols(c.tensors[1])
    return _compound("elementwise", norm_backward(cfg["rows"], cfg["cols"], c.dtype))


@_register_missing("convolution_backward", "cudnn_convolution_backward")
def _convolution_backward(c: OpCall) -> Mapped | None:
    """dgrad and wgrad of the forward convolution (x = tensors[1], w = tensors[2]), the bias's sum."""
    if len(c.tensors) < 3:
        return None
    dy, x, w = c.tensors[:3]
    cfg = _conv([x, w], dy, c.params)
    if cfg is None:
        return None
    dgrad, wgrad, bias = _mask(c, 3)
    parts = conv_backward({**cfg, "dtype": c.dtype}, dgrad=dgrad, wgrad=wgrad)
    if bias:
        parts += (_stream("fill", dy, c.dtype, "bias grad", "reduction"),)
    return _compound("conv", parts)


@_register_missing("embedding_dense_backward", "embedding_backward")
def _embedding_backward(c: OpCall) -> Mapped | None:
    """Zero the table's gradient, add each looked-up row's gradient into it."""
    if len(c.tensors) < 2:
        return None
    dy, idx = c.tensors[:2]
    ints = [s for s in _scalars(c) if isinstance(s, int) and not isinstance(s, bool)]
    table = ints[0] if ints else None
    return _compound("embedding", embedding_backward(max(math.prod(idx), 1), dy[-1], table, c.dtype))


@_register_missing(
    "max_pool2d_with_indices_backward", "avg_pool2d_backward", "_adaptive_avg_pool2d_backward",
    "adaptive_max_pool2d_backward",
)  # fmt: skip
def _pool_backward(c: OpCall) -> Mapped | None:
    """Zero dx (the input's size), then scatter dy into it."""
    if len(c.tensors) < 2:
        return None
    dy, x = c.tensors[0], c.tensors[1]
    return _compound("elementwise", (_stream("fill", x, c.dtype, "zero dx"), _stream("add", dy, c.dtype, "scatter dy")))


@_register_missing("nll_loss_backward", "nll_loss2d_backward")
def _nll_loss_backward(c: OpCall) -> Mapped | None:
    """dx of the logits: zero it, then one element per row."""
    if len(c.tensors) < 2:
        return None
    return _stream("fill", c.tensors[1], c.dtype, "zero dx, scatter")
