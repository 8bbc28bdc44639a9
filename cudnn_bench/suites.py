"""Configuration suites, as data, and the budget that subsamples them deterministically.

Suites:
- `seer_grid`: SEER's training grid (REFERENCE.md section 7): batch 128, C_in and C_out in
  {3, 16, 64, 128, 512, 1024}, W_in in {10, 40, 80, 160, 224, 320} (square inputs), K in
  {1, 3, 5, 7, 9} (square filters), stride 1-4, padding 0.
- `test_set_ii`: the distinct convolution layers of AlexNet, VGG-16, ResNet-50 and MobileNetV2
  (torchvision's definitions, 224x224 inputs) at batch 1, 32 and 128.
- `gemm_layers`: GEMMs of transformer (BERT, GPT-2, Llama-style) and MLP (DLRM) layers.
- `gemm_grid`: a grid of (batch, M, N, K).

Everything is a plain tuple of numbers; add a network by adding its layer list. A config's
cost is estimated from its FLOPs and bytes against the GPU's datasheet peaks (seer.hardware.gpus), so a
`--budget` of seconds picks a deterministic, stratified subset that fits; a budget that is a
count takes that many. The estimate is deliberately simple; the records keep the estimated and
the measured wall time of every configuration (`est_s`, `wall_s`) to recalibrate it.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

from seer.data.records import OPS
from seer.data.variants import CONV_ALGOS
from seer.hardware.dtypes import DTYPE_BYTES
from seer.hardware.gpus import GPUSpec

from .errors import BenchError
from .maths import MATH_DTYPE

# The letter of each configuration field (seer.data.records.OPS, in its order) in a configuration key.
KEY_LETTERS = {"conv_fwd": "nchwkrsuvpqdeg", "gemm": "bmnk"}


# ====================================================================== configurations
@dataclass(frozen=True)
class ConvConfig:
    """A forward convolution, NCHW input (batch, c_in, h_in, w_in), filter (c_out, c_in/groups, kh, kw)."""

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

    op = "conv_fwd"

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
        return ho >= 1 and wo >= 1 and self.c_in % self.groups == 0 and self.c_out % self.groups == 0

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
        d["op"] = self.op
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


Config = ConvConfig | GemmConfig


def _key(op: str, dims: dict[str, int], last: str) -> str:
    """op:<letter><value>:...:<layout or transposes>, e.g. gemm:b1:m256:n128:k64:tn."""
    return ":".join([op, *(f"{letter}{v}" for letter, v in zip(KEY_LETTERS[op], dims.values())), last])


def config_from_key(key: str, name: str = "") -> Config:
    """Inverse of `key()` (the ncu worker gets its calls as keys)."""
    parts = key.split(":")
    op = parts[0]
    if op not in KEY_LETTERS:
        raise BenchError(f"not a configuration key: {key!r}")
    vals = {p[0]: int(p[1:]) for p in parts[1:] if p[:1].isalpha() and p[1:].isdigit()}
    dims: dict[str, Any] = {f: vals[letter] for f, letter in zip(OPS[op], KEY_LETTERS[op])}  # ints, by name
    if op == "conv_fwd":
        return ConvConfig(**dims, layout=parts[-1], name=name)
    return GemmConfig(**dims, trans=parts[-1], name=name)


# ====================================================================== the suites as data
SEER_GRID = {
    "batch": (128,),
    "channels": (3, 16, 64, 128, 512, 1024),  # C_in and C_out
    "width": (10, 40, 80, 160, 224, 320),
    "kernel": (1, 3, 5, 7, 9),
    "stride": (1, 2, 3, 4),
    "pad": (0,),
}


def seer_grid() -> list[ConvConfig]:
    g = SEER_GRID
    out = []
    for n, ci, co, w, k, s, p in itertools.product(
        g["batch"], g["channels"], g["channels"], g["width"], g["kernel"], g["stride"], g["pad"]
    ):
        c = ConvConfig(n, ci, w, w, co, k, k, s, s, p, p)
        if c.valid:
            out.append(c)
    return out


# (name, c_in, hw_in, c_out, k, stride, pad, groups): torchvision definitions, 224x224 input.
ALEXNET = (
    ("alexnet.features.0", 3, 224, 64, 11, 4, 2, 1),
    ("alexnet.features.3", 64, 27, 192, 5, 1, 2, 1),
    ("alexnet.features.6", 192, 13, 384, 3, 1, 1, 1),
    ("alexnet.features.8", 384, 13, 256, 3, 1, 1, 1),
    ("alexnet.features.10", 256, 13, 256, 3, 1, 1, 1),
)
VGG16 = tuple(
    (f"vgg16.{i}", ci, hw, co, 3, 1, 1, 1)
    for i, (ci, hw, co) in enumerate(
        [
            (3, 224, 64),
            (64, 224, 64),
            (64, 112, 128),
            (128, 112, 128),
            (128, 56, 256),
            (256, 56, 256),
            (256, 56, 256),
            (256, 28, 512),
            (512, 28, 512),
            (512, 28, 512),
            (512, 14, 512),
            (512, 14, 512),
            (512, 14, 512),
        ]
    )
)


def _resnet50() -> tuple:
    layers = [("resnet50.conv1", 3, 224, 64, 7, 2, 3, 1)]
    c, hw = 64, 56  # after the 3x3/2 max pool
    for stage, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], 1):
        out = width * 4
        for b in range(blocks):
            s = stride if b == 0 else 1  # torchvision v1.5: the stride sits in the 3x3 conv
            p = f"resnet50.layer{stage}.{b}"
            layers.append((f"{p}.conv1", c, hw, width, 1, 1, 0, 1))
            layers.append((f"{p}.conv2", width, hw, width, 3, s, 1, 1))
            hw2 = (hw + 2 - 3) // s + 1
            layers.append((f"{p}.conv3", width, hw2, out, 1, 1, 0, 1))
            if b == 0:
                layers.append((f"{p}.downsample", c, hw, out, 1, s, 0, 1))
            c, hw = out, hw2
    return tuple(layers)


# MobileNetV2 inverted residual settings (t, c, n, s) as in torchvision
MOBILENET_V2_SETTINGS = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def _mobilenet_v2() -> tuple:
    layers = [("mobilenet_v2.features.0", 3, 224, 32, 3, 2, 1, 1)]
    c, hw, idx = 32, 112, 1
    for t, co, n, s in MOBILENET_V2_SETTINGS:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = c * t
            p = f"mobilenet_v2.features.{idx}"
            if t != 1:
                layers.append((f"{p}.expand", c, hw, hidden, 1, 1, 0, 1))
            layers.append((f"{p}.depthwise", hidden, hw, hidden, 3, stride, 1, hidden))
            hw = (hw + 2 - 3) // stride + 1
            layers.append((f"{p}.project", hidden, hw, co, 1, 1, 0, 1))
            c, idx = co, idx + 1
    layers.append((f"mobilenet_v2.features.{idx}", c, hw, 1280, 1, 1, 0, 1))
    return tuple(layers)


RESNET50 = _resnet50()
MOBILENET_V2 = _mobilenet_v2()
NETWORKS = {"alexnet": ALEXNET, "vgg16": VGG16, "resnet50": RESNET50, "mobilenet_v2": MOBILENET_V2}
TEST_SET_II_BATCHES = (1, 32, 128)


def test_set_ii(batches: Iterable[int] = TEST_SET_II_BATCHES) -> list[ConvConfig]:
    """Distinct layers (first name wins) of every network, at every batch size; `uses` counts
    how often each network runs the layer, so whole-network times can be summed."""
    out: dict[str, ConvConfig] = {}
    uses: dict[str, dict[str, int]] = {}
    for b in batches:
        for net_name, net in NETWORKS.items():
            for name, ci, hw, co, k, s, p, g in net:
                c = ConvConfig(b, ci, hw, hw, co, k, k, s, s, p, p, groups=g, name=name)
                out.setdefault(c.key(), c)
                per = uses.setdefault(c.key(), {})
                per[net_name] = per.get(net_name, 0) + 1
    return [replace(c, uses=";".join(f"{n}:{k}" for n, k in uses[key].items())) for key, c in out.items()]


# Transformer layers: (model, hidden, ffn, heads); tokens = batch x sequence.
TRANSFORMERS = (
    ("bert_base", 768, 3072, 12),
    ("bert_large", 1024, 4096, 16),
    ("gpt2", 768, 3072, 12),
    ("gpt2_xl", 1600, 6400, 25),
    ("llama_7b", 4096, 11008, 32),
)
TRANSFORMER_TOKENS = ((1, 128), (8, 512), (32, 128), (4, 2048))  # (batch, sequence)
# DLRM MLPs (bottom and top, as in the DLRM benchmark configs), batch sizes
DLRM_MLPS = (("dlrm_bot", (13, 512, 256, 64)), ("dlrm_top", (479, 1024, 1024, 512, 256, 1)))
MLP_BATCHES = (128, 2048, 8192)


def gemm_layers() -> list[GemmConfig]:
    """torch.nn.Linear as PyTorch calls cuBLAS (column-major C^T = W x^T: m = out features,
    n = tokens, k = in features, "tn"), and attention's batched products (batch x heads)."""
    out: list[GemmConfig] = []
    for model, h, ffn, heads in TRANSFORMERS:
        for b, s in TRANSFORMER_TOKENS:
            t = b * s
            d = h // heads
            out += [
                GemmConfig(1, 3 * h, t, h, "tn", f"{model}.qkv"),
                GemmConfig(1, h, t, h, "tn", f"{model}.attn_out"),
                GemmConfig(1, ffn, t, h, "tn", f"{model}.ffn_up"),
                GemmConfig(1, h, t, ffn, "tn", f"{model}.ffn_down"),
                GemmConfig(b * heads, s, s, d, "tn", f"{model}.scores"),
                GemmConfig(b * heads, d, s, s, "nn", f"{model}.context"),
            ]
    for name, widths in DLRM_MLPS:
        for bs in MLP_BATCHES:
            for i, (fin, fout) in enumerate(itertools.pairwise(widths)):
                out.append(GemmConfig(1, fout, bs, fin, "tn", f"{name}.{i}"))
    return _dedupe(out)


GEMM_GRID = {
    "batch": (1, 8),
    "m": (128, 512, 1024, 2048, 4096, 8192),
    "n": (128, 512, 1024, 2048, 4096, 8192),
    "k": (128, 512, 1024, 4096, 8192),
}
GEMM_GRID_TRANS = ("nn",)


def gemm_grid() -> list[GemmConfig]:
    g = GEMM_GRID
    return [
        GemmConfig(b, m, n, k, t)
        for b, m, n, k, t in itertools.product(g["batch"], g["m"], g["n"], g["k"], GEMM_GRID_TRANS)
    ]


def _dedupe(cfgs: list) -> list:
    seen, out = set(), []
    for c in cfgs:
        if c.key() not in seen:
            seen.add(c.key())
            out.append(c)
    return out


@dataclass(frozen=True)
class Suite:
    name: str
    op: str
    build: Callable[[], list]
    doc: str
    share: float  # share of a time budget when several suites run together


SUITES: dict[str, Suite] = {
    "seer_grid": Suite("seer_grid", "conv_fwd", seer_grid, "SEER's training grid (batch 128)", 0.55),
    "test_set_ii": Suite(
        "test_set_ii",
        "conv_fwd",
        test_set_ii,
        "AlexNet, VGG-16, ResNet-50, MobileNetV2 layers at batch 1, 32, 128",
        0.2,
    ),
    "gemm_layers": Suite("gemm_layers", "gemm", gemm_layers, "transformer and DLRM MLP GEMMs", 0.15),
    "gemm_grid": Suite("gemm_grid", "gemm", gemm_grid, "a (batch, M, N, K) grid", 0.1),
}
# Order of execution: quick suites first, the long training grid last.
RUN_ORDER = ("gemm_layers", "gemm_grid", "test_set_ii", "seer_grid")


def parse_suites(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if names == ["all"] or not names:
        return list(RUN_ORDER)
    bad = [n for n in names if n not in SUITES]
    if bad:
        raise BenchError(f"unknown suite {bad[0]!r}; choose from {', '.join(SUITES)} or all")
    return [n for n in RUN_ORDER if n in names]


# ====================================================================== cost model
@dataclass(frozen=True)
class CostModel:
    """Seconds a configuration costs on the GPU, from FLOPs and bytes against datasheet peaks.

    Per call t = max(FLOPs / (eff_flops x peak), bytes / (eff_bw x bandwidth)) + launch; each
    conv algorithm scales t by a typical factor (IMPLICIT_GEMM is the slowest GEMM-like one);
    algorithms that cannot run the config (DIRECT always, FFT and Winograd outside their
    shapes, Winograd on sm_90 per the cuDNN 9 header) cost only their queries. Timing a call
    costs warm-up + repetitions (timing.plan_reps) of (t + per-call overhead).
    """

    peak_flops: float
    bandwidth: float
    cc: str = "9.0"
    eff_flops: float = 0.55
    eff_bw: float = 0.7
    launch_s: float = 8e-6
    call_overhead_s: float = 2.5e-4  # flush memset + Python + library host time per repetition
    # Calibrated on the first H100 run (data/h100-sxm, 2026-11-23; OLS of each configuration's
    # wall_s on its est_s under the previous constants, by suite): a convolution configuration
    # took 0.16-0.24 s of set-up (descriptors, 8 heuristic and workspace queries, runtime-compiled
    # engines, CUPTI flush, writing rows) + 0.43-0.52 x the per-call estimate; a GEMM layer
    # about 0.74 x its estimate and no set-up to speak of.
    config_overhead_s: float = 0.005  # a GEMM configuration's set-up
    conv_overhead_s: float = 0.17  # a convolution configuration's set-up
    conv_scale: float = 0.5  # measured / estimated time of a convolution's calls
    gemm_scale: float = 0.74  # the same for a GEMM's algorithms
    query_s: float = 0.002  # a workspace query or a failed attempt
    warmup: int = 2
    reps: int = 10
    min_reps: int = 3
    target_ms: float = 200.0
    slow_ms: float = 500.0
    gemm_algos: int = 8

    ALGO_FACTOR: ClassVar[dict[str, float]] = {
        "IMPLICIT_GEMM": 3.0,
        "IMPLICIT_PRECOMP_GEMM": 1.2,
        "GEMM": 2.0,
        "DIRECT": 0.0,
        "FFT": 2.5,
        "FFT_TILING": 2.5,
        "WINOGRAD": 1.5,
        "WINOGRAD_NONFUSED": 1.5,
    }
    MATH_SPEEDUP: ClassVar[dict[str, float]] = {"fma": 1.0, "tf32": 4.0, "fp16": 8.0, "bf16": 8.0}

    @classmethod
    def for_gpu(cls, spec: GPUSpec, **kw) -> CostModel:
        return cls(peak_flops=spec.fp32_flops, bandwidth=spec.dram_bytes_per_s, cc=spec.cc, **kw)

    def call_s(self, cfg: Config, math_mode: str = "fma") -> float:
        dtype = MATH_DTYPE[math_mode]
        flops = cfg.flops() / (self.eff_flops * self.peak_flops * self.MATH_SPEEDUP[math_mode])
        mem = sum(cfg.tensor_bytes(dtype).values()) / (self.eff_bw * self.bandwidth)
        return max(flops, mem) + self.launch_s

    def timed_s(self, t: float) -> float:
        """Seconds to warm up and time one call of t seconds."""
        ms = t * 1e3
        if ms > self.slow_ms:
            n = 1
        else:
            n = int(max(self.min_reps, min(self.reps, math.ceil(self.target_ms / max(ms, 1e-6)))))
        return (max(1, self.warmup) + n) * (t + self.call_overhead_s) + self.query_s

    def supported(self, cfg: ConvConfig, algo: str) -> bool:
        unit = cfg.stride_h == cfg.stride_w == 1 and cfg.dil_h == cfg.dil_w == 1
        if algo == "DIRECT":
            return False
        if algo in ("FFT", "FFT_TILING"):
            return unit and cfg.groups == 1
        if algo == "WINOGRAD":
            return unit and cfg.kh == cfg.kw == 3 and cfg.groups == 1 and float(self.cc) < 9.0
        if algo == "WINOGRAD_NONFUSED":
            return unit and cfg.kh == cfg.kw and cfg.kh in (3, 5) and cfg.groups == 1
        return True

    def config_s(self, cfg: Config, math_mode: str = "fma") -> float:
        t = self.call_s(cfg, math_mode)
        if isinstance(cfg, GemmConfig):
            return self.config_overhead_s + self.gemm_scale * self.gemm_algos * self.timed_s(1.3 * t)
        calls = 0.0
        for algo in CONV_ALGOS.values():
            if self.supported(cfg, algo):
                calls += self.timed_s(self.ALGO_FACTOR[algo] * t)
            else:
                calls += self.query_s
        return self.conv_overhead_s + self.conv_scale * calls

    def ncu_s(self, cfg: Config, math_mode: str = "fma", kernels: int = 2) -> float:
        """One call under ncu's kernel replay: a fixed cost per kernel plus a few passes."""
        return kernels * 0.6 + 12 * self.call_s(cfg, math_mode)


# ====================================================================== plan and budget
@dataclass(frozen=True)
class PlanItem:
    suite: str
    config: Config
    math: str
    est_s: float

    @property
    def key(self) -> tuple[str, str, str]:
        """What a rerun looks for in the records to skip this item."""
        return (self.suite, self.config.key(), self.math)


@dataclass
class Plan:
    items: list[PlanItem]
    dropped: dict[str, int] = field(default_factory=dict)  # suite -> configs left out by budget or caps
    total: dict[str, int] = field(default_factory=dict)  # suite -> configs in the full suite (or shard)
    shard: Shard | None = None

    @property
    def est_s(self) -> float:
        return sum(i.est_s for i in self.items)

    def summary(self) -> str:
        lines = []
        for s in dict.fromkeys(i.suite for i in self.items) | dict.fromkeys(self.total):
            sel = [i for i in self.items if i.suite == s]
            lines.append(
                f"{s}: {len(sel)} of {self.total.get(s, len(sel))} configurations x math, "
                f"about {sum(i.est_s for i in sel) / 60:.1f} GPU minutes"
            )
        lines.append(
            f"total: {len(self.items)} configurations, about {self.est_s / 60:.1f} GPU minutes"
            + (f" (shard {self.shard}: 1 in {self.shard.count} configurations of each stratum)" if self.shard else "")
        )
        return "\n".join(lines)


@dataclass(frozen=True)
class Budget:
    """A time limit in seconds, or a number of configurations; neither means everything."""

    seconds: float | None = None
    count: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> Budget:
        """'20m', '900s', '1.5h' are times; a bare whole number is a count; 'none' is no limit."""
        if text is None or str(text).strip().lower() in ("", "none", "all"):
            return cls()
        t = str(text).strip().lower()
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)", t)
        if m:
            mult = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
            return cls(seconds=float(m.group(1)) * mult)
        if re.fullmatch(r"\d+", t):
            return cls(count=int(t))
        raise BenchError(f"--budget {text!r} is neither a time (20m, 900s, 1h) nor a count of configurations (500)")

    def share(self, fraction: float) -> Budget:
        if self.seconds is not None:
            return Budget(seconds=self.seconds * fraction)
        if self.count is not None:
            return Budget(count=max(1 if self.count > 0 else 0, round(self.count * fraction)))
        return self


def stable_hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16)


def stratum(cfg: Config) -> tuple:
    """What a subsample must spread over: the filter size and stride (they pick the kernels
    a conv algorithm uses), the batch and transposes of a GEMM."""
    if isinstance(cfg, ConvConfig):
        return (cfg.kh, cfg.stride_h, cfg.groups > 1)
    return (cfg.batch > 1, cfg.trans)


def stratified_order(cfgs: list, salt: str = "") -> list:
    """Round-robin over strata, each stratum in hash order: any prefix is a spread-out sample,
    and the order never depends on anything but the configurations themselves."""
    groups: dict[tuple, list] = {}
    for c in sorted(cfgs, key=lambda c: stable_hash(salt + c.key())):
        groups.setdefault(stratum(c), []).append(c)
    keys = sorted(groups, key=lambda k: stable_hash(salt + repr(k)))
    out = []
    for i in itertools.count():
        row = [groups[k][i] for k in keys if i < len(groups[k])]
        if not row:
            break
        out += row
    return out


@dataclass(frozen=True)
class Shard:
    """Slice `index` (1-based) of `count` of every suite: within each stratum, in hash order,
    the configurations at places index-1 modulo count. Each shard is itself a stratified spread
    (every stratum shares out evenly), the shards of one count are disjoint and together whole,
    and membership depends on nothing but the configurations (so separate sessions or machines
    can each take one)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise BenchError(f"--shard {text!r} is not i/n with 1 <= i <= n (e.g. 2/5)")
        return cls(int(m.group(1)), int(m.group(2)))

    def select(self, cfgs: list, salt: str = "") -> list:
        """This shard's configurations, in their given order."""
        place: dict[str, int] = {}
        seen: dict[tuple, int] = {}
        for c in sorted(cfgs, key=lambda c: stable_hash(salt + c.key())):
            k = stratum(c)
            place[c.key()] = seen.get(k, 0)
            seen[k] = place[c.key()] + 1
        return [c for c in cfgs if place[c.key()] % self.count == self.index - 1]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def select(items: list[PlanItem], budget: Budget) -> tuple[list[PlanItem], int]:
    """Take items in order until the budget is spent (skipping ones that no longer fit)."""
    if budget.count is not None:
        return items[: budget.count], max(0, len(items) - budget.count)
    if budget.seconds is None:
        return list(items), 0
    out, spent = [], 0.0
    for it in items:
        if spent + it.est_s <= budget.seconds:
            out.append(it)
            spent += it.est_s
    return out, len(items) - len(out)


def make_plan(
    suites: list[str],
    maths: list[str],
    budget: Budget,
    cost: CostModel,
    *,
    max_call_ms: float = 250.0,
    max_bytes: int = 16 << 30,
    limit: int | None = None,
    shard: Shard | None = None,
) -> Plan:
    """The configurations to run, per suite, within the budget (shared by suite weights).

    Configurations whose fastest call is estimated above `max_call_ms`, or whose tensors need
    more than `max_bytes`, are left out (SEER kept kernels of 1 ms to 1000 ms on a Titan Xp;
    an H100 is several times faster). A suite that needs less than its share gives the rest to
    the suites after it. With a `shard`, each suite is first cut to that shard.
    """
    per_suite: dict[str, list[PlanItem]] = {}
    total: dict[str, int] = {}
    for s in suites:
        cfgs = stratified_order(SUITES[s].build(), salt=s)
        if shard is not None:
            cfgs = shard.select(cfgs, salt=s)
        total[s] = len(cfgs) * len(maths)
        keep = []
        for c in cfgs:
            for mth in maths:
                dtype = MATH_DTYPE[mth]
                if not c.valid or sum(c.tensor_bytes(dtype).values()) > max_bytes:
                    continue
                if cost.call_s(c, mth) * 1e3 > max_call_ms:
                    continue
                keep.append(PlanItem(s, c, mth, cost.config_s(c, mth)))
        per_suite[s] = keep[:limit] if limit else keep
    weights = {s: SUITES[s].share for s in suites}
    left = budget
    items: list[PlanItem] = []
    dropped: dict[str, int] = {}
    remaining_weight = sum(weights.values())
    for s in sorted(suites, key=lambda s: sum(i.est_s for i in per_suite[s])):  # smallest need first
        frac = weights[s] / remaining_weight if remaining_weight else 1.0
        chosen, _ = select(per_suite[s], left.share(frac))
        dropped[s] = total[s] - len(chosen)
        items_s = chosen
        if left.seconds is not None:
            left = Budget(seconds=max(0.0, left.seconds - sum(i.est_s for i in items_s)))
        elif left.count is not None:
            left = Budget(count=max(0, left.count - len(items_s)))
        remaining_weight -= weights[s]
        per_suite[s] = items_s
    for s in suites:  # execution order: the order the suites were given (RUN_ORDER)
        items += per_suite[s]
    return Plan(items, dropped, total, shard)


def with_overrides(cfg: Config, **kw) -> Config:
    return replace(cfg, **kw)
