"""Where in the model a trace's op was called: a name that tells twelve `addmm` rows apart.

What a profiler trace records about the caller depends on how it was taken, so the site is built
from what there is, outermost first, joined by " > ":

- the enclosing user annotations (`record_function` ranges such as "## forward ##"; never the
  step markers),
- the module: the op's own ``Module Hierarchy`` argument where the trace has one (TorchScript),
  else the enclosing ``nn.Module: Name_k`` python_function events (``with_modules=True``),
  joined by "/",
- the call site: the innermost frame of user code (not torch's own, not a built-in) of the op's
  ``Call stack`` argument or of the enclosing python_function events (``with_stack=True``),
- where there is neither a module nor a call site (the bundled traces: shapes only), the
  outermost op that encloses it and that op's occurrence in the step, e.g. ``linear#5``: the
  fifth `aten::linear` of the iteration, which with the shapes says which layer it is.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

MODULE_PREFIX = "nn.Module: "
_FRAME = re.compile(r"^(?P<file>[^()]+\.py)\((?P<line>\d+)\): (?P<func>.+)$")
# frames of the framework and the interpreter, never the user's call site
_LIBRARY = re.compile(r"(^|/)(torch|site-packages|dist-packages|lib/python[\d.]+|<[^>]*>)(/|$)")


def user_frame(frame: str) -> str:
    """'model.py(42): forward' for a frame of user code ('' for torch's, the interpreter's or a
    built-in): the file's base name keeps the site short."""
    m = _FRAME.match(frame.strip())
    if m is None or _LIBRARY.search(m["file"]):
        return ""
    return f"{m['file'].rsplit('/', 1)[-1]}({m['line']}): {m['func']}"


def _call_site(stack: object) -> str:
    """The innermost user frame of a cpu op's ``Call stack`` argument (frames innermost first,
    separated by ';')."""
    if not isinstance(stack, str) or not stack:
        return ""
    return next((f for f in map(user_frame, stack.split(";")) if f), "")


def enclosing(ops: pd.DataFrame, scopes: pd.DataFrame) -> list[list[int]]:
    """For each op, the rows of `scopes` (ts, dur, tid) on its thread that hold its start,
    outermost first: one stack walk per thread over both in start order."""
    out: list[list[int]] = [[] for _ in range(len(ops))]
    if not len(scopes) or not len(ops):
        return out
    sts, send = scopes["ts"].to_numpy(float), (scopes["ts"] + scopes["dur"]).to_numpy(float)
    ots = ops["ts"].to_numpy(float)
    by_tid = scopes.groupby("tid", sort=False).indices
    for tid, oidx in ops.groupby("tid", sort=False).indices.items():
        sidx = by_tid.get(tid)
        if sidx is None:
            continue
        sidx = sidx[np.lexsort((-send[sidx], sts[sidx]))]  # start order, the longest first on a tie
        oidx = oidx[np.argsort(ots[oidx], kind="stable")]
        stack: list[int] = []
        k = 0
        for i in oidx:
            t = ots[i]
            while k < len(sidx) and sts[sidx[k]] <= t:
                while stack and send[stack[-1]] <= sts[sidx[k]]:
                    stack.pop()
                stack.append(int(sidx[k]))
                k += 1
            while stack and send[stack[-1]] <= t:
                stack.pop()
            out[i] = list(stack)
    return out


def occurrences(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each op's outermost enclosing op (itself at depth 0) and that op's occurrence (from 1) among
    the outermost ops of its name in its step, in start order."""
    parent = ops["parent"].to_numpy()
    top = np.arange(len(ops))
    for _ in range(int(ops["depth"].max()) if len(ops) else 0):  # one parent level per pass
        up = parent[top]
        top = np.where(up >= 0, up, top)
    outer = ops.index[parent < 0] if len(ops) else ops.index
    names, steps = ops["name"].to_numpy(object), ops["step"].to_numpy()
    order = ops.loc[outer].sort_values(["ts", "dur"], ascending=[True, False], kind="stable").index
    nth = np.zeros(len(ops), dtype=np.int64)
    seen: dict[tuple, int] = {}
    for i in order:
        key = (steps[i], names[i])
        seen[key] = seen.get(key, 0) + 1
        nth[i] = seen[key]
    return top, nth[top]


def sites(ops: pd.DataFrame, scopes: pd.DataFrame, module: list, stack: list, marker: str) -> list[str]:
    """The site of each op (rows of `ops`: name, ts, dur, tid, depth, parent, step), from the
    scope events (`scopes`: name, ts, dur, tid, cat: python_function or user_annotation) and the
    ops' own ``Module Hierarchy`` and ``Call stack`` arguments (`module`, `stack`)."""
    within = enclosing(ops, scopes)
    top, nth = occurrences(ops)
    names, cats = scopes["name"].to_numpy(object), scopes["cat"].to_numpy(object)
    op_names = ops["name"].to_numpy(object)
    out = []
    for i, rows in enumerate(within):
        if not rows and not (isinstance(module[i], str) and module[i]) and not (isinstance(stack[i], str) and stack[i]):
            out.append(f"{str(op_names[top[i]]).removeprefix('aten::')}#{nth[i]}")  # what the loop below gives, fast
            continue
        notes = [names[r] for r in rows if cats[r] == "user_annotation" and names[r] != marker]
        py = [names[r] for r in rows if cats[r] == "python_function"]
        mod = module[i] if isinstance(module[i], str) and module[i] else ""
        if not mod:
            mod = "/".join(n[len(MODULE_PREFIX) :] for n in py if n.startswith(MODULE_PREFIX))
        call = _call_site(stack[i]) or next((f for f in map(user_frame, reversed(py)) if f), "")
        parts = [*notes, *(p for p in (mod, call) if p)]
        if not mod and not call:
            parts.append(f"{str(op_names[top[i]]).removeprefix('aten::')}#{nth[i]}")
        out.append(" > ".join(parts))
    return out
