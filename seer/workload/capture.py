"""A live PyTorch model as an op table, captured on the CPU without weights; and its time on a GPU.

`capture(module, inputs)` traces the model with AOTAutograd (`aot_export_module`) on fake tensors:
every ATen op it would launch, with the shapes of its arguments and result, and nothing computed
or allocated (a model built under `fake_mode()` has no weights at all). Inference is the forward
graph (no_grad, eval mode); training (`training=True`) is the joint forward/backward graph
AOTAutograd builds, so the backward ops are PyTorch's own autograd formulas, not seer's rules;
the loss is a cross-entropy of the output's logits (or the sum of an output without classes),
and the optimizer step (seer.workload.optimizer) follows. Each ATen op is mapped by
seer.workload.ops.classify (with seer.workload.aten for the ops only a captured graph has), the
same op table graphs and profiler traces give, so `predict_model` times it on any GPU seer has
or transfers fits for, per op and whole model (seer.workload.estimate).

torch is imported inside the functions: `import seer` stays light.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from seer.errors import SeerError
from seer.workload.estimate import dispatch_for, predict_ops, times_calls, whole_model
from seer.workload.model_time import ModelTime, shapes_text
from seer.workload.ops import Mapped, classify, op_name
from seer.workload.optimizer import optimizer_passes
from seer.workload.trace_ops import named_args

WRAPPER = "module"  # the attribute the captured step holds the model under (stripped from sites)
SKIP = {"getitem", "detach"}  # tracing bookkeeping (tuple items, tensors autograd saves): no call in eager
CONV_ARGS = {  # where stride, padding, dilation, groups lie among a convolution op's arguments
    "convolution": (3, 4, 5, 8),
    "convolution_backward": (4, 5, 6, 9),
}


def require_torch() -> Any:
    """torch, or a SeerError saying how to install it (the `torch` extra)."""
    try:
        import torch
    except ImportError:
        raise SeerError(
            "capturing a model needs PyTorch: pip install 'seer[torch]' (pip install torch==2.13.0 for the CPU build)"
        ) from None
    return torch


def fake_mode() -> Any:
    """A FakeTensorMode to build a model in: its parameters have shapes and dtypes but no storage,
    so a model of any size costs no memory (`with fake_mode(): model = Net()`)."""
    require_torch()
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


@dataclass
class Capture:
    """One captured step: its op table (one row per ATen op, in execution order) and what the
    optimizer updates."""

    ops: pd.DataFrame
    parameters: list[tuple[list[int], str]] = field(default_factory=list)  # trainable ones: shape, dtype
    training: bool = False
    graph: Any = None  # the fx GraphModule AOTAutograd built
    frozen: list[str] = field(default_factory=list)  # tied parameters left without a gradient (see _joint)

    @property
    def parameter_count(self) -> int:
        return sum(math.prod(s) for s, _ in self.parameters)


def _dtype(t: Any) -> str:
    return str(t.dtype).replace("torch.", "")


def _vals(a: Any) -> list:
    """The fake tensors (`meta['val']`) of an argument: a node, or a list of nodes."""
    import torch.fx

    if isinstance(a, torch.fx.Node):
        v = a.meta.get("val")
        return [v] if hasattr(v, "shape") else []
    if isinstance(a, (list, tuple)):
        return [v for x in a for v in _vals(x)]
    return []


def _scalar(a: Any) -> Any:
    """A non-tensor argument as a plain value (None where it is a node)."""
    import torch.fx

    if isinstance(a, torch.fx.Node):
        return None
    if isinstance(a, (list, tuple)):
        return [_scalar(x) for x in a]
    return a if isinstance(a, (int, float, bool, str)) or a is None else str(a)


def _site(node: Any) -> str:
    """The innermost module the op ran in (its path in the model), '' where outside any."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = str(list(stack.values())[-1][0])
    for prefix in (f"L['self'].{WRAPPER}.", f"{WRAPPER}.", "L['self']."):
        path = path.removeprefix(prefix)
    return "" if path in (WRAPPER, "L['self']") else path


def op_row(node: Any) -> dict | None:
    """The op table's row of one graph node (None: not an ATen op, or bookkeeping)."""
    import torch

    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return None
    name = str(node.target)
    op = op_name(name)
    if op in SKIP:
        return None
    tensors = [v for a in node.args for v in _vals(a)]
    out_val = node.meta.get("val")
    outs = [out_val] if hasattr(out_val, "shape") else [v for v in (out_val or ()) if hasattr(v, "shape")]
    out = [int(s) for s in outs[0].shape] or [1] if outs else None  # a 0-d result: one element
    floats = [t for t in [*outs, *tensors] if t.dtype.is_floating_point]
    dtype = _dtype(floats[0]) if floats else "float32"
    params: dict = named_args(name, [None if _vals(a) else _scalar(a) for a in node.args])
    if op in CONV_ARGS:
        where = CONV_ARGS[op]
        stride, padding, dilation, groups = (node.args[i] if i < len(node.args) else None for i in where)
        if stride is not None and padding is not None and dilation is not None and groups is not None:
            params.update(stride=(list(stride) * 2)[:2], padding=(list(padding) * 2)[:2])
            params.update(dilation=(list(dilation) * 2)[:2], groups=int(groups))
    shapes = [[int(s) for s in t.shape] for t in tensors]
    m = classify(name, shapes, out, dtype=dtype, params=params)
    return {
        "name": node.name,
        "op": op,
        "target": name,
        "site": _site(node),
        "shapes": shapes_text(shapes),
        "input_shapes": shapes,
        "output_shape": out,
        "dtype": dtype,
        "kind": m.kind,
        "config": m.config,
        "parts": m.parts,
        "why": m.why,
    }


def default_loss(out: Any) -> Any:
    """Cross-entropy of the first floating output taken as logits (classes on its last dimension,
    class 0 as every target), as cudnn_bench.torch_traces trains; the sum of a 1-D output."""
    import torch

    t = first_tensor(out)
    if t.dim() >= 2:
        logits = t.reshape(-1, t.shape[-1])
        target = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        return torch.nn.functional.cross_entropy(logits, target)
    return t.sum()


def _leaves(out: Any) -> list:
    import torch
    from torch.utils._pytree import tree_leaves

    if hasattr(out, "to_tuple"):  # a Hugging Face ModelOutput
        out = out.to_tuple()
    return [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]


def first_tensor(out: Any) -> Any:
    tensors = [t for t in _leaves(out) if t.dtype.is_floating_point]
    if not tensors:
        raise SeerError("the model's output has no floating-point tensor to take a loss of")
    return tensors[0]


@contextlib.contextmanager
def _hf_tracing() -> Iterator[None]:
    """Hugging Face's mask code asks a tensor's values (packed sequences; whether a padding mask is
    all ones, to drop it) unless it sees a tracer it knows; under AOTAutograd it does not. Both
    checks are answered without the values: no packed sequences, and a mask given is kept (the
    model then adds it in every layer, as the measured graphs do)."""
    try:
        import transformers.masking_utils as mu
    except ImportError:
        yield
        return
    patches = {
        "find_packed_sequence_indices": lambda *a, **k: None,
        "_ignore_bidirectional_mask_sdpa": lambda *a, **k: False,
    }
    saved = {name: getattr(mu, name) for name in patches if hasattr(mu, name)}
    for name in saved:
        setattr(mu, name, patches[name])
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(mu, name, fn)


def _fake_mode_of(module: Any) -> Any:
    from torch._subclasses.fake_tensor import FakeTensor

    for t in [*module.parameters(), *module.buffers()]:
        if isinstance(t, FakeTensor):
            return t.fake_mode
    return None


def _as_tuple(inputs: Any) -> tuple:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def capture(
    module: Any,
    example_inputs: Any,
    *,
    training: bool = False,
    loss: Callable[[Any], Any] | None = None,
) -> Capture:
    """The ATen ops of one inference pass (training: forward, loss and backward) of `module` on
    `example_inputs` (a tensor or a tuple of them: real, fake or meta; only their shapes count).
    A model on the meta device gets fake parameters (no memory); its mode is left as it was."""
    torch = require_torch()

    if any(t.device.type == "meta" for t in [*module.parameters(), *module.buffers()]):
        with fake_mode():
            module.to_empty(device="cpu")
    mode = _fake_mode_of(module)
    inputs = _as_tuple(example_inputs)
    if mode is not None or any(getattr(x, "device", None) is not None and x.device.type == "meta" for x in inputs):
        mode = mode or fake_mode()
        inputs = tuple(_to_fake(mode, x) for x in inputs)
    was_training = module.training
    module.train(training)
    try:
        with _hf_tracing():
            loss_name: str | None = None
            frozen: list[str] = []
            if training:
                gm, loss_name, frozen = _joint(torch, module, inputs, loss or default_loss)
            else:
                gm = _forward_graph(module, inputs, mode)
    except SeerError:
        raise
    except Exception as exc:  # PyTorch's tracing errors: say which model and why, in one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SeerError(f"could not capture {type(module).__name__}: {type(exc).__name__}: {first}") from exc
    finally:
        module.train(was_training)
    rows = _rows(gm, loss_name)
    params = [([int(s) for s in p.shape], _dtype(p)) for p in module.parameters() if p.requires_grad]
    return Capture(pd.DataFrame(rows), params if training else [], training, gm, frozen)


def _joint(torch: Any, module: Any, inputs: tuple, loss: Callable[[Any], Any]) -> tuple[Any, str | None, list[str]]:
    """AOTAutograd's joint forward/backward graph of the model and its loss, the loss node's name
    and the tied parameters it had to leave without a gradient.

    AOTAutograd gives every registered name of a tied parameter its own gradient and refuses a
    name the forward never reads (BERT's `cls.predictions.bias`, tied to the decoder's bias that
    the forward does read). Then each group of tied names is frozen in turn, the smallest first,
    until the export succeeds; the names are reported (a bias: one column sum and its optimizer
    passes fewer, about 0.1% of a step)."""
    from torch._functorch.aot_autograd import aot_export_module

    step = _step_class(torch)(module, loss)
    tied: dict[int, list[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        tied.setdefault(id(p), []).append(name)
    by_name = dict(module.named_parameters(remove_duplicate=False))
    groups = sorted((names for names in tied.values() if len(names) > 1), key=lambda n: by_name[n[0]].numel())
    for frozen in ([], *[[g] for g in groups]):
        for names in frozen:
            by_name[names[0]].requires_grad_(False)
        try:
            gm, sig = aot_export_module(step, inputs, trace_joint=True, output_loss_index=0)
        except AssertionError as exc:
            if "did not receive a gradient" not in str(exc) or frozen == groups[-1:]:
                raise
            continue
        finally:
            for names in frozen:
                by_name[names[0]].requires_grad_(True)
        # the step returns only the loss: its one user output (the signature's loss_output counts
        # the buffers a batch norm updates first, and names one of those)
        return gm, (sig.user_outputs[0] if sig.user_outputs else None), [n for g in frozen for n in g]
    raise AssertionError("unreachable")


def _to_fake(mode: Any, x: Any) -> Any:
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    if not isinstance(x, torch.Tensor) or isinstance(x, FakeTensor):
        return x
    if x.device.type == "meta":
        with mode:
            return torch.empty(x.shape, dtype=x.dtype, device="cpu")
    return mode.from_tensor(x)


def _forward_graph(module: Any, inputs: tuple, mode: Any) -> Any:
    """The inference graph: make_fx of the forward on fake inputs (real parameters are faked as
    the ops meet them: nothing is computed), without functionalization, which would add copies
    eager PyTorch never makes (a dropout at inference returns its input, functionalized a clone)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    mode = mode or fake_mode()
    inputs = tuple(_to_fake(mode, x) for x in inputs)
    with mode, torch.no_grad():
        return make_fx(_outputs_class(torch)(module))(*inputs)


def _outputs_class(torch: Any) -> Any:
    class Outputs(torch.nn.Module):
        """The model with its outputs as a flat tuple of tensors (a ModelOutput, a dict, ...)."""

        def __init__(self, module: Any) -> None:
            super().__init__()
            self.module = module  # WRAPPER

        def forward(self, *args: Any) -> tuple:
            return tuple(_leaves(self.module(*args)))

    return Outputs


def _step_class(torch: Any) -> Any:
    class Step(torch.nn.Module):
        """The model and its loss: what AOTAutograd traces for a training step."""

        def __init__(self, module: Any, loss: Callable[[Any], Any]) -> None:
            super().__init__()
            self.module = module  # WRAPPER
            self.step_loss = loss

        def forward(self, *args: Any) -> tuple:
            return (self.step_loss(self.module(*args)),)

    return Step


def _rows(gm: Any, loss: str | None) -> list[dict]:
    """The op table's rows in graph order; in a joint graph the ops after the loss are backward."""
    rows, direction = [], "forward"
    for node in gm.graph.nodes:
        row = op_row(node)
        if row is not None:
            rows.append({**row, "direction": direction})
        if loss is not None and node.name == loss:
            direction = "backward"
    return rows


def step_table(cap: Capture, optimizer: str | None = "sgd") -> pd.DataFrame:
    """The captured ops with, for a training step, the optimizer's passes after them, in the
    columns seer.workload.estimate reads."""
    ops = cap.ops.copy()
    if cap.training and optimizer:
        extra = []
        for label, m in optimizer_passes(cap.parameters, optimizer):
            extra.append(_optimizer_row(optimizer, label, m))
        ops = pd.concat([ops, pd.DataFrame(extra)], ignore_index=True)
    return ops.assign(part="block", count=1, measured_ms=math.nan)


def _optimizer_row(optimizer: str, label: str, m: Mapped) -> dict:
    cfg = m.config or {}
    return {
        "name": f"{optimizer}: {label}",
        "op": f"_foreach ({optimizer})",
        "target": "",
        "site": "optimizer",
        "shapes": f"{cfg.get('rows')}x{cfg.get('cols')}",
        "input_shapes": [],
        "output_shape": None,
        "dtype": cfg.get("dtype", ""),
        "kind": m.kind,
        "config": cfg,
        "parts": (m,),
        "why": "",
        "direction": "optimizer",
    }


COLUMNS = ["name", "site", "shapes", "kind", "direction", "count", "measured_ms", "predicted_ms", "predictor"]
COLUMNS += ["extrapolated", "why", "op", "dtype", "config"]


def predict_capture(
    cap: Capture,
    gpu: str | None = "h100-sxm",
    *,
    fits: Any = None,
    optimizer: str | None = "sgd",
    dispatch_ms: float | None = None,
    source: str = "model",
) -> ModelTime:
    """A captured step's time on `gpu` (its own or transferred fits): per op and whole model."""
    from seer.predict import load_or_transfer

    fits = fits or load_or_transfer(gpu or "h100-sxm")
    dispatch_ms = dispatch_for(fits.gpu) if dispatch_ms is None else dispatch_ms
    ops = predict_ops(step_table(cap, optimizer), fits, dispatch_ms)
    w = whole_model(ops, dispatch_ms, times_calls(fits))
    totals = {"predicted_ms": w.replay_ms, "kernel_sum_ms": w.kernel_sum_ms, "unmodelled_ms": w.unmodelled_ms}
    if w.by_direction:
        totals["predicted_ms_forward"] = w.by_direction["forward"]
        for d in ("forward", "backward", "optimizer"):
            rows = ops[ops["direction"] == d]
            totals[f"kernel_sum_ms_{d}"] = float(rows["predicted_ms"].where(rows["kind"] != "dispatch", 0).sum())
        totals["predicted_ms_backward"] = w.by_direction["backward"]
    totals["parameters"] = float(cap.parameter_count)
    notes = (
        [f"tied parameters left without a gradient (AOTAutograd refuses a name the forward never reads): "
         f"{', '.join(cap.frozen)}"] if cap.frozen else []
    )  # fmt: skip
    from seer.predict.resolve import provenance

    return ModelTime(
        Path(source), fits.gpu.name, "", ops[COLUMNS].reset_index(drop=True), totals, notes=notes, fits=provenance(fits)
    )


def predict_model(
    module: Any,
    example_inputs: Any,
    gpu: str | None = "h100-sxm",
    *,
    training: bool = False,
    optimizer: str | None = "sgd",
    loss: Callable[[Any], Any] | None = None,
    fits: Any = None,
    dispatch_ms: float | None = None,
    source: str | None = None,
) -> ModelTime:
    """How long `module` takes on `gpu` for `example_inputs`: one inference pass, or (training)
    forward, loss, backward and the optimizer's step (`sgd`, `sgd-plain`, `adam`, `adamw`; None:
    none). Captured on the CPU without weights (`capture`); the same ModelTime as graphs and traces."""
    cap = capture(module, example_inputs, training=training, loss=loss)
    return predict_capture(
        cap, gpu, fits=fits, optimizer=optimizer, dispatch_ms=dispatch_ms, source=source or type(module).__name__
    )


def load_factory(spec: str) -> tuple[Any, Any]:
    """(module, example inputs) from 'package.module:function' (the function returns them)."""
    import importlib

    mod_name, _, fn_name = spec.partition(":")
    if not mod_name or not fn_name:
        raise SeerError(f"--python {spec!r}: expected package.module:function returning (model, example_inputs)")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name)
    except (ImportError, AttributeError) as exc:
        raise SeerError(f"--python {spec!r}: {exc}") from None
    made = fn()
    if not isinstance(made, tuple) or len(made) != 2:
        raise SeerError(f"--python {spec!r}: {fn_name}() must return (model, example_inputs)")
    return made
