"""Triton kernels of a compiled model (torch.compile's inductor), timed by their op instead of left unmodelled.

Inductor launches the kernels it generates through the driver (`cuLaunchKernel`, category
cuda_driver) inside a record_function named after the kernel (`triton_poi_fused_add_cos_sin_0`), so
seer.workload.kineto links each such kernel to that op, whose ``Input Dims`` are the kernel's tensor
arguments: its inputs and its outputs (the shared trace hta/triton_example_triton_example.json.gz:
three [10, 10] float tensors and the element count). What inductor's kernel names say:

- pointwise (`triton_poi_`), reduction (`triton_red_`), persistent reduction (`triton_per_`) and any
  other generated kernel but a template: memory-bound, one stream moving every tensor argument once
  (each input read, each output written), timed by the memory-bound model (trace_ops.moved) as
  kind `elementwise` (pointwise) or `reduction`;
- templates (`triton_tem_`) of a matrix product (`mm`, `addmm`, `bmm` among the fused names): a GEMM
  from its operands' shapes, [m, k] @ [k, n] (kind `linear`) or [b, m, k] @ [b, k, n] (`bmm`);
- other templates (convolution, attention): unmodelled, named.
"""

from __future__ import annotations

import math

from seer.hardware.dtypes import DTYPE_BYTES
from seer.workload.ops import PREFIXES, Mapped, OpCall
from seer.workload.trace_ops import moved

PREFIX = "triton_"
REDUCTIONS = ("triton_red_", "triton_per_")
TEMPLATE = "triton_tem_"
_GEMM_WORDS = {"mm", "addmm", "bmm", "baddbmm"}


def is_triton(name: str) -> bool:
    return str(name).removeprefix("aten::").startswith(PREFIX)


def _gemm(tensors: list[list[int]]) -> dict | None:
    """A template's product from its arguments: the first pair a @ b whose inner sizes agree, one
    whose result's shape is among the other arguments first (an addmm's bias can look like an operand)."""
    pairs = []
    for i, a in enumerate(tensors):
        for j, b in enumerate(tensors):
            if i == j or len(a) != len(b) or len(a) not in (2, 3) or a[-1] != b[-2]:
                continue
            if len(a) == 3 and a[0] != b[0]:
                continue
            out = [*a[:-1], b[-1]]
            pairs.append((not any(t == out for k, t in enumerate(tensors) if k not in (i, j)), i, j))
    if not pairs:
        return None
    _, i, j = min(pairs)
    a, b = tensors[i], tensors[j]
    if len(a) == 3:
        return {"op": "bmm", "batch": a[0], "m": a[1], "k": a[2], "n": b[2]}
    return {"op": "linear", "batch": 1, "m": a[0], "k": a[1], "n": b[1]}


def _triton(c: OpCall) -> Mapped | None:
    """Any `triton_*` op (registered by prefix, seer.workload.ops.PREFIXES)."""
    t = c.tensors
    if not t:
        return c.unmodelled("a Triton kernel without tensor shapes (record shapes)")
    if c.op.startswith(TEMPLATE):
        if not _GEMM_WORDS & set(c.op.split("_")):
            return c.unmodelled("a Triton template other than a matrix product")
        cfg = _gemm(t)
        if cfg is None:
            return None
        return Mapped("bmm" if cfg["op"] == "bmm" else "linear", {**cfg, "dtype": c.dtype}, label="triton template")
    nbytes = float(DTYPE_BYTES.get(c.dtype, 4)) * sum(math.prod(s) for s in t)
    kind = "reduction" if c.op.startswith(REDUCTIONS) else "elementwise"
    # one column: the stream's bytes exact to an element (a streamed kernel's time does not depend on its rows)
    return moved(nbytes, 1, c.dtype, f"triton: {len(t)} tensors in and out", kind)


PREFIXES[PREFIX] = _triton
