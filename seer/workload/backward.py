"""The kernels of an op's backward pass and of the accumulation of its parameters' gradients.

A training step runs each op's forward, then, in reverse order, its backward: the gradients of
its inputs (and parameters) from the gradient of its output. seer times a backward as the
kernels PyTorch's autograd formulas launch, each by a predictor seer already has, and says which
(`Mapped.label`):

- a GEMM y = x W (x: m x k, W: k x n) -> dgrad dx = dy W^T (m x n -> k) and wgrad dW = x^T dy
  (k rows x m -> n), each timed by the GEMM fits at its own sizes and tagged with its cuBLAS
  layout (`trans`: a linear's forward is `tn`, its dgrad `nn`, its wgrad `nt`). No fits tell
  layouts apart yet (NeuSight timed one per op; the harness times `nn` and `tn` but its models do
  not key on it), so every layout is timed as the one measured. Plus the bias gradient, a column
  sum of dy; a batched product likewise, per batch.
- a convolution -> dgrad, a convolution of dy with the transposed filter (K -> C channels over
  the output's size: the forward fits at those sizes), and wgrad, the same FLOPs and tensors as
  the forward (the forward's predictor stands in for it until the harness times wgrad kernels).
- memory-bound ops by their real traffic: an activation f(x) -> dx = dy * f'(x), one binary
  stream; softmax -> dx from y and dy (binary); layer or batch norm -> dx from dy and x (binary)
  plus the gamma/beta column sums (a reduction over dy and x); dropout -> dy * mask; a product
  x * y -> one kernel per streamed operand; add/sub -> no kernel (the gradient passes through);
  an embedding -> zeroing its table's gradient and adding the looked-up rows into it.
- gradient accumulation (`param.grad += g`, NeuSight's `acc_latency`) and plain optimizer
  passes -> one binary element-wise stream per parameter tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

from seer.analytical.memory import ELEMENTWISE
from seer.workload.ops import UNARY, Mapped, _numel

# ops whose backward launches no kernel: the gradient is passed on (or a view of it)
PASS_THROUGH = {"add", "sub", "rsub", "contiguous", "clone", "copy", "copy_", "_to_copy", "cat", "concat", "stack"}
PRODUCT = {"mul", "div", "truediv", "where", "masked_fill"}
NO_GRAD = {"eq", "ne", "lt", "gt", "le", "ge", "sign", "floor", "ceil", "round", "argmax", "argmin"}
NO_GRAD |= {"full", "fill_", "zero_", "zeros", "ones", "arange", "zeros_like", "ones_like", "full_like", "fill"}


def stream(fn: str, rows: int, cols: int, dtype: str, label: str, kind: str = "elementwise") -> Mapped:
    """One memory-bound kernel over rows x cols: the element-wise model's `fn`, labelled."""
    cfg = {"op": "elementwise", "fn": fn, "rows": max(int(rows), 1), "cols": max(int(cols), 1), "dtype": dtype}
    return Mapped(kind, cfg, label=label)


def compound(kind: str, parts: Sequence[Mapped]) -> Mapped:
    """An op of these kernels (its config the first's); no kernels: host time only (dispatch)."""
    parts = tuple(parts)
    return Mapped(kind, parts[0].config, parts=parts) if parts else Mapped("dispatch")


def gemm_backward(cfg: dict, *, dgrad: bool, wgrad: bool, bias: bool = False) -> tuple[Mapped, ...]:
    """dgrad and wgrad GEMMs (and the bias's column sum) of a linear or batched GEMM config."""
    kind = "bmm" if cfg["op"] == "bmm" else "linear"
    b, m, k, n = int(cfg.get("batch", 1)), int(cfg["m"]), int(cfg["k"]), int(cfg["n"])
    dtype = cfg.get("dtype")
    extra = {"dtype": dtype} if dtype else {}
    # cuBLAS's (column-major) transposes of each product: a linear's forward runs `tn`, a bmm's `nn`
    trans = {"dgrad": "nn", "wgrad": "nt"} if kind == "linear" else {"dgrad": "tn", "wgrad": "nt"}
    parts = []
    if dgrad:
        dx = {**cfg, "batch": b, "m": m, "k": n, "n": k, "trans": trans["dgrad"], **extra}
        parts.append(Mapped(kind, dx, label="dgrad"))
    if wgrad:
        dw = {**cfg, "batch": b, "m": k, "k": m, "n": n, "trans": trans["wgrad"], **extra}
        parts.append(Mapped(kind, dw, label="wgrad"))
    if bias:
        parts.append(stream("fill", b * m, n, dtype or "float32", "bias grad", kind="reduction"))
    return tuple(parts)


def conv_dgrad(cfg: dict) -> dict:
    """The convolution that computes dx: dy (K channels at the output's size) with the filter's
    transpose, back to C channels at the input's size. At stride 1 this is exact ("full" padding
    R-1-pad); at a larger stride it is the stride-1 convolution of the zero-interleaved dy,
    counted as the forward's FLOPs by keeping the forward's stride and sizes (its kernels work on
    the compact dy)."""
    out_h = (cfg["h_in"] + 2 * cfg["pad_h"] - cfg["dil_h"] * (cfg["kh"] - 1) - 1) // cfg["stride_h"] + 1
    out_w = (cfg["w_in"] + 2 * cfg["pad_w"] - cfg["dil_w"] * (cfg["kw"] - 1) - 1) // cfg["stride_w"] + 1
    swapped = {**cfg, "c_in": cfg["c_out"], "c_out": cfg["c_in"]}
    if cfg["stride_h"] == cfg["stride_w"] == 1:
        pad_h = cfg["dil_h"] * (cfg["kh"] - 1) - cfg["pad_h"]
        pad_w = cfg["dil_w"] * (cfg["kw"] - 1) - cfg["pad_w"]
        if pad_h >= 0 and pad_w >= 0:
            return {**swapped, "h_in": out_h, "w_in": out_w, "pad_h": pad_h, "pad_w": pad_w}
    return swapped  # the forward's geometry with the channels swapped: same FLOPs


def conv_backward(cfg: dict, *, dgrad: bool, wgrad: bool) -> tuple[Mapped, ...]:
    parts = []
    if dgrad:
        parts.append(Mapped("conv", conv_dgrad(cfg), label="dgrad"))
    if wgrad:
        parts.append(Mapped("conv", dict(cfg), label="wgrad as forward"))
    return tuple(parts)


def norm_backward(rows: int, cols: int, dtype: str) -> tuple[Mapped, ...]:
    """dx from dy and x (one binary stream) and the gamma/beta sums over dy and x (a reduction)."""
    return (
        stream("add", rows, cols, dtype, "dx"),
        stream("fill", 2 * rows, cols, dtype, "dgamma, dbeta", kind="reduction"),
    )


def embedding_backward(rows: int, dim: int, table_rows: int | None, dtype: str) -> tuple[Mapped, ...]:
    """Zero the table's gradient (table_rows x dim; the looked-up rows where the table's size is
    unknown), then add each looked-up row's gradient into it."""
    table = max(int(table_rows or rows), 1)
    return (stream("fill", table, dim, dtype, "zero table grad"), stream("add", rows, dim, dtype, "index add"))


def backward_of(m: Mapped, op: str, *, dgrad: bool = True, wgrad: bool = True, table_rows: int | None = None) -> Mapped:
    """The backward of a forward op (its Mapped and bare op name): the kernels its autograd
    formula launches as `parts`; kind `dispatch` where it launches none (host time only),
    `unmodelled` where seer has no rule. dgrad: the op's activation inputs need a gradient;
    wgrad: it has parameters (a linear's weight, a convolution's filter)."""
    cfg = m.config or {}
    dtype = str(cfg.get("dtype") or "float32")
    base = op.rstrip("_")
    if m.kind == "dispatch" or base in PASS_THROUGH or base in NO_GRAD:
        return Mapped("dispatch")
    if m.kind in ("linear", "bmm"):
        bias = m.kind == "linear" and base in ("addmm", "linear", "conv1d_hf", "_addmm_activation")
        parts = gemm_backward(cfg, dgrad=dgrad, wgrad=wgrad or m.kind == "bmm", bias=bias and wgrad)
        return Mapped(m.kind, parts[0].config, parts=parts) if parts else Mapped("dispatch")
    if m.kind == "conv":
        parts = conv_backward(cfg, dgrad=dgrad, wgrad=wgrad)
        return Mapped("conv", parts[0].config, parts=parts) if parts else Mapped("dispatch")
    if m.kind == "unmodelled":
        return m
    rows, cols = int(cfg.get("rows", 1)), int(cfg.get("cols", 1))
    if m.kind in ("layer_norm",) or base in ("batch_norm", "native_batch_norm", "cudnn_batch_norm"):
        return compound("layer_norm" if m.kind == "layer_norm" else m.kind, norm_backward(rows, cols, dtype))
    if m.kind == "embedding":
        return compound("embedding", embedding_backward(rows, cols, table_rows, dtype))
    if m.kind == "softmax":
        return compound("softmax", (stream("mul", rows, cols, dtype, "dx from y, dy"),))
    if m.kind == "reduction":  # the gradient broadcast back over the input
        return compound("elementwise", (stream("copy", rows, cols, dtype, "expand dy"),))
    if m.kind in ("copy", "concat"):
        return Mapped("dispatch")
    if m.kind == "elementwise":
        if base in PRODUCT:  # one kernel per streamed operand (at most two), of the forward's traffic
            streamed = min(max(ELEMENTWISE.get(str(cfg.get("fn")), (0, 2))[1] - 1, 1), 2)
            return compound("elementwise", (Mapped("elementwise", dict(cfg), label="d operand"),) * streamed)
        if base in UNARY or base in ("native_dropout", "dropout", "gelu"):
            return compound("elementwise", (stream("mul", rows, cols, dtype, "dy * f'(x)"),))
        return compound("elementwise", (Mapped("elementwise", dict(cfg), label="as forward"),))
    return Mapped("unmodelled", why=f"{op}: no backward rule for kind {m.kind}")


def accumulation(params: Sequence[Sequence[int]], dtype: str = "float32") -> Mapped:
    """param.grad += g over an op's parameters: one binary stream over all of them (kind dispatch
    where there are none). One pass, not one per tensor: NeuSight's per-node accumulation times
    do not grow with the number of tensors (a LayerNorm's two 1024-vectors take longer than a
    Linear's 1024x1024 weight and bias), so a per-tensor launch floor would double-count."""
    numel = sum(_numel(p) for p in params if p)
    if not numel:
        return Mapped("dispatch")
    width = int(params[0][-1]) if params[0] else 1
    rows = max(-(-numel // max(width, 1)), 1)
    return compound("elementwise", (stream("add", rows, width, dtype, "grad += g"),))
