"""The measurement record as docs/data.md describes it: one row per kernel launch, its fields,
the configuration fields each op needs, and `conform`, which gives any frame the record's
columns and dtypes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "str", "int" or "float"
    doc: str
    minimum: float | None = None  # smallest valid value where given


CONV_FIELDS = (
    "batch",
    "c_in",
    "h_in",
    "w_in",
    "c_out",
    "kh",
    "kw",
    "stride_h",
    "stride_w",
    "pad_h",
    "pad_w",
    "dil_h",
    "dil_w",
    "groups",
)
# what a convolution's optional fields mean when a config leaves them out: unit stride and
# dilation, no padding, one group (cuDNN's defaults, PyTorch's too)
CONV_DEFAULTS = {"stride_h": 1, "stride_w": 1, "pad_h": 0, "pad_w": 0, "dil_h": 1, "dil_w": 1, "groups": 1}
_GEMM = ("batch", "m", "n", "k")
_ROWS = ("rows", "cols")
_EMB = ("batch", "num_embeddings", "num_tables", "bag_size", "emb_dim")

# op -> configuration fields it needs
OPS: dict[str, tuple[str, ...]] = {
    "conv_fwd": CONV_FIELDS,
    # the two gradients of the forward convolution the fields describe (dx from dy and w; dw from
    # x and dy): the training step's convolutions, timed by the harness, no models yet
    "conv_bwd_data": CONV_FIELDS,
    "conv_bwd_filter": CONV_FIELDS,
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
GEMM_OPS = ("gemm", "bmm", "linear")
CONV_OPS = ("conv_fwd", "conv_bwd_data", "conv_bwd_filter")
VARIANT_OPS = (*CONV_OPS, *GEMM_OPS)  # ops with per-kernel-variant models (seer.models)
MEMORY_OPS = ("elementwise", "softmax", "layer_norm", "concat", "transpose", "memcpy")  # seer.analytical
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
    Field(
        "algo",
        "str",
        "cuDNN algorithm name of the op's direction (IMPLICIT_GEMM, ..., or ALGO_0, ... of a gradient), "
        "or a cuBLASLt algo id as lt:<id>",
    ),
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


def conv_output_hw(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Output height and width of each convolution row (cuDNN's formula)."""
    g = {c: df[c].to_numpy(dtype="float64", na_value=np.nan) for c in CONV_FIELDS}
    eff_h = (g["kh"] - 1) * g["dil_h"] + 1
    eff_w = (g["kw"] - 1) * g["dil_w"] + 1
    h = np.floor((g["h_in"] + 2 * g["pad_h"] - eff_h) / g["stride_h"]) + 1
    w = np.floor((g["w_in"] + 2 * g["pad_w"] - eff_w) / g["stride_w"]) + 1
    return h, w


def fill_launch(df: pd.DataFrame) -> pd.DataFrame:
    """Fill `blocks` from the grid where only the grid is known."""
    grid = (
        df["grid_x"].astype("Float64")
        * df["grid_y"].astype("Float64").fillna(1)
        * df["grid_z"].astype("Float64").fillna(1)
    )
    df["blocks"] = df["blocks"].fillna(grid.round().astype("Int64"))
    return df
