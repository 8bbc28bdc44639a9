"""A convolution call's time from the training calls nearest it: the ranking's second opinion.

The per-variant models time the kernel the chooser names, and where the chooser names the wrong
one (cuDNN's choice turns on something the sizes do not show: its direct kernel or another tile)
the time is another kernel's, 2-20x off, and the pick follows it. A call-level estimate names no
kernel: an algorithm's time for a configuration is its roofline time (useful FLOPs at the GPU's
FP32 peak or compulsory bytes at its DRAM bandwidth, the larger) times the distance-weighted
geometric mean of time / roofline over the NEIGHBOURS training calls of that algorithm nearest in
log-configuration space. Whatever cuDNN ran there, it ran on the neighbours too.

Rankings weigh the geometric mean of the two (`blend`; seer.predict.fits): on the conv_grid and
conv_bwd_grid configurations held out of a fit it lowered the mean slowdown of every direction on
both GPUs (the H100's forward 6.4% -> 3.7%, backward-data 16.5% -> 9.1%, backward-filter 27.0% ->
22.5%; docs/results.md, 2026-11-28), where NEIGHBOURS was chosen among 5, 8 and 12. Predicted
times (`predict`, Test-set-I) stay the variant models'. A GPU without fits of its own reads its
source GPUs' ratios against its own roofline (seer.predict.transfer.MedianPredictor): a ratio to
the roofline is what moves between GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data import configs
from seer.data.records import CONV_FIELDS, CONV_OPS
from seer.data.records.harness import UNVERIFIED
from seer.hardware.gpus import GPUSpec
from seer.models.knn import decode, encode, query_workers

NEIGHBOURS = 8  # training calls an estimate averages over
DISTANCE_FLOOR = 0.25  # log2 units added to each neighbour's distance: weights 1 / (d + floor)


def roofline_ms(df: pd.DataFrame, op: str, gpu: GPUSpec) -> np.ndarray:
    """The least time the GPU could take for each configuration: FLOPs at FP32 peak or bytes at
    DRAM bandwidth, whichever is more (a scale that takes the sizes' first-order effect out)."""
    flops, moved = configs.flops_bytes(df.assign(op=op))
    return np.maximum(flops / gpu.fp32_flops, moved / (gpu.dram_gbs * 1e9)) * 1e3


@dataclass
class CallTimes:
    """One convolution direction's timed training calls: their log-configurations (`points`) and
    per algorithm log(call time / roofline) (`log_ratio`: points x algos, NaN where not timed)."""

    op: str
    algos: list[str]
    points: np.ndarray
    log_ratio: np.ndarray
    # per algorithm, the k-d tree of its timed calls and their ratios: built once, not per question
    _trees: dict[str, tuple[cKDTree, np.ndarray]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def predict(self, df: pd.DataFrame, gpu: GPUSpec, algos: list[str]) -> np.ndarray:
        """Each configuration's call-level time (ms) of each of `algos` (configs x algos; NaN for
        an algorithm of fewer than NEIGHBOURS timed calls or none)."""
        out = np.full((len(df), len(algos)), np.nan)
        if not len(df):
            return out
        x = configs.log_config(df.assign(op=self.op), self.op)
        roof = roofline_ms(df, self.op, gpu)
        for j, a in enumerate(algos):
            found = self._tree(a)
            if found is None:
                continue
            tree, r = found
            dist, idx = tree.query(x, k=NEIGHBOURS, workers=query_workers(len(x)))
            w = 1.0 / (dist + DISTANCE_FLOOR)
            out[:, j] = roof * np.exp((r[idx] * w).sum(axis=1) / w.sum(axis=1))
        return out

    def _tree(self, algo: str) -> tuple[cKDTree, np.ndarray] | None:
        """The algorithm's timed calls as a k-d tree and their log ratios (None: fewer than
        NEIGHBOURS of them, or none)."""
        if algo not in self._trees:
            if algo not in self.algos:
                return None
            r = self.log_ratio[:, self.algos.index(algo)]
            ok = np.isfinite(r)
            if ok.sum() < NEIGHBOURS:
                return None
            self._trees[algo] = (cKDTree(self.points[ok]), r[ok])
        return self._trees[algo]

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "algos": list(self.algos),
            "points": encode(self.points),
            "log_ratio": encode(self.log_ratio),
        }

    @classmethod
    def from_dict(cls, d: dict) -> CallTimes:
        return cls(str(d["op"]), [str(a) for a in d["algos"]], decode(d["points"]), decode(d["log_ratio"]))


def fit_call_times(rec: pd.DataFrame, gpu: GPUSpec) -> dict[str, CallTimes]:
    """Per convolution direction, the FMA calls of the records that every algorithm was asked
    about (a call's time is its `main` row's; calls of an unverified time left out), one time per
    configuration and algorithm (the geometric mean of repeats)."""
    fields = list(CONV_FIELDS)
    need = {"op", "algo", "time_ms", *fields}
    if not need <= set(rec.columns):
        return {}
    keep = rec["op"].isin(CONV_OPS) & rec["algo"].fillna("").astype(bool) & (rec["time_ms"] > 0)
    for col, want in (("role", "main"), ("status", "ok"), ("math", "fma")):
        if col in rec:
            keep &= rec[col] == want
    if "time_basis" in rec:
        keep &= rec["time_basis"] != UNVERIFIED
    calls = rec[keep]
    out = {}
    for op, g in calls.groupby("op", sort=True):
        logt = np.log(g["time_ms"].to_numpy(dtype=float) / roofline_ms(g, str(op), gpu))
        wide = (
            g[fields]
            .assign(logt=logt, algo=g["algo"].astype(str))
            .pivot_table(index=fields, columns="algo", values="logt", aggfunc="mean")
        )
        cfg = wide.index.to_frame(index=False)
        points = configs.log_config(cfg.assign(op=op), str(op))
        out[str(op)] = CallTimes(str(op), [str(a) for a in wide.columns], points, wide.to_numpy(dtype=float))
    return out


def blend(score: np.ndarray, call: np.ndarray) -> np.ndarray:
    """The ranking's score: the geometric mean of the variant models' score and the call-level
    time where both are known, the score alone elsewhere."""
    both = np.isfinite(score) & np.isfinite(call) & (score > 0) & (call > 0)
    return np.where(both, np.sqrt(np.where(both, score * call, 1.0)), score)
