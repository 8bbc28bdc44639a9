"""A convolution or GEMM call's time from the training calls nearest it: the ranking's second
opinion, and a GEMM's time beyond its variant models' data.

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
22.5%; docs/results.md, 2026-11-28), where NEIGHBOURS was chosen among 5, 8 and 12. A
convolution's predicted times (`predict`, Test-set-I) stay the variant models'. A GPU without fits of its own reads its
source GPUs' ratios against its own roofline (seer.predict.transfer.MedianPredictor): a ratio to
the roofline is what moves between GPUs.

A GEMM's predicted time uses it too (`joined`). cuBLASLt runs a handful of tiles per algorithm,
and a tile of fewer than a variant's minimum training calls gets no model: on the H100 9 of
lt:20's 10 tiles, 43 of its 57 training calls. Its one modelled tile learnt batch-1 calls only,
so lt:20 was answered alike at batch 128 and 200 (0.107 ms; 0.30 and 0.48 ms measured: its
untimed 128x32 tile ran), 169% RMSPE on Test-set-I. The call-level estimate reads every timed
call of the algorithm, whatever its tile: within the trust distance of the variant models'
data a GEMM's time is the geometric mean of the two, beyond it the call-level estimate alone
where a timed call of the algorithm lies within that distance, else the variant model's as
before (docs/results.md, "A GEMM's time from its nearest timed calls"). A GEMM asked without
an algorithm reads the calls cuBLAS's heuristic ranked first (LIBRARY_PICK).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer.data import configs
from seer.data.records import CONV_FIELDS, CONV_OPS, GEMM_OPS
from seer.data.records.harness import UNVERIFIED
from seer.hardware.gpus import GPUSpec
from seer.models.knn import decode, encode, query_workers

NEIGHBOURS = 8  # training calls an estimate averages over
DISTANCE_FLOOR = 0.25  # log2 units added to each neighbour's distance: weights 1 / (d + floor)
GEMM_FIELDS = ("batch", "m", "n", "k")
LIBRARY_PICK = ""  # the algorithm of a GEMM asked without one: the calls cuBLAS's heuristic ranked first


def roofline_ms(df: pd.DataFrame, op: str, gpu: GPUSpec) -> np.ndarray:
    """The least time the GPU could take for each configuration: FLOPs at FP32 peak or bytes at
    DRAM bandwidth, whichever is more (a scale that takes the sizes' first-order effect out)."""
    return roofline_of(configs.traffic(df.assign(op=op)), gpu)


def roofline_of(traffic: Mapping[str, np.ndarray], gpu: GPUSpec) -> np.ndarray:
    """roofline_ms from the rows' FLOPs and compulsory bytes (configs.traffic, or a ConfigBatch's)."""
    moved = traffic["read_bytes"] + traffic["write_bytes"]
    return np.maximum(traffic["flops"] / gpu.fp32_flops, moved / (gpu.dram_gbs * 1e9)) * 1e3


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
        if not len(df):
            return np.full((0, len(algos)), np.nan)
        x = configs.log_config(df.assign(op=self.op), self.op)
        roof = roofline_ms(df, self.op, gpu)
        return np.column_stack([self.estimate(x, roof, a) for a in algos])

    def estimate(self, x: np.ndarray, roof: np.ndarray, algo: str, reach: float = np.inf) -> np.ndarray:
        """`algo`'s call-level time (ms) at log-configurations `x` of rooflines `roof` (NaN where
        it has fewer than NEIGHBOURS timed calls, or none within `reach` of the row)."""
        found = self._tree(algo)
        if found is None or not len(x):
            return np.full(len(x), np.nan)
        tree, r = found
        dist, idx = tree.query(x, k=NEIGHBOURS, workers=query_workers(len(x)))
        w = 1.0 / (dist + DISTANCE_FLOOR)
        out = roof * np.exp((r[idx] * w).sum(axis=1) / w.sum(axis=1))
        return np.where(dist[:, 0] <= reach, out, np.nan)

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
    """Per convolution direction and GEMM op, the FMA calls of the records that name their
    algorithm (a call's time is its `main` row's; calls of an unverified time left out), one time
    per configuration and algorithm (the geometric mean of repeats: a GEMM algorithm's tiles at
    one shape are its repeats), and a GEMM's library picks (LIBRARY_PICK) beside them."""
    if not {"op", "algo", "time_ms"} <= set(rec.columns):
        return {}
    keep = rec["op"].isin(CONV_OPS + GEMM_OPS) & rec["algo"].fillna("").astype(bool) & (rec["time_ms"] > 0)
    for col, want in (("role", "main"), ("status", "ok"), ("math", "fma")):
        if col in rec:
            keep &= rec[col] == want
    if "time_basis" in rec:
        keep &= rec["time_basis"] != UNVERIFIED
    calls = rec[keep]
    out = {}
    for op, g in calls.groupby("op", sort=True):
        fields = list(CONV_FIELDS if op in CONV_OPS else GEMM_FIELDS)
        if not set(fields) <= set(g.columns):
            continue
        if op in GEMM_OPS and "heuristic_rank" in g:
            picked = pd.to_numeric(g["heuristic_rank"], errors="coerce") == 0
            g = pd.concat([g, g[picked].assign(algo=LIBRARY_PICK)], ignore_index=True)
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


def joined(times: np.ndarray, inside: np.ndarray, call: np.ndarray) -> np.ndarray:
    """A GEMM's time from its variant model's `times` and its call-level estimate `call`: their
    geometric mean within the trust distance (`inside`), the estimate beyond it or where no
    variant answers, the variant's where there is no estimate (NaN: no timed call near)."""
    known = np.isfinite(call) & (call > 0)
    return np.where(inside & np.isfinite(times), blend(times, call), np.where(known, call, times))


def blend(score: np.ndarray, call: np.ndarray) -> np.ndarray:
    """The ranking's score: the geometric mean of the variant models' score and the call-level
    time where both are known, the score alone elsewhere."""
    both = np.isfinite(score) & np.isfinite(call) & (score > 0) & (call > 0)
    return np.where(both, np.sqrt(np.where(both, score * call, 1.0)), score)
