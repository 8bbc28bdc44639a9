"""The backward and optimizer ops a training trace launches -> the predictors that time them.

A profiler trace of a training step names each backward op directly (`convolution_backward`,
`cudnn_batch_norm_backward`, `threshold_backward`, ...) with the shapes of its arguments, and the
optimizer's multi-tensor ops (`_foreach_add_`, `_fused_adam_`) with the shapes of its tensor
lists. Each is timed as the kernels it launches, by a predictor seer already has, and every
kernel says which through `Mapped.label` (seer.workload.estimate writes `conv[dgrad]+conv[wgrad
as forward]`):

- convolution backward -> dgrad and wgrad (seer.workload.backward.conv_backward: the forward's
  fits at the transposed convolution's sizes, the forward's config standing in for wgrad) and the
  bias gradient (a column sum of dy), as `output_mask` asks;
- batch, layer and group norm backward -> dx from dy and x plus the gamma/beta sums
  (backward.norm_backward); batch norm forward in training reads x twice (the batch statistics,
  then the normalization) and writes y, at inference reads it once;
- activation, dropout and softmax backward -> one binary stream (dy and x or y in, dx out);
- max and average pooling, forward and backward -> one stream of their real traffic (x read once,
  the output and, for max pooling, its int64 indices written; backward the reverse);
- the loss (`nll_loss_forward` / `_backward`) -> a gather or scatter of one element per target;
- `embedding_dense_backward` -> backward.embedding_backward;
- optimizer steps -> one pass over the parameters: `_foreach_<fn>` as the element-wise kernel of
  its operands (as many streamed lists as it reads, one written), fused Adam/SGD/Adagrad as one
  stream reading every state list and writing every one but the gradients.

A trace's scalar arguments (stride, kernel size, `training`, `output_mask`) reach the handlers as
`OpCall.params` (`trace_params`: `args`, the `Concrete Inputs` or an execution trace's values;
`lists`, the shapes in each tensor-list argument), so a trace without them still maps, with the
defaults each handler names. A graph captured from a live model (seer.workload.capture) names the
same ATen ops and passes its arguments the same way (`named_args`), so these handlers serve it too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from seer.hardware.dtypes import DTYPE_BYTES
from seer.workload.backward import compound, conv_backward, embedding_backward, norm_backward, stream
from seer.workload.ops import (
    NORM_INFERENCE,
    Mapped,
    OpCall,
    _conv,
    _elementwise,
    _numel,
    _rows_cols,
    _shaped,
    classify,
    conv_params,
    op_name,
    register,
)

# activation and dropout backward: dx = dy * f'(x or y), one binary stream
ACTIVATION_BACKWARD = {
    "threshold_backward", "hardtanh_backward", "leaky_relu_backward", "gelu_backward", "silu_backward",
    "sigmoid_backward", "tanh_backward", "elu_backward", "softplus_backward", "hardswish_backward",
    "hardsigmoid_backward", "mish_backward", "native_dropout_backward", "log_sigmoid_backward",
}  # fmt: skip
SOFTMAX_BACKWARD = {"_softmax_backward_data", "_log_softmax_backward_data", "softmax_backward_data"}
NORM_BACKWARD = {"cudnn_batch_norm_backward", "native_batch_norm_backward", "miopen_batch_norm_backward",
                 "batch_norm_backward", "native_group_norm_backward"}  # fmt: skip
LAYER_NORM_BACKWARD = {"native_layer_norm_backward", "layer_norm_backward"}
CONV_BACKWARD = {"convolution_backward", "convolution_backward_overrideable"}
POOL = {"max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "_adaptive_avg_pool2d", "adaptive_avg_pool2d",
        "adaptive_max_pool2d", "max_pool2d_with_indices_backward", "avg_pool2d_backward",
        "_adaptive_avg_pool2d_backward", "adaptive_max_pool2d_backward"}  # fmt: skip
LOSS = {"nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward", "nll_loss"}
FOREACH_FNS = {
    "add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp", "sqrt", "neg", "abs", "exp", "sign", "reciprocal",
    "maximum", "minimum", "clamp_min", "clamp_max", "pow", "zero", "copy", "norm", "max",
}  # fmt: skip
FOREACH = {f"_foreach_{f}" for f in FOREACH_FNS}
FUSED_OPTIMIZERS = {"_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adagrad"}
INDEX_BYTES = 8  # int64 indices (max pooling's argmax)

# where a trace's scalar arguments lie, per op: name -> {argument: position}
_ARGS = {
    "convolution_backward": {"stride": 4, "padding": 5, "dilation": 6, "transposed": 7, "groups": 9, "mask": 10},
    "max_pool2d_with_indices": {"kernel": 1, "stride": 2, "padding": 3, "dilation": 4, "ceil": 5},
    "max_pool2d": {"kernel": 1, "stride": 2, "padding": 3, "dilation": 4, "ceil": 5},
    "avg_pool2d": {"kernel": 1, "stride": 2, "padding": 3, "ceil": 4},
    "_adaptive_avg_pool2d": {"size": 1},
    "adaptive_avg_pool2d": {"size": 1},
    "adaptive_max_pool2d": {"size": 1},
    "embedding_dense_backward": {"num_weights": 2},
}
_ARGS["convolution_backward_overrideable"] = _ARGS["convolution_backward"]


def _parse(text: object) -> list | int | float | bool | None:
    """One `Concrete Inputs` entry: '[2, 2]' -> [2, 2], '1' -> 1, 'False' -> False, '' -> None."""
    s = str(text).strip()
    if s in ("True", "true"):
        return True
    if s in ("False", "false"):
        return False
    if s.startswith("["):
        items = [x.strip() for x in s.strip("[]").split(",") if x.strip()]
        parsed = [_parse(x) for x in items]
        return [x for x in parsed if x is not None]
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return None


def trace_params(
    name: str,
    concrete: Sequence = (),
    lists: Sequence = (),
    memcpy: str = "",
    pageable: bool = False,
) -> dict | None:
    """What a trace says about an op beyond its tensor shapes, for its handler: a forward
    convolution's stride, padding, dilation and groups (seer.workload.ops.conv_params), every
    scalar argument parsed (`args`) and the named ones of the ops in `_ARGS`, the shapes in its
    tensor-list arguments (`lists`), and where its GPU work is a host copy, its direction
    (`memcpy`: h2d, d2h, d2d) and whether the host memory is pageable. None where there is nothing."""
    out: dict = dict(conv_params(name, concrete) or {})
    out.update(named_args(name, [_parse(c) for c in concrete or []]))
    if lists:
        out["lists"] = [list(x) for x in lists]
    if memcpy:
        out["memcpy"], out["pageable"] = memcpy, bool(pageable)
    return out or None


def map_calls(kops) -> list[Mapped]:
    """Each row of a kernel-op table (seer.workload.kineto.kernel_ops) as seer maps it (classify,
    with what the trace says beyond its shapes: trace_params). A trace repeats its ops step after
    step: each distinct call is mapped once (Mapped is frozen)."""
    memo: dict[str, Mapped] = {}
    out = []
    for n, s, d, c, lists, copy, pageable in zip(
        kops["name"], kops["input_shapes"], kops["dtype"], kops["concrete"], kops["tensor_lists"], kops["memcpy"],
        kops["pageable"],
    ):  # fmt: skip
        key = repr((n, s, d, c, lists, copy, pageable))
        m = memo.get(key)
        if m is None:
            m = memo[key] = classify(n, s, dtype=d or "float32", params=trace_params(n, c, lists, copy, pageable))
        out.append(m)
    return out


def named_args(name: str, args: Sequence) -> dict:
    """An op's non-tensor arguments for its handler: `args`, one per argument in order (None for a
    tensor or an unrecorded one), and the named ones of the ops in `_ARGS` (stride, output_mask,
    ...). A trace's (trace_params) and a captured graph's (seer.workload.capture) alike."""
    args = list(args)
    if not any(a is not None for a in args):
        return {}
    out: dict = {"args": args}
    for key, i in _ARGS.get(op_name(name), {}).items():
        if i < len(args) and args[i] is not None:
            out[key] = args[i]
    return out


def training_flag(params: dict | None) -> bool | None:
    """A batch norm's `training` argument: the first boolean among its arguments (cudnn_batch_norm,
    native_batch_norm, batch_norm, _native_batch_norm_legit all have it before any other); None where
    the trace did not record it."""
    for a in (params or {}).get("args", []):
        if isinstance(a, bool):
            return a
    return None


def _elem(dtype: str) -> float:
    return float(DTYPE_BYTES.get(dtype, 4))


def moved(nbytes: float, cols: int, dtype: str, label: str, kind: str) -> Mapped:
    """One streaming kernel that moves `nbytes` (read and written together), timed as a copy
    (one read and one write per element) of as many elements as carry that traffic."""
    cols = max(int(cols), 1)
    rows = max(math.ceil(nbytes / (2 * _elem(dtype) * cols)), 1)
    return Mapped(kind, {"op": "elementwise", "fn": "copy", "rows": rows, "cols": cols, "dtype": dtype}, label=label)


# ---- convolution ------------------------------------------------------------------------------------------------


@register(*CONV_BACKWARD)
def _convolution_backward(c: OpCall) -> Mapped | None:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask): the forward's config from input and weight
    (stride and padding from the arguments, else from grad_output's size), then dgrad, wgrad and
    the bias's column sum as output_mask asks (all but the bias where it is not recorded)."""
    t = c.tensors
    if len(t) < 3 or len(t[0]) != 4:
        return None
    p = c.params or {}
    if p.get("transposed") is True:
        return c.unmodelled("a transposed convolution's backward has no rule")
    geo = {k: p[k] for k in ("stride", "padding", "dilation") if isinstance(p.get(k), list) and p[k]}
    given = None
    if "stride" in geo and "padding" in geo:
        given = {k: (v * 2)[:2] for k, v in geo.items()}
        if isinstance(p.get("groups"), int):
            given["groups"] = p["groups"]
    cfg = _conv([t[1], t[2]], t[0], given)
    if cfg is None:
        return None
    mask = p.get("mask")
    dgrad, wgrad, bias = (
        (bool(mask[0]), bool(mask[1]), bool(mask[2]))
        if isinstance(mask, list) and len(mask) == 3
        else (True, True, False)
    )
    parts = list(conv_backward({**cfg, "dtype": c.dtype} if c.dtype != "float32" else cfg, dgrad=dgrad, wgrad=wgrad))
    if bias:
        parts.append(stream("fill", **_rows_cols(t[0]), dtype=c.dtype, label="bias grad", kind="reduction"))
    return compound("conv", parts)


# ---- normalization ----------------------------------------------------------------------------------------------


@register(*NORM_INFERENCE)
@_shaped
def _batch_norm(c: OpCall, result: list[int]) -> Mapped | None:
    """Training (its `training` argument True): the batch statistics read x, the normalization
    reads it again and writes y: one stream of three accesses per element. Inference, or a graph
    or trace that does not say: one pass, scale and shift (read x, write y)."""
    x = c.tensors[0] if c.tensors else result
    rc = _rows_cols(x)
    if training_flag(c.params):
        return compound("norm", [stream("add", rc["rows"], rc["cols"], c.dtype, "stats + normalize")])
    return Mapped("copy", {"op": "elementwise", "fn": "copy", **rc, "dtype": c.dtype})


@register(*NORM_BACKWARD)
def _norm_backward(c: OpCall) -> Mapped | None:
    """dx from dy and x, and the gamma/beta sums (backward.norm_backward) over the activation
    (the first of the op's tensors as large as the largest)."""
    t = c.tensors
    if not t:
        return None
    big = max(_numel(s) for s in t)
    x = next(s for s in t if _numel(s) == big)
    rc = _rows_cols(x)
    return compound("norm", norm_backward(rc["rows"], rc["cols"], c.dtype))


@register(*LAYER_NORM_BACKWARD)
def _layer_norm_backward(c: OpCall) -> Mapped | None:
    """native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, mask):
    rows x the normalized size (the weight's size where there is one, else the last dimension)."""
    t = c.tensors
    if len(t) < 2:
        return None
    x = t[1]
    n = _numel(x)
    # the weight's shape is the normalized one, a trailing part of x's (mean and rstd are [rows, 1])
    cols = next((_numel(s) for s in t[2:] if 0 < len(s) < len(x) and s == x[-len(s) :]), x[-1])
    return compound("layer_norm", norm_backward(n // max(cols, 1), cols, c.dtype))


# ---- element-wise backward ------------------------------------------------------------------------------------


@register(*ACTIVATION_BACKWARD)
@_shaped
def _activation_backward(c: OpCall, result: list[int]) -> Mapped | None:
    return compound("elementwise", [stream("mul", **_rows_cols(result), dtype=c.dtype, label="dy * f'(x)")])


@register(*SOFTMAX_BACKWARD)
@_shaped
def _softmax_backward(c: OpCall, result: list[int]) -> Mapped | None:
    return compound("softmax", [stream("mul", **_rows_cols(result), dtype=c.dtype, label="dx from y, dy")])


# ---- pooling -----------------------------------------------------------------------------------------------------


def _pooled(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:  # the last window must start inside the input or its left padding
        out -= 1
    return max(out, 1)


def _pool_out(x: list[int], p: dict, name: str) -> list[int] | None:
    """The pooled output's shape from the op's arguments (None where they are not recorded)."""
    if len(x) < 3:
        return None
    if "size" in p:  # adaptive: the output size is the argument
        size = (list(p["size"]) * 2)[:2] if isinstance(p["size"], list) else [p["size"]] * 2
        return [*x[:-2], *size] if size else None
    k = p.get("kernel")
    if not isinstance(k, list) or not k:
        return None
    k = (k * 2)[:2]
    s = (p.get("stride") or k) if isinstance(p.get("stride", k), list) else k
    s = (s * 2)[:2]
    pad = ((p.get("padding") or [0]) * 2)[:2] if isinstance(p.get("padding", [0]), list) else [0, 0]
    dil = ((p.get("dilation") or [1]) * 2)[:2] if isinstance(p.get("dilation", [1]), list) else [1, 1]
    ceil = p.get("ceil") is True
    return [*x[:-2], *(_pooled(x[-2 + i], k[i], s[i], pad[i], dil[i], ceil) for i in range(2))]


@register(*POOL)
def _pool(c: OpCall) -> Mapped | None:
    """Forward: x read once (overlapping windows stay in cache), y written and, for max pooling
    with indices, the int64 argmax; backward (grad_output, input, ..., indices): dy and the
    indices read, dx written. One stream of that traffic."""
    t = c.tensors
    if not t:
        return None
    e = _elem(c.dtype)
    if c.name.endswith("_backward"):
        if len(t) < 2:
            return None
        dy, x = t[0], t[1]
        indices = INDEX_BYTES * _numel(dy) if c.name.startswith("max_pool") else 0
        nbytes = e * (_numel(x) + _numel(dy)) + indices
        return compound("pool", [moved(nbytes, x[-1], c.dtype, "dy (+ indices) in, dx out", "pool")])
    x = t[0]
    out = _pool_out(x, c.params or {}, c.name)
    if out is None:
        return c.unmodelled("no pooling arguments (kernel size, output size) in the trace")
    indices = INDEX_BYTES * _numel(out) if c.name == "max_pool2d_with_indices" else 0
    nbytes = e * (_numel(x) + _numel(out)) + indices
    label = "x in, y + indices out" if indices else "x in, y out"
    return compound("pool", [moved(nbytes, x[-1], c.dtype, label, "pool")])


# ---- loss and embedding ---------------------------------------------------------------------------------------------


@register(*LOSS)
def _nll_loss(c: OpCall) -> Mapped | None:
    """One element per target read (forward: gathered from the log-probabilities and summed;
    backward: scattered into the zeroed gradient): a gather of the target's size."""
    t = c.tensors
    i = next((k for k, s in enumerate(t) if len(s) >= 2), None)  # the log-probabilities; the target follows
    if i is None or i + 1 >= len(t):
        return None
    target = t[i + 1]
    cfg = {"op": "elementwise", "fn": "copy", "rows": max(_numel(target), 1), "cols": 1, "dtype": c.dtype}
    return compound("embedding", [Mapped("embedding", cfg, label="one element per target")])


@register("embedding_dense_backward", "embedding_backward")
def _embedding_backward(c: OpCall) -> Mapped | None:
    """embedding_dense_backward(grad_output, indices, num_weights, ...): zero the table's gradient,
    add each looked-up row into it (backward.embedding_backward)."""
    t = c.tensors
    if len(t) < 2:
        return None
    dy, idx = t[0], t[1]
    table = (c.params or {}).get("num_weights")
    return compound("embedding", embedding_backward(_numel(idx), dy[-1], table if isinstance(table, int) else None,
                                                     c.dtype))  # fmt: skip


# ---- optimizer ------------------------------------------------------------------------------------------------------


def _lists(c: OpCall) -> list[list[list[int]]]:
    return [x for x in (c.params or {}).get("lists", []) if x]


@register(*FOREACH)
def _foreach(c: OpCall) -> Mapped | None:
    """A multi-tensor op over the parameters: the element-wise kernel of its operands over all the
    tensors' elements together (each tensor list one streamed operand, the result written once:
    in place over the first list or to a new one); `_foreach_norm`/`max` a reduction."""
    lists = _lists(c)
    if not lists:
        return c.unmodelled("no shapes of its tensor lists (record shapes, or give the execution trace)")
    n = sum(_numel(s) for s in lists[0])
    label = f"{len(lists)} list(s) of {len(lists[0])} tensors, {n} elements"
    fn = c.name.removeprefix("_foreach_")
    if fn in ("norm", "max"):
        return compound("reduction", [stream("fill", 1, n, c.dtype, label, kind="reduction")])
    if fn == "zero":
        return compound("elementwise", [stream("fill", 1, n, c.dtype, label)])
    operands = [[n]] * len(lists) + [s for s in c.tensors if _numel(s) * 2 >= n]
    m = _elementwise(fn, operands, [n], c.dtype)
    return compound("elementwise", [Mapped("elementwise", m.config, label=label)])


@register(*FUSED_OPTIMIZERS)
def _fused_optimizer(c: OpCall) -> Mapped | None:
    """A fused optimizer step (params, grads, state lists...): every list read, every one but the
    gradients (the second) written: Adam 4 reads and 3 writes per parameter."""
    lists = _lists(c)
    if len(lists) < 2:
        return c.unmodelled("no shapes of its tensor lists (record shapes, or give the execution trace)")
    sizes = [sum(_numel(s) for s in x) for x in lists]
    n = sizes[0]
    nbytes = _elem(c.dtype) * (sum(sizes) + sum(sizes) - sizes[1])
    label = f"{len(lists)} lists read, {len(lists) - 1} written, {n} parameters"
    return compound("elementwise", [moved(nbytes, 1024, c.dtype, label, "elementwise")])
