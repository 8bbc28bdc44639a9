"""The measurement record: one row per kernel launch, as DESIGN.md defines it, and its loaders.

Every source (the project's harness CSV, NeuSight's CSVs, SEER's Excel workbooks) is turned
into one tidy DataFrame with the columns of `FIELDS`. Loaders validate as they go and raise
`DataError` naming the file, the row, the column and what was expected.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
import re
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .errors import DataError, SeerError, UnknownGPUError
from . import gpus
from .variants import CONV_ALGOS, CONV_ALGO_ID, ROLES, UNKNOWN, conv_algorithm


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "str", "int" or "float"
    doc: str
    minimum: float | None = None  # smallest valid value where given


_CONV = ("batch", "c_in", "h_in", "w_in", "c_out", "kh", "kw", "stride_h", "stride_w", "pad_h",
         "pad_w", "dil_h", "dil_w", "groups")
_GEMM = ("batch", "m", "n", "k")
_ROWS = ("rows", "cols")
_EMB = ("batch", "num_embeddings", "num_tables", "bag_size", "emb_dim")

# op -> configuration fields it needs
OPS: dict[str, tuple[str, ...]] = {
    "conv_fwd": _CONV,
    "gemm": _GEMM,  # cuBLAS(Lt) GEMM from the harness: C[m,n] = A[m,k] B[k,n], batch of them
    "bmm": _GEMM,  # torch.bmm (NeuSight)
    "linear": _GEMM,  # torch.nn.Linear (NeuSight): batch 1, m = B*M rows
    "elementwise": _ROWS + ("fn",),
    "softmax": _ROWS,
    "layer_norm": _ROWS,
    "concat": _ROWS,
    "transpose": _ROWS,
    "memcpy": _ROWS + ("fn",),
    "embedding_fwd": _EMB,
    "embedding_bwd_sgd": _EMB,
}
STATUSES = ("ok", "not_supported", "workspace_too_large", "out_of_memory", "failed")

FIELDS: tuple[Field, ...] = (
    # where it came from
    Field("source", "str", "file the row was read from"),
    Field("suite", "str", "configuration suite: seer_grid, test_set_ii, neusight, ..."),
    Field("gpu", "str", "GPU name as CUDA reports it"),
    Field("cc", "str", "compute capability, e.g. 9.0"),
    Field("op", "str", f"operation: {', '.join(OPS)}"),
    Field("call_id", "int", "rows of one call (one config x algorithm) share it", 0),
    Field("config_key", "str", "identifies the configuration across algorithms and reruns"),
    Field("layer", "str", "network layer the configuration comes from, e.g. resnet50.layer1.0.conv2"),
    Field("uses", "str", "how often each network runs it, e.g. resnet50:3;vgg16:1"),
    # convolution: NCHW input (batch, c_in, h_in, w_in), filter (c_out, c_in/groups, kh, kw)
    Field("batch", "int", "N of a convolution, batch count of a GEMM, B of an embedding", 1),
    Field("c_in", "int", "input channels", 1),
    Field("h_in", "int", "input height", 1),
    Field("w_in", "int", "input width", 1),
    Field("c_out", "int", "output channels (filters)", 1),
    Field("kh", "int", "filter height", 1),
    Field("kw", "int", "filter width", 1),
    Field("stride_h", "int", "vertical stride", 1),
    Field("stride_w", "int", "horizontal stride", 1),
    Field("pad_h", "int", "vertical zero padding", 0),
    Field("pad_w", "int", "horizontal zero padding", 0),
    Field("dil_h", "int", "vertical dilation", 1),
    Field("dil_w", "int", "horizontal dilation", 1),
    Field("groups", "int", "convolution groups", 1),
    # GEMM: C[m, n] = A[m, k] B[k, n]; k is the reduction
    Field("m", "int", "GEMM rows of C", 1),
    Field("n", "int", "GEMM columns of C", 1),
    Field("k", "int", "GEMM reduction length", 1),
    Field("trans", "str", "GEMM transposes of A and B, e.g. nn, tn"),
    # memory-bound kernels on a [rows, cols] tensor
    Field("rows", "int", "rows of a [rows, cols] tensor", 1),
    Field("cols", "int", "columns (the reduced axis of softmax and layer norm)", 1),
    Field("fn", "str", "element-wise function (add, relu, ...) or copy direction (h2d, d2d)"),
    # embedding bags (DLRM): batch B, tables T, rows E each, bag size L, dimension D
    Field("num_embeddings", "int", "E: rows per table", 1),
    Field("num_tables", "int", "T: tables", 1),
    Field("bag_size", "int", "L: lookups per bag", 1),
    Field("emb_dim", "int", "D: embedding dimension", 1),
    Field("rows_per_block", "int", "embedding rows handled per thread block", 1),
    Field("dtype", "str", "float32, float16, bfloat16"),
    Field("layout", "str", "NCHW or NHWC"),
    # what ran
    Field("algo", "str", "cuDNN forward algorithm name, or a cuBLASLt algo id as lt:<id>"),
    Field("math", "str", "fma, tf32, fp16, bf16, default"),
    Field("heuristic_rank", "int", "rank of this algorithm in cuDNN's Get_v7 list (0 = its pick)", 0),
    Field("workspace_bytes", "int", "workspace the call needed", 0),
    Field("kernel", "str", "kernel name of this launch"),
    Field("kernels", "str", "every kernel of the call, ';'-joined in launch order"),
    Field("role", "str", "main, pre or post (helper kernels)"),
    Field("grid_x", "int", "grid size x", 1),
    Field("grid_y", "int", "grid size y", 1),
    Field("grid_z", "int", "grid size z", 1),
    Field("block_x", "int", "block size x", 1),
    Field("block_y", "int", "block size y", 1),
    Field("block_z", "int", "block size z", 1),
    Field("blocks", "int", "launched thread blocks (grid product)", 1),
    Field("regs_per_thread", "int", "registers per thread", 0),
    Field("smem_static", "int", "static shared memory per block, bytes", 0),
    Field("smem_dynamic", "int", "dynamic shared memory per block, bytes", 0),
    Field("blocks_per_sm", "int", "resident blocks per SM", 0),
    Field("b_max", "int", "resident blocks per wave on the GPU", 0),
    Field("waves", "int", "ceil(blocks / b_max)", 0),
    # measured
    Field("time_ms", "float", "median time of the whole call, ms", 0),
    Field("kernel_time_ms", "float", "median time of this kernel alone, ms", 0),
    Field("gpu_span_ms", "float", "median GPU span of the call's kernels (first start to last end), ms", 0),
    Field("event_time_ms", "float", "the call's CUDA-event time where time_ms holds its GPU span, ms", 0),
    Field("spread_ms", "float", "spread of the repetitions (interquartile range), ms", 0),
    Field("reps", "int", "timed repetitions", 1),
    Field("fp32_inst", "float", "FP32 instructions (thread level)", 0),
    Field("dram_read_bytes", "float", "DRAM bytes read", 0),
    Field("dram_write_bytes", "float", "DRAM bytes written", 0),
    Field("fp32_util_pct", "float", "FP32 pipe utilization, percent", 0),
    Field("dram_util_pct", "float", "DRAM throughput, percent of peak", 0),
    Field("kernel_type", "str", "SEER type: compute, memory, under"),
    Field("status", "str", f"one of {', '.join(STATUSES)}"),
    Field("message", "str", "error text of a failed or unsupported call"),
    Field("split", "str", "train or test where the source fixes it (SEER workbooks)"),
    # tool versions
    Field("cuda_version", "str", "CUDA runtime version"),
    Field("cudnn_version", "str", "cuDNN version"),
    Field("cublas_version", "str", "cuBLAS version"),
    Field("driver_version", "str", "driver version"),
    Field("sm_clock_mhz", "float", "SM clock during the measurement", 0),
)
FIELD = {f.name: f for f in FIELDS}
COLUMNS: tuple[str, ...] = tuple(f.name for f in FIELDS)
ALWAYS = ("gpu", "op", "time_ms")
MAX_INT = 2**63  # whole numbers are Int64: a value this large or larger is corrupt (1e30)
BLOCK_KEY = ("suite", "config_key", "math")  # one configuration's block in a harness store file


def warn(message: str) -> None:
    """One warning line on stderr, as the command line tools print theirs (data kept going)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _missing(f: Field, n: int) -> pd.Series:
    if f.kind == "int":
        return pd.Series(pd.array([pd.NA] * n, dtype="Int64"))
    if f.kind == "float":
        return pd.Series(np.full(n, np.nan))
    return pd.Series([""] * n, dtype=object)


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Add missing record columns, order them, and give every column its record dtype."""
    out = {}
    n = len(df)
    for f in FIELDS:
        if f.name not in df:
            out[f.name] = _missing(f, n).set_axis(df.index)
            continue
        col = df[f.name]
        if f.kind == "int":
            if col.dtype != "Int64":
                num = pd.to_numeric(col, errors="coerce")
                col = num.where(num.abs() < MAX_INT).round().astype("Int64")  # out of range: NA
        elif f.kind == "float":
            if col.dtype != "float64":
                col = pd.to_numeric(col, errors="coerce").astype("float64")
        else:
            if not (pd.api.types.is_string_dtype(col) or col.dtype == object):
                col = col.astype(str)
            if col.isna().any():
                col = col.fillna("")
            if col.dtype != object:
                col = col.astype(object)
        out[f.name] = col
    res = pd.DataFrame(out, index=df.index)
    for c in df.columns:
        if c not in FIELD:
            res[c] = df[c]
    return res.reset_index(drop=True)


# ---------------------------------------------------------------- validation helpers
def _first_bad(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if len(idx) else None


def numeric(raw: pd.Series, file: str, column: str, lines: np.ndarray, *, where: str = "line",
            integer: bool = False, minimum: float | None = None, required: bool = True,
            expected: str | None = None) -> pd.Series:
    """Parse one source column as numbers; raise DataError at the first value that is not."""
    if pd.api.types.is_numeric_dtype(raw):
        num = raw.astype("float64")
        present = num.notna()
    else:
        txt = raw.astype(object).where(raw.notna(), "").astype(str).str.strip()
        present = txt != ""
        num = pd.to_numeric(txt.where(present), errors="coerce")
    what = expected or ("a whole number" if integer else "a number")
    if minimum is not None:
        what += f" >= {minimum:g}" if minimum != 0 or integer else " >= 0"
    bad = (present & num.isna()) | np.isinf(num)
    if required:
        bad |= ~present
    if integer:
        bad |= present & num.notna() & (num.fillna(0) % 1 != 0)
    if minimum is not None:
        bad |= present & (num.fillna(minimum) < minimum)
    if integer:  # 1e30 is a whole number but no count: out of range (Int64 would overflow)
        huge = present & (num.abs() >= MAX_INT)
        if (i := _first_bad((bad | huge).to_numpy())) is not None and huge.iloc[i]:
            raise DataError(file, int(lines[i]), column, f"{what} below 2**63 (the value is out of range)",
                            raw.iloc[i], where=where)
    i = _first_bad(bad.to_numpy())
    if i is not None:
        val = raw.iloc[i]
        raise DataError(file, int(lines[i]), column, what, None if pd.isna(val) else val, where=where)
    return num


def _require_columns(df: pd.DataFrame, cols: Iterable[str], file: str, why: str = "") -> None:
    for c in cols:
        if c not in df.columns:
            raise DataError(file, None, c, f"a column named '{c}'{why}")


def validate(df: pd.DataFrame, file: str = "<records>", lines: np.ndarray | None = None,
             where: str = "line", names: dict[str, str] | None = None) -> pd.DataFrame:
    """Check a record frame: known ops, algorithms and roles; every config field an op needs
    present and in range; time > 0 on rows whose status is ok. Returns the frame conformed."""
    names = names or {}
    lines = np.arange(len(df)) + 2 if lines is None else np.asarray(lines)

    def err(i: int, col: str, expected: str, value=None):
        raise DataError(file, int(lines[i]), names.get(col, col), expected, value, where=where)

    _require_columns(df, ALWAYS, file)
    for f in FIELDS:  # a count of 2**63 or more is corrupt (and would overflow Int64 in conform)
        if f.kind == "int" and f.name in df and df[f.name].dtype != "Int64":
            vals = pd.to_numeric(df[f.name], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            if (i := _first_bad(np.abs(vals) >= MAX_INT)) is not None:
                err(i, f.name, "a whole number below 2**63 (the value is out of range)", vals[i])
    df = conform(df)
    op = df["op"].to_numpy(dtype=object)
    bad = ~np.isin(op, list(OPS))
    if (i := _first_bad(bad)) is not None:
        err(i, "op", f"one of {', '.join(OPS)}", op[i])
    if (i := _first_bad((df["gpu"].str.strip() == "").to_numpy())) is not None:
        err(i, "gpu", "a GPU name")
    status = df["status"].where(df["status"] != "", "ok")
    df["status"] = status
    if (i := _first_bad(~status.isin(STATUSES).to_numpy())) is not None:
        err(i, "status", f"one of {', '.join(STATUSES)}", status.iloc[i])
    role = df["role"].where(df["role"] != "", "main")
    df["role"] = role
    if (i := _first_bad(~role.isin(ROLES).to_numpy())) is not None:
        err(i, "role", f"one of {', '.join(ROLES)}", role.iloc[i])
    ok = (status == "ok").to_numpy()
    t = df["time_ms"].to_numpy()
    if (i := _first_bad(ok & ~(np.isfinite(t) & (t > 0)))) is not None:
        err(i, "time_ms", "a time in ms > 0", None if np.isnan(t[i]) else t[i])
    for name, need in OPS.items():
        rows = op == name
        if not rows.any():
            continue
        for col in need:
            f = FIELD[col]
            if f.kind == "str":
                if (i := _first_bad(rows & (df[col] == "").to_numpy())) is not None:
                    err(i, col, f"a value ({f.doc}) for op {name}")
                continue
            vals = df[col].to_numpy(dtype="float64", na_value=np.nan)
            bad = rows & ~(np.isfinite(vals) & (vals >= (f.minimum or 0)))
            if (i := _first_bad(bad)) is not None:
                err(i, col, f"a whole number >= {f.minimum:g} for op {name}",
                    None if np.isnan(vals[i]) else vals[i])
    conv = op == "conv_fwd"
    if conv.any():
        algo = df["algo"].to_numpy(dtype=object)
        if (i := _first_bad(conv & ~np.isin(algo, list(CONV_ALGO_ID)))) is not None:
            err(i, "algo", f"a cuDNN forward algorithm ({', '.join(CONV_ALGO_ID)})", algo[i])
    for col in ("stride_h", "stride_w", "dil_h", "dil_w", "groups", "pad_h", "pad_w", "blocks",
                "regs_per_thread", "b_max", "kernel_time_ms", "spread_ms"):
        f = FIELD[col]
        vals = df[col].to_numpy(dtype="float64", na_value=np.nan)
        if (i := _first_bad(~np.isnan(vals) & (vals < (f.minimum or 0)))) is not None:
            err(i, col, f"a value >= {f.minimum:g}", vals[i])
    return df


# ---------------------------------------------------------------- derived quantities
def conv_output_hw(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Output height and width of each convolution row (cuDNN's formula)."""
    g = {c: df[c].to_numpy(dtype="float64", na_value=np.nan) for c in _CONV}
    eff_h = (g["kh"] - 1) * g["dil_h"] + 1
    eff_w = (g["kw"] - 1) * g["dil_w"] + 1
    h = np.floor((g["h_in"] + 2 * g["pad_h"] - eff_h) / g["stride_h"]) + 1
    w = np.floor((g["w_in"] + 2 * g["pad_w"] - eff_w) / g["stride_w"]) + 1
    return h, w


def fill_launch(df: pd.DataFrame) -> pd.DataFrame:
    """Fill `blocks` from the grid where only the grid is known."""
    grid = (df["grid_x"].astype("Float64") * df["grid_y"].astype("Float64").fillna(1)
            * df["grid_z"].astype("Float64").fillna(1))
    df["blocks"] = df["blocks"].fillna(grid.round().astype("Int64"))
    return df


# ---------------------------------------------------------------- atomic writing
def atomic_write(path: str | Path, write) -> Path:
    """Call write(tmp_path) then rename over `path`, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ---------------------------------------------------------------- reading files safely
def data_path(path: str | Path | None, what: str = "an existing file or folder") -> Path:
    """The path, refused in one sentence if empty, missing, or not a regular file or folder
    (a FIFO or device would block the reader forever)."""
    if path is None or not str(path).strip():
        raise SeerError("no data path given: pass a records file or folder")
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(str(path), None, None, what) from None
    except OSError as exc:
        raise DataError(str(path), None, None, f"a readable file or folder ({exc.strerror})") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError(str(path), None, None, "a regular file or folder, not a FIFO, socket or device")
    return path


def read_bytes(path: str | Path) -> bytes:
    """A file's content, gunzipped if it ends in .gz; a missing, special, empty or corrupt file
    is a DataError naming it."""
    path = data_path(path, "an existing file")
    if path.is_dir():
        raise DataError(str(path), None, None, "a file, not a folder")
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(str(path), None, None, f"a readable file ({exc})".replace("\n", " ")) from None
    if not data.strip():
        raise DataError(str(path), None, None, "a CSV file with a header row, got an empty file")
    return data


def _fields(line: bytes) -> list[str] | None:
    """The cells of one CSV line, None if it does not parse."""
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    if '"' not in text:
        return text.split(",")
    try:
        return next(csv.reader([text], strict=True))
    except (csv.Error, StopIteration):
        return None


@dataclass
class Blocks:
    """A store file split into what is kept (the header and every complete configuration
    block) and what is not (torn lines, garbage, incomplete blocks), with line numbers."""

    keep: bytes
    kept_lines: list[int] = field(default_factory=list)  # line number of each kept row
    dropped: list[tuple[int, bytes]] = field(default_factory=list)  # (line number, bytes)
    done: set[tuple[str, ...]] = field(default_factory=set)  # BLOCK_KEY of every complete block

    @property
    def dropped_bytes(self) -> int:
        return sum(len(b) for _, b in self.dropped)

    def describe(self) -> str:
        """'3 lines (812 bytes: lines 14-16)': what was dropped, for a warning."""
        runs: list[list[int]] = []
        for n, _ in self.dropped:
            if runs and runs[-1][1] == n - 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        shown = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:5])
        more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
        k = len(self.dropped)
        return f"{k} line{'s' * (k != 1)} ({self.dropped_bytes} bytes: line{'s' * (k != 1)} {shown}{more})"


def is_block_file(header: Iterable[str]) -> bool:
    """Whether a CSV header is a harness store's: every row carries its block's key and length."""
    return {*BLOCK_KEY, "config_rows"} <= set(header)


def scan_blocks(data: bytes) -> Blocks:
    """Split a store file's bytes into complete blocks and the rest. A block is consecutive rows
    of one configuration (BLOCK_KEY), each carrying config_rows = the block's length; every
    complete line ends in a newline, so a last line without one is torn. A bad line or a new
    block ends the block in progress: an incomplete block is never kept."""
    if b"\n" not in data:  # a header alone: its newline may be all that is missing
        data += b"\n"
    nl = data.find(b"\n")
    header = _fields(data[:nl]) or []
    if not is_block_file(header):
        raise SeerError("scan_blocks needs a store file's header (suite, config_key, math, config_rows)")
    idx = [header.index(c) for c in BLOCK_KEY]
    i_rows, width = header.index("config_rows"), len(header)
    out = Blocks(b"")
    keep = [data[: nl + 1]]
    block: list[tuple[int, bytes]] = []
    key, want = None, 0
    pos, line = nl + 1, 2
    while pos < len(data):
        end = data.find(b"\n", pos)
        chunk = data[pos:] if end < 0 else data[pos: end + 1]
        cells = _fields(chunk) if end >= 0 else None
        n = int(cells[i_rows]) if cells and len(cells) == width and cells[i_rows].isdigit() else 0
        if n < 1:  # torn, blank or garbage: it ends the block in progress
            out.dropped += block + [(line, chunk)]
            block, key = [], None
        else:
            k = tuple(cells[i] for i in idx)
            if block and (k, n) != (key, want):  # a new block before the last one was complete
                out.dropped += block
                block = []
            key, want = k, n
            block.append((line, chunk))
            if len(block) == want:
                keep += [c for _, c in block]
                out.kept_lines += [ln for ln, _ in block]
                out.done.add(key)
                block = []
        pos, line = (len(data) if end < 0 else end + 1), line + 1
    out.dropped += block
    out.dropped.sort(key=lambda d: d[0])
    out.keep = b"".join(keep)
    return out


def read_raw(path: str | Path) -> tuple[pd.DataFrame, np.ndarray]:
    """A CSV's cells as text and each row's line number. A harness store file (rows carrying
    config_rows) keeps only its complete configuration blocks and warns about the rest."""
    data = read_bytes(path)
    lines = None
    if is_block_file(_fields(data.split(b"\n", 1)[0]) or []):
        blocks = scan_blocks(data)
        if blocks.dropped:
            warn(f"{path}: skipped {blocks.describe()}: not part of a complete configuration block "
                 "(a torn write or garbage)")
        data, lines = blocks.keep, np.asarray(blocks.kept_lines, dtype=int)
    try:
        raw = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(str(path), None, None, f"a readable CSV file ({exc})".replace("\n", " ")) from None
    return raw, (np.arange(len(raw)) + 2 if lines is None else lines)


def drop_duplicates(df: pd.DataFrame, file: str, lines: np.ndarray | None = None) -> pd.DataFrame:
    """Drop rows equal in every column but `source` and `call_id` to an earlier row: the same
    measurement read twice (a copied block, a file in a folder twice) must not count twice."""
    cols = [c for c in df.columns if c not in ("source", "call_id")]
    dup = df.duplicated(cols).to_numpy()
    if not dup.any():
        return df
    first = int(np.flatnonzero(dup)[0])
    at = f"line {int(lines[first])}" if lines is not None else f"row {first + 1}"
    warn(f"{file}: {int(dup.sum())} row(s) repeat an earlier measurement exactly (first at {at}) "
         "and are dropped")
    return df[~dup].reset_index(drop=True)


# ---------------------------------------------------------------- the harness's CSV
def write_csv(df: pd.DataFrame, path: str | Path) -> Path:
    """Write records as the harness CSV (gzip if the name ends in .gz), atomically."""
    rec = conform(df)
    return atomic_write(path, lambda p: rec.to_csv(p, index=False, compression="gzip" if str(path).endswith(".gz") else None))


def read_csv(path: str | Path) -> pd.DataFrame:
    """Read a harness CSV (columns = record fields; .csv or .csv.gz) and validate it."""
    path = Path(path)
    raw, lines = read_raw(path)
    _require_columns(raw, ALWAYS, str(path))
    for f in FIELDS:
        if f.name in raw and f.kind != "str":
            raw[f.name] = numeric(raw[f.name], str(path), f.name, lines, integer=f.kind == "int",
                                  required=False)
    df = validate(raw, str(path), lines)
    if (df["source"] == "").all():
        df["source"] = path.name
    return drop_duplicates(kernel_time(df), str(path), lines)


def kernel_time(df: pd.DataFrame) -> pd.DataFrame:
    """Models learn and are scored on the call's kernel time, as SEER's were: where the harness
    measured the GPU span of a call's kernels, `time_ms` becomes that span and the CUDA-event
    time moves to `event_time_ms` (events also hold the host's enqueue gaps, which dominate
    calls of a few microseconds). Idempotent: a second pass changes nothing."""
    span = df["gpu_span_ms"].to_numpy(dtype=float, na_value=np.nan)
    use = np.isfinite(span) & (span > 0) & ~np.isclose(span, df["time_ms"].to_numpy(dtype=float))
    if use.any():
        df = df.copy()
        df.loc[use, "event_time_ms"] = df.loc[use, "time_ms"]
        df.loc[use, "time_ms"] = span[use]
    return df


# ---------------------------------------------------------------- NeuSight CSVs
NEUSIGHT_OPS = {"conv": "conv_fwd", "bmm": "bmm", "linear": "linear", "add": "elementwise",
                "mul": "elementwise", "relu": "elementwise", "gelu": "elementwise",
                "tanh": "elementwise", "softmax": "softmax", "ln": "layer_norm"}
_FN_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # an element-wise function NeuSight names by itself (pow, ...)
_NOT_POINTWISE = r"(?i)mm|matmul|conv|linear|norm|softmax|embedding|pool|attention|^ln$"
_NS_COMMON = ("OPName", "Latency", "Device", "Kernel Name", "Grid x", "Grid y", "Grid z",
              "Block x", "Block y", "Block z")
_NS_CONFIG = {
    "conv_fwd": ("B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"),
    "bmm": ("B", "M", "N", "K"), "linear": ("B", "M", "N", "K"),
    "elementwise": ("B", "H"), "softmax": ("B", "H"), "layer_norm": ("B", "H"),
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
    _require_columns(raw, _NS_COMMON, file, " (NeuSight format)")
    lines = np.arange(len(raw)) + 2
    opname = raw["OPName"].fillna("").astype(str).str.strip()
    op = opname.map(NEUSIGHT_OPS)
    # any other function in an element-wise file (columns B and H) is an element-wise op
    other = op.isna().to_numpy()
    if other.any():
        pointwise = opname.str.fullmatch(_FN_NAME) & ~opname.str.contains(_NOT_POINTWISE)
        bad = other & ~(pointwise.to_numpy() & ("H" in raw) & ("B" in raw))
        if (i := _first_bad(bad)) is not None:
            raise DataError(file, int(lines[i]), "OPName", f"one of {', '.join(NEUSIGHT_OPS)}, or an "
                            "element-wise function name in a file with columns B and H", opname.iloc[i],
                            where="line")
        op = op.fillna("elementwise")
    for o in pd.unique(op):
        _require_columns(raw, _NS_CONFIG[o], file, f" (NeuSight {o})")
    t = numeric(raw["Latency"], file, "Latency", lines, minimum=0, expected="a time in ms > 0")
    if (i := _first_bad((t <= 0).to_numpy())) is not None:
        raise DataError(file, int(lines[i]), "Latency", "a time in ms > 0", raw["Latency"].iloc[i], where="line")
    # GPU: every distinct name must be known
    devices = raw["Device"].astype(str).str.strip()
    cc = {}
    for name in pd.unique(devices):
        try:
            cc[name] = gpus.lookup(name).cc
        except UnknownGPUError:
            i = int(np.flatnonzero((devices == name).to_numpy())[0])
            raise DataError(file, int(lines[i]), "Device", "a GPU in seer's table (seer.gpus.GPUS) "
                            "or one loaded with seer.gpus.load_device_json", name, where="line") from None
    rec: dict[str, object] = {
        "source": f"neusight/{path.parent.name}/{path.name}", "suite": "neusight", "gpu": devices,
        "cc": devices.map(cc), "op": op, "call_id": np.arange(len(raw)), "dtype": "float32",
        "math": "fma", "kernel": raw["Kernel Name"], "role": "main", "time_ms": t, "status": "ok",
    }
    rec["kernels"] = raw["Kernels"].fillna("").astype(str).str.strip(";") if "Kernels" in raw else ""
    rec["cuda_version"], rec["cudnn_version"] = _versions(raw)
    for ax in "xyz":
        rec[f"grid_{ax}"] = numeric(raw[f"Grid {ax}"], file, f"Grid {ax}", lines, integer=True, minimum=1)
        rec[f"block_{ax}"] = numeric(raw[f"Block {ax}"], file, f"Block {ax}", lines, integer=True, minimum=1)
    cfg = {}
    for o in pd.unique(op):
        rows = (op == o).to_numpy()
        for c in _NS_CONFIG[o]:
            minimum = 0 if c == "Padding" else 1
            vals = numeric(raw[c].where(rows, 1), file, c, lines, integer=True, minimum=minimum)
            cfg[c] = cfg[c].where(~rows, vals) if c in cfg else vals.where(rows)
    col = lambda c: cfg.get(c, pd.Series(np.nan, index=raw.index))  # noqa: E731
    is_conv, is_bmm, is_lin = (op == "conv_fwd"), (op == "bmm"), (op == "linear")
    rows_ops = op.isin(["elementwise", "softmax", "layer_norm"])
    one = pd.Series(1.0, index=raw.index)
    rec.update({
        "batch": col("B").where(is_conv | is_bmm, one.where(is_lin)),
        "c_in": col("Input_Channel"), "c_out": col("Output_Channel"),
        "h_in": col("Input_Size"), "w_in": col("Input_Size"),
        "kh": col("Kernel_Szie"), "kw": col("Kernel_Szie"),
        "stride_h": col("Stride"), "stride_w": col("Stride"),
        "pad_h": col("Padding"), "pad_w": col("Padding"),
        "dil_h": one.where(is_conv), "dil_w": one.where(is_conv), "groups": one.where(is_conv),
        # bmm: [B, M, N] x [B, N, K] -> reduction over N; linear: [B*M, N] x [N, K]
        "m": col("M").where(is_bmm, col("B") * col("M")).where(is_bmm | is_lin),
        "n": col("K").where(is_bmm | is_lin), "k": col("N").where(is_bmm | is_lin),
        "trans": pd.Series("nn", index=raw.index).where(is_bmm, "tn").where(is_bmm | is_lin, ""),
        "rows": col("B").where(rows_ops), "cols": col("H").where(rows_ops),
        "fn": opname.str.lower().where(op == "elementwise", ""),
        "layout": pd.Series("NCHW", index=raw.index).where(is_conv, ""),
    })
    df = pd.DataFrame(rec, index=raw.index)
    df["algo"] = ""
    if is_conv.any():
        pairs = pd.Series(list(zip(df["kernels"], df["kernel"])), index=raw.index)[is_conv]
        algos = {p: conv_algorithm(*p) for p in pd.unique(pairs)}
        algo = pairs.map(algos)
        if (algo == UNKNOWN).any():
            i = int(np.flatnonzero((algo == UNKNOWN).reindex(raw.index, fill_value=False).to_numpy())[0])
            raise DataError(file, int(lines[i]), "Kernels",
                            "a kernel list that identifies a cuDNN forward algorithm", raw["Kernels"].iloc[i],
                            where="line")
        df.loc[is_conv, "algo"] = algo
    df = fill_launch(conform(df))
    return drop_duplicates(validate(df, file, lines), file, lines)


def read_neusight(path: str | Path, ops: Iterable[str] | None = None,
                  gpu: str | None = None) -> pd.DataFrame:
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
    cands = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    cands += [here.parent / "shared" / "datasets" / "neusight", Path.cwd().parent / "shared" / "datasets" / "neusight"]
    for c in cands:
        if c.is_dir():
            return c
    return None


# ---------------------------------------------------------------- SEER's Excel workbooks
SEER_COLUMNS = ("batch_size", "in_chan", "in_wid", "out_chan", "out_wid", "ker_wid", "stride",
                "padding", "algo", "time", "inst_fp_32", "dram_read_transactions",
                "dram_write_transactions", "#block-max", "#block-launch", "#iter",
                "single_precision_fu_utilization", "dram_utilization", "type")
_SEER_TYPES = {0: "compute", 1: "memory", 2: "under", -1: ""}
SECTOR = 32  # bytes per DRAM transaction (sector)


def read_seer_excel(path: str | Path, gpu: str | None = None) -> pd.DataFrame:
    """A SEER workbook (sheets train and test, the 19 columns of SEER's README) as records.

    SEER's files carry no GPU name: pass `gpu`, else rows say "unspecified". Utilizations are
    nvprof's 0-10 levels, stored here as percent (x10).
    """
    from openpyxl import load_workbook

    path = data_path(path, "an existing file")
    file = str(path)
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several types for a non-workbook
        raise DataError(file, None, None, f"an .xlsx workbook ({type(exc).__name__})") from None
    frames = []
    try:
        for sheet in ("train", "test"):
            if sheet not in wb.sheetnames:
                raise DataError(file, None, None, f"a sheet named '{sheet}' (SEER format)")
            rows = list(wb[sheet].iter_rows(values_only=True))
            if not rows:
                raise DataError(file, 1, None, f"a header row in sheet '{sheet}'", where="row")
            header = [str(h).strip() if h is not None else "" for h in rows[0]]
            for j, want in enumerate(SEER_COLUMNS):
                got = header[j] if j < len(header) else None
                if got is None or got.lower() != want:
                    raise DataError(f"{file} [{sheet}]", 1, want,
                                    f"column {j + 1} of SEER's format to be '{want}'", got, where="row")
            body = [r[: len(SEER_COLUMNS)] for r in rows[1:] if any(v is not None for v in r)]
            raw = pd.DataFrame(body, columns=list(SEER_COLUMNS), dtype=object)
            raw["_sheet"] = sheet
            raw["_line"] = np.arange(len(raw)) + 2
            frames.append(raw)
    finally:
        wb.close()
    raw = pd.concat(frames, ignore_index=True)
    return _seer_records(raw, file, gpu)


def _seer_records(raw: pd.DataFrame, file: str, gpu: str | None) -> pd.DataFrame:
    lines = raw["_line"].to_numpy()
    where_file = [f"{file} [{s}]" for s in raw["_sheet"]]
    pos = np.arange(len(raw))  # errors are raised at a position, then named by sheet and row

    def located(e: DataError) -> DataError:
        i = e.row or 0
        return DataError(where_file[i], int(lines[i]), e.column, e.expected, e.value, where="row")

    def num(c, **kw):
        try:
            return numeric(raw[c], file, c, pos, where="row", **kw)
        except DataError as e:
            raise located(e) from None
    ints = {c: num(c, integer=True, minimum=1) for c in
            ("batch_size", "in_chan", "in_wid", "out_chan", "out_wid", "ker_wid", "stride")}
    pad = num("padding", integer=True, minimum=0)
    algo_id = num("algo", integer=True, minimum=0)
    bad = ~algo_id.isin(list(CONV_ALGOS)).to_numpy()
    if (i := _first_bad(bad)) is not None:
        raise DataError(where_file[i], int(lines[i]), "algo", "a cuDNN forward algorithm number 0-7",
                        raw["algo"].iloc[i], where="row")
    t = num("time", minimum=0)
    if (i := _first_bad((t <= 0).to_numpy())) is not None:
        raise DataError(where_file[i], int(lines[i]), "time", "a time in ms > 0", raw["time"].iloc[i], where="row")
    opt = {c: num(c, required=False, minimum=0) for c in
           ("inst_fp_32", "dram_read_transactions", "dram_write_transactions", "#block-max",
            "#block-launch", "#iter", "single_precision_fu_utilization", "dram_utilization")}
    typ = num("type", integer=True, required=False).fillna(-1)
    name = gpu or "unspecified"
    try:
        cc = gpus.lookup(name).cc if gpu else ""
    except UnknownGPUError:
        cc = ""
    df = pd.DataFrame({
        "source": Path(file).name, "suite": "seer", "gpu": name, "cc": cc, "op": "conv_fwd",
        "call_id": np.arange(len(raw)),
        "batch": ints["batch_size"], "c_in": ints["in_chan"], "h_in": ints["in_wid"],
        "w_in": ints["in_wid"], "c_out": ints["out_chan"], "kh": ints["ker_wid"],
        "kw": ints["ker_wid"], "stride_h": ints["stride"], "stride_w": ints["stride"],
        "pad_h": pad, "pad_w": pad, "dil_h": 1, "dil_w": 1, "groups": 1, "dtype": "float32",
        "layout": "NCHW", "algo": algo_id.astype(int).map(CONV_ALGOS), "math": "fma", "role": "main",
        "time_ms": t, "fp32_inst": opt["inst_fp_32"],
        "dram_read_bytes": opt["dram_read_transactions"] * SECTOR,
        "dram_write_bytes": opt["dram_write_transactions"] * SECTOR,
        "b_max": opt["#block-max"], "blocks": opt["#block-launch"], "waves": opt["#iter"],
        "fp32_util_pct": opt["single_precision_fu_utilization"] * 10,
        "dram_util_pct": opt["dram_utilization"] * 10,
        "kernel_type": typ.astype(int).map(_SEER_TYPES).fillna(""), "status": "ok",
        "split": raw["_sheet"],
    })
    out_w = ints["out_wid"].to_numpy(dtype=float)
    try:
        rec = validate(df, file, pos, where="row")
    except DataError as e:
        raise located(e) from None
    h, w = conv_output_hw(rec)
    if (i := _first_bad(w != out_w)) is not None:
        raise DataError(where_file[i], int(lines[i]), "out_wid",
                        f"the output width of the convolution ({int(w[i])})", raw["out_wid"].iloc[i], where="row")
    return rec


def seer_split(n: int) -> np.ndarray:
    """SEER's deterministic rule: row index mod 10 < 7 is training."""
    return np.where(np.arange(n) % 10 < 7, "train", "test")


def split_rows(df: pd.DataFrame, by: list[str], order: list[str] | None = None) -> np.ndarray:
    """SEER's split within each group of `by` (a variant): after a stable sort of the group's
    rows by `order` (default: every configuration field present, then the time), row index
    mod 10 < 7 is "train", the rest "test"; a configuration measured more than once goes,
    every row of it, to the side of its first row, so it is never on both sides. The same rows
    always land on the same side. `time_ms` in `order` only orders, it is no configuration."""
    if df.empty:
        return np.empty(0, dtype=object)
    if order is None:
        order = [c for c in ("op", *_CONV, "m", "n", "k", "rows", "cols", "fn", "num_embeddings",
                             "num_tables", "bag_size", "emb_dim", "algo", "time_ms") if c in df]
    keys = df[order].copy()
    for c in keys.columns:  # a sortable key for mixed/NA columns
        if not pd.api.types.is_numeric_dtype(keys[c]):
            keys[c] = keys[c].astype(str)
        else:
            keys[c] = keys[c].astype("float64")
    sorted_idx = keys.sort_values(order, kind="stable").index
    pos = pd.Series(np.arange(len(df)), index=df.index)[sorted_idx]
    grp = pd.Series(df.loc[sorted_idx, by].astype(str).groupby(by, sort=False).ngroup().to_numpy()
                    if by else np.zeros(len(df), dtype=int), name="_group")
    side = grp.groupby(grp, sort=False).cumcount() % 10 < 7
    cfg = [c for c in order if c != "time_ms"]
    if cfg:  # every row of a configuration takes the side of its first row in the group
        first = pd.concat([grp, keys.loc[sorted_idx, cfg].reset_index(drop=True)], axis=1)
        side = side.groupby([first[c] for c in first.columns], sort=False, dropna=False).transform("first")
    out = np.empty(len(df), dtype=object)
    out[pos.to_numpy()] = np.where(side.to_numpy(dtype=bool), "train", "test")
    return out


def write_seer_excel(df: pd.DataFrame, path: str | Path) -> Path:
    """Write convolution records of one variant as a SEER workbook (sheets train, test).

    Rows go to the sheet their `split` names; rows without one are split by SEER's rule in
    their current order.
    """
    from openpyxl import Workbook

    rec = fill_launch(conform(df))  # #block-launch from the grid where only the grid was recorded
    if (rec["op"] != "conv_fwd").any():
        raise SeerError("SEER workbooks hold convolution rows only (op conv_fwd)")
    split = rec["split"].where(rec["split"] != "", pd.Series(seer_split(len(rec)), index=rec.index))
    _, w_out = conv_output_hw(rec)
    types = {v: k for k, v in _SEER_TYPES.items()}

    def cell(v):
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            return None
        return v

    def rows_of(part: pd.DataFrame, wo: np.ndarray):
        for r, o in zip(part.itertuples(index=False), wo):
            yield [int(r.batch), int(r.c_in), int(r.w_in), int(r.c_out), int(o), int(r.kw),
                   int(r.stride_w), int(r.pad_w), CONV_ALGO_ID[r.algo], float(r.time_ms),
                   cell(r.fp32_inst), cell(r.dram_read_bytes / SECTOR), cell(r.dram_write_bytes / SECTOR),
                   cell(None if r.b_max is pd.NA else int(r.b_max)),
                   cell(None if r.blocks is pd.NA else int(r.blocks)),
                   cell(None if r.waves is pd.NA else int(r.waves)),
                   cell(r.fp32_util_pct / 10), cell(r.dram_util_pct / 10),
                   types.get(r.kernel_type, -1)]

    def write(tmp: Path):
        wb = Workbook()
        wb.remove(wb.active)
        for sheet in ("train", "test"):
            ws = wb.create_sheet(sheet)
            ws.append(list(SEER_COLUMNS))
            sel = (split == sheet).to_numpy()
            for row in rows_of(rec[sel], w_out[sel]):
                ws.append(row)
        wb.save(tmp)

    return atomic_write(path, write)


# ---------------------------------------------------------------- any source
def load(path: str | Path, gpu: str | None = None) -> pd.DataFrame:
    """Read records from any supported source: a harness CSV (.csv, .csv.gz), a NeuSight CSV,
    a SEER .xlsx workbook, or a folder of any of these."""
    path = data_path(path)
    if path.is_dir():
        if any(path.glob("*/*.csv")) and not any(path.glob("*.csv*")):
            if _is_neusight(next(path.glob("*/*.csv"))):
                return read_neusight(path)
        files = sorted(p for p in path.rglob("*") if p.suffix in (".csv", ".gz", ".xlsx"))
        if not files:
            raise DataError(str(path), None, None, "data files (.csv, .csv.gz or .xlsx)")
        return drop_duplicates(pd.concat([load(f, gpu) for f in files], ignore_index=True), str(path))
    if path.suffix == ".xlsx":
        return read_seer_excel(path, gpu)
    if _is_neusight(path):
        return read_neusight_csv(path)
    return read_csv(path)


def _is_neusight(path: Path) -> bool:
    if path.suffix != ".csv" or not path.is_file():
        return False
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline().startswith("OPName,")
