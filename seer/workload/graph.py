"""A model's torch.fx graph with per-node latencies (NeuSight's layout) as a table of ops.

NeuSight traced each model with torch.fx and timed every node; the graph holds ONE transformer
block, so the whole model is prologue + `num_layer` x block + epilogue (`<model>.json` gives
`num_layer` and the measured whole-model `e2e_latency`). A node belongs to the block when its
module path (`nn_module_stack` in `meta`) passes through an indexed child (`h.0`,
`encoder.layer.0`): the repeated layers of a ModuleList. Nodes before the first block node are
the prologue, after the last the epilogue.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from seer.errors import SeerError
from seer.workload.ops import classify

# columns of the op table that seer.workload.estimate reads
COLUMNS = (
    "source", "name", "target", "module", "kind", "config", "why",
    "input_shapes", "output_shape", "dtype", "part", "count", "measured_ms",
)  # fmt: skip
PARTS = ("prologue", "block", "epilogue")
_NEEDED = ("op", "target", "Name", "input_shapes", "output_shape", "latency")
_LAYER = re.compile(r"\.\d+(?:\.|$)")  # an indexed child: the blocks of a ModuleList
_MODULE = re.compile(r"\('([^']*)', <class '([\w.]+)'>\)")


@dataclass
class Graph:
    """One graph file: its op table and what the whole model is made of."""

    source: Path
    gpu: str  # the GPU as CUDA names it (the folder name, underscores as spaces)
    model: str  # the file's stem, e.g. gpt2_large-inf-1024-4
    num_layer: int
    measured_ms: float | None  # whole-model latency where measured (e2e_latency)
    ops: pd.DataFrame  # one row per fx node: COLUMNS


def _literal(text, what: str, where: str):
    if isinstance(text, float) and np.isnan(text):
        return None
    try:
        return ast.literal_eval(str(text))
    except (ValueError, SyntaxError):
        raise SeerError(f"{where}: cannot read {what} {str(text)[:60]!r}") from None


def _module_stack(meta) -> list[tuple[str, str]]:
    """(path, class name) of each module enclosing the node, outermost first."""
    return [(p, c.rsplit(".", 1)[-1]) for p, c in _MODULE.findall(str(meta or ""))]


def read_graph(path: str | Path) -> Graph:
    """An fx graph CSV (and the JSON beside it, when there is one) as a Graph."""
    path = Path(path)
    try:
        raw = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SeerError(f"{path}: not a readable graph CSV ({type(exc).__name__})") from None
    missing = [c for c in _NEEDED if c not in raw]
    if missing:
        raise SeerError(f"{path}: not a torch.fx graph table (missing columns {', '.join(missing)})")
    meta = json.loads(path.with_suffix(".json").read_text()) if path.with_suffix(".json").exists() else {}
    rows = []
    for i, r in enumerate(raw.itertuples(index=False)):
        where = f"{path}:{i + 2}"
        stack = _module_stack(getattr(r, "meta", ""))
        module = stack[-1][1] if r.op == "call_module" and stack else ""
        shapes = _literal(r.input_shapes, "input_shapes", where) or []
        out = _literal(r.output_shape, "output_shape", where)
        dtype = str(getattr(r, "dtype", "") or "")
        dtype = "" if dtype == "nan" else dtype.replace("torch.", "")
        if r.op in ("placeholder", "get_attr", "output") or not dtype:
            m = classify("identity", [])  # no kernel: an input, a parameter or a Python value
        else:
            m = classify(str(r.target), shapes, list(out) if out else None, module=module, dtype=dtype)
        rows.append(
            {
                "source": str(path),
                "name": str(r.Name),
                "target": str(r.target),
                "module": module,
                "kind": m.kind,
                "config": m.config,
                "why": m.why,
                "input_shapes": shapes,
                "output_shape": list(out) if out else None,
                "dtype": dtype,
                "in_layer": any(_LAYER.search(p) for p, _ in stack),
                "measured_ms": float(r.latency) if pd.notna(r.latency) else np.nan,
            }
        )
    ops = pd.DataFrame(rows)
    n = int(meta.get("num_layer", 1))
    ops["part"], ops["count"] = _parts(ops.pop("in_layer").to_numpy(), n)
    e2e = meta.get("e2e_latency")
    return Graph(
        path, path.parent.name.replace("_", " "), path.stem, n, float(e2e) if e2e else None, ops[list(COLUMNS)]
    )


def _parts(in_layer: np.ndarray, num_layer: int) -> tuple[np.ndarray, np.ndarray]:
    """prologue / block / epilogue of each node and how many times it runs in the whole model."""
    part = np.full(len(in_layer), "prologue", dtype=object)
    hits = np.flatnonzero(in_layer)
    if len(hits):
        part[hits[0] : hits[-1] + 1] = "block"
        part[hits[-1] + 1 :] = "epilogue"
    count = np.where(part == "block", num_layer, 1)
    return part, count


def graph_files(folder: str | Path) -> list[Path]:
    """Graph CSVs under a folder in NeuSight's `<GPU>/<model>.csv` layout (or the folder itself)."""
    folder = Path(folder)
    if folder.is_file():
        return [folder]
    files = sorted(p for p in folder.glob("*/*.csv") if p.with_suffix(".json").exists())
    if not files:
        raise SeerError(f"{folder}: no graphs (<GPU>/<model>.csv with a <model>.json beside it)")
    return files
