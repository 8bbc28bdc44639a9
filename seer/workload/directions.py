"""Which pass of a training step an op of a trace belongs to: forward, backward or optimizer.

PyProf labels every kernel fprop / bprop / optimizer; a profiler trace says it through what
encloses the op:

- backward: the op runs under an autograd node (`autograd::engine::evaluate_function: XBackward0`,
  a cpu op), or on a backward thread: a thread whose top-level ops are mostly (by time) such
  autograd nodes (CUDA's autograd engine runs them on a thread of its own, where a few ops, such as
  zeroing a gradient buffer, run outside any node);
- optimizer: the op runs under an optimizer's record function (`Optimizer.step#SGD.step`,
  `Optimizer.zero_grad#SGD.zero_grad`: a user annotation, or a cpu op in older traces);
- forward: everything else (the input copy, the loss, an inference trace's every op).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.workload.sites import enclosing

# a training step's, in order; `accumulate` (gradient accumulation) is a graph's (NeuSight's
# layout): a trace files it under backward
DIRECTIONS = ("forward", "backward", "accumulate", "optimizer")
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function"
OPTIMIZER_PREFIXES = ("Optimizer.step", "Optimizer.zero_grad")


def _is_optimizer(name: object) -> bool:
    return str(name).startswith(OPTIMIZER_PREFIXES)


def _ancestors(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """Whether each op or one of its enclosing ops is marked (one parent level per pass)."""
    out = mark.copy()
    up = parent.copy()
    while (up >= 0).any():
        has = up >= 0
        out[has] |= mark[up[has]]
        up = np.where(has, parent[np.clip(up, 0, None)], -1)
    return out


def backward_threads(ops: pd.DataFrame) -> set:
    """Threads whose top-level ops spend at least half their time in autograd nodes."""
    top = ops[ops["parent"] < 0]
    if not len(top):
        return set()
    node = top["name"].astype(str).str.startswith(AUTOGRAD_PREFIX)
    dur = top["dur"].to_numpy(float)
    by = pd.DataFrame({"tid": top["tid"].to_numpy(), "node": np.where(node, dur, 0.0), "all": dur})
    share = by.groupby("tid", sort=False)[["node", "all"]].sum()
    return set(share.index[(share["node"] > 0) & (share["node"] >= 0.5 * share["all"])])


def directions(ops: pd.DataFrame, scopes: pd.DataFrame) -> np.ndarray:
    """The direction of each op (rows of `ops`: name, ts, dur, tid, parent) from its enclosing ops
    and the scope events (`scopes`: name, ts, dur, tid; user annotations, python functions)."""
    names = ops["name"].astype(str)
    parent = ops["parent"].to_numpy(np.int64)
    backward = _ancestors(parent, names.str.startswith(AUTOGRAD_PREFIX).to_numpy())
    backward |= ops["tid"].isin(backward_threads(ops)).to_numpy()
    optimizer = _ancestors(parent, names.map(_is_optimizer).to_numpy(bool))
    if len(scopes):
        marked = scopes["name"].map(_is_optimizer).to_numpy(bool)
        if marked.any():
            optimizer |= np.array([any(marked[r] for r in rows) for rows in enclosing(ops, scopes)], dtype=bool)
    return np.where(optimizer, "optimizer", np.where(backward, "backward", "forward")).astype(object)
