"""The trace written back with seer's explanation of each GPU event, for Perfetto and TensorBoard.

Every event and every field stays as it was; each GPU event (kernel, copy, set) gains keys under
its `args` only (ARGS, all prefixed `seer_`): the op that launched it, its layer (the `site`,
seer.workload.sites) and direction, seer's kind, FLOPs, bytes, the roofline bound, the TFLOP/s
and GB/s it achieved and their share of the GPU's peaks (percent, for reading in a viewer),
seer's predicted time (us) and measured / predicted, and how the op's work was shared among its
kernels (`seer_split`, seer.trace.kernels). A value seer does not have is left out, except the
prediction of a kernel seer does not time: `seer_predicted_us` null, with `seer_why`. Never NaN
or Infinity, which are not JSON. Written compact, gzipped where the name ends in .gz (level 1:
a 200 MB trace compresses in 1.5 s instead of 4 s at level 6, into a file 1.5x as large), through a
temporary file.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from seer.data.records import atomic_write, read_json
from seer.errors import DataError
from seer.trace.kernels import Explained
from seer.workload.kineto import GPU_CATS, gc_paused

PREFIX = "seer_"
# kernel-table column -> (key under args, scale, digits): numbers
NUMBERS = {
    "flops": ("flops", 1.0, 0),
    "bytes": ("bytes", 1.0, 0),
    "achieved_tflops": ("achieved_tflops", 1.0, 4),
    "achieved_gbs": ("achieved_gbs", 1.0, 2),
    "frac_peak_flops": ("pct_peak_flops", 100.0, 2),
    "frac_peak_bw": ("pct_peak_bw", 100.0, 2),
    "predicted_us": ("predicted_us", 1.0, 3),
    "ratio": ("measured_over_predicted", 1.0, 4),
}
TEXT = {"op_name": "op", "site": "layer", "direction": "direction", "kind": "kind", "shapes": "shapes",
        "bound": "bound", "split": "split"}  # fmt: skip
ARGS = [PREFIX + k for k in (*TEXT.values(), *(v[0] for v in NUMBERS.values()), "why")]


def gpu_events(events: list) -> list[dict]:
    """The GPU events of traceEvents in the order seer.workload.kineto's kernel table has them
    (start time, the longest first on a tie, then file order: a stable sort, as kineto's)."""
    found = [
        e for e in events if isinstance(e, dict) and e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS
    ]
    return sorted(found, key=lambda e: (float(e["ts"]), -float(e.get("dur") or 0)))


def _number(x: float, scale: float, digits: int) -> float | int | None:
    if not math.isfinite(x):
        return None
    v = round(x * scale, digits)
    return int(v) if digits == 0 else v


def _args(row: dict[str, Any]) -> dict[str, Any]:
    """The seer_ keys of one kernel-table row: finite numbers and non-empty text only."""
    out: dict[str, Any] = {}
    for col, key in TEXT.items():
        v = row[col]
        if isinstance(v, str) and v:
            out[PREFIX + key] = v
    for col, (key, scale, digits) in NUMBERS.items():
        v = _number(float(row[col]), scale, digits)
        if v is not None:
            out[PREFIX + key] = v
    if "seer_predicted_us" not in out:
        out["seer_predicted_us"] = None
        if row["why"]:
            out["seer_why"] = str(row["why"])
    return out


def augment(ex: Explained, out: str | Path) -> int:
    """Write `ex`'s trace to `out` with each GPU event's seer_ args; returns how many were augmented."""
    with gc_paused():
        doc = read_json(ex.path, "a PyTorch profiler trace (Chrome trace JSON)")
        events = doc.get("traceEvents") if isinstance(doc, dict) else None
        if not isinstance(events, list):  # read_trace took it: a file changed since
            raise DataError(str(ex.path), None, None, "a Chrome trace with a traceEvents list")
        gpu = gpu_events(events)
        if len(gpu) != len(ex.kernels):
            raise DataError(
                str(ex.path), None, None,
                f"the {len(ex.kernels)} GPU events it was read with, found {len(gpu)}: has the file changed?",
            )  # fmt: skip
        rows = _records(ex.kernels)
        for e, row in zip(gpu, rows):
            args = e.get("args")
            if not isinstance(args, dict):
                args = e["args"] = {}
            args.update(_args(row))
        text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    data = text.encode("utf-8")
    compress = str(out).endswith(".gz")
    atomic_write(Path(out), lambda p: p.write_bytes(gzip.compress(data, compresslevel=1) if compress else data))
    return len(gpu)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The table's rows as dicts of plain Python values (faster than iterrows)."""
    cols = [*TEXT, *NUMBERS, "why"]
    arrays = {c: table[c].to_numpy(object if c in TEXT or c == "why" else float).tolist() for c in cols}
    return [dict(zip(cols, vals)) for vals in zip(*(arrays[c] for c in cols))]
