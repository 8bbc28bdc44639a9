"""NeuSight's kernel-time CSVs (../shared/datasets/neusight) as records."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import paths
from seer.data.records.files import data_path, read_bytes
from seer.data.records.schema import conform, fill_launch
from seer.data.records.validate import drop_duplicates, first_bad, numeric, require_columns, validate
from seer.data.variants import UNKNOWN, conv_algorithm
from seer.errors import DataError, UnknownGPUError
from seer.hardware import gpus

NEUSIGHT_OPS = {
    "conv": "conv_fwd",
    "bmm": "bmm",
    "linear": "linear",
    "add": "elementwise",
    "mul": "elementwise",
    "relu": "elementwise",
    "gelu": "elementwise",
    "tanh": "elementwise",
    "softmax": "softmax",
    "ln": "layer_norm",
}
_FN_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # an element-wise function NeuSight names by itself (pow, ...)
_NOT_POINTWISE = r"(?i)mm|matmul|conv|linear|norm|softmax|embedding|pool|attention|^ln$"
_NS_COMMON = (
    "OPName",
    "Latency",
    "Device",
    "Kernel Name",
    "Grid x",
    "Grid y",
    "Grid z",
    "Block x",
    "Block y",
    "Block z",
)
_NS_CONFIG = {
    "conv_fwd": ("B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"),
    "bmm": ("B", "M", "N", "K"),
    "linear": ("B", "M", "N", "K"),
    "elementwise": ("B", "H"),
    "softmax": ("B", "H"),
    "layer_norm": ("B", "H"),
}


def _versions(raw: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    def fmt(col: str, pattern: str, repl) -> pd.Series:
        vals = raw[col].astype(str) if col in raw else pd.Series("", index=raw.index)
        uniq = {v: re.sub(pattern, repl, v) for v in pd.unique(vals)}
        return vals.map(uniq)

    cuda = fmt("CUDA Version", r"^cu(\d+)(\d)$", r"\1.\2")
    cudnn = fmt("CUDNN Version", r"^(\d)(\d)(\d\d)$", lambda m: f"{m[1]}.{m[2]}.{int(m[3])}")
    return cuda, cudnn


def read_neusight_csv(path: str | Path) -> pd.DataFrame:
    """One NeuSight CSV (any op) as records; conv rows get their algorithm from `Kernels`."""
    path = Path(path)
    file = str(path)
    try:
        raw = pd.read_csv(io.BytesIO(read_bytes(path)))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(file, None, None, f"a readable CSV file ({exc})".replace("\n", " ")) from None
    require_columns(raw, _NS_COMMON, file, " (NeuSight format)")
    lines = np.arange(len(raw)) + 2
    opname = raw["OPName"].fillna("").astype(str).str.strip()
    op = opname.map(NEUSIGHT_OPS)
    # any other function in an element-wise file (columns B and H) is an element-wise op
    other = op.isna().to_numpy()
    if other.any():
        pointwise = opname.str.fullmatch(_FN_NAME) & ~opname.str.contains(_NOT_POINTWISE)
        bad = other & ~(pointwise.to_numpy() & ("H" in raw) & ("B" in raw))
        if (i := first_bad(bad)) is not None:
            raise DataError(
                file,
                int(lines[i]),
                "OPName",
                f"one of {', '.join(NEUSIGHT_OPS)}, or an element-wise function name in a file with columns B and H",
                opname.iloc[i],
                where="line",
            )
        op = op.fillna("elementwise")
    for o in pd.unique(op):
        require_columns(raw, _NS_CONFIG[o], file, f" (NeuSight {o})")
    t = numeric(raw["Latency"], file, "Latency", lines, minimum=0, expected="a time in ms > 0")
    if (i := first_bad((t <= 0).to_numpy())) is not None:
        raise DataError(file, int(lines[i]), "Latency", "a time in ms > 0", raw["Latency"].iloc[i], where="line")
    # GPU: every distinct name must be known
    devices = raw["Device"].astype(str).str.strip()
    cc = {}
    for name in pd.unique(devices):
        try:
            cc[name] = gpus.lookup(name).cc
        except UnknownGPUError:
            i = int(np.flatnonzero((devices == name).to_numpy())[0])
            raise DataError(
                file,
                int(lines[i]),
                "Device",
                "a GPU in seer's table (seer.hardware.gpus.GPUS) or one loaded with "
                "seer.hardware.gpus.load_device_json",
                name,
                where="line",
            ) from None
    rec: dict[str, object] = {
        "source": f"neusight/{path.parent.name}/{path.name}",
        "suite": "neusight",
        "gpu": devices,
        "cc": devices.map(cc),
        "op": op,
        "call_id": np.arange(len(raw)),
        "dtype": "float32",
        "math": "fma",
        "kernel": raw["Kernel Name"],
        "role": "main",
        "time_ms": t,
        "status": "ok",
    }
    rec["kernels"] = raw["Kernels"].fillna("").astype(str).str.strip(";") if "Kernels" in raw else ""
    rec["cuda_version"], rec["cudnn_version"] = _versions(raw)
    for ax in "xyz":
        rec[f"grid_{ax}"] = numeric(raw[f"Grid {ax}"], file, f"Grid {ax}", lines, integer=True, minimum=1)
        rec[f"block_{ax}"] = numeric(raw[f"Block {ax}"], file, f"Block {ax}", lines, integer=True, minimum=1)
    cfg: dict[str, pd.Series] = {}
    for o in pd.unique(op):
        rows = (op == o).to_numpy()
        for c in _NS_CONFIG[o]:
            minimum = 0 if c == "Padding" else 1
            vals = numeric(raw[c].where(rows, 1), file, c, lines, integer=True, minimum=minimum)
            cfg[c] = cfg[c].where(~rows, vals) if c in cfg else vals.where(rows)
    col = lambda c: cfg.get(c, pd.Series(np.nan, index=raw.index))
    is_conv, is_bmm, is_lin = (op == "conv_fwd"), (op == "bmm"), (op == "linear")
    rows_ops = op.isin(["elementwise", "softmax", "layer_norm"])
    one = pd.Series(1.0, index=raw.index)
    rec.update(
        {
            "batch": col("B").where(is_conv | is_bmm, one.where(is_lin)),
            "c_in": col("Input_Channel"),
            "c_out": col("Output_Channel"),
            "h_in": col("Input_Size"),
            "w_in": col("Input_Size"),
            "kh": col("Kernel_Szie"),
            "kw": col("Kernel_Szie"),
            "stride_h": col("Stride"),
            "stride_w": col("Stride"),
            "pad_h": col("Padding"),
            "pad_w": col("Padding"),
            "dil_h": one.where(is_conv),
            "dil_w": one.where(is_conv),
            "groups": one.where(is_conv),
            # bmm: [B, M, N] x [B, N, K] -> reduction over N; linear: [B*M, N] x [N, K]
            "m": col("M").where(is_bmm, col("B") * col("M")).where(is_bmm | is_lin),
            "n": col("K").where(is_bmm | is_lin),
            "k": col("N").where(is_bmm | is_lin),
            "trans": pd.Series("nn", index=raw.index).where(is_bmm, "tn").where(is_bmm | is_lin, ""),
            "rows": col("B").where(rows_ops),
            "cols": col("H").where(rows_ops),
            "fn": opname.str.lower().where(op == "elementwise", ""),
            "layout": pd.Series("NCHW", index=raw.index).where(is_conv, ""),
        }
    )
    df = pd.DataFrame(rec, index=raw.index)
    df["algo"] = ""
    if is_conv.any():
        pairs = pd.Series(list(zip(df["kernels"], df["kernel"])), index=raw.index)[is_conv]
        algos = {p: conv_algorithm(*p) for p in pd.unique(pairs)}
        algo = pairs.map(algos)
        if (algo == UNKNOWN).any():
            i = int(np.flatnonzero((algo == UNKNOWN).reindex(raw.index, fill_value=False).to_numpy())[0])
            raise DataError(
                file,
                int(lines[i]),
                "Kernels",
                "a kernel list that identifies a cuDNN forward algorithm",
                raw["Kernels"].iloc[i],
                where="line",
            )
        df.loc[is_conv, "algo"] = algo
    df = fill_launch(conform(df))
    return drop_duplicates(validate(df, file, lines), file, lines)


def read_neusight(path: str | Path, ops: Iterable[str] | None = None, gpu: str | None = None) -> pd.DataFrame:
    """A NeuSight CSV, or a folder of them (`<op>/<GPU>.csv`), optionally only some ops/GPU."""
    path = data_path(path, "an existing NeuSight CSV file or folder")
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(path.glob("*.csv")) or sorted(path.glob("*/*.csv"))
        if ops is not None:
            want = set(ops)
            files = [f for f in files if f.parent.name in want or f.parent == path]
        if gpu is not None:
            slug = gpus.slug_for(gpu)
            files = [f for f in files if gpus.slug_for(f.stem.replace("_", " ")) == slug]
    else:
        raise DataError(str(path), None, None, "an existing NeuSight CSV file or folder")
    if not files:
        raise DataError(str(path), None, None, "NeuSight CSV files (<op>/<GPU>.csv)")
    return pd.concat([read_neusight_csv(f) for f in files], ignore_index=True)


def neusight_dir() -> Path | None:
    """Where NeuSight's data lies: $SEER_NEUSIGHT, else ../shared/datasets/neusight beside the repo."""
    env = os.environ.get("SEER_NEUSIGHT")
    if env and Path(env).is_dir():
        return Path(env)
    return paths.shared_dataset("neusight")
