"""The cost model: a configuration's estimated GPU seconds, from its FLOPs and bytes against the
GPU's datasheet peaks (seer.hardware.gpus).

Kept on its own because the plan spends a `--budget` of seconds with it, the ncu pass orders
and budgets its replays with it, and the records keep each configuration's estimate (`est_s`)
beside its measured wall time (`wall_s`) to recalibrate it. The estimate is deliberately simple.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from seer.data.variants import CONV_ALGOS
from seer.hardware.gpus import GPUSpec

from .configs import Config, ConvConfig, GemmConfig
from .maths import MATH_DTYPE


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
