"""Features of a variant's time models, from the configuration alone.

  W  = ceil(blocks / B_max)     waves, with B_max = resident blocks per SM x SMs
  S  = ceil(blocks / SMs)       blocks per SM: the partial last wave at SM granularity
  Kb = reduction length of one block (the GEMM K, divided by split-K; with "+loops", times
       the outputs each block loops over beyond its tile: output_loops)
compute:  W*Kb, W, S*Kb, S, 1  (+ helper-kernel terms for convolutions)
memory:   compulsory bytes, tile traffic (blocks x Kb x (tile_m + tile_n): tile_reads), W, 1
Bytes are MB (1e6 bytes) of the configuration's dtype.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from seer.data.configs import FFT_TILED_OPS, GEMM_OPS, ConfigBatch, winograd_macs, winograd_tiles
from seer.models.geometry import Geometry
from seer.models.keys import FeatureSet
from seer.models.lt_config import splits

MB = 1e-6
HELPERS = {  # helper-kernel terms: what a variant's extra launches move, by kind
    "gemm": ["splitk_MB", "splitk"],
    "WINOGRAD_NONFUSED": ["in_MB", "out_MB", "xin_MB", "xout_MB", "xfilter_MB"],
    "GEMM": ["in_MB", "out_MB", "im2col_MB", "direct_G"],
    # the FFTs' GEMMs read the filters' spectra, K x C complex values a frequency bin: the filter's
    # R x S taps (filter_MB) say nothing of them, and FFT_TILING's tile model fitted with them
    # was 22-30% short on 2x2 and 3x3 filters and 24% long on 9x9 (the H200's 64x64 tile)
    "FFT": ["in_MB", "out_MB", "spectrum_MB"],
    # a strided data gradient's FFT_TILING folds dy and dx (fold_MB below)
    "fold": ["fold_MB"],
    # a tiled call's work done once a call, not once a tile, as one tile's share (`once_a_call`)
    "tiled": ["call_MB", "call"],
    "conv": ["in_MB", "out_MB", "filter_MB"],
}


class Scale(enum.Enum):
    """What a feature's coefficient is the time of, and so what moves it from one GPU to another."""

    WORK = "time per unit of a block's reduction: the SM's arithmetic rate"
    CLOCK = "time per wave or per block on an SM: the clock"
    BANDWIDTH = "time per megabyte: the DRAM bandwidth"
    FIXED = "time per launch or per call: the host and the driver"


# every feature a design can hold, and what its coefficient scales with
SCALES: dict[str, Scale] = {
    "W*Kb": Scale.WORK,
    "S*Kb": Scale.WORK,
    "W": Scale.CLOCK,
    "S": Scale.CLOCK,
    "1": Scale.FIXED,
    "splitk": Scale.FIXED,
    "MB": Scale.BANDWIDTH,
    "tile_MB": Scale.BANDWIDTH,
    "read_MB": Scale.BANDWIDTH,
    "write_MB": Scale.BANDWIDTH,
    **{name: Scale.BANDWIDTH for names in HELPERS.values() for name in names if name.endswith("_MB")},
    "direct_G": Scale.WORK,
    "direct_C": Scale.CLOCK,
    "call": Scale.FIXED,
    "xgemm_G": Scale.WORK,
}
# helper terms paid once a round of blocks over the SMs (S: a chain of dependent steps that each
# block's threads walk), not once a unit of the call's work: `design` multiplies them by S
PER_SM_ROUND = ("direct_C",)
# cuDNN's direct forward kernel, conv2d_grouped_direct_kernel<6 flags, channels per group, ...>:
# 0 channels per group is the kernel that loops over any number of them; 1, 2 and 4 unroll them
_DIRECT_CHANNELS = re.compile(r"conv2d_grouped_direct_kernel<(?:\w+, ){6}(\d+),")


def loops_channels(kernel: str) -> bool:
    """Whether a kernel is cuDNN's direct forward kernel that loops over a group's input
    channels one after the other (the template's channels per group 0; the kernels of 1, 2 and
    4 channels a group unroll them)."""
    m = _DIRECT_CHANNELS.search(kernel)
    return m is not None and int(m.group(1)) == 0


def helper_names(op: str, algo: str, kernel: str = "") -> list[str]:
    """The helper terms of a variant of this op and algorithm whose calls are keyed by `kernel`,
    in the order of their coefficients. A Winograd non-fused call keyed by its transform (cuDNN's
    data transform, the H100's forward and data-gradient calls) has its batched GEMM's
    multiply-adds beside it (`xgemm_G`): the transform's grid says nothing of them, and without
    them a 2-image layer of 256 -> 819 channels on 100 x 136 was predicted 2.47 ms, 5.38 measured
    (the GEMM alone: 4.54 ms). Keyed by the GEMM kernel (backward-filter's 3x3 calls, NeuSight's
    kernel rows), its own grid and reduction count them already. cuDNN's direct kernel
    (conv2d_grouped_direct) pays per input channel (`direct_G`) under whichever forward algorithm
    runs it: under IMPLICIT_GEMM its cross-validated RMSPE was 39.3% without (the H100; 26.3%
    with), under IMPLICIT_PRECOMP_GEMM 26.4% (19.4%). Its generic template, which loops over a
    group's channels one after another (loops_channels), also pays each step's latency once a
    round of blocks over the SMs (`direct_C`): a call of few blocks is that chain of steps however
    few outputs it has, and without the term the H100's calls of at most 64 blocks were timed at
    0.74 of their time (median); its cross-validated RMSPE went 21.6% -> 18.2% under the GEMM
    algorithm (H200 22.5% -> 18.4%), 26.3% -> 22.4% under IMPLICIT_GEMM (28.9% -> 23.0%)
    (docs/results.md, "The direct kernel's channel loop paid once a round of blocks")."""
    if op in GEMM_OPS:
        return HELPERS["gemm"]
    if algo == "WINOGRAD_NONFUSED" and "winograd" in kernel.lower():
        return [*HELPERS[algo], "xgemm_G"]
    if algo == "FFT_TILING" and op == "conv_bwd_data":
        return [*HELPERS["FFT"], *HELPERS["fold"], *HELPERS["tiled"]]
    if algo == "FFT_TILING" and op in FFT_TILED_OPS:
        return [*HELPERS["FFT"], *HELPERS["tiled"]]
    if algo in ("FFT", "FFT_TILING"):
        return HELPERS["FFT"]
    loop = ["direct_C"] if loops_channels(kernel) else []
    if algo in ("WINOGRAD_NONFUSED", "GEMM"):
        return [*HELPERS[algo], *loop]
    if op == "conv_fwd" and "grouped_direct" in kernel:
        return [*HELPERS["conv"], "direct_G", *loop]
    return HELPERS["conv"]


@dataclass
class Inputs:
    """What the features of one variant need from configs, computed once (B_max aside)."""

    blocks: np.ndarray
    kb: np.ndarray  # reduction length per block
    read_mb: np.ndarray  # compulsory DRAM reads (operands), MB
    write_mb: np.ndarray  # compulsory DRAM writes (result), MB
    tile_mb: np.ndarray  # operand tiles the blocks load, MB
    helpers: Mapping[str, np.ndarray]  # a mapping may compute each on first use
    logcfg: np.ndarray | None  # log-configuration, for the kernel-type chooser where one is used
    loops: np.ndarray | None = None  # output_loops (None: each block one tile of outputs)

    @property
    def mb(self) -> np.ndarray:
        return self.read_mb + self.write_mb

    def take(self, rows: np.ndarray) -> Inputs:
        return Inputs(
            self.blocks[rows],
            self.kb[rows],
            self.read_mb[rows],
            self.write_mb[rows],
            self.tile_mb[rows],
            {k: v[rows] for k, v in self.helpers.items()},
            None if self.logcfg is None else self.logcfg[rows],
            None if self.loops is None else self.loops[rows],
        )

    @property
    def varied_loops(self) -> bool:
        """Whether the blocks' loops over outputs differ between rows (only then can a model
        with them fit otherwise than one without)."""
        return self.loops is not None and bool(np.ptp(self.loops) > 0)


def _winograd_MB(b: ConfigBatch, channels: str, tiled: bool) -> np.ndarray:
    """MB of a Winograd non-fused transform: points x channels (x every image's tiles)."""
    points, tiles = winograd_tiles(b.shapes)
    return points * per_row(b, "el_MB") * b.shapes[channels] * (tiles if tiled else 1.0)


# per-row quantities of a configuration alone (ConfigBatch.memo): MB per element, the
# compulsory traffic in MB and the helper kernels' traffic of convolutions
_MB_RULES: dict[str, Callable[[ConfigBatch], np.ndarray]] = {
    "el_MB": lambda b: b.el * MB,
    "read_MB": lambda b: b.sizes["read_bytes"] * MB,
    "write_MB": lambda b: b.sizes["write_bytes"] * MB,
    "in_MB": lambda b: per_row(b, "el_MB") * b.shapes["N"] * b.shapes["C"] * b.shapes["H"] * b.shapes["W"],
    "out_MB": lambda b: per_row(b, "el_MB") * b.shapes["NPQ"] * b.shapes["K"],
    # a strided data gradient's FFT_TILING folds dy into its phases and dx back out of them
    # (nchwToFoldedNchwKernel, foldedNchwToNchwKernel): each read and written once more
    "fold_MB": lambda b: 2 * (per_row(b, "in_MB") + per_row(b, "out_MB")) * (b.shapes["PH"] > 1),
    "xin_MB": lambda b: _winograd_MB(b, "C", tiled=True),
    "xout_MB": lambda b: _winograd_MB(b, "K", tiled=True),
    "xfilter_MB": lambda b: _winograd_MB(b, "K", tiled=False) * b.shapes["C"],
    "im2col_MB": lambda b: per_row(b, "el_MB") * b.shapes["NPQ"] * b.shapes["CRS"],
    # outputs x input channels (of a group), 1e9: the direct convolution cuDNN runs under the
    # GEMM algorithm below c_out = 128 loops over channels, each step with a cost of its own
    # beside its R x S multiply-adds (1x1 filters were predicted 42% too fast without it)
    "direct_G": lambda b: 1e-9 * b.shapes["NKPQ"] * b.shapes["C"] / b.shapes["G"],
    # the input channels of a group that each thread of the direct kernel loops over, one after
    # the other: the steps' latency paid once a round of blocks (PER_SM_ROUND)
    "direct_C": lambda b: b.shapes["C"] / b.shapes["G"],
    "xgemm_G": lambda b: 1e-9 * winograd_macs(b.shapes),  # Winograd's GEMMs, 1e9 multiply-adds
    "filter_MB": lambda b: per_row(b, "el_MB") * b.shapes["K"] * b.shapes["CRS"],
}


def per_row(batch: ConfigBatch, name: str) -> np.ndarray:
    """One of the per-row quantities above, computed once for the batch's configs."""
    return batch.memo(name, _MB_RULES[name])


# Helper terms of tensors a kernel lays out in whole tiles of images (Winograd's transformed
# input and output): they hold padded images too where the grid tiles the batch.
BATCH_TILED = ("xin_MB", "xout_MB", "xgemm_G")


class _Helpers(Mapping):
    """A convolution's helper terms, each read from the batch on first use (feature sets
    without helper terms read none); `batch_tile` images to a block of the variant's grid;
    `own` the terms of the algorithm's GEMM view, each computed on use (per_row's are the
    configuration's alone)."""

    def __init__(
        self,
        batch: ConfigBatch,
        names: list[str],
        batch_tile: int = 1,
        own: Mapping[str, Callable[[], np.ndarray]] | None = None,
    ):
        self.batch, self.names, self.batch_tile, self.own = batch, names, batch_tile, own or {}

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.names:
            raise KeyError(key)
        if key in self.own:
            return self.own[key]()
        out = per_row(self.batch, key)
        if key in BATCH_TILED and self.batch_tile > 1:
            n = self.batch.shapes["N"]
            out = out * (np.ceil(n / self.batch_tile) * self.batch_tile / n)
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def once_a_call(
    spectrum: Callable[[], np.ndarray], tiles: np.ndarray, images: np.ndarray, batch_tile: int
) -> dict[str, Callable[[], np.ndarray]]:
    """The filters' spectra terms of one tile of a tiled call (cuDNN's FFT_TILING, its time
    fitted and predicted a tile at a time), and what the call does once, not once a tile, as one
    tile's share. The spectra are transformed once a call (`call_MB`: their MB over the tiles)
    and read by every tile's complex GEMM once a row of its blocks along the batch, where its
    grid tiles the batch (`spectrum_MB`: their MB times ceil(N / the batch tile)). The call's
    fixed costs are `call`, 1 over the tiles. Timed as tiles times one tile's, with the spectra
    once a tile, a call of one tile was predicted at 0.83 of its time (median, the H100's forward
    32 x 64 GEMM tile) and calls of 4-128 tiles at 1.03-1.16. With the transform once a call, that
    tile's cross-validated RMSPE went 17.6% -> 4.5%. Read once a tile, the 64 x 64 tile's
    spectra were timed at 1.12 of batches of 48-64 images and 0.74 of 256. Read once a row of
    blocks, its cross-validated RMSPE went 19.3% -> 7.4% (docs/results.md, "What a tiled call
    does once")."""
    rows = np.ceil(images / batch_tile) if batch_tile > 1 else 1.0
    return {
        "spectrum_MB": lambda: spectrum() * rows,
        "call_MB": lambda: spectrum() / tiles,
        "call": lambda: 1.0 / tiles,
    }


def reduction_split(blocks: np.ndarray, s: Mapping[str, np.ndarray], tm: float, tn: float) -> np.ndarray:
    """How many blocks share one output tile's reduction (1 at least): a grid with more blocks
    than the GEMM view's output has tiles (either way round) splits the reduction among them.
    cuDNN's filter gradient `wgrad_alg0_engine` runs N x ceil(PQ/512) blocks on each 32 x 32 tile
    of dw: a block reduces about 512 of N*P*Q positions, and timed as if it reduced all of them its
    model was off 5-8x both ways (cross-validated RMSPE 64% on the H100, 20% so). Read for filter
    gradients' tiled kernels alone: on the data gradient's and FFT_TILING's the ratio fitted worse."""
    gm, gn = s["gm"], s["gn"]
    tiles = np.maximum(np.ceil(gm / tm) * np.ceil(gn / tn), np.ceil(gm / tn) * np.ceil(gn / tm)) * s["gbatch"]
    with np.errstate(invalid="ignore", divide="ignore"):
        split = np.round(blocks / tiles)
    return np.where(np.isfinite(split) & (split > 1), split, 1.0)


def tiles_dw(geom: Geometry) -> bool:
    """Whether a filter gradient's grid tiles dw (C/G x R x S by K) by ceil rules. Then the blocks
    beyond those tiles split the reduction even where another axis's rule misses some training
    grids: wgrad_alg0_engine<.., 6, 7, 3, 3, 5, ..> runs ceil(K/128) blocks along y on 85% of
    the H100's and H200's calls (2 on the others). Read only for grids known exactly, its model
    timed each block as reducing every image's positions, with a cross-validated RMSPE of 41% on
    the H100 and 39% on the H200. With the split, those were 13% and 15% (docs/results.md,
    "A filter gradient's reduction split where its grid is known in part")."""
    return geom.tile_of("CRS") > 1 and geom.tile_of("K") > 1


def inputs(
    batch: ConfigBatch,
    geom: Geometry,
    algo: str,
    logcfg: bool = False,
    kernel: str = "",
    loops: bool = True,
    tiles: np.ndarray | None = None,
) -> Inputs:
    """The inputs of one variant's features for a batch of configs run with `algo`, its calls
    keyed by `kernel` (helper_names); the blocks' loops over outputs where `loops`; `tiles`:
    the FFT_TILING tiles of the calls whose one tile `batch` holds (once_a_call; not given,
    calls of one tile)."""
    batch = batch.with_algo(algo)
    s = batch.sizes
    grid = geom.grid(batch)
    blocks = product(list(grid.values()))
    kb = s["gk"]
    el = per_row(batch, "el_MB")  # MB per element
    helpers: Mapping[str, np.ndarray]
    if geom.op in GEMM_OPS:
        guessed = np.maximum(np.round(grid.get("grid_z", s["gbatch"]) / s["gbatch"]), 1.0)
        split = splits(batch.extra, guessed)  # the query's split-K count where it gives one
        blocks = np.where(split != guessed, blocks / guessed * split, blocks)
        kb = kb / split
        extra = np.where(split > 1, 1.0, 0.0)
        helpers = dict(zip(helper_names(geom.op, algo), [el * extra * split * s["gm"] * s["gn"] * s["gbatch"], extra]))
    else:  # helper kernels of a convolution: layout and Winograd transforms, im2col
        # the filters' spectra: K x C/G complex values a bin (each phase's of a folded data gradient)
        phased = geom.op == "conv_bwd_data"

        def spectrum() -> np.ndarray:
            return 2 * el * s["K"] * s["C"] / s["G"] * s["gbatch"] * (s["PH"] if phased else 1.0)

        names, batch_tile = helper_names(geom.op, algo, kernel), geom.batch_tile()
        own = {"spectrum_MB": spectrum}
        if "call" in names:  # a tiled call's (calls of one tile where `tiles` is not given)
            one = np.ones(len(batch)) if tiles is None else tiles
            own = once_a_call(spectrum, one, batch.shapes["N"], batch_tile)
        helpers = _Helpers(batch, names, batch_tile, own)
    if geom.packs():  # its blocks tile no GEMM output: a block's work is the call's over its blocks
        tile = pixel_tile(kernel)
        kb = s["gm"] * s["gn"] * s["gk"] / blocks * MB if tile is None else pixel_tiles_work(s, tile)
    col2im = unrolls_columns(geom)
    if col2im:
        kb = s["K"] / s["G"]
    tm, tn = geom.tiles()
    if geom.op == "conv_bwd_filter" and tm > 1 and tn > 1 and (geom.exact() or tiles_dw(geom)):
        kb = kb / reduction_split(blocks, s, tm, tn)
    tile_mb = el * blocks  # el * blocks * kb * tile_reads, in place
    tile_mb *= kb
    tile_mb *= tile_reads(geom, s, tm, tn)
    return Inputs(
        blocks,
        kb,
        per_row(batch, "read_MB"),
        per_row(batch, "write_MB"),
        tile_mb,
        helpers,
        batch.logcfg if logcfg else None,
        output_loops(blocks, s, geom) if loops and geom.op not in GEMM_OPS and not col2im else None,
    )


# cuDNN's backward-data ALGO_1 kernel, dgrad2d_alg1_1<T, _, log2 lanes, log2 pixel tile, ...>
_PIXEL_TILE = re.compile(r"dgrad2d_alg1_1<\w+, \d+, \d+, (\d+),")


def pixel_tile(kernel: str) -> int | None:
    """How many of dy's pixels a block of a packed data-gradient kernel takes at a time: 2 to
    the fourth parameter of dgrad2d_alg1_1's template (64 for <float, 0, 6, 6, 5, 4, 4>, 128 for
    <.., 6, 7, 5, 4, 5>: the tiles that fitted both GPUs' training rows best of 16-512); None
    for any other kernel."""
    m = _PIXEL_TILE.search(kernel)
    return 2 ** int(m.group(1)) if m else None


def pixel_tiles_work(s: Mapping[str, np.ndarray], tile: int) -> np.ndarray:
    """A packed data-gradient block's work: its image's dy in whole tiles of `tile` pixels, each
    multiplied by the group's K output channels for the block's channels and taps, plus a cost
    of about `tile` channels' worth a tile that no K shortens (the tile's scatter into dx).
    Timed as the call's GEMM over its blocks (dx's pixels, each summing K x R x S), cuDNN's
    dgrad2d_alg1_1 cross-validated at 33-77% RMSPE on the H100 and the H200; by its tiles with
    no fixed cost 31-49%, with it 15-41% (docs/results.md, "The data gradient's ALGO_1 kernel
    walks dy in tiles")."""
    return np.ceil(s["PQ"] / tile) * tile * (s["K"] / s["G"] + tile) * MB


def tile_reads(geom: Geometry, s: Mapping[str, np.ndarray], tm: float, tn: float) -> float | np.ndarray:
    """The elements a block loads a step of its reduction: a row of each operand's tile, tm + tn;
    but where its tile spans the filter gradient's unrolled columns (C x R x S: cuDNN's
    wgrad_alg0_engine tiles them 32 at a time), the input rows those columns read are their
    channels, a filter's R x S taps each reading one channel's pixels: at most ceil(tile / RS) + 1
    of them (a tile straddles two filters). Counted as columns, a 3x3 block was charged as much
    input as a 1x1 one, 9x what it reads, and the model, one for every filter size, timed the
    H200's 1x1 rows short: predicted / measured 0.87 at the median of its training rows (3x3:
    0.99), 0.76 on Test-set-II's (1.02); by channels 0.97 (0.94) and 1.00 (1.00), its
    cross-validated RMSPE 18.2% -> 15.2% (docs/results.md)."""
    tile = geom.tile_of("CRS")
    if geom.op != "conv_bwd_filter" or tile <= 1:
        return tm + tn
    taps = s["R"] * s["S"]
    return tm + tn - tile + np.minimum(tile, np.ceil(tile / taps) + (taps > 1))


def unrolls_columns(geom: Geometry) -> bool:
    """Whether a data gradient's kernel computes dx's unrolled columns (col2im): its grid tiles
    C x R x S and P x Q (cuDNN's dgrad_engine: ceil(CRS/64) x ceil(PQ/32) x N), so a block
    multiplies the filters' transpose by dy over the K output channels of its group alone, and
    covers its tile of columns once (no loops). Timed by the implicit GEMM's reduction (K x R x S
    per dx pixel) its model read R x S times the work of a 7x7 filter's block, stride^2 times a
    strided layer's, and was cross-validated at 40.6% RMSPE on the H100 (41.1% on the H200);
    by K, 18.8% (15.7%)."""
    return geom.op == "conv_bwd_data" and geom.tiles_each("CRS", "PQ")


def output_loops(blocks: np.ndarray, s: Mapping[str, np.ndarray], geom: Geometry) -> np.ndarray | None:
    """How many output tiles each block computes, one after another (1 at least): the GEMM
    view's outputs over the tiles the grid's ceil rules cover. cuDNN's FFT multiplies the
    spectra in blocks of 4 output channels x 32 frequency bins, each looping over every image
    (`pointwise_mult_and_sum_complex<float2, 8, 4>`, grid ceil(K/4) x ceil(FB/32)): its
    reduction per block is N x C, not the GEMM's C: timed by C alone its model's cross-validated
    RMSPE was 40.2% on the H100 (37.6% on the H200), with the loops 23.4% (21.4%). None where
    the tile is not known (Geometry.tile_area)."""
    tile = geom.tile_area()
    if tile is None:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        loops = s["gm"] * s["gn"] * s["gbatch"] / (blocks * tile)
    return np.where(np.isfinite(loops) & (loops > 1), loops, 1.0)


def product(arrays: list[np.ndarray]) -> np.ndarray:
    """np.prod(arrays, axis=0) without stacking them: the same products in the same order."""
    out = arrays[0] * 1.0 if len(arrays) == 1 else arrays[0] * arrays[1]
    for a in arrays[2:]:
        out *= a
    return out


@dataclass
class Design:
    """Design matrices of one variant: the compute bound, the memory bound (the larger of the
    two is the main kernel's time), the helper kernels (their time adds) and, for SEER's typed
    regimes, the under-utilized form."""

    compute: np.ndarray
    memory: np.ndarray
    helpers: np.ndarray
    names: dict[str, list[str]]
    under: np.ndarray | None = None
    logcfg: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> Design:
        return Design(
            self.compute[rows],
            self.memory[rows],
            self.helpers[rows],
            self.names,
            None if self.under is None else self.under[rows],
            None if self.logcfg is None else self.logcfg[rows],
        )

    def matrix(self, kind: str) -> np.ndarray:
        m = {"compute": self.compute, "memory": self.memory, "under": self.under}[kind]
        assert m is not None, f"no {kind} form in this design"
        return m

    @property
    def columns(self) -> int:
        return self.compute.shape[1] + self.memory.shape[1] + self.helpers.shape[1]


def design(x: Inputs, bps: int, sms: int, fs: FeatureSet) -> Design:
    """The design of one variant for `bps` resident blocks per SM on `sms` SMs."""
    n = len(x.blocks)
    W = np.divide(x.blocks, bps * sms)
    np.ceil(W, out=W)
    kb, tile_mb = x.kb, x.tile_mb
    if fs.loops and x.loops is not None:
        kb, tile_mb = kb * x.loops, tile_mb * x.loops
    under = None
    S = np.divide(x.blocks, sms)
    np.ceil(S, out=S)
    if fs.seer_terms:
        comp = _columns(n, [lambda o: np.multiply(W, kb, out=o), W, 1.0])
        mem = _columns(n, [lambda o: np.add(x.read_mb, x.write_mb, out=o), 1.0])
        names = {"compute": ["W*Kb", "W", "1"], "memory": ["MB", "1"]}
        if fs.typed:  # SEER: t = a B r + d B w + b W B_max f + c
            under = _columns(n, [x.read_mb, x.write_mb, lambda o: np.multiply(W, kb, out=o), 1.0])
            names["under"] = ["read_MB", "write_MB", "W*Kb", "1"]
    else:
        comp = _columns(n, [lambda o: np.multiply(W, kb, out=o), W, lambda o: np.multiply(S, kb, out=o), S, 1.0])
        mem = _columns(n, [lambda o: np.add(x.read_mb, x.write_mb, out=o), tile_mb, W, 1.0])
        names = {"compute": ["W*Kb", "W", "S*Kb", "S", "1"], "memory": ["MB", "tile_MB", "W", "1"]}
    helpers = x.helpers if fs.helpers else {}
    names["helpers"] = list(helpers)
    return Design(
        comp,
        mem,
        _columns(n, [helpers[k] * S if k in PER_SM_ROUND else helpers[k] for k in names["helpers"]])
        if helpers
        else np.zeros((n, 0)),
        names,
        under,
        x.logcfg,
    )


def _columns(n: int, cols: list) -> np.ndarray:
    """np.column_stack of n-row columns, written into one array: a column is an array, a
    number (every row) or a function that writes the column into the slot it is given."""
    out = np.empty((n, len(cols)))
    for j, c in enumerate(cols):
        if callable(c):
            c(out[:, j])
        else:
            out[:, j] = c
    return out
