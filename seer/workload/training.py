"""A training step of an fx graph: its forward ops, then their backward and the accumulation of
the parameters' gradients, each as rows of the op table with a `direction`.

Which ops have a backward follows from the data flow, as autograd sees it: a node's output needs a
gradient when it has parameters (a module with weights, or a floating-point `get_attr` input) or
when one of its input nodes' outputs does; inputs and buffers do not. An op whose activation
inputs need a gradient computes dgrad, one with parameters wgrad (seer.workload.backward), and its
parameters' gradients are accumulated (`acc_latency` in NeuSight's layout).

Assumptions the graph cannot settle, said here because they are guesses: a module's parameters are
its standard ones (Linear: weight and bias, LayerNorm and BatchNorm: weight and bias, Conv2d: the
filter); an fx graph does not record an embedding table's size, so the first embedding of a graph
with a language-model head (a linear layer at least 8 times wider than its input; an MLP's is 4) is
taken as that head's vocabulary (tied input and output embeddings, as in BERT and GPT-2), and any
other as the number of rows it looks up.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.workload.backward import NO_GRAD, accumulation, backward_of
from seer.workload.ops import Mapped

FLOATS = ("float16", "bfloat16", "float32", "float64")
HEAD_WIDTH = 8  # a language-model head is at least this many times wider than its input (an MLP: 4)


def _module_params(op: str, shapes: list, out: list | None, cfg: dict | None, table_rows: int | None) -> list:
    """The parameter shapes of a called module (its standard ones; [] for a parameterless one)."""
    x = shapes[0] if shapes and shapes[0] else None
    if op == "linear" and x and out:
        return [[out[-1], x[-1]], [out[-1]]]
    if op == "conv1d_hf" and x and out:
        return [[x[-1], out[-1]], [out[-1]]]
    if op == "layer_norm" and out:
        return [[out[-1]], [out[-1]]]
    if op == "batch_norm" and out and len(out) > 1:
        return [[out[1]], [out[1]]]
    if op == "embedding" and out:
        return [[table_rows or max(int(np.prod(out[:-1])), 1), out[-1]]]
    if op in ("conv2d", "conv") and cfg:
        return [[cfg["c_out"], cfg["c_in"] // max(cfg["groups"], 1), cfg["kh"], cfg["kw"]]]
    return []


def _vocabulary(ops: pd.DataFrame) -> int | None:
    """The width of the graph's language-model head: its widest linear, where that is at least
    HEAD_WIDTH times wider than its input (None otherwise)."""
    heads = [
        int(c["n"]) for k, c in zip(ops["kind"], ops["config"]) if k == "linear" and c and c["n"] >= HEAD_WIDTH * c["k"]
    ]
    return max(heads) if heads else None


def training_step(ops: pd.DataFrame, bw_ms: np.ndarray, acc_ms: np.ndarray) -> pd.DataFrame:
    """The forward op table (one row per node, direction forward, with `fx_op`, `op` and `inputs`)
    with, after it and in reverse order, each node's backward (measured bw_ms) and gradient
    accumulation (measured acc_ms) rows."""
    vocab = _vocabulary(ops)
    first_embedding = next((i for i, k in enumerate(ops["kind"]) if k == "embedding"), None)
    shape_of = dict(zip(ops["name"], ops["output_shape"]))
    is_param: dict[str, bool] = {}
    needs: dict[str, bool] = {}
    per_node: list[list[dict]] = []  # each node's backward, then its accumulation
    for i, r in enumerate(ops.itertuples(index=False)):
        fx, name, inputs = r.fx_op, r.name, r.inputs
        if fx == "get_attr":
            is_param[name] = needs[name] = r.dtype in FLOATS
            continue
        if fx in ("placeholder", "output"):
            needs[name] = False
            continue
        table = vocab if i == first_embedding else None
        params = _module_params(r.op, r.input_shapes, r.output_shape, r.config, table) if fx == "call_module" else []
        acts = [n for n in inputs if not is_param.get(n)] if inputs is not None else None
        params += [shape_of.get(n) or [] for n in inputs or [] if is_param.get(n)]
        dgrad = any(needs.get(n, False) for n in acts) if acts is not None else True
        needs[name] = (dgrad or bool(params)) and r.op.rstrip("_") not in NO_GRAD
        if not needs[name] or r.kind == "dispatch":  # no gradient, or a view of it (no kernel, no host op)
            continue
        bw = backward_of(
            Mapped(r.kind, r.config, r.why, r.parts), r.op, dgrad=dgrad, wgrad=bool(params), table_rows=table
        )
        rows = [_row_of(r, bw, "backward", bw_ms[i])]
        if params:
            rows.append(_row_of(r, accumulation(params), "accumulate", acc_ms[i]))
        per_node.append(rows)
    backward = pd.DataFrame([row for rows in reversed(per_node) for row in rows], columns=ops.columns)
    return pd.concat([ops, backward], ignore_index=True)


def _row_of(r, m: Mapped, direction: str, measured: float) -> dict:
    row = r._asdict()
    row.update(kind=m.kind, config=m.config, parts=m.parts, why=m.why, direction=direction, measured_ms=float(measured))
    return row
