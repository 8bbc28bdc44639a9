"""The optimizer step of a training step: memory-bound passes over the parameters.

PyTorch's optimizers (the default `foreach` implementation) update every parameter tensor with a
few multi-tensor kernels, each one element-wise pass over all the parameters (and their state).
seer times each pass as one element-wise stream of the parameters' total size, with the number of
tensors it reads and writes (seer.analytical.memory.ELEMENTWISE: `copy` reads one and writes one,
`add` reads two, `addcdiv` three). The passes are those of torch.optim's foreach code:

- `sgd` (momentum 0.9, as cudnn_bench.torch_traces trains): buf *= momentum; buf += g;
  p -= lr * buf (three passes; the first step's buffer initialisation is not counted).
- `sgd-plain` (no momentum): p -= lr * g (one pass).
- `adam` (and `adamw`, whose decay is one more pass over p): m = lerp(m, g); v *= beta2;
  v += (1 - beta2) g^2; d = sqrt(v); d /= bias correction; d += eps; p -= step * m / d.

A multi-tensor kernel handles many tensors per launch, so a pass is one kernel here; the state
is in the parameters' dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from seer.errors import SeerError
from seer.workload.ops import Mapped

# (what the pass does, the element-wise function of its traffic)
PASSES: dict[str, tuple[tuple[str, str], ...]] = {
    "sgd": (("buf *= momentum", "copy"), ("buf += g", "add"), ("p -= lr * buf", "add")),
    "sgd-plain": (("p -= lr * g", "add"),),
    "adam": (
        ("m = lerp(m, g)", "add"),
        ("v *= beta2", "copy"),
        ("v += (1 - beta2) g * g", "add"),
        ("d = sqrt(v)", "copy"),
        ("d /= bias correction", "copy"),
        ("d += eps", "copy"),
        ("p -= step * m / d", "addcdiv"),
    ),
}
PASSES["adamw"] = (("p *= 1 - lr * decay", "copy"), *PASSES["adam"])
OPTIMIZERS = tuple(PASSES)
WIDTH = 4096  # the parameters laid out as rows of this many elements (the memory model needs rows x cols)


def optimizer_passes(params: Sequence[tuple[Sequence[int], str]], optimizer: str = "sgd") -> list[tuple[str, Mapped]]:
    """(label, Mapped) of each pass of the optimizer's step over `params` (shape, dtype), one per
    pass and dtype; [] without parameters."""
    if optimizer not in PASSES:
        raise SeerError(f"optimizer {optimizer!r}: expected one of {', '.join(OPTIMIZERS)}")
    numel: dict[str, int] = {}
    for shape, dtype in params:
        numel[dtype] = numel.get(dtype, 0) + math.prod(int(s) for s in shape)
    out = []
    for dtype, n in numel.items():
        if not n:
            continue
        rows, cols = max(-(-n // WIDTH), 1), min(n, WIDTH)
        for label, fn in PASSES[optimizer]:
            cfg = {"op": "elementwise", "fn": fn, "rows": rows, "cols": cols, "dtype": dtype}
            out.append((label, Mapped("elementwise", cfg, label=label)))
    return out
