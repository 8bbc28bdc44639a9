"""Two op tables of one model side by side: which kernels each launches, with what shapes.

A captured model (seer.workload.capture) and NeuSight's traced graph of it (seer.workload.graph)
name ops differently (`aten.addmm.default` / `<built-in method addmm>`, one `matmul` node / its
copies and `bmm`), so they are compared by what seer times: each kernel's kind and config, counted
over the whole model (a graph's block rows x num_layer). The element-wise function name is left out
of the key (`x / 8` and `x * 0.125` are the same stream), the traffic it stands for is not.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from seer.workload.ops import KERNEL_KINDS

IGNORED = ("fn", "trans")  # spellings of one kernel's traffic


def kernel_key(kind: str, config: dict) -> tuple:
    return (kind, *sorted((k, v) for k, v in config.items() if k not in IGNORED))


def kernel_counts(ops: pd.DataFrame) -> Counter:
    """(kind, config) of every kernel-launching op, counted over the whole model."""
    counts: Counter = Counter()
    count = ops["count"] if "count" in ops else pd.Series(1, index=ops.index)
    for kind, cfg, n in zip(ops["kind"], ops["config"], count):
        if kind in KERNEL_KINDS and isinstance(cfg, dict):
            counts[kernel_key(kind, cfg)] += int(n)
    return counts


def compare(reference: pd.DataFrame, captured: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel (kind, config): how many times each table launches it, and the
    difference (captured - reference), mismatches first."""
    a, b = kernel_counts(reference), kernel_counts(captured)
    rows = [
        {"kind": k[0], "config": dict(k[1:]), "reference": a.get(k, 0), "captured": b.get(k, 0)}
        for k in sorted(set(a) | set(b), key=str)
    ]
    out = pd.DataFrame(rows, columns=["kind", "config", "reference", "captured"])
    out["difference"] = out["captured"] - out["reference"]
    return out.sort_values("difference", key=lambda d: -d.abs(), kind="stable").reset_index(drop=True)
