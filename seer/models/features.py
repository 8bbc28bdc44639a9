"""Features of a variant's time models, from the configuration alone.

  W  = ceil(blocks / B_max)     waves, with B_max = resident blocks per SM x SMs
  S  = ceil(blocks / SMs)       blocks per SM: the partial last wave at SM granularity
  Kb = reduction length of one block (the GEMM K, divided by split-K)
compute:  W*Kb, W, S*Kb, S, 1  (+ helper-kernel terms for convolutions)
memory:   compulsory bytes, tile traffic (blocks x Kb x (tile_m + tile_n)), W, 1
Bytes are MB (1e6 bytes) of the configuration's dtype.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from seer.data.configs import GEMM_OPS, ConfigBatch
from seer.models.geometry import Geometry
from seer.models.keys import FeatureSet

MB = 1e-6
HELPERS = {  # helper-kernel terms: what a variant's extra launches move, by kind
    "gemm": ["splitk_MB", "splitk"],
    "WINOGRAD_NONFUSED": ["in_MB", "out_MB", "xin_MB", "xout_MB", "xfilter_MB"],
    "GEMM": ["in_MB", "out_MB", "im2col_MB"],
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
}


def helper_names(op: str, algo: str) -> list[str]:
    """The helper terms of a variant of this op and algorithm, in the order of their coefficients."""
    if op in GEMM_OPS:
        return HELPERS["gemm"]
    return HELPERS[algo] if algo in ("WINOGRAD_NONFUSED", "GEMM") else HELPERS["conv"]


@dataclass
class Inputs:
    """What the features of one variant need from configs, computed once (B_max aside)."""

    blocks: np.ndarray
    kb: np.ndarray  # reduction length per block
    read_mb: np.ndarray  # compulsory DRAM reads (operands), MB
    write_mb: np.ndarray  # compulsory DRAM writes (result), MB
    tile_mb: np.ndarray  # operand tiles the blocks load, MB
    helpers: dict[str, np.ndarray]
    logcfg: np.ndarray | None  # log-configuration, for the kernel-type chooser where one is used

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
        )


def inputs(batch: ConfigBatch, geom: Geometry, algo: str, logcfg: bool = False) -> Inputs:
    """The inputs of one variant's features for a batch of configs run with `algo`."""
    batch = batch.with_algo(algo)
    s = batch.sizes
    grid = geom.grid(batch)
    blocks = np.prod(list(grid.values()), axis=0)
    kb = s["gk"]
    el = batch.el * MB  # MB per element
    if geom.op in GEMM_OPS:
        split = np.maximum(np.round(grid.get("grid_z", s["gbatch"]) / s["gbatch"]), 1.0)
        kb = kb / split
        extra = np.where(split > 1, 1.0, 0.0)
        h = [el * extra * split * s["gm"] * s["gn"] * s["gbatch"], extra]
    else:  # helper kernels of a convolution: layout and Winograd transforms, im2col
        h = [el * s["N"] * s["C"] * s["H"] * s["W"], el * s["NPQ"] * s["K"]]
        if algo == "WINOGRAD_NONFUSED":
            h += [36 * el * s["C"] * s["T4"], 36 * el * s["K"] * s["T4"], 36 * el * s["K"] * s["C"]]
        elif algo == "GEMM":
            h += [el * s["NPQ"] * s["CRS"]]
        else:
            h += [el * s["K"] * s["CRS"]]
    tm, tn = geom.tiles()
    return Inputs(
        blocks,
        kb,
        s["read_bytes"] * MB,
        s["write_bytes"] * MB,
        el * blocks * kb * (tm + tn),
        dict(zip(helper_names(geom.op, algo), h)),
        batch.logcfg if logcfg else None,
    )


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
    W = np.ceil(x.blocks / (bps * sms))
    S = np.ceil(x.blocks / sms)
    one = np.ones(len(W))
    kb = x.kb
    under = None
    if fs.seer_terms:
        comp, mem = [W * kb, W, one], [x.mb, one]
        names = {"compute": ["W*Kb", "W", "1"], "memory": ["MB", "1"]}
        if fs.typed:  # SEER: t = a B r + d B w + b W B_max f + c
            under = np.column_stack([x.read_mb, x.write_mb, W * kb, one])
            names["under"] = ["read_MB", "write_MB", "W*Kb", "1"]
    else:
        comp, mem = [W * kb, W, S * kb, S, one], [x.mb, x.tile_mb, W, one]
        names = {"compute": ["W*Kb", "W", "S*Kb", "S", "1"], "memory": ["MB", "tile_MB", "W", "1"]}
    helpers = x.helpers if fs.helpers else {}
    names["helpers"] = list(helpers)
    return Design(
        np.column_stack(comp),
        np.column_stack(mem),
        np.column_stack(list(helpers.values())) if helpers else np.zeros((len(W), 0)),
        names,
        under,
        x.logcfg,
    )
