"""Memory-bound kernels of a profiler trace as measurements: bytes moved and kernel time.

The kernel-level memory-bound model (seer.models.kernel_floor) learns a GPU's kernel floor and
effective bandwidth from what a trace measures: each op's GPU kernel durations, with the bytes
its mapping (seer.workload.ops / trace_ops: `Mapped` and the closed forms' `work`) says it moves.
This is a deliberately small adapter over seer.workload.kineto (read_trace, kernel_ops) and the op
mapping, kept to what the kernel-floor fit needs; a general trace -> records reader
(seer.data.records.trace) can replace `memory_kernels` where both exist.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seer.analytical.memory import work
from seer.data.records import MEMORY_OPS
from seer.errors import SeerError
from seer.hardware.device import resolve
from seer.workload.ops import Mapped

COLUMNS = (
    "trace",
    "gpu",
    "step",
    "op",
    "name",
    "kind",
    "fns",
    "n_parts",
    "n_kernels",
    "bytes",
    "part_bytes",
    "kernel_ms",
)


def _memory_parts(m: Mapped) -> tuple[Mapped, ...]:
    """The op's kernels where every one is a memory-bound kernel on the GPU's DRAM (not a copy over
    the host link), else ()."""
    parts = m.kernels
    ok = parts and all(
        p.config is not None
        and p.config.get("op") in MEMORY_OPS
        and not (p.config.get("op") == "memcpy" and p.config.get("fn") != "d2d")
        for p in parts
    )
    return parts if ok else ()


def memory_kernels(path: str | Path, execution_trace: str | Path | None = None) -> pd.DataFrame:
    """One row per op of the trace whose kernels are all memory-bound (COLUMNS): its GPU (the slug
    of the trace's deviceProperties, seer.hardware.device.resolve; '' where it has none), step, op
    row, name, kind, element-wise functions, how many kernels seer times for it (`n_parts`) and the
    trace measured (`n_kernels`), the bytes they move (in all, and per kernel seer times:
    `part_bytes`) and their measured time (ms)."""
    from seer.workload.kineto import kernel_ops, read_trace
    from seer.workload.trace_ops import map_calls

    trace = read_trace(path, execution_trace)
    gpu = resolve(trace.device_props)[0].slug if trace.device_props is not None else ""
    kops = kernel_ops(trace)
    rows = []
    for r, m in zip(kops.itertuples(index=False), map_calls(kops)):
        parts = _memory_parts(m)
        if not parts:
            continue
        try:
            nbytes = work(pd.DataFrame([p.config for p in parts]))["bytes"].to_numpy(dtype=float)
        except SeerError:
            continue  # a config the closed forms refuse (an unknown dtype): not a measurement of them
        rows.append(
            {
                "trace": Path(path).name,
                "gpu": gpu,
                "step": int(r.step),
                "op": int(r.op),
                "name": r.name,
                "kind": m.kind,
                "fns": "+".join(str(p.config.get("fn", p.config.get("op"))) for p in parts if p.config),
                "n_parts": len(parts),
                "n_kernels": int(r.n_kernels),
                "bytes": float(nbytes.sum()),
                "part_bytes": tuple(nbytes.tolist()),
                "kernel_ms": float(r.kernel_ms),
            }
        )
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    return out.astype({"bytes": np.float64, "kernel_ms": np.float64})
