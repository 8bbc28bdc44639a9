"""The cost model: a configuration's estimated GPU seconds, from its FLOPs and bytes against the
GPU's datasheet peaks (seer.hardware.gpus).

Kept on its own because the plan spends a `--budget` of seconds with it, the ncu pass orders
and budgets its replays with it, and the records keep each configuration's estimate (`est_s`)
beside its measured wall time (`wall_s`) to recalibrate it. The estimate is deliberately simple.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from seer.data.variants import CONV_OP_ALGOS
from seer.hardware.dtypes import DTYPE_BYTES
from seer.hardware.gpus import GPUSpec

from .configs import TORCH_CONFIGS, Config, ConvConfig, EmbConfig, GemmConfig
from .maths import MATH_DTYPE


@dataclass(frozen=True)
class CostModel:
    """Seconds a configuration costs on the GPU, from FLOPs and bytes against datasheet peaks.

    A call's roofline time is t = max(FLOPs / (eff_flops x peak), bytes / (eff_bw x bandwidth))
    + launch (`call_s`, what --max-call-ms compares). Each convolution algorithm's call is
    estimated as latency + factor x the roofline of the work that algorithm does (`algo_s`):
    the direct product for the implicit GEMMs, plus the im2col matrix written and read for GEMM,
    the transform-domain products and tensors for FFT, FFT_TILING (32x32 tiles) and
    WINOGRAD_NONFUSED (F(4x4, 3x3), F(2x2, 5x5)). On a grouped convolution cuDNN runs FFT,
    FFT_TILING and WINOGRAD_NONFUSED as one loop per group (the first H100 run: 4-7 launches and
    25-45 us a group, 40 ms a call for 960 groups), which `GROUP_LOOP_S` adds, and whose
    thousands of kernel records cost host time (`loop_scale`). Algorithms that cannot run the
    config (DIRECT always, FFT and Winograd outside their shapes, fused Winograd on sm_90 per
    the cuDNN 9 header) cost only their queries. A gradient's algorithms (conv_bwd_data,
    conv_bwd_filter) are costed as the forward's of the same work (ALGO_0/1/3: the direct
    product), times the direction's `bwd_factor` (calibrated on the first H200 run). Timing a call
    costs warm-up + repetitions (timing.plan_reps) of (t + per-call overhead).
    """

    peak_flops: float
    bandwidth: float
    cc: str = "9.0"
    eff_flops: float = 0.55
    eff_bw: float = 0.7
    launch_s: float = 8e-6
    call_overhead_s: float = 2.5e-4  # flush memset + Python + library host time per repetition
    # Calibrated on the first H100 run (data/h100-sxm, 2026-11-23), FP32 FMA math, by the
    # configurations' measured wall_s: `ALGO_TIME` is a log-space fit of every successful call's
    # time (seer_grid and test_set_ii, 13,500 calls); with it a convolution configuration took
    # its timed calls plus about 0.015 s (descriptors, queries, writing rows). A GEMM layer took
    # about 0.74 x its estimate and no set-up to speak of.
    config_overhead_s: float = 0.005  # a GEMM configuration's set-up
    # in TF32/BF16/FP16 a GEMM layer took about 0.2 s whatever its size on the H200 (2026-11-26,
    # 149 layers x math modes, against 0.04 s estimated): cuBLASLt's set-up of those modes
    tensor_overhead_s: float = 0.17
    conv_overhead_s: float = 0.015  # a convolution configuration's set-up
    conv_scale: float = 0.77  # measured / estimated time of a convolution's timed calls
    loop_scale: float = 3.7  # the same for calls looping over groups (CUPTI's records of every launch)
    gemm_scale: float = 0.74  # the same for a GEMM's algorithms
    query_s: float = 0.002  # a workspace query or a failed attempt
    # not calibrated yet (no memory-bound suite has run): tensors made with torch.rand, the
    # cache handed back, PyTorch's dispatch in every call
    memory_overhead_s: float = 0.01
    # cuDNN's gradients against the forward of the same work: 1.5 was the guess; the first
    # H200 run (conv_bwd, 134 configurations each, 2026-11-26) took 0.93x and 0.63x of it
    bwd_factor: ClassVar[dict[str, float]] = {"conv_bwd_data": 1.4, "conv_bwd_filter": 0.95}
    warmup: int = 2
    reps: int = 10
    min_reps: int = 3
    target_ms: float = 200.0
    slow_ms: float = 500.0
    gemm_algos: int = 8

    # algorithm -> (latency s, factor on the roofline of the algorithm's own work)
    ALGO_TIME: ClassVar[dict[str, tuple[float, float]]] = {
        "IMPLICIT_GEMM": (58e-6, 2.26),
        "IMPLICIT_PRECOMP_GEMM": (91e-6, 1.68),
        "GEMM": (134e-6, 2.49),
        "FFT": (39e-6, 3.29),
        "FFT_TILING": (70e-6, 1.01),
        "WINOGRAD": (60e-6, 1.5),  # not on sm_90; Ampere and older, unfitted
        "WINOGRAD_NONFUSED": (127e-6, 0.76),
        # the gradients' own (uncalibrated): ALGO_0 and ALGO_3 accumulate with atomics
        "ALGO_0": (60e-6, 2.5),
        "ALGO_1": (60e-6, 2.0),
        "ALGO_3": (60e-6, 2.5),
    }
    # seconds per group of the algorithms cuDNN loops over groups
    GROUP_LOOP_S: ClassVar[dict[str, float]] = {"FFT": 42e-6, "FFT_TILING": 40e-6, "WINOGRAD_NONFUSED": 25e-6}
    MATH_SPEEDUP: ClassVar[dict[str, float]] = {"fma": 1.0, "tf32": 4.0, "fp16": 8.0, "bf16": 8.0}

    @classmethod
    def for_gpu(cls, spec: GPUSpec, **kw) -> CostModel:
        return cls(peak_flops=spec.fp32_flops, bandwidth=spec.dram_bytes_per_s, cc=spec.cc, **kw)

    def _roof(self, flops: float, nbytes: float, math_mode: str) -> float:
        return max(
            flops / (self.eff_flops * self.peak_flops * self.MATH_SPEEDUP[math_mode]),
            nbytes / (self.eff_bw * self.bandwidth),
        )

    def call_s(self, cfg: Config, math_mode: str = "fma") -> float:
        dtype = MATH_DTYPE[math_mode]
        moved = cfg.moved_bytes(dtype) if isinstance(cfg, EmbConfig) else sum(cfg.tensor_bytes(dtype).values())
        return self._roof(cfg.flops(), moved, math_mode) + self.launch_s

    def timed_s(self, t: float) -> float:
        """Seconds to warm up and time one call of t seconds."""
        ms = t * 1e3
        if ms > self.slow_ms:
            n = 1
        else:
            n = int(max(self.min_reps, min(self.reps, math.ceil(self.target_ms / max(ms, 1e-6)))))
        return (max(1, self.warmup) + n) * (t + self.call_overhead_s) + self.query_s

    def supported(self, cfg: ConvConfig, algo: str) -> bool:
        """What the first H100 run found (cuDNN 9, FP32 NCHW): FFT at unit stride, FFT_TILING at
        unit stride and at stride 2 of filters above 1x1, WINOGRAD_NONFUSED at unit stride of
        square 3x3 and 5x5 filters; none of them dilated; fused WINOGRAD not on sm_90. The
        gradients are assumed alike (FFT_TILING at unit stride only); fused WINOGRAD of the
        filter gradient is not implemented (cudnn_cnn.h)."""
        stride = cfg.stride_h if cfg.stride_h == cfg.stride_w else 0
        undilated = cfg.dil_h == cfg.dil_w == 1
        fwd = cfg.op == "conv_fwd"
        if algo == "DIRECT" or (algo == "WINOGRAD" and cfg.op == "conv_bwd_filter"):
            return False
        if algo == "FFT":
            return stride == 1 and undilated
        if algo == "FFT_TILING":
            return undilated and (stride == 1 or (fwd and stride == 2 and cfg.kh > 1 and cfg.kw > 1))
        if algo == "WINOGRAD":
            return stride == 1 and undilated and cfg.kh == cfg.kw == 3 and cfg.groups == 1 and float(self.cc) < 9.0
        if algo == "WINOGRAD_NONFUSED":
            return stride == 1 and undilated and cfg.kh == cfg.kw and cfg.kh in (3, 5)
        return True

    def algo_s(self, cfg: ConvConfig, algo: str, math_mode: str = "fma") -> float:
        """One call's estimated GPU seconds with `algo` (whether or not it can run the config)."""
        el = DTYPE_BYTES[MATH_DTYPE[math_mode]]
        io = sum(cfg.tensor_bytes(MATH_DTYPE[math_mode]).values())
        n, k, cg = cfg.batch, cfg.c_out, cfg.c_in // max(1, cfg.groups)
        ho, wo = cfg.out_hw
        if algo == "GEMM":  # im2col: the N*P*Q x C*R*S matrix, written and read
            roof = self._roof(cfg.flops(), io + 2 * el * n * ho * wo * cfg.c_in * cfg.kh * cfg.kw, math_mode)
        elif algo in ("FFT", "FFT_TILING"):
            hp, wp = cfg.h_in + 2 * cfg.pad_h, cfg.w_in + 2 * cfg.pad_w
            if algo == "FFT_TILING":
                hp, wp = 32 * math.ceil(hp / 32), 32 * math.ceil(wp / 32)
            spectrum = hp * (wp / 2 + 1)
            planes = n * cfg.c_in + k * cg + n * k  # input, filter and output planes transformed
            flops = 8.0 * n * k * cg * spectrum + 5.0 * planes * hp * wp * math.log2(max(2, hp * wp))
            roof = self._roof(flops, io + 16.0 * spectrum * planes, math_mode)
        elif algo in ("WINOGRAD", "WINOGRAD_NONFUSED"):
            m = 4 if cfg.kh == 3 else 2
            a = (m + cfg.kh - 1) * (m + cfg.kw - 1)
            tiles = n * math.ceil(ho / m) * math.ceil(wo / m)
            roof = self._roof(
                2.0 * a * tiles * k * cg, io + 2 * el * a * (tiles * cfg.c_in + k * cg + tiles * k), math_mode
            )
        else:
            roof = self._roof(cfg.flops(), io, math_mode)
        lat, factor = self.ALGO_TIME[algo]
        factor *= self.bwd_factor.get(cfg.op, 1.0)
        loop = cfg.groups * self.GROUP_LOOP_S.get(algo, 0.0) if cfg.groups > 1 else 0.0
        return lat + factor * roof + loop

    def config_s(self, cfg: Config, math_mode: str = "fma", algos: Iterable[str] | None = None) -> float:
        """A configuration's seconds: every call, or only those of `algos` (a convolution's
        calls measured again)."""
        if isinstance(cfg, GemmConfig):
            t = self.call_s(cfg, math_mode)
            setup = self.config_overhead_s + (self.tensor_overhead_s if math_mode != "fma" else 0.0)
            return setup + self.gemm_scale * self.gemm_algos * self.timed_s(1.3 * t)
        if isinstance(cfg, TORCH_CONFIGS):
            return self.memory_overhead_s + self.timed_s(self.call_s(cfg, math_mode))
        calls = 0.0
        for algo in CONV_OP_ALGOS[cfg.op].values() if algos is None else algos:
            if not self.supported(cfg, algo):
                calls += self.query_s
                continue
            timed = self.timed_s(self.algo_s(cfg, algo, math_mode))
            looped = cfg.groups > 1 and algo in self.GROUP_LOOP_S
            calls += (self.loop_scale if looped else self.conv_scale) * timed
        return self.conv_overhead_s + calls

    def ncu_s(self, cfg: Config, math_mode: str = "fma", kernels: int = 2) -> float:
        """One call under ncu's kernel replay: a fixed cost per kernel plus a few passes."""
        return kernels * 0.6 + 12 * self.call_s(cfg, math_mode)
