"""The least time the hardware allows a call: no kernel beats the datasheet's FP32 peak or
streams more than its DRAM bandwidth from beyond the L2.

A fitted model outside its data can predict less (a GEMM variant fitted on n=128 only, asked
for n=4096, runs at 700 TFLOP/s on a 67 TFLOP/s GPU); `floor_ms` is the bound a prediction is
raised to, with a warning, so an answer is never physically impossible. The bound is kept
loose enough that no measured call is below it (tests check it on every bundled data set):

- FLOPs: 2 per multiply-add of the direct method, at the FP32 datasheet peak, for GEMMs and the
  GEMM-based convolution algorithms only. Winograd and FFT do fewer multiplications (measured
  up to 12x fewer than the direct method), and half precision and TF32 math run on tensor cores
  whose peak the GPU table does not carry: no FLOP bound there.
- Bytes: the compulsory traffic beyond what the L2 can hold, at the DRAM bandwidth. A problem
  that fits in the L2 can be served from it between repeated calls (measured at 3.4x the DRAM
  bandwidth on the H100's 50 MB L2), so only the excess must come from DRAM. A convolution
  reads at most the input pixels its filter windows touch (a 1x1 filter at stride 4 reads one
  pixel in 16), not the whole input.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.data.configs import shapes, traffic
from seer.data.records import CONV_OPS, GEMM_OPS
from seer.hardware.dtypes import DEFAULT_DTYPE, element_bytes
from seer.hardware.gpus import GPUSpec

# convolution algorithms that perform every multiply-add of the direct method (as GEMMs do), per direction
DIRECT_ALGOS = {
    "conv_fwd": ("GEMM", "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM"),
    "conv_bwd_data": ("ALGO_0", "ALGO_1"),
    "conv_bwd_filter": ("ALGO_0", "ALGO_1", "ALGO_3"),
}


def floor_ms(df: pd.DataFrame, op: str, gpu: GPUSpec) -> np.ndarray:
    """The least time in ms each row of a checked frame of `op` can take on `gpu` (0 where
    nothing bounds it: memory-bound and embedding ops have their own roofline)."""
    algos = df["algo"].to_numpy(dtype=object) if "algo" in df else np.full(len(df), "", dtype=object)
    flop, moved = bounds(df, op, gpu)
    if op in CONV_OPS:
        flop = np.where(np.isin(algos, DIRECT_ALGOS[op]), flop, 0.0)
    return np.maximum(flop, moved)


def floors_by_algorithm(df: pd.DataFrame, op: str, gpu: GPUSpec, algos: list[str]) -> np.ndarray:
    """floor_ms of every row with each of `algos` (configs x algorithms), the sizes computed once."""
    flop, moved = bounds(df, op, gpu)
    out = np.empty((len(df), len(algos)))
    for j, a in enumerate(algos):
        out[:, j] = np.maximum(flop, moved) if op not in CONV_OPS or a in DIRECT_ALGOS[op] else moved
    return out


def bounds(df: pd.DataFrame, op: str, gpu: GPUSpec) -> tuple[np.ndarray, np.ndarray]:
    """(ms at the FP32 peak for the direct method's FLOPs of float32 rows, ms at the DRAM
    bandwidth for the traffic beyond the L2) of each row; zeros for ops other than GEMMs and
    convolutions."""
    if op not in CONV_OPS and op not in GEMM_OPS:
        return np.zeros(len(df)), np.zeros(len(df))
    s = shapes(df.assign(op=op))
    t = traffic(df.assign(op=op), s)
    dtype = df["dtype"].to_numpy(dtype=object) if "dtype" in df else np.full(len(df), "", dtype=object)
    fp32 = np.isin(dtype, ("", DEFAULT_DTYPE))  # tensor-core dtypes: no FP32 bound
    if "math" in df:  # float32 in TF32 math runs on tensor cores too (at 4-8x the FP32 peak)
        fp32 &= df["math"].fillna("").astype(str).isin(("", "fma")).to_numpy()
    flop = np.where(fp32, 1e3 * t["flops"] / gpu.fp32_flops, 0.0)
    moved = t["read_bytes"] + t["write_bytes"]
    if op in ("conv_fwd", "conv_bwd_filter"):  # the input read at most once per filter tap, never more than whole
        el = element_bytes(df.get("dtype"), len(df))
        whole = s["N"] * s["C"] * s["H"] * s["W"]
        moved = moved - el * (whole - np.minimum(whole, s["NPQ"] * s["C"] * s["R"] * s["S"]))
    return flop, 1e3 * np.maximum(moved - gpu.l2_bytes, 0.0) / gpu.dram_bytes_per_s
