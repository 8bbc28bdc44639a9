"""A model's torch.fx graph with per-node latencies (NeuSight's layout) as a table of ops.

NeuSight traced each model with torch.fx and timed every node; the graph holds ONE transformer
block, so the whole model is prologue + `num_layer` x block + epilogue (`<model>.json` gives
`num_layer` and the measured whole-model `e2e_latency`). A node belongs to the block when its
module path (`nn_module_stack` in `meta`) passes through an indexed child (`h.0`,
`encoder.layer.0`): the repeated layers of a ModuleList. Nodes before the first block node are
the prologue, after the last the epilogue.

Both files are validated as records: every problem (a missing or unreadable file, a JSON that is
cut short, a `num_layer` that is not a whole number in 1..MAX_LAYERS, a latency that is negative
or not a number, a graph with no nodes) is one `DataError` naming the file, the row (the CSV's
line) and the column. The JSON is required: without `num_layer` the whole-model time would be
that of one block (write `{"num_layer": 1}` beside a graph of a whole model).
"""

from __future__ import annotations

import ast
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data.records import data_path, numeric, read_bytes, read_json
from seer.errors import DataError, SeerError
from seer.workload.ops import classify, op_name
from seer.workload.training import training_step

# columns of the op table that seer.workload.estimate reads
COLUMNS = (
    "source", "name", "target", "module", "kind", "config", "parts", "why",
    "input_shapes", "output_shape", "dtype", "part", "count", "direction", "measured_ms",
)  # fmt: skip
TRAINING = ("fw_latency", "bw_latency", "acc_latency")  # NeuSight's training layout: per node and direction
PARTS = ("prologue", "block", "epilogue")
_NEEDED = ("op", "target", "Name", "input_shapes", "output_shape", "latency")
FX_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
MAX_LAYERS = 10_000  # repeated blocks of a graph: the largest models have a few hundred
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
    ops: pd.DataFrame  # one row per fx node (training: per node and direction): COLUMNS
    training: bool = False  # a training step (forward, backward, accumulation), not a forward pass
    measured_by_direction: dict[str, float] = field(default_factory=dict)  # forward, backward (ms)


def _literal(text, column: str, file: str, line: int, kind: type):
    """A Python literal of a cell (shapes are written as lists and tuples); None where empty."""
    if isinstance(text, float) and np.isnan(text):
        return None
    what = "a list of shapes such as [[2, 16]]" if kind is list else "a shape such as (2, 16)"
    try:
        value = ast.literal_eval(str(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise DataError(file, line, column, what, str(text)[:60], where="line") from None
    if value is not None and not isinstance(value, (list, tuple)):
        raise DataError(file, line, column, what, str(text)[:60], where="line")
    return value


def _output_shape(value, file: str, line: int) -> list[int] | None:
    """The output's shape as ints; None where the node has none (or several: a tuple of shapes)."""
    if not value:
        return None
    if all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        if any(x < 0 for x in value):
            raise DataError(file, line, "output_shape", "a shape of sizes >= 0", str(value)[:60], where="line")
        return list(value)
    return None


def _meta(path: Path) -> tuple[int, float | None, dict[str, float]]:
    """num_layer, e2e_latency and (training steps) the forward and backward times of the JSON
    beside a graph, all checked."""
    meta_path = path.with_suffix(".json")
    file = str(meta_path)
    if not meta_path.exists():
        raise DataError(
            file,
            None,
            None,
            f"the graph's JSON beside {path.name} with num_layer (how many times its block repeats; "
            'write {"num_layer": 1} for a graph of the whole model), found none: without it the '
            "whole-model time would be one block's",
        )
    meta = read_json(meta_path, "the graph's JSON (num_layer, e2e_latency)")
    if not isinstance(meta, dict):
        raise DataError(file, None, None, "a JSON object with num_layer and e2e_latency", type(meta).__name__)
    n = meta.get("num_layer")
    if n is None:
        raise DataError(file, None, "num_layer", "num_layer, how many times the graph's block repeats")
    whole = isinstance(n, int) or (isinstance(n, float) and math.isfinite(n) and n.is_integer())
    if isinstance(n, bool) or not whole or not 1 <= n <= MAX_LAYERS:
        raise DataError(file, None, "num_layer", f"a whole number of layers from 1 to {MAX_LAYERS}", n)
    e2e = meta.get("e2e_latency")
    if e2e is not None:
        ok = isinstance(e2e, (int, float)) and not isinstance(e2e, bool) and math.isfinite(e2e) and e2e > 0
        if not ok:
            raise DataError(file, None, "e2e_latency", "a whole-model time in ms > 0, or null where not measured", e2e)
        e2e = float(e2e)
    parts = {}
    for key, direction in (("fw_latency", "forward"), ("bwall_latency", "backward")):
        v = meta.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise DataError(file, None, key, "a time in ms >= 0", v)
        parts[direction] = float(v)
    return int(n), e2e, parts


def _module_stack(meta) -> list[tuple[str, str]]:
    """(path, class name) of each module enclosing the node, outermost first."""
    return [(p, c.rsplit(".", 1)[-1]) for p, c in _MODULE.findall(str(meta or ""))]


def read_graph(path: str | Path) -> Graph:
    """An fx graph CSV and the JSON beside it (num_layer, e2e_latency) as a Graph; any problem
    with either is a DataError naming the file, the line and the column."""
    path = Path(path)
    file = str(path)
    try:
        raw = pd.read_csv(io.BytesIO(read_bytes(path, "a torch.fx graph CSV with a header row")))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(file, None, None, f"a readable graph CSV ({exc})".replace("\n", " ")) from None
    missing = [c for c in _NEEDED if c not in raw]
    if missing:
        expected = f"a torch.fx graph table (columns {', '.join(_NEEDED)}); it lacks {', '.join(missing)}"
        raise DataError(file, None, None, expected)
    if not len(raw):
        raise DataError(file, None, None, "a torch.fx graph with at least one node, got only the header row")
    n, e2e, by_direction = _meta(path)
    step = by_direction.get("backward", 0.0) > 0  # the JSON gives a training step's backward time
    lines = np.arange(len(raw)) + 2
    # as Python objects: a bad value is quoted as written (-3.0), not as numpy spells it
    columns = [c for c in ("latency", *TRAINING) if c in raw]
    times = {c: numeric(raw[c].astype(object), file, c, lines, minimum=0, expected="a latency in ms") for c in columns}
    training = all(c in raw for c in TRAINING) and (step or bool((times["bw_latency"] > 0).any()))
    if step and not training:
        raise DataError(
            file, None, None,
            f"per-node {', '.join(TRAINING)} columns: its JSON gives a training step (bwall_latency > 0), and "
            "a forward pass is not to be scored against it",
        )  # fmt: skip
    latency = times["fw_latency" if training else "latency"]
    fx_op = raw["op"].astype(str).str.strip()
    bad = ~fx_op.isin(FX_OPS).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        expected = f"a torch.fx node op ({', '.join(FX_OPS)})"
        raise DataError(file, int(lines[i]), "op", expected, raw["op"].iloc[i], where="line")
    rows = []
    for i, r in enumerate(raw.itertuples(index=False)):
        line = int(lines[i])
        stack = _module_stack(getattr(r, "meta", ""))
        module = stack[-1][1] if fx_op.iat[i] == "call_module" and stack else ""
        shapes = _literal(r.input_shapes, "input_shapes", file, line, list) or []
        out = _output_shape(_literal(r.output_shape, "output_shape", file, line, tuple), file, line)
        dtype = str(getattr(r, "dtype", "") or "")
        dtype = "" if dtype == "nan" else dtype.replace("torch.", "")
        target = str(r.target)
        if training and op_name(target, module) == "dropout":  # in training, dropout is a kernel
            target, module = "native_dropout", ""
        if fx_op.iat[i] in ("placeholder", "get_attr", "output") or not dtype:
            m = classify("identity", [])  # no kernel: an input, a parameter or a Python value
        else:
            m = classify(target, shapes, out, module=module, dtype=dtype)
        rows.append(
            {
                "source": str(path),
                "name": str(r.Name),
                "target": str(r.target),
                "module": module,
                "kind": m.kind,
                "config": m.config,
                "parts": m.parts,
                "why": m.why,
                "input_shapes": shapes,
                "output_shape": out,
                "dtype": dtype,
                "in_layer": any(_LAYER.search(p) for p, _ in stack),
                "direction": "forward",
                "measured_ms": float(latency.iat[i]),
                "fx_op": fx_op.iat[i],
                "op": op_name(target, module),
                "inputs": _input_nodes(raw["_input_nodes"].iat[i] if "_input_nodes" in raw else None),
            }
        )
    ops = pd.DataFrame(rows)
    in_layer = ops.pop("in_layer").to_numpy(dtype=bool)
    if n > 1 and not in_layer.any():
        raise DataError(
            str(path.with_suffix(".json")), None, "num_layer",
            f"1: no node of {path.name} lies in an indexed module (h.0, layer.0), so there is no block to "
            "repeat", n,
        )  # fmt: skip
    ops["part"], ops["count"] = _parts(in_layer, n)
    if training:
        ops = training_step(ops, times["bw_latency"].to_numpy(float), times["acc_latency"].to_numpy(float))
    gpu = path.parent.name.replace("_", " ")
    return Graph(path, gpu, path.stem, n, e2e, ops[list(COLUMNS)], training, by_direction)


def _input_nodes(text) -> list[str] | None:
    """The names of a node's input nodes (fx's `_input_nodes`, "{x: None, y: None}"); None where
    the graph does not record them."""
    if not isinstance(text, str):
        return None
    return re.findall(r"(\w+): None", text)


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
    folder = data_path(folder, "an existing graph file or folder")
    if not folder.is_dir():
        return [folder]
    files = sorted(p for p in folder.glob("*/*.csv") if p.with_suffix(".json").exists())
    if not files:
        raise SeerError(f"{folder}: no graphs (<GPU>/<model>.csv with a <model>.json beside it)")
    return files
