"""One framework op -> the seer predictor that times it.

A model's graph (torch.fx) and a profiler trace both name ops the way PyTorch does (`addmm`,
`aten::bmm`, a `Linear` module, `<built-in function add>`) and give the shapes of their tensor
arguments. `classify` turns that into a kind and a seer configuration:

- GEMMs: `addmm`, `mm`, `linear`, HF `Conv1D`, `matmul` with a 2-D right operand -> `linear`
  (m rows = the product of the left operand's leading sizes); `bmm`, `baddbmm`, `matmul` of
  two batched operands -> `bmm` (batch = the broadcast of the leading sizes).
- convolutions -> `conv` (seer's conv_fwd; stride and padding from the output shape).
- element-wise functions -> `elementwise` with the function whose memory traffic matches: the
  operands that are as large as the result are streamed, a scalar or a much smaller broadcast
  operand stays in cache (so `x * 0.5` is a unary kernel, `x + y` a binary one).
- softmax, layer norm -> their row-wise kernels; embedding lookups -> a gather (read the rows,
  write the output: a unary stream of the output's size); copies (`contiguous`, `copy_`,
  `clone`) -> a unary stream.
- shape-only ops (view, size, getitem, permute, transpose, dropout at inference, ...) -> `dispatch`:
  no kernel, only the framework's host time.
- anything else -> `unmodelled` (reported with its measured time, never silently dropped).

Each kind is one handler registered for the op names it serves (`@register("softmax", ...)`, the
pattern of torch.utils.flop_counter's `register_flop_formula`); `classify` looks the op's name up
in `OPS` (see `handler_of`), so a new kind of op (backward ops, Triton kernels) is one registered
function. A handler takes an `OpCall` and returns the `Mapped` result, or None where the op is its
own but its shapes are not ones it models (-> `unmodelled`, naming the shapes).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seer.analytical.memory import ELEMENTWISE
from seer.workload.registry import Registry

GEMM_KINDS = ("linear", "bmm")
MEMORY_KINDS = ("elementwise", "softmax", "layer_norm", "embedding", "copy")
# kinds that launch a kernel seer times (norm, pool: training's batch norm and pooling, seer.workload.trace_ops;
# memcpy: a copy over the host link)
KERNEL_KINDS = (*GEMM_KINDS, "conv", *MEMORY_KINDS, "reduction", "concat", "norm", "pool", "memcpy")
# host_copy: a copy from or to pageable host memory, paced by the host's memcpy: kept at its measured time
KINDS = (*KERNEL_KINDS, "dispatch", "host_copy", "unmodelled")

# element-wise ops by the name PyTorch gives them (function, method, aten op or module)
UNARY = {
    "relu", "gelu", "tanh", "sigmoid", "exp", "log", "neg", "sqrt", "rsqrt", "abs", "erf", "sin", "cos",
    "silu", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu", "softplus", "mish", "relu6",
    "reciprocal", "square", "clamp", "clamp_min", "clamp_max", "pow", "sign", "floor", "ceil", "round",
}  # fmt: skip
BINARY = {"add": "add", "sub": "sub", "rsub": "sub", "mul": "mul", "div": "div", "truediv": "div",
          "floordiv": "div", "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne",
          "lt": "lt", "gt": "gt", "le": "le", "ge": "ge", "masked_fill": "where", "where": "where",
          "addcmul": "addcmul", "addcdiv": "addcdiv", "lerp": "lerp"}  # fmt: skip
# fns of each arity the memory model knows by name (seer.analytical.memory.ELEMENTWISE)
ARITY_STAND_IN = {1: "copy", 2: "add", 3: "where"}
SHAPE_ONLY = {
    "size", "view", "reshape", "getitem", "getattr", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "expand", "expand_as", "split", "chunk", "unbind", "select", "slice", "narrow", "flatten", "unflatten",
    "as_strided", "alias", "detach", "dropout", "identity", "finfo", "type", "to", "_unsafe_view",
    "numel", "dim", "is_contiguous", "stride", "lift_fresh", "contiguous_view", "resolve_conj", "empty",
    "empty_strided", "output", "placeholder", "get_attr", "sym_size", "_reshape_alias", "view_as",
}  # fmt: skip
GEMM_2D = {"addmm", "mm", "linear", "conv1d_hf", "addmm_", "_addmm_activation"}
GEMM_BATCHED = {"bmm", "baddbmm"}
CONV = {"conv2d", "convolution", "_convolution", "cudnn_convolution", "conv"}
SOFTMAX = {"softmax", "_softmax", "log_softmax", "_log_softmax", "safe_softmax", "_safe_softmax"}
LAYER_NORM = {"layer_norm", "native_layer_norm", "layernorm"}
EMBEDDING = {"embedding"}
GATHER = {"gather", "take"}
COPY = {"contiguous", "copy_", "clone", "copy", "_to_copy", "cat_copy"}
FILL = {"full", "fill_", "zero_", "zeros", "ones", "arange", "zeros_like", "ones_like", "full_like", "fill"}
REDUCTION = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm", "var", "std", "prod", "any",
             "all", "logsumexp", "cumsum", "topk", "sort"}  # fmt: skip
CONCAT = {"cat", "concat", "stack"}
NORM_INFERENCE = {"batch_norm", "batchnorm2d", "cudnn_batch_norm", "native_batch_norm", "_native_batch_norm_legit",
                  "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
                  "_native_batch_norm_legit_no_stats"}  # fmt: skip
# module classes (torch.nn, transformers) -> the op they run
MODULES = {
    "linear": "linear", "embedding": "embedding", "layernorm": "layer_norm", "dropout": "dropout",
    "conv1d": "conv1d_hf", "conv2d": "conv2d", "gelu": "gelu", "geluactivation": "gelu",
    "newgeluactivation": "gelu", "fastgeluactivation": "gelu", "relu": "relu", "tanh": "tanh",
    "sigmoid": "sigmoid", "silu": "silu", "softmax": "softmax", "identity": "identity",
    "batchnorm2d": "batch_norm", "batchnorm1d": "batch_norm",
}  # fmt: skip


@dataclass(frozen=True)
class Mapped:
    """What seer does with one op: its kind and, for kinds it times, a seer config.

    An op that launches several kernels (a backward: a linear's two GEMMs) has them as `parts`,
    each a Mapped with its own config; its time is theirs summed, its `config` the first part's."""

    kind: str
    config: dict | None = None
    why: str = ""  # for unmodelled ops: what was missing
    parts: tuple[Mapped, ...] = ()
    label: str = ""  # what this kernel is, where the op's name does not say (dgrad, wgrad, ...)

    @property
    def kernels(self) -> tuple[Mapped, ...]:
        """The kernels seer times for this op: its parts, or itself."""
        return self.parts or ((self,) if self.config is not None else ())


@dataclass(frozen=True)
class OpCall:
    """One op as its handler sees it."""

    op: str  # the bare op name (`op_name`): add_, addmm, linear, ...
    name: str  # the name its handler is registered under: `op`, or `op` without its in-place `_`
    tensors: list[list[int]]  # the shapes of its tensor arguments
    out: list[int] | None  # the output's shape where known (graphs), None in a trace
    dtype: str = "float32"
    params: dict | None = None  # a trace's concrete arguments (convolutions: stride, padding, ...)

    @property
    def result(self) -> list[int] | None:
        """The result's shape: the output's, or the broadcast of the operands; None without any shape."""
        return self.out or (_broadcast(self.tensors) if self.tensors else None)

    def unmodelled(self, why: str) -> Mapped:
        return Mapped("unmodelled", why=f"{self.op}: {why}")


Handler = Callable[[OpCall], "Mapped | None"]
OPS: Registry[Handler] = Registry("op")  # op name -> the handler that maps it
register = OPS.register  # @register("name", ...) over a handler; a name already registered is refused


# name prefix -> handler: kernels a compiler generates and names per model (seer.workload.triton: triton_)
PREFIXES: dict[str, Handler] = {}


def handler_of(op: str) -> tuple[str, Handler | None]:
    """The name `op` is registered under and its handler (None: no handler). An op registered as
    it is spelt comes first (copy_, fill_, zero_, addmm_: in-place ops with their own rules), else
    the op without its in-place `_` (add_ -> add, relu_ -> relu), else a handler of its prefix
    (`PREFIXES`)."""
    name = op if op in OPS else op.rstrip("_")
    handler = OPS.get(name)
    if handler is None:
        prefix = next((p for p in PREFIXES if op.startswith(p)), None)
        if prefix is not None:
            return op, PREFIXES[prefix]
    return name, handler


def op_name(target: str, module: str = "") -> str:
    """The bare op name of an fx target, a method, an aten op or a module class:
    `<built-in method addmm of type object at 0x..>` -> addmm, `aten::add_` -> add_, `aten.add_.Tensor`
    (an OpOverload, as torch.export and make_fx name it) -> add_,
    `<function softmax at 0x..>` -> softmax, module `NewGELUActivation` -> gelu."""
    if module:
        low = module.lower()
        if low in MODULES:
            return MODULES[low]
        for part, op in (("rmsnorm", "layer_norm"), ("layernorm", "layer_norm"), ("gelu", "gelu"), ("relu", "relu")):
            if part in low:  # T5LayerNorm, LlamaRMSNorm, QuickGELUActivation, ...
                return op
        return low
    t = str(target).strip()
    m = re.match(r"<built-in (?:method|function) (\w+)", t) or re.match(r"<function (\w+)", t)
    if m:
        return m.group(1)
    m = re.match(r"<class '(?:[\w.]+\.)?(\w+)'>", t)
    if m:
        return m.group(1).lower()
    m = re.match(r"(?:aten|prims)\.(\w+)(?:\.\w+)?$", t)  # torch.export / make_fx: aten.addmm.default
    if m:
        return m.group(1)
    t = t.split("::")[-1]
    return t.split(".")[-1]


def _numel(shape: Sequence[int]) -> int:
    return math.prod(int(s) for s in shape)


def _tensors(shapes: Sequence) -> list[list[int]]:
    """Shapes of the tensor arguments (a scalar or a list argument has an empty or odd shape)."""
    out = []
    for s in shapes or []:
        if isinstance(s, (list, tuple)) and s and all(isinstance(x, (int, float)) and x >= 0 for x in s):
            out.append([int(x) for x in s])
    return out


def _broadcast(shapes: list[list[int]]) -> list[int]:
    nd = max(len(s) for s in shapes)
    padded = [[1] * (nd - len(s)) + s for s in shapes]
    return [max(col) for col in zip(*padded)]


def _rows_cols(shape: Sequence[int]) -> dict:
    shape = [int(s) for s in shape] or [1]
    return {"rows": max(_numel(shape[:-1]), 1), "cols": max(shape[-1], 1)}


def _elementwise(name: str, tensors: list[list[int]], out: list[int], dtype: str) -> Mapped:
    """The element-wise kernel whose memory traffic matches: operands as large as the result
    (at least half its size) are streamed; scalars and small broadcast operands are cached."""
    n_out = _numel(out)
    streamed = sum(1 for s in tensors if _numel(s) * 2 >= n_out)
    arity = max(1, min(streamed, 3))
    base = name.rstrip("_")
    if arity == 1 and base in UNARY and base in ELEMENTWISE:
        fn = base
    elif (
        arity >= 2 and base in BINARY and arity == (3 if BINARY[base] in ("where", "addcmul", "addcdiv", "lerp") else 2)
    ):
        fn = BINARY[base]
    else:
        fn = ARITY_STAND_IN[arity]
    return Mapped("elementwise", {"op": "elementwise", "fn": fn, **_rows_cols(out), "dtype": dtype})


def _gemm_2d(name: str, t: list[list[int]], out: list[int] | None) -> dict | None:
    """linear config: m rows x k -> n of a 2-D GEMM (bias and the activation's leading sizes
    folded into m)."""
    if name in ("addmm", "addmm_", "_addmm_activation") and len(t) >= 3:
        a, b = t[-2], t[-1]
    elif name == "mm" and len(t) >= 2:
        a, b = t[0], t[1]
    elif name == "linear" and len(t) >= 2 and len(t[1]) == 2:  # aten::linear(x, W[n, k], b)
        a, b = t[0], [t[1][1], t[1][0]]
    elif name in ("linear", "conv1d_hf") and t and out:  # a module call: only x is an argument
        a, b = t[0], [t[0][-1], out[-1]]
    else:
        return None
    if len(b) != 2 or not a:
        return None
    return {"op": "linear", "batch": 1, "m": max(_numel(a[:-1]), 1), "k": a[-1], "n": b[1]}


def _gemm_batched(name: str, t: list[list[int]]) -> dict | None:
    if name == "baddbmm" and len(t) >= 3:
        t = t[-2:]
    if len(t) < 2 or len(t[0]) < 2 or len(t[1]) < 2:
        return None
    a, b = t[0], t[1]
    if len(b) == 2:  # x @ W: one GEMM over every row of x
        return {"op": "linear", "batch": 1, "m": max(_numel(a[:-1]), 1), "k": a[-1], "n": b[-1]}
    batch = _numel(_broadcast([a[:-2], b[:-2]])) if len(a) > 2 or len(b) > 2 else 1
    return {"op": "bmm", "batch": max(batch, 1), "m": a[-2], "k": a[-1], "n": b[-1]}


def _conv(t: list[list[int]], out: list[int] | None, params: dict | None) -> dict | None:
    """conv_fwd config of x[N, C, H, W] * w[K, C/g, R, S]; stride and padding from `params`
    (a trace's concrete arguments) or, failing that, from the output's size."""
    if len(t) < 2 or len(t[0]) != 4 or len(t[1]) != 4:
        return None
    (n, c, h, w), (k, cg, r, s) = t[0], t[1]
    p = dict(params or {})
    groups = int(p.get("groups", max(c // max(cg, 1), 1)))
    if "stride" in p:
        sh, sw = p["stride"]
        ph, pw = p.get("padding", (0, 0))
        dh, dw = p.get("dilation", (1, 1))
    elif out and len(out) == 4:
        oh, ow = out[2], out[3]
        sh, sw = max(round(h / oh), 1), max(round(w / ow), 1)
        ph, pw = max(((oh - 1) * sh + r - h + 1) // 2, 0), max(((ow - 1) * sw + s - w + 1) // 2, 0)
        dh = dw = 1
    else:  # no output shape and no arguments: stride 1, "same" padding
        sh = sw = dh = dw = 1
        ph, pw = r // 2, s // 2
    return {
        "op": "conv_fwd", "batch": n, "c_in": c, "h_in": h, "w_in": w, "c_out": k, "kh": r, "kw": s,
        "stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "dil_h": dh, "dil_w": dw, "groups": groups,
    }  # fmt: skip


# where stride, padding, dilation and groups lie among a convolution op's arguments
_CONV_ARGS = {
    "conv2d": {"stride": 3, "padding": 4, "dilation": 5, "groups": 6},
    "convolution": {"stride": 3, "padding": 4, "dilation": 5, "groups": 8},
    "_convolution": {"stride": 3, "padding": 4, "dilation": 5, "groups": 8},
    "cudnn_convolution": {"padding": 2, "stride": 3, "dilation": 4, "groups": 5},
}


def conv_params(name: str, concrete: Sequence) -> dict | None:
    """stride, padding, dilation, groups of a convolution from a trace's `Concrete Inputs`
    (strings such as '[2, 2]' and '1'); None where the trace has not recorded them."""
    where = _CONV_ARGS.get(op_name(name))
    if not where or not concrete:
        return None
    out: dict = {}
    for key, i in where.items():
        text = str(concrete[i]).strip() if i < len(concrete) else ""
        nums = [int(x) for x in re.findall(r"-?\d+", text)]
        if not nums:
            return None
        out[key] = nums[0] if key == "groups" else (nums * 2)[:2]
    return out


# ---- handlers: one per kind, registered for the op names it serves ------------------------------------------------


def _shaped(fn: Callable[[OpCall, list[int]], Mapped | None]) -> Handler:
    """A handler that needs the result's shape (`OpCall.result`): an op without any tensor shape is
    unmodelled ("no tensor shapes") before it is called."""

    @functools.wraps(fn)
    def handler(c: OpCall) -> Mapped | None:
        result = c.result
        return c.unmodelled("no tensor shapes") if result is None else fn(c, result)

    return handler


@register(*SHAPE_ONLY)
def _shape_only(c: OpCall) -> Mapped | None:
    return Mapped("dispatch")  # no kernel, only the framework's host time


@register(*GEMM_2D)
def _linear(c: OpCall) -> Mapped | None:
    cfg = _gemm_2d(c.name, c.tensors, c.out)
    return Mapped("linear", cfg) if cfg else None


@register(*GEMM_BATCHED, "matmul")
def _batched(c: OpCall) -> Mapped | None:
    cfg = _gemm_batched(c.name, c.tensors)
    if cfg is None:
        return None
    return Mapped("bmm" if cfg["op"] == "bmm" else "linear", cfg)


@register(*CONV)
def _convolution(c: OpCall) -> Mapped | None:
    cfg = _conv(c.tensors, c.out, c.params)
    return Mapped("conv", cfg) if cfg else None


@register(*SOFTMAX)
@_shaped
def _softmax(c: OpCall, result: list[int]) -> Mapped | None:
    return Mapped("softmax", {"op": "softmax", **_rows_cols(result), "dtype": c.dtype})


@register(*LAYER_NORM)
@_shaped
def _layer_norm(c: OpCall, result: list[int]) -> Mapped | None:
    x = c.tensors[0] if c.tensors else result
    return Mapped("layer_norm", {"op": "layer_norm", **_rows_cols(x), "dtype": c.dtype})


@register(*EMBEDDING)
@_shaped
def _embedding(c: OpCall, result: list[int]) -> Mapped | None:
    """A gather: the rows of the table read, the output written."""
    t, out = c.tensors, c.out
    if out:
        rows, dim = _numel(out[:-1]), out[-1]
    elif len(t) >= 2:  # aten::embedding(weight[V, D], indices)
        rows, dim = _numel(t[1]), t[0][-1]
    else:
        return None
    return Mapped("embedding", {"op": "elementwise", "fn": "copy", "rows": max(rows, 1), "cols": dim, "dtype": c.dtype})


@register(*GATHER)
@_shaped
def _gather(c: OpCall, result: list[int]) -> Mapped | None:
    """The result has the index's shape: a gather of that many elements."""
    idx = c.out or (c.tensors[-1] if c.tensors else None)
    if not idx:
        return None
    return Mapped("embedding", {"op": "elementwise", "fn": "copy", **_rows_cols(idx), "dtype": c.dtype})


@register(*COPY)
@_shaped
def _copy(c: OpCall, result: list[int]) -> Mapped | None:
    """A unary stream of the source; where a trace says the copy crossed the host link
    (`params["memcpy"]` h2d or d2h), seer's memcpy over PCIe, or, from or to pageable host memory
    (staged through a pinned buffer by the host's own memcpy), the host's time: kind host_copy,
    kept as measured like the host's other gaps."""
    t = c.tensors
    src = t[-1] if c.name == "copy_" and len(t) >= 2 else (t[0] if t else result)
    link = (c.params or {}).get("memcpy")
    if link in ("h2d", "d2h"):
        if (c.params or {}).get("pageable"):
            return Mapped("host_copy", why=f"{c.op}: {link} copy from pageable host memory (the host's memcpy)")
        return Mapped("memcpy", {"op": "memcpy", "fn": link, **_rows_cols(src), "dtype": c.dtype}, label=link)
    return Mapped("copy", {"op": "elementwise", "fn": "copy", **_rows_cols(src), "dtype": c.dtype})


@register(*REDUCTION)
@_shaped
def _reduction(c: OpCall, result: list[int]) -> Mapped | None:
    """One pass over the input; the result is small."""
    x = c.tensors[0] if c.tensors else result
    return Mapped("reduction", {"op": "elementwise", "fn": "fill", **_rows_cols(x), "dtype": c.dtype})


@register(*CONCAT)
@_shaped
def _concat(c: OpCall, result: list[int]) -> Mapped | None:
    t = c.tensors
    if c.out is None:  # a trace: the inputs laid end to end
        cols = t[0][-1] if t else 1
        result = [sum(_numel(x) for x in t) // max(cols, 1), cols]
    return Mapped("concat", {"op": "concat", **_rows_cols(result), "dtype": c.dtype})


@register(*FILL)
@_shaped
def _fill(c: OpCall, result: list[int]) -> Mapped | None:
    return Mapped("elementwise", {"op": "elementwise", "fn": "fill", **_rows_cols(result), "dtype": c.dtype})


@register(*UNARY, *BINARY)
@_shaped
def _pointwise(c: OpCall, result: list[int]) -> Mapped | None:
    return _elementwise(c.name, c.tensors, result, c.dtype)


@register("native_dropout")
@_shaped
def _native_dropout(c: OpCall, result: list[int]) -> Mapped | None:
    """aten::native_dropout (a training graph's dropout): an element-wise stream. Only that exact
    name; an in-place spelling (`native_dropout_`, no PyTorch op) stays without a predictor."""
    if c.op != c.name:
        return c.unmodelled("no predictor")
    return _elementwise(c.name, c.tensors, result, c.dtype)


def classify(
    name: str,
    input_shapes: Sequence,
    output_shape: Sequence[int] | None = None,
    *,
    module: str = "",
    dtype: str = "float32",
    params: dict | None = None,
) -> Mapped:
    """The kind of one op and the seer config that times it (see the module docstring).

    `name` is an fx target, a method name or an aten op (`aten::` optional); `module` the class of
    a called module (Linear, LayerNorm, ...), which wins over `name`; `input_shapes` the shapes of
    the arguments ([] for a non-tensor one); `output_shape` where known (graphs) or None (traces:
    the result of an element-wise op is then the broadcast of its operands)."""
    op = op_name(name, module)
    key, handler = handler_of(op)
    out = [int(x) for x in output_shape] if output_shape and all(int(x) >= 0 for x in output_shape) else None
    dtype = str(dtype or "float32").replace("torch.", "") or "float32"
    call = OpCall(op, key, _tensors(input_shapes), out, dtype, params)
    if handler is not None:
        mapped = handler(call)
        return mapped if mapped is not None else call.unmodelled(f"shapes {call.tensors}")
    return call.unmodelled("no tensor shapes" if call.result is None else "no predictor")
