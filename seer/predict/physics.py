"""The least time the hardware allows a call: no kernel beats the datasheet's FP32 peak or
streams more than its DRAM bandwidth from beyond the L2.

A fitted model outside its data can predict less (a GEMM variant fitted on n=128 only, asked
for n=4096, runs at 700 TFLOP/s on a 67 TFLOP/s GPU); `floor_ms` is the bound a prediction is
raised to, with a warning, so an answer is never physically impossible. The bound is kept
loose enough that no measured call is below it (tests check it on every bundled data set):

- FLOPs: 2 per multiply-add of the direct method, at the FP32 datasheet peak, for GEMMs and the
  GEMM-based convolution algorithms. Winograd and FFT do fewer multiplications (measured up to
  12x fewer than the direct method), and half precision and TF32 math run on tensor cores whose
  peak the GPU table does not carry: no direct-method bound there. cuDNN's FFT algorithm
  multiplies every frequency bin of every image by every filter's (a complex multiply-add, 8
  FLOPs, per bin, image, input and output channel of a group: configs' FB x N x C/G x K); the
  1,879 FP32 FFT calls of the H100 and H200 records took at least 1.46x that at the FP32 peak.
  Without it the FFT models, trained on small calls, answered a 1x1 layer of batch 128 at 0.21
  ms, 11x faster than its complex products allow (4.15 ms measured), and were picked for it.
  FFT also stores the spectra of its inputs, filters and outputs (FB x (N x C + K x C/G + N x
  K) complex floats) and reads them back: that traffic beyond the L2, at the DRAM bandwidth,
  bounds it too, and all 1,879 FP32 FFT calls of the two GPUs took at least 1.48x it. At batch 1
  the filters' spectra dominate and the products become GEMVs: the H100's fits, trained at
  batch 2 and up, answered VGG-16's 128 -> 256 channel 3x3 layer on 56x56 at batch 1 in 0.05
  ms, below the 0.32 ms its 1.1 GB of spectra take (15.7 ms measured), and picked it.
  The gradients' FFT multiplies the same bins (a data gradient the output gradient's spectra by
  the filters', summed over K; a filter gradient the input's by the output gradient's, summed
  over N) and keeps the same three spectra: the H100's 368 backward-data and 371 backward-filter
  FP32 FFT calls took at least 1.31x and 1.39x that bound (the H200's 401 and 418: 1.40x and
  1.48x). Without it the H100's fits answered a backward-data FFT call of 256 -> 64 channels 7x7
  on 64x64 at batch 3 in 0.08 ms (its forward FFT variant's model far outside its data), below
  the 0.67 ms its products take (3.23 ms measured).
  FFT_TILING multiplies the bins of its tiles the same way (configs.fft_tiling_bins: 32 x 17 a
  tile; for filters of one row or column, the 1-D pieces of every line); its 3,433 FP32 calls
  on the two GPUs took at least 1.32x that (1-D filters at batch 128 and 256). Without it the H100's
  FFT_TILING models answered ResNet-50's layer3.0.conv1 at batch 128 (512 -> 256 channels 1x1
  on 28x28) at 0.45 ms, below the 0.96 ms its products take (1.56 ms measured). Its data
  gradient tiles the same way (the H100's 699 FP32 calls: at least 1.34x; the H200's 749:
  1.33x); its filter gradient does not (of each GPU's 10 calls one ran in 0.42-0.45x that
  bound, another in 0.78-0.89x), so it has no product bound.
  WINOGRAD_NONFUSED multiplies every transformed point of every tile by every filter's, in all
  three directions (configs.winograd_tiles: F(4x4, 3x3), 36 points a tile, and F(9x9, 5x5),
  169, on 5x5): 2 FLOPs per point, tile, input and output channel of a group. Its 2,164 FP32
  calls on the two GPUs took at least 1.44x that. Without it the H100's fits answered a
  1,024 -> 1,024 channel 3x3 layer on 40x40 at batch 128 in 6.6 ms, below the 14.4 ms its
  products take (21.4 ms measured).
- Bytes: the compulsory traffic beyond what the L2 can hold, at the DRAM bandwidth. A problem
  that fits in the L2 can be served from it between repeated calls (measured at 3.4x the DRAM
  bandwidth on the H100's 50 MB L2), so only the excess must come from DRAM. A convolution
  reads at most the input pixels its filter windows touch (a 1x1 filter at stride 4 reads one
  pixel in 16), not the whole input.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from seer.data.configs import fft_tiling_bins, shapes, traffic, winograd_macs
from seer.data.records import CONV_OPS, GEMM_OPS
from seer.hardware.dtypes import DEFAULT_DTYPE, element_bytes
from seer.hardware.gpus import GPUSpec

FFT = "FFT"  # the algorithms bounded by their complex products (FFT_FLOPS per bin, image and channel pair)
FFT_TILING = "FFT_TILING"
# the FFT algorithms each direction runs on the forward's bins (backward-filter FFT_TILING does not)
BINNED = {"conv_fwd": (FFT, FFT_TILING), "conv_bwd_data": (FFT, FFT_TILING), "conv_bwd_filter": (FFT,)}
WINOGRAD_NONFUSED = "WINOGRAD_NONFUSED"  # bounded by its transformed points' products, every direction
WINOGRAD_FILTERS = (3, 5)  # the filter sizes cuDNN's non-fused Winograd runs (configs.winograd_tiles' tiles)
FFT_FLOPS = 8.0  # a complex multiply-add: four real multiplies, four adds
COMPLEX_BYTES = 8.0  # a float32 complex number of a spectrum
# FP32 math on the FMA pipes: the records' "fma", and "ffma", the kernel names' spelling that
# seer.data.variants.annotate writes over a prepared row's math (Test-set-I's rows): read as
# tensor-core math, those rows had no FP32 bound at all
FMA_MATHS = ("", "fma", "ffma")

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
    present = pd.unique(algos)
    flop, products, moved = bounds(df, op, gpu, present)
    out = np.empty(len(df))
    for a in present:
        rows = algos == a
        out[rows] = np.maximum(_flop_bound(op, a, flop, products), moved)[rows]
    return out


def floors_by_algorithm(df: pd.DataFrame, op: str, gpu: GPUSpec, algos: list[str]) -> np.ndarray:
    """floor_ms of every row with each of `algos` (configs x algorithms), the sizes computed once."""
    flop, products, moved = bounds(df, op, gpu, algos)
    out = np.empty((len(df), len(algos)))
    for j, a in enumerate(algos):
        out[:, j] = np.maximum(_flop_bound(op, a, flop, products), moved)
    return out


def _flop_bound(op: str, algo: str, flop: np.ndarray, products: dict[str, np.ndarray]) -> np.ndarray | float:
    """The FLOP bound (`bounds`' first two) that holds for `algo`: the direct method's for GEMMs
    and DIRECT_ALGOS, the complex products' for the FFTs (BINNED), the transformed points' for
    Winograd non-fused, none for the rest."""
    if op not in CONV_OPS or algo in DIRECT_ALGOS[op]:
        return flop
    return products.get(algo, 0.0)


def bounds(
    df: pd.DataFrame, op: str, gpu: GPUSpec, algos: Iterable[str] = (FFT, FFT_TILING)
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """(ms at the FP32 peak for the direct method's FLOPs of float32 rows, the same for the
    complex products of each FFT algorithm among `algos` that its direction runs on the
    forward's bins (BINNED; FFT's raised to its spectra's traffic; a prediction of other
    algorithms counts no FFT's bins) and of Winograd non-fused's transformed points (any
    direction), ms at the DRAM bandwidth for the traffic beyond the L2) of each row; zeros for
    ops other than GEMMs and convolutions."""
    if op not in CONV_OPS and op not in GEMM_OPS:
        return np.zeros(len(df)), {}, np.zeros(len(df))
    s = shapes(df.assign(op=op))
    t = traffic(df.assign(op=op), s)
    dtype = df["dtype"].to_numpy(dtype=object) if "dtype" in df else np.full(len(df), "", dtype=object)
    fp32 = np.isin(dtype, ("", DEFAULT_DTYPE))  # tensor-core dtypes: no FP32 bound
    if "math" in df:  # float32 in TF32 math runs on tensor cores too (at 4-8x the FP32 peak)
        fp32 &= df["math"].fillna("").astype(str).isin(FMA_MATHS).to_numpy()
    flop = np.where(fp32, 1e3 * t["flops"] / gpu.fp32_flops, 0.0)
    wanted = set(algos) & set(BINNED.get(op, ()))
    bins = {}  # per image and channel pair of a group
    if FFT in wanted:
        bins[FFT] = s["FB"]
    if FFT_TILING in wanted:
        bins[FFT_TILING] = fft_tiling_bins(df)
    products = {
        a: np.where(fp32, 1e3 * FFT_FLOPS * b * s["N"] * s["C"] / s["G"] * s["K"] / gpu.fp32_flops, 0.0)
        for a, b in bins.items()
    }
    if FFT in products:  # and by its spectra, each written to memory and read back
        spectra = 2 * COMPLEX_BYTES * s["FB"] * (s["N"] * s["C"] + s["K"] * s["C"] / s["G"] + s["N"] * s["K"])
        spectra_ms = np.where(fp32, 1e3 * np.maximum(spectra - gpu.l2_bytes, 0.0) / gpu.dram_bytes_per_s, 0.0)
        products[FFT] = np.maximum(products[FFT], spectra_ms)
    if op in CONV_OPS and WINOGRAD_NONFUSED in set(algos):
        runs = np.isin(s["R"], WINOGRAD_FILTERS) & (s["R"] == s["S"])
        products[WINOGRAD_NONFUSED] = np.where(fp32 & runs, 1e3 * 2 * winograd_macs(s) / gpu.fp32_flops, 0.0)
    moved = t["read_bytes"] + t["write_bytes"]
    if op in ("conv_fwd", "conv_bwd_filter"):  # the input read at most once per filter tap, never more than whole
        el = element_bytes(df.get("dtype"), len(df))
        whole = s["N"] * s["C"] * s["H"] * s["W"]
        moved = moved - el * (whole - np.minimum(whole, s["NPQ"] * s["C"] * s["R"] * s["S"]))
    return flop, products, 1e3 * np.maximum(moved - gpu.l2_bytes, 0.0) / gpu.dram_bytes_per_s
