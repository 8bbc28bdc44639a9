"""Read PyTorch profiler (Kineto) Chrome traces into tables: cpu ops, launches, GPU activity, steps.

Kineto's layout changed over the years: categories ``Operator/Runtime/Kernel/Memcpy/Memset`` (2021)
vs ``cpu_op/cuda_runtime/cuda_driver/kernel/gpu_memcpy/gpu_memset`` (2022 on). Both are read here.
A kernel is linked to its launch by ``correlation`` and a launch to the innermost cpu op that encloses
it in time on the same thread; iterations are split at ``ProfilerStep#N`` (or, where a trace has no
such marker, at a user annotation that repeats once per iteration). Shapes come from
``args["Input Dims"]``, or from a PyTorch execution trace of the same run joined by op order.

Every input is validated as it is read (through seer.data.records' opener, which refuses FIFOs and
devices before opening them): an event whose ``ts`` or ``dur`` is not a finite number >= 0, an id
(``tid``, ``stream``, ``correlation``) that is not one, a trace without GPU kernels, or an execution
trace of another run (fewer than MIN_ET_MATCH of the trace's ops find their node in it, or the shapes
both record disagree) is one `DataError` naming the file and the event (its index in ``traceEvents``).

A small json/gzip + pandas reader on purpose: HolisticTraceAnalysis parses these traces too, but it
hard-requires jupyterlab, plotly and pytest (about 500 MB), which a kernel-time predictor should not.
"""

from __future__ import annotations

import difflib
import gc
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seer.data.records import read_json
from seer.errors import DataError
from seer.hardware.device import Device
from seer.workload.directions import directions
from seer.workload.sites import sites

OP_CATS = {"cpu_op", "operator"}
LAUNCH_CATS = {"cuda_runtime", "runtime", "cuda_driver", "driver"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
SCOPE_CATS = {"python_function", "user_annotation"}  # what encloses ops: the call site (seer.workload.sites)
STEP_PREFIX = "ProfilerStep#"
# an execution trace is of the trace's run when at least this share of the trace's ops find their node in
# it (aligned by op name, step by step) and, where both record shapes, at least this share agree; the
# right execution trace matches 98-100% of the ops of the shared and bundled traces, another model's or
# another batch size's 10-45% of the names or 1-18% of the shapes
MIN_ET_MATCH = 0.9

# the profiler's spelling of a tensor's scalar type -> seer's dtype name
_DTYPES = {
    "float": "float32",
    "c10::half": "float16",
    "half": "float16",
    "c10::bfloat16": "bfloat16",
    "bfloat16": "bfloat16",
    "double": "float64",
    "long int": "int64",
    "long": "int64",
    "int": "int32",
    "bool": "bool",
    "unsigned char": "uint8",
    "signed char": "int8",
    "c10::float8_e4m3fn": "float8_e4m3fn",
    "c10::float8_e5m2": "float8_e5m2",
}


@dataclass
class Trace:
    """One profiled run as tables (times in microseconds as the trace has them; -1 where a link is missing).

    ops: name, ts, dur, tid, depth, parent, input_dims, input_types, concrete (scalar arguments), step,
        site (where in the model it was called: seer.workload.sites), direction (forward, backward or
        optimizer: seer.workload.directions).
    launches: name, ts, dur, correlation, tid, op, step.
    kernels: name, cat, ts, dur, correlation, stream, device, launch, op, step, and the launch geometry the
        event records (GEOMETRY: grid, block, registers per thread, shared memory; NaN where it has none).
    steps: name, ts, dur (the CPU side of each iteration).
    """

    path: str
    ops: pd.DataFrame
    launches: pd.DataFrame
    kernels: pd.DataFrame
    steps: pd.DataFrame
    step_marker: str = STEP_PREFIX
    device: str = ""  # the GPU the trace was taken on (deviceProperties), '' where not recorded
    device_props: Device | None = None  # what deviceProperties say of it (CC, SMs, memory), None where absent


GEOMETRY = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "regs_per_thread", "smem")


def _geometry(e: dict) -> dict[str, float]:
    """A kernel event's launch geometry (args grid, block, registers per thread, shared memory), NaN
    for what it does not record (copies and sets record none)."""
    out = dict.fromkeys(GEOMETRY, math.nan)
    for key, axes in (("grid", ("grid_x", "grid_y", "grid_z")), ("block", ("block_x", "block_y", "block_z"))):
        v = _arg(e, key)
        if isinstance(v, list) and len(v) == 3 and all(isinstance(x, (int, float)) for x in v):
            out.update(zip(axes, map(float, v)))
    for key, col in (("registers per thread", "regs_per_thread"), ("shared memory", "smem")):
        v = _arg(e, key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[col] = float(v)
    return out


def _device(doc: Any, kernels: pd.DataFrame) -> Device | None:
    """The trace's GPU as its deviceProperties describe it: the entry of the device most of its
    kernels ran on (a node's GPUs are listed by id), else the first."""
    props = doc.get("deviceProperties") if isinstance(doc, dict) else None
    entries = [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []
    if not entries:
        return None
    used = Counter(d for d in kernels["device"] if d is not None).most_common(1)
    chosen = next((p for p in entries if used and p.get("id") == used[0][0]), entries[0])
    return Device.from_properties(chosen)


def _time(e: dict, key: str, i: int, path: Path) -> float:
    """An event's ts or dur in us: a finite number >= 0 (ts required; dur 0 where absent)."""
    v = e.get(key)
    if v is None and key == "dur":
        return 0.0
    if type(v) is int or type(v) is float:  # bool is no time
        x = float(v)
    elif isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            x = math.nan
    else:
        x = math.nan
    if not (0.0 <= x < math.inf):
        what = "a start time" if key == "ts" else "a duration"
        event = f"{e['cat']} event" if e.get("cat") else "event"
        name = str(e.get("name", ""))[:60]
        expected = f"{what} in us, a finite number >= 0 ({event} {name!r})"
        raise DataError(str(path), i, key, expected, v, where="event")
    return x


def _id(e: dict, key: str, value: Any, i: int, path: Path) -> Any:
    """A thread, stream or device id (a number or a name): anything else cannot group events."""
    if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    name = str(e.get("name", ""))[:60]
    raise DataError(str(path), i, key, f"an id, a whole number or a name (event {name!r})", value, where="event")


def _external_id(e: dict, i: int, path: Path) -> Any:
    return _id(e, "args.External id", _arg(e, "External id", "external id", default=-1), i, path)


def _correlation(e: dict, i: int, path: Path) -> int:
    """The id linking a launch and its kernels: a whole number (-1 where absent)."""
    v = _arg(e, "correlation", default=-1)
    if type(v) is int:
        return v
    if v is None:
        return -1
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    name = str(e.get("name", ""))[:60]
    raise DataError(str(path), i, "args.correlation", f"a whole number (event {name!r})", v, where="event")


def _events(doc: Any, path: Path) -> list[dict]:
    """The complete ("X") events, their ts and dur checked and made floats; a DataError names the
    first bad event by its index in traceEvents."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise DataError(str(path), None, None, "a PyTorch profiler trace (a Chrome trace with a traceEvents list)")
    out = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        e["ts"], e["dur"] = _time(e, "ts", i, path), _time(e, "dur", i, path)
        args = e.get("args")
        if args is not None and not isinstance(args, dict):
            raise DataError(str(path), i, "args", "an object of arguments", str(args)[:60], where="event")
        e["_i"] = i
        out.append(e)
    return out


def _arg(e: dict, *keys: str, default: Any = None) -> Any:
    args = e.get("args") or {}
    for k in keys:
        if k in args:
            return args[k]
    return default


def _frame(rows: list[dict], cols: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=cols)
    if len(df):
        df = df.sort_values(["ts", "dur"], ascending=[True, False], kind="stable").reset_index(drop=True)
    return df


def _nest(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent of each op: a stack walk per thread over ops in start order (ties: longest first)."""
    depth = np.zeros(len(ops), dtype=np.int64)
    parent = np.full(len(ops), -1, dtype=np.int64)
    ts, end = ops["ts"].to_numpy(float), (ops["ts"] + ops["dur"]).to_numpy(float)
    for idx in ops.groupby("tid", sort=False).indices.values():
        stack: list[int] = []
        for i in idx:  # already in (ts, -dur) order
            while stack and end[stack[-1]] <= ts[i]:
                stack.pop()
            if stack:
                parent[i], depth[i] = stack[-1], len(stack)
            stack.append(i)
    return depth, parent


def _enclosing(ops: pd.DataFrame, ev: pd.DataFrame) -> np.ndarray:
    """Index of the innermost op on the same thread whose [ts, end) holds each event's start, else -1."""
    out = np.full(len(ev), -1, dtype=np.int64)
    if not len(ev) or not len(ops):
        return out
    ots, oend = ops["ts"].to_numpy(float), (ops["ts"] + ops["dur"]).to_numpy(float)
    ets = ev["ts"].to_numpy(float)
    op_groups = ops.groupby("tid", sort=False).indices
    for tid, eidx in ev.groupby("tid", sort=False).indices.items():
        oidx = op_groups.get(tid)
        if oidx is None:
            continue
        eidx = eidx[np.argsort(ets[eidx], kind="stable")]
        stack: list[int] = []
        k = 0
        for j in eidx:
            t = ets[j]
            while k < len(oidx) and ots[oidx[k]] <= t:  # push every op that started by t
                while stack and oend[stack[-1]] <= ots[oidx[k]]:
                    stack.pop()
                stack.append(oidx[k])
                k += 1
            while stack and oend[stack[-1]] <= t:
                stack.pop()
            if stack:
                out[j] = stack[-1]
    return out


def _steps(events: list[dict]) -> tuple[pd.DataFrame, str]:
    """ProfilerStep#N on the CPU side; without them, a once-per-iteration user annotation (PARAM's replays)."""
    cpu = [e for e in events if str(e.get("cat", "")).lower() not in GPU_CATS | {"gpu_user_annotation"}]
    marks = [e for e in cpu if str(e.get("name", "")).startswith(STEP_PREFIX)]
    marker = STEP_PREFIX
    if marks:
        rows = [{"name": str(e["name"]), "ts": float(e["ts"]), "dur": float(e.get("dur", 0))} for e in marks]
        df = pd.DataFrame(rows).drop_duplicates("name").sort_values("ts").reset_index(drop=True)
        return df, marker
    ann = [e for e in cpu if str(e.get("cat", "")).lower() == "user_annotation"]
    counts: dict[str, list[dict]] = defaultdict(list)
    for e in ann:
        counts[str(e.get("name", ""))].append(e)
    repeated = {n: v for n, v in counts.items() if len(v) >= 2}
    if not repeated:
        return pd.DataFrame(columns=["name", "ts", "dur"]), ""
    top = max(len(v) for v in repeated.values())
    marker = min((n for n, v in repeated.items() if len(v) == top), key=lambda n: min(e["ts"] for e in repeated[n]))
    starts = np.sort(np.array([float(e["ts"]) for e in repeated[marker]]))
    last = max(float(e["ts"]) + float(e.get("dur", 0)) for e in cpu)
    ends = np.append(starts[1:], last)
    df = pd.DataFrame({"name": [f"{marker}#{i}" for i in range(len(starts))], "ts": starts, "dur": ends - starts})
    return df, marker


def _step_of(ts: np.ndarray, steps: pd.DataFrame) -> np.ndarray:
    """Step number of each time (-1 outside every step)."""
    if not len(steps) or not len(ts):
        return np.full(len(ts), -1, dtype=np.int64)
    starts = steps["ts"].to_numpy(float)
    ends = starts + steps["dur"].to_numpy(float)
    i = np.searchsorted(starts, ts, side="right") - 1
    ok = (i >= 0) & (ts < ends[np.clip(i, 0, None)])
    return np.where(ok, i, -1).astype(np.int64)


_INT = {int}


def _shape(x: Any) -> list[int]:
    """A tensor's shape as ints; [] for anything that is not one (scalars, lists of scalars, tensor lists)."""
    if type(x) is list and (not x or set(map(type, x)) == _INT):  # exact types: a bool is no size (this is hot)
        return list(x)
    return []


def _et_order(value: Any, i: int, path: Path) -> int:
    """A node's rf_id (or id): a whole number >= 0, 0 where absent."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if type(value) is not int or value < 0:
        raise DataError(str(path), i, "rf_id", "a whole number >= 0 (the op's start order)", value, where="node")
    return value


def _et_type(t: Any) -> str:
    """The dtype of a tensor argument ('float' of 'Tensor(float)'), of a tensor list its first tensor's
    ('GenericList[Tensor(float),...]'), '' for anything else."""
    if not isinstance(t, str):
        return ""
    m = re.match(r"(?:GenericList\[)?Tensor\(([^)]*)\)", t)
    return m.group(1) if m else ""


def _et_value(value: Any, etype: Any) -> str:
    """A non-tensor argument as Kineto's ``Concrete Inputs`` spell it ('[2, 2]', '1', 'False'); '' for
    tensors and tensor lists (their values are ids, not arguments)."""
    if isinstance(etype, str) and ("Tensor" in etype or etype.startswith("None")):
        return ""

    def text(v: Any) -> str:
        if isinstance(v, bool):
            return str(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(text(x) for x in v) + "]"
        return "" if v is None else str(v)

    return text(value)


def _et_nodes(path: Path) -> list[tuple[str, list, list, list]]:
    """(name, input shapes, input types, concrete arguments) of an execution trace's ops in start order
    (schema 1.0 and 1.1); a node that is not an object, or whose order, shapes or types are malformed, is a
    DataError naming it by its index in ``nodes``."""
    doc = read_json(path, "a PyTorch execution trace (JSON with a nodes list)")
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list):
        raise DataError(str(path), None, None, "a PyTorch execution trace (JSON with a nodes list)")
    rows = []
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise DataError(str(path), i, None, "an object (an execution trace node)", str(n)[:60], where="node")
        name = str(n.get("name", ""))
        if not name or name.startswith("["):
            continue
        inputs = n.get("inputs")
        if isinstance(inputs, dict):  # schema 1.1: {"values", "shapes", "types"}, rf_id among attrs
            shapes, types, values = inputs.get("shapes", []), inputs.get("types", []), inputs.get("values", [])
            listed = n.get("attrs")
            attrs = (
                {a.get("name"): a.get("value") for a in listed if isinstance(a, dict)}
                if isinstance(listed, list)
                else {}
            )
            order = _et_order(attrs.get("rf_id", n.get("id")), i, path)
        else:
            shapes, types, values = n.get("input_shapes", []), n.get("input_types", []), inputs
            order = _et_order(n.get("rf_id", n.get("id")), i, path)
        for key, v in (("shapes", shapes), ("types", types)):
            if not isinstance(v, list):
                raise DataError(str(path), i, f"input {key}", "a list, one entry per input", str(v)[:60], where="node")
        values = values if isinstance(values, list) and len(values) == len(types) else []
        concrete = [_et_value(v, t) for v, t in zip(values, types)]
        rows.append((order, name, shapes, [_et_type(t) for t in types], concrete))
    rows.sort(key=lambda r: r[0])
    return [(name, shapes, types, concrete) for _, name, shapes, types, concrete in rows]


def _tensor_shapes(dims: Any) -> list[list[int]]:
    """The shapes of an op's tensor arguments (scalars and lists left out), to compare two records of it."""
    return [s for s in map(_shape, dims) if s] if isinstance(dims, list) else []


def _join_et(ops: pd.DataFrame, path: Path, trace_path: Path) -> None:
    """Fill missing input_dims/input_types from an execution trace (one iteration) by aligning op-name sequences.

    Each step's ops, in start order over all threads, are matched against the execution trace's ops in start
    (rf_id) order with difflib; matched ops that lack shapes take the execution trace's. An execution trace of
    another run is refused (DataError): fewer than MIN_ET_MATCH of the trace's ops found their node (of each step's
    ops, or of the execution trace's nodes where a step has more: a trace without step markers holds every
    iteration in one), or, of the matched ops whose shapes both record, fewer than MIN_ET_MATCH agree.
    """
    et = _et_nodes(path)
    if not et:
        raise DataError(str(path), None, None, "a PyTorch execution trace with op nodes, found none")
    n_et = len(et)
    et = et + et  # the trace's iteration may start elsewhere in the loop than the execution trace's: a rotation
    et_names = [n for n, _, _, _ in et]
    missing = ops["input_dims"].isna().to_numpy()
    dims, types = ops["input_dims"].to_numpy(object).copy(), ops["input_types"].to_numpy(object).copy()
    concrete = ops["concrete"].to_numpy(object).copy()
    no_args = np.array([not isinstance(c, list) or not c for c in concrete])
    groups = ops.groupby("step", sort=False).indices if (ops["step"] >= 0).any() else {0: np.arange(len(ops))}
    n_ops = n_found = n_both = n_same = 0
    for step, idx in groups.items():
        if step < 0 and len(groups) > 1:
            continue
        idx = np.sort(idx)  # ops are in start order
        names = ops["name"].to_numpy(object)[idx].tolist()
        sm = difflib.SequenceMatcher(None, et_names, names, autojunk=False)
        blocks = sm.get_matching_blocks()
        can = min(len(idx), n_et)  # how many could match
        n_ops += can
        n_found += min(can, sum(size for _, _, size in blocks))
        for a, b, size in blocks:
            for k in range(size):
                i = idx[b + k]
                if no_args[i] and et[a + k][3]:  # stride, padding, output_mask, ...: what PARAM's trace lacks
                    concrete[i] = et[a + k][3]
                if missing[i]:
                    dims[i], types[i] = et[a + k][1], et[a + k][2]
                else:
                    own, theirs = _tensor_shapes(dims[i]), _tensor_shapes(et[a + k][1])
                    if own and theirs:
                        n_both += 1
                        n_same += own == theirs
    run = f"the execution trace of the run profiled in {trace_path.name}"
    if n_ops and n_found < MIN_ET_MATCH * n_ops:
        raise DataError(
            str(path), None, None,
            f"{run}: at least {MIN_ET_MATCH:.0%} of each step's ops (at most as many as it has nodes) should find "
            f"their node in it by op name, only {n_found / n_ops:.0%} of {n_ops} do; is it another model's?",
        )  # fmt: skip
    if n_both and n_same < MIN_ET_MATCH * n_both:
        raise DataError(
            str(path), None, None,
            f"{run}: the tensor shapes it records should agree with the trace's on at least {MIN_ET_MATCH:.0%} of "
            f"the {n_both} ops both record, they agree on {n_same / n_both:.0%}; is it another batch size's or "
            "model's?",
        )  # fmt: skip
    ops["input_dims"], ops["input_types"], ops["concrete"] = dims, types, concrete


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off meanwhile: parsing a trace makes millions of dicts, and each
    of the collections their creation triggers walks them all (a 200 MB trace's JSON parses in 2 s
    without, 11 s with). Nothing made here holds a cycle that must be freed early."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_trace(path: str | Path, execution_trace: str | Path | None = None) -> Trace:
    """Read a Kineto trace (.json or .json.gz) into tables; shapes from ``execution_trace`` where it lacks them."""
    with gc_paused():
        return _read_trace(Path(path), execution_trace)


def _read_trace(path: Path, execution_trace: str | Path | None) -> Trace:
    doc = read_json(path, "a PyTorch profiler trace (Chrome trace JSON)")
    events = _events(doc, path)
    op_rows, launch_rows, gpu_rows, scope_rows = [], [], [], []
    for e in events:
        cat = str(e.get("cat", "")).lower()
        ts, dur, i = e["ts"], e["dur"], e["_i"]
        if cat in OP_CATS:
            name = str(e.get("name", ""))
            if name.startswith(STEP_PREFIX):
                continue
            dims = _arg(e, "Input Dims", "Input dims")
            op_rows.append(
                {
                    "name": name,
                    "ts": ts,
                    "dur": dur,
                    "tid": _id(e, "tid", e.get("tid"), i, path),
                    "input_dims": dims,
                    "input_types": _arg(e, "Input type", "Input types"),
                    "concrete": _arg(e, "Concrete Inputs"),
                    "external_id": _external_id(e, i, path),
                    "module": _arg(e, "Module Hierarchy"),
                    "stack": _arg(e, "Call stack"),
                }
            )
        elif cat in SCOPE_CATS and not str(e.get("name", "")).startswith(STEP_PREFIX):
            scope_rows.append({"name": str(e.get("name", "")), "ts": ts, "dur": dur, "tid": e.get("tid"), "cat": cat})
        elif cat in LAUNCH_CATS:
            launch_rows.append(
                {
                    "name": str(e.get("name", "")),
                    "ts": ts,
                    "dur": dur,
                    "correlation": _correlation(e, i, path),
                    "tid": _id(e, "tid", e.get("tid"), i, path),
                    "external_id": _external_id(e, i, path),
                }
            )
        elif cat in GPU_CATS:
            gpu_rows.append(
                {
                    "name": str(e.get("name", "")),
                    "cat": cat.removeprefix("gpu_"),
                    "ts": ts,
                    "dur": dur,
                    "correlation": _correlation(e, i, path),
                    "stream": _id(e, "args.stream", _arg(e, "stream", default=e.get("tid")), i, path),
                    "device": _arg(e, "device", default=e.get("pid")),
                    "pid": e.get("pid"),
                    **_geometry(e),
                }
            )
    if not op_rows and not gpu_rows:
        raise DataError(str(path), None, None, "a PyTorch profiler trace (cpu_op and kernel events), found neither")
    if not gpu_rows:
        raise DataError(
            str(path), None, None,
            f"GPU kernel events (cat kernel, gpu_memcpy or gpu_memset): its {len(op_rows)} cpu ops launched nothing "
            "that was recorded (profile with ProfilerActivity.CUDA)",
        )  # fmt: skip
    ops = _frame(
        op_rows,
        ["name", "ts", "dur", "tid", "input_dims", "input_types", "concrete", "external_id", "module", "stack"],
    )
    launches = _frame(launch_rows, ["name", "ts", "dur", "correlation", "tid", "external_id"])
    kernels = _frame(gpu_rows, ["name", "cat", "ts", "dur", "correlation", "stream", "device", "pid", *GEOMETRY])
    kernels = kernels.drop(columns="pid")
    steps, marker = _steps(events)

    ops["depth"], ops["parent"] = _nest(ops)
    ops["step"] = _step_of(ops["ts"].to_numpy(float), steps)
    scopes = pd.DataFrame(scope_rows, columns=["name", "ts", "dur", "tid", "cat"])
    ops["site"] = sites(ops, scopes, ops["module"].tolist(), ops["stack"].tolist(), marker)
    ops["direction"] = directions(ops, scopes)
    launches["op"] = _enclosing(ops, launches)
    launches["step"] = _step_of(launches["ts"].to_numpy(float), steps)
    for df in (launches, kernels):
        df["correlation"] = df["correlation"].astype(np.int64)
    # a kernel's launch: the launch with its correlation id (the first, should a runtime reuse one)
    first = launches.reset_index().drop_duplicates("correlation").set_index("correlation")["index"]
    first = first[first.index >= 0]
    kernels["launch"] = kernels["correlation"].map(first).fillna(-1).astype(np.int64)
    has = kernels["launch"].to_numpy() >= 0
    li = kernels["launch"].to_numpy()
    kernels["op"] = np.where(has, launches["op"].to_numpy()[np.clip(li, 0, None)] if len(launches) else -1, -1)
    own_step = _step_of(kernels["ts"].to_numpy(float), steps)
    kernels["step"] = np.where(
        has, launches["step"].to_numpy()[np.clip(li, 0, None)] if len(launches) else -1, own_step
    )
    cols = ["name", "ts", "dur", "tid", "depth", "parent", "input_dims", "input_types", "concrete", "step"]
    ops = ops[[*cols, "external_id", "site", "direction"]]
    if execution_trace is not None:
        _join_et(ops, Path(execution_trace), path)
    device = _device(doc, kernels)
    return Trace(str(path), ops, launches, kernels, steps, marker, device.name if device else "", device)


def _dtype(types: Any) -> str:
    """seer's dtype name of the first tensor argument ('' where the trace has no types)."""
    for t in types or []:
        if isinstance(t, str) and t:
            key = t.lower()
            if key in _DTYPES:
                return _DTYPES[key]
    return ""


def _is_tensor_type(t: Any) -> bool:
    return isinstance(t, str) and t.lower() in _DTYPES


def _arg_shapes(dims: Any, types: Any) -> list[list[int]]:
    """One shape per argument: a tensor's ([1] for a 0-d tensor, whose type says it is one: a
    counter's `add_`), [] for a scalar, a list or a tensor list."""
    if not isinstance(dims, list):
        return []
    types = types if isinstance(types, list) else []
    out = []
    for i, d in enumerate(dims):
        shape = _shape(d)
        if not shape and isinstance(d, list) and not d and i < len(types) and _is_tensor_type(types[i]):
            shape = [1]
        out.append(shape)
    return out


def _tensor_lists(dims: Any) -> list[list[list[int]]]:
    """The shapes of the tensors of each tensor-list argument (a `_foreach_` op's parameters,
    gradients, ...): the arguments whose dims are a list of shapes."""
    if not isinstance(dims, list):
        return []
    out = []
    for d in dims:
        if isinstance(d, list) and d and all(isinstance(x, list) for x in d):
            shapes = [_shape(x) for x in d]
            if any(shapes):
                out.append([x or [1] for x in shapes])
    return out


_COPY_KINDS = {"htod": "h2d", "dtoh": "d2h", "dtod": "d2d", "ptop": "d2d"}


def _memcpy(kernels: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per op: the direction of its copies (h2d, d2h, d2d) where all its GPU work is copies of one
    direction ('' otherwise), and whether one of them is from or to pageable host memory."""
    name = kernels["name"].astype(str).str.lower()
    word = name.str.extract(r"memcpy\s+(htod|dtoh|dtod|ptop)", expand=False)
    kind = word.map(_COPY_KINDS).where(kernels["cat"].astype(str).str.contains("memcpy"), None)
    by = pd.DataFrame(
        {"op": kernels["op"].to_numpy(), "kind": kind.to_numpy(object), "page": name.str.contains("pageable")}
    )
    g = by.groupby("op", sort=True)
    a = g["kind"].agg(["size", "count", "nunique", "first"])  # vectorized: a lambda per op took seconds
    one = (a["count"] == a["size"]) & (a["nunique"] == 1)
    direction = pd.Series(np.where(one, a["first"].to_numpy(object), ""), index=a.index, dtype=object)
    return direction, g["page"].any()


def kernel_ops(trace: Trace) -> pd.DataFrame:
    """One row per launching op (innermost cpu op that launched GPU work) per step, with its measured kernel time.

    Columns: step, op (row of trace.ops), name (without ``aten::``), site (where in the model it was called:
    seer.workload.sites), direction (forward, backward, optimizer: seer.workload.directions), input_shapes (a
    list per argument, [] for non-tensors, [1] for a 0-d tensor), tensor_lists (the shapes in each tensor-list
    argument), dtype, concrete, memcpy (h2d, d2h, d2d where the op's GPU work is copies, else ''), pageable
    (a copy from or to pageable host memory), kernel_ms (sum of its kernels' durations), n_kernels.
    """
    k = trace.kernels[trace.kernels["op"] >= 0]
    g = k.groupby("op", sort=True).agg(kernel_us=("dur", "sum"), n_kernels=("dur", "size"))
    copy, pageable = _memcpy(k)
    ops = trace.ops.iloc[g.index.to_numpy()]
    direction = ops["direction"] if "direction" in ops else pd.Series("forward", index=ops.index)
    out = pd.DataFrame(
        {
            "step": ops["step"].to_numpy(),
            "op": g.index.to_numpy(),
            "name": ops["name"].str.removeprefix("aten::").to_numpy(),
            "site": ops["site"].to_numpy(object),
            "direction": direction.to_numpy(object),
            "input_shapes": [_arg_shapes(d, t) for d, t in zip(ops["input_dims"], ops["input_types"])],
            "tensor_lists": [_tensor_lists(d) for d in ops["input_dims"]],
            "dtype": [_dtype(t) for t in ops["input_types"]],
            "concrete": [c if isinstance(c, list) else [] for c in ops["concrete"]],
            "memcpy": copy.reindex(g.index).fillna("").to_numpy(object),
            "pageable": pageable.reindex(g.index).fillna(False).to_numpy(bool),
            "kernel_ms": g["kernel_us"].to_numpy(float) / 1e3,
            "n_kernels": g["n_kernels"].to_numpy(np.int64),
        }
    )
    return out.sort_values(["step", "op"], kind="stable").reset_index(drop=True)


def attribution(trace: Trace) -> float:
    """Share of GPU time (kernels, copies, sets) whose launch lies inside a cpu op: how much kernel_ops covers."""
    total = float(trace.kernels["dur"].sum())
    if total <= 0:
        return float("nan")
    return float(trace.kernels.loc[trace.kernels["op"] >= 0, "dur"].sum()) / total
