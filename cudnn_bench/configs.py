"""Configurations: a convolution (forward or a gradient), a (batched) GEMM or a memory-bound
operation as a frozen dataclass, with its FLOPs, its tensor bytes, its record fields and the key
that names it in records and across reruns.

Kept apart from the suites, the cost model and the plan: runners, measure and the ncu pass
handle one configuration at a time (the ncu worker rebuilds it from its key) and need neither
the grids nor the budget.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from seer.data.records import CONV_OPS, OPS
from seer.hardware.dtypes import DTYPE_BYTES

from .errors import BenchError

# The letter of each configuration field (seer.data.records.OPS, in its order) in a configuration key.
KEY_LETTERS = {**dict.fromkeys(CONV_OPS, "nchwkrsuvpqdeg"), "gemm": "bmnk", "embedding_fwd": "betld"}


@dataclass(frozen=True)
class ConvConfig:
    """A convolution, NCHW input (batch, c_in, h_in, w_in), filter (c_out, c_in/groups, kh, kw):
    its forward call (`op` conv_fwd), or one of the two gradients a training step takes of it
    (conv_bwd_data: dx from dy and w; conv_bwd_filter: dw from x and dy). The three share the
    fields, the FLOPs and the tensors; the key tells them apart."""

    batch: int
    c_in: int
    h_in: int
    w_in: int
    c_out: int
    kh: int
    kw: int
    stride_h: int = 1
    stride_w: int = 1
    pad_h: int = 0
    pad_w: int = 0
    dil_h: int = 1
    dil_w: int = 1
    groups: int = 1
    layout: str = "NCHW"
    name: str = ""  # a layer name where it comes from a network, e.g. "resnet50.layer1.conv2"
    uses: str = ""  # how often each network runs this layer, e.g. "resnet50:3;vgg16:1"
    op: str = "conv_fwd"  # one of seer.data.records.CONV_OPS

    @property
    def out_hw(self) -> tuple[int, int]:
        eh = (self.kh - 1) * self.dil_h + 1
        ew = (self.kw - 1) * self.dil_w + 1
        return (
            (self.h_in + 2 * self.pad_h - eh) // self.stride_h + 1,
            (self.w_in + 2 * self.pad_w - ew) // self.stride_w + 1,
        )

    @property
    def valid(self) -> bool:
        ho, wo = self.out_hw
        groups_ok = self.c_in % self.groups == 0 and self.c_out % self.groups == 0
        return ho >= 1 and wo >= 1 and groups_ok and self.op in CONV_OPS

    def flops(self) -> float:
        ho, wo = self.out_hw
        return 2.0 * self.batch * self.c_out * ho * wo * (self.c_in // self.groups) * self.kh * self.kw

    def tensor_bytes(self, dtype: str = "float32") -> dict[str, int]:
        b = DTYPE_BYTES[dtype]
        ho, wo = self.out_hw
        return {
            "x": self.batch * self.c_in * self.h_in * self.w_in * b,
            "w": self.c_out * (self.c_in // self.groups) * self.kh * self.kw * b,
            "y": self.batch * self.c_out * ho * wo * b,
        }

    def dims(self) -> dict[str, int]:
        """The record's configuration fields of a convolution (seer.data.records.OPS), in order."""
        return {f: getattr(self, f) for f in OPS[self.op]}

    def key(self) -> str:
        """Identifies the configuration (not the math mode) in records and across reruns."""
        return _key(self.op, self.dims(), self.layout)

    def fields(self) -> dict:
        """The record fields of this configuration."""
        d = {k: v for k, v in asdict(self).items() if k not in ("name", "uses")}
        if self.uses:
            d["uses"] = self.uses
        return d


@dataclass(frozen=True)
class GemmConfig:
    """A (strided-batched) GEMM, column-major: C[m, n] = op(A)[m, k] op(B)[k, n]."""

    batch: int
    m: int
    n: int
    k: int
    trans: str = "nn"
    name: str = ""

    op = "gemm"

    @property
    def valid(self) -> bool:
        return min(self.batch, self.m, self.n, self.k) >= 1 and re.fullmatch("[nt]{2}", self.trans) is not None

    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    def tensor_bytes(self, dtype: str = "float32") -> dict[str, int]:
        b = DTYPE_BYTES[dtype]
        return {
            "a": self.batch * self.m * self.k * b,
            "b": self.batch * self.k * self.n * b,
            "c": self.batch * self.m * self.n * b,
        }

    def dims(self) -> dict[str, int]:
        """The record's configuration fields of a GEMM (seer.data.records.OPS), in order."""
        return {f: getattr(self, f) for f in OPS[self.op]}

    def key(self) -> str:
        return _key(self.op, self.dims(), self.trans)

    def fields(self) -> dict:
        return {"op": self.op, **self.dims(), "trans": self.trans}


# memory-bound operations the harness times (seer.data.records.MEMORY_OPS, less host copies),
# and the operands each element-wise function reads (seer.analytical.memory counts its FLOPs)
MEMORY_RUN_OPS = ("elementwise", "softmax", "layer_norm", "transpose", "concat")
ELEMENTWISE_FNS: dict[str, int] = {
    "add": 2,
    "mul": 2,
    "div": 2,
    "relu": 1,
    "gelu": 1,
    "silu": 1,
    "tanh": 1,
    "sigmoid": 1,
    "exp": 1,
}


@dataclass(frozen=True)
class MemConfig:
    """A memory-bound operation on a [rows, cols] tensor (PyTorch's kernel, on the harness's
    stream): an element-wise function `fn`, softmax or layer norm over the last axis, a
    transpose made contiguous, or a concatenation of two [rows, cols / 2] halves along the last
    axis."""

    op: str
    rows: int
    cols: int
    fn: str = ""
    name: str = ""

    @property
    def valid(self) -> bool:
        fn_ok = self.fn in ELEMENTWISE_FNS if self.op == "elementwise" else self.fn == ""
        even = self.cols % 2 == 0 or self.op != "concat"
        # a vector's transpose is a view: .contiguous() returns it and launches no kernel
        least = 2 if self.op == "transpose" else 1
        return self.op in MEMORY_RUN_OPS and fn_ok and min(self.rows, self.cols) >= least and even

    @property
    def inputs(self) -> int:
        """Tensors of [rows, cols] read (concat reads its two halves: one tensor's worth)."""
        return ELEMENTWISE_FNS.get(self.fn, 1) if self.op == "elementwise" else 1

    def flops(self) -> float:
        return float(self.rows * self.cols * (8 if self.op in ("softmax", "layer_norm") else 1))

    def tensor_bytes(self, dtype: str = "float32") -> dict[str, int]:
        n = self.rows * self.cols * DTYPE_BYTES[dtype]
        return {"x": self.inputs * n, "y": n}

    def dims(self) -> dict[str, int]:
        return {"rows": self.rows, "cols": self.cols}

    def key(self) -> str:
        """op:r<rows>:c<cols>:<fn or ->, e.g. elementwise:r1024:c4096:gelu."""
        return f"{self.op}:r{self.rows}:c{self.cols}:{self.fn or '-'}"

    def fields(self) -> dict:
        return {"op": self.op, **self.dims(), "fn": self.fn}


@dataclass(frozen=True)
class EmbConfig:
    """An embedding lookup as PyTorch runs it on the harness's stream: `batch` bags of
    `bag_size` rows gathered from one [num_embeddings, emb_dim] table at uniform random indices,
    each bag summed (torch.nn.functional.embedding for bags of one row, as nn.Embedding looks up
    tokens; embedding_bag with mode sum for more, as DLRM's tables)."""

    batch: int
    num_embeddings: int
    emb_dim: int
    bag_size: int = 1
    num_tables: int = 1  # PyTorch looks up one table a call (FBGEMM's batched tables are not run)
    name: str = ""

    op = "embedding_fwd"

    @property
    def valid(self) -> bool:
        return min(self.batch, self.num_embeddings, self.emb_dim, self.bag_size) >= 1 and self.num_tables == 1

    def flops(self) -> float:
        return float(self.batch * max(0, self.bag_size - 1) * self.emb_dim)  # the bags' sums

    def tensor_bytes(self, dtype: str = "float32") -> dict[str, int]:
        """What it allocates: the table, the indices (int64) and the output."""
        b = DTYPE_BYTES[dtype]
        return {
            "table": self.num_embeddings * self.emb_dim * b,
            "idx": self.batch * self.bag_size * 8,
            "y": self.batch * self.emb_dim * b,
        }

    def moved_bytes(self, dtype: str = "float32") -> int:
        """What its kernels move: the gathered rows, the indices and the output (not the table)."""
        tb = self.tensor_bytes(dtype)
        return self.batch * self.bag_size * self.emb_dim * DTYPE_BYTES[dtype] + tb["idx"] + tb["y"]

    def dims(self) -> dict[str, int]:
        """The record's configuration fields of an embedding lookup (seer.data.records.OPS), in order."""
        return {f: getattr(self, f) for f in OPS[self.op]}

    def key(self) -> str:
        """embedding_fwd:b<batch>:e<rows>:t<tables>:l<bag>:d<dim>:sum, e.g. embedding_fwd:b512:e50257:t1:l1:d768:sum."""
        return _key(self.op, self.dims(), "sum")

    def fields(self) -> dict:
        return {"op": self.op, **self.dims()}


Config = ConvConfig | GemmConfig | MemConfig | EmbConfig
TorchConfig = MemConfig | EmbConfig  # configurations of PyTorch's kernels (cudnn_bench.memory_ops)
TORCH_CONFIGS = (MemConfig, EmbConfig)


def _key(op: str, dims: dict[str, int], last: str) -> str:
    """op:<letter><value>:...:<layout or transposes>, e.g. gemm:b1:m256:n128:k64:tn."""
    return ":".join([op, *(f"{letter}{v}" for letter, v in zip(KEY_LETTERS[op], dims.values())), last])


def config_from_key(key: str, name: str = "") -> Config:
    """Inverse of `key()` (the ncu worker gets its calls as keys)."""
    parts = key.split(":")
    op = parts[0]
    if op in MEMORY_RUN_OPS and len(parts) == 4 and parts[1][1:].isdigit() and parts[2][1:].isdigit():
        return MemConfig(op, int(parts[1][1:]), int(parts[2][1:]), "" if parts[3] == "-" else parts[3], name=name)
    if op not in KEY_LETTERS:
        raise BenchError(f"not a configuration key: {key!r}")
    vals = {p[0]: int(p[1:]) for p in parts[1:] if p[:1].isalpha() and p[1:].isdigit()}
    dims: dict[str, Any] = {f: vals[letter] for f, letter in zip(OPS[op], KEY_LETTERS[op])}  # ints, by name
    if op in CONV_OPS:
        return ConvConfig(**dims, layout=parts[-1], name=name, op=op)
    if op == EmbConfig.op:
        return EmbConfig(**dims, name=name)
    return GemmConfig(**dims, trans=parts[-1], name=name)


def with_overrides(cfg: Config, **kw) -> Config:
    return replace(cfg, **kw)
