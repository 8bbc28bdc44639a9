"""A PyTorch profiler trace's GPU kernels as records: the cheapest measurements there are.

Every kernel of a trace becomes one record (docs/data.md's schema, seer.data.records.FIELDS):

- op and configuration from the framework op that launched it (seer.workload.kineto links kernel,
  launch and op; seer.workload.ops maps the op and its shapes, from the trace or its execution
  trace, to a seer config): a GEMM (addmm, mm, bmm, linear) is a `gemm` record in cuBLAS's
  column-major terms, as the harness records it (m = the output's columns, n = its rows: PyTorch's
  row-major C[rows, cols] is cuBLAS's C[cols, rows]), `trans` from the kernel's name; a convolution
  a `conv_fwd` record with its algorithm read from the call's kernels (seer.data.variants
  .conv_algorithm); memory-bound ops as NeuSight's memory records (elementwise, softmax,
  layer_norm with rows, cols and fn);
- kernel, role (the call's main kernel is its longest one of role main; the others are pre or
  post by their place), launch geometry (grid, block, registers per thread, shared memory: Kineto
  reports static and dynamic shared memory together, kept in smem_static) and occupancy (blocks
  per SM, B_max and waves: seer.hardware.occupancy for the trace's compute capability);
- time: kernel_time_ms is the kernel's duration; time_ms the call's (its kernels' durations
  summed), as the harness gives every row of a call the call's time (for a one-kernel call the
  two are equal);
- source = the trace file, suite = "trace", gpu and cc from its deviceProperties, versions (torch,
  CUDA, cuDNN) and `autotuned` (cudnn.benchmark) from the trace's entry in traces.json where there
  is one, else from the trace itself (CUDA runtime).

It lives with the workload (it needs its trace reader and op mapping); `python -m seer.fit --data`
reads traces through it. Kernels the records cannot describe (launched by no recorded op, or by an op seer does not map
to a config) are left out with one warning that counts them.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seer.data.prepare import TRACE_SUITE
from seer.data.records import MEMORY_OPS, conform, data_path, read_json, validate, warn
from seer.data.variants import ENGINE_KINDS, UNKNOWN, classify, conv_algorithm
from seer.errors import DataError
from seer.hardware import occupancy
from seer.hardware.device import occupancy_cc, resolve
from seer.workload.kineto import kernel_ops, read_trace
from seer.workload.trace_ops import map_calls

SUITE = TRACE_SUITE
INDEX = "traces.json"  # a traces folder's index: one entry per trace (file, execution_trace, versions, flags)
TRACE_SUFFIXES = (".json", ".json.gz")
_GEMM_KINDS = ("linear", "bmm")


def is_trace_file(path: Path) -> bool:
    """A profiler trace by its name: .json or .json.gz, not an execution trace (.et.json) or an index."""
    name = path.name
    return name.endswith(TRACE_SUFFIXES) and ".et." not in name and name != INDEX


def is_trace_folder(path: Path) -> bool:
    return path.is_dir() and (path / INDEX).is_file()


def index(folder: str | Path) -> list[dict]:
    """The entries of a traces folder's traces.json (each with at least `file`)."""
    folder = Path(folder)
    doc = read_json(folder / INDEX, "a traces index (a JSON list of {file, execution_trace, ...})")
    if not isinstance(doc, list) or not all(isinstance(e, dict) and isinstance(e.get("file"), str) for e in doc):
        raise DataError(str(folder / INDEX), None, None, "a JSON list of objects, each with a 'file'")
    return doc


def entry_of(path: Path) -> dict:
    """The traces.json entry of a trace file where its folder has one naming it, else {}."""
    if (path.parent / INDEX).is_file():
        for e in index(path.parent):
            if e["file"] == path.name:
                return e
    return {}


def read_traces(path: str | Path) -> pd.DataFrame:
    """Records of a trace file, or of every trace a folder's traces.json lists."""
    path = data_path(path, "a profiler trace (.json, .json.gz) or a folder with traces.json")
    if path.is_file():
        return read_trace_records(path)
    if not is_trace_folder(path):
        raise DataError(str(path), None, None, f"a folder of profiler traces with their index {INDEX}")
    frames = [read_trace_records(path / e["file"]) for e in index(path)]
    return pd.concat(frames, ignore_index=True) if frames else conform(pd.DataFrame())


def _versions(entry: dict, trace: Any) -> dict[str, str]:
    """torch, CUDA and cuDNN versions of the run (traces.json's; CUDA from the trace where it has none)."""
    cudnn = entry.get("cudnn")
    if isinstance(cudnn, int):  # torch.backends.cudnn.version(): 91900 -> 9.19.0
        cudnn = f"{cudnn // 10000}.{cudnn // 100 % 100}.{cudnn % 100}"
    return {
        "torch_version": str(entry.get("torch") or ""),
        "cuda_version": str(entry.get("cuda") or ""),
        "cudnn_version": str(cudnn or ""),
    }


def _math(dtype: str, flags: dict) -> str:
    if dtype == "float16":
        return "fp16"
    if dtype == "bfloat16":
        return "bf16"
    return "tf32" if flags.get("cuda.matmul.allow_tf32") or flags.get("cudnn.allow_tf32") else "fma"


def _roles(names: list[str], durs: np.ndarray) -> list[str]:
    """main for the kernel that names the call's engine where there is one (variants.ENGINE_KINDS,
    as seer.data.prepare keys a harness call), else the call's longest kernel of role main (its
    longest kernel where none is); pre for those before it, post for those after."""
    engine = [i for i, n in enumerate(names) if classify(n).kind in ENGINE_KINDS]
    mains = [i for i, n in enumerate(names) if classify(n).role == "main" and classify(n).kind != UNKNOWN]
    pool = engine or mains or list(range(len(names)))
    main = max(pool, key=lambda i: (durs[i], -i))
    return ["pre" if i < main else "main" if i == main else "post" for i in range(len(names))]


def _gemm(cfg: dict, kernel: str, kind: str) -> dict:
    """A workload GEMM config (row-major: m rows, n columns) as the harness's cuBLAS record."""
    layout = classify(kernel).layout
    trans = layout if layout in ("nn", "nt", "tn", "tt") else ("tn" if kind == "linear" else "nn")
    return {"op": "gemm", "batch": int(cfg.get("batch", 1)), "m": cfg["n"], "n": cfg["m"], "k": cfg["k"],
            "trans": trans}  # fmt: skip


def read_trace_records(
    path: str | Path, execution_trace: str | Path | None = None, entry: dict | None = None
) -> pd.DataFrame:
    """One record per GPU kernel of the trace (see the module docstring); the execution trace and the
    metadata default to the trace's entry in its folder's traces.json."""
    path = data_path(path, "a profiler trace (.json, .json.gz)")
    entry = entry_of(path) if entry is None else entry
    if execution_trace is None and entry.get("execution_trace"):
        execution_trace = path.parent / str(entry["execution_trace"])
    trace = read_trace(path, execution_trace)
    props = trace.device_props
    if props is None or not props.name:
        raise DataError(str(path), None, None, "a trace with deviceProperties (the GPU its kernels ran on)")
    spec = resolve(props).spec
    cc = props.cc or spec.cc
    sms = props.sms or spec.sms
    flags: dict = entry["flags"] if isinstance(entry.get("flags"), dict) else {}
    kops = kernel_ops(trace)
    mapped = dict(zip(kops["op"].astype(int), map_calls(kops)))
    dtypes = dict(zip(kops["op"].astype(int), kops["dtype"]))
    k = trace.kernels
    source = path.name
    salt = zlib.crc32(str(path.name).encode()) % 100_000 * 10_000_000
    rows: list[dict] = []
    skipped = 0
    for op, idx in k[k["op"] >= 0].groupby("op", sort=True).indices.items():
        m = mapped.get(int(op))
        ks = k.iloc[idx].sort_values("ts", kind="stable")
        names = ks["name"].astype(str).tolist()
        durs = ks["dur"].to_numpy(float) / 1e3
        if m is None or m.config is None:
            skipped += len(ks)
            continue
        own: dict = m.config
        parts = [p.config or own for p in m.parts] if m.parts and len(m.parts) == len(ks) else [own] * len(ks)
        dtype = dtypes.get(int(op)) or "float32"
        base = {"call_id": salt + int(op), "time_ms": float(durs.sum()), "kernels": ";".join(names),
                "dtype": dtype, "math": _math(dtype, flags)}  # fmt: skip
        roles = _roles(names, durs)
        main = names[roles.index("main")]
        if m.kind == "conv":
            algo = conv_algorithm(names, main)
            if algo == UNKNOWN:
                skipped += len(ks)
                continue
        for j, (name, dur, role, cfg) in enumerate(zip(names, durs, roles, parts)):
            if m.kind in _GEMM_KINDS:
                cfg = _gemm(cfg, main, m.kind)
            elif m.kind == "conv":
                cfg = {**cfg, "algo": algo, "layout": "NCHW"}
            elif cfg.get("op") not in MEMORY_OPS:
                skipped += 1
                continue
            rec = {**base, **{c: v for c, v in cfg.items() if c != "dtype"}, "kernel": name, "role": role,
                   "kernel_time_ms": float(dur)}  # fmt: skip
            rec.update({g: ks[g].iat[j] for g in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")})
            rec["regs_per_thread"], rec["smem_static"] = ks["regs_per_thread"].iat[j], ks["smem"].iat[j]
            rows.append(rec)
    if skipped:
        warn(f"{path}: {skipped} of {len(k)} GPU kernels are not records (no op launched them, or seer maps "
             "their op to no configuration)")  # fmt: skip
    df = pd.DataFrame(rows)
    if df.empty:
        raise DataError(str(path), None, None, "GPU kernels launched by ops seer maps to a configuration, found none")
    df["smem_dynamic"] = 0
    df["source"], df["suite"], df["gpu"], df["cc"] = source, SUITE, props.name, cc
    df["config_key"] = _config_keys(df)
    df["status"] = "ok"
    df["reps"] = 1
    for key, v in _versions(entry, trace).items():
        df[key] = v
    df["autotuned"] = bool(flags.get("cudnn.benchmark", False))
    df = _occupancy(df, cc, sms)
    return validate(df, str(path), where="kernel")


def _config_keys(df: pd.DataFrame) -> pd.Series:
    cols = [c for c in ("op", "batch", "m", "n", "k", "trans", "c_in", "h_in", "w_in", "c_out", "kh", "kw",
                        "stride_h", "pad_h", "rows", "cols", "fn") if c in df]  # fmt: skip
    vals = df[cols].to_numpy(dtype=object)
    return pd.Series(
        [":".join(str(v) for v in row if isinstance(v, str) or pd.notna(v)) for row in vals], index=df.index
    )


def _occupancy(df: pd.DataFrame, cc: str, sms: int) -> pd.DataFrame:
    """blocks, blocks_per_sm, b_max and waves of the kernels whose geometry the trace records."""
    g = df[["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "regs_per_thread", "smem_static"]]
    g = g.apply(pd.to_numeric, errors="coerce").astype(float)
    ok = g.notna().all(axis=1).to_numpy().copy()
    blocks = (g["grid_x"] * g["grid_y"] * g["grid_z"]).to_numpy()
    threads = (g["block_x"] * g["block_y"] * g["block_z"]).to_numpy()
    df["blocks"] = np.where(ok, blocks, np.nan)
    bps = np.full(len(df), np.nan)
    ok &= (threads >= 1) & (threads <= 1024)
    if ok.any():
        bps[ok] = occupancy.blocks_per_sm(occupancy_cc(str(cc)), threads[ok].astype(np.int64),
                                          g["regs_per_thread"].to_numpy()[ok].astype(np.int64),
                                          g["smem_static"].to_numpy()[ok].astype(np.int64))  # fmt: skip
    bmax = bps * sms
    df["blocks_per_sm"], df["b_max"] = bps, bmax
    with np.errstate(invalid="ignore", divide="ignore"):
        df["waves"] = np.where(bmax > 0, np.ceil(blocks / np.where(bmax > 0, bmax, 1)), np.nan)
    return df


__all__ = ["INDEX", "SUITE", "entry_of", "index", "is_trace_file", "is_trace_folder", "read_trace_records",
           "read_traces"]  # fmt: skip
