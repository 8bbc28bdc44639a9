"""What the framework launches: the kernel variant PyTorch ran for a shape, learnt from traces.

A plain PyTorch call does not autotune its GEMMs, and its convolutions only with
`torch.backends.cudnn.benchmark = True`: cuBLAS's and cuDNN's heuristics pick the kernel, and
that pick is often not the fastest one a harness times (the bundled H100 traces run
cutlass_80_simt_sgemm 256x128 for an attention bmm where the harness's fastest is an xmma tile).
A profiler trace names the kernel each call launched, so its records (seer.workload.trace_records)
teach the pick directly: per op, a nearest-configuration chooser (seer.models.chooser, log
configuration space, scipy's k-d tree) over the main kernels of traces taken without autotuning,
one per set of library versions (torch, CUDA, cuDNN) and per GPU (a fits file is one GPU's).

`seer.predict` uses it by default where the nearest traced configuration lies within the fits'
trust distance and the launched variant has a fitted model; elsewhere, and with `autotune`,
what an autotuned run gets: the fastest fitted algorithm.

Trace GEMM records carry no cuBLASLt algorithm id; `adopt_algorithms` gives each the id under
which the harness timed the same kernel variant most often, so the two pool in one model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer.data import configs, variants
from seer.data.records import GEMM_OPS, VARIANT_OPS
from seer.models.chooser import Chooser

TRACE_SUITE = "trace"
VERSION_COLUMNS = ("torch_version", "cuda_version", "cudnn_version")
LAUNCHED = "launched"  # what a prediction assumed: the kernel traces saw launched for the nearest shape
FASTEST = "fastest"  # ... or the fastest fitted algorithm (an autotuned run's, and where no trace says)


def is_trace(rec: pd.DataFrame) -> np.ndarray:
    return (rec["suite"] == TRACE_SUITE).to_numpy() if "suite" in rec else np.zeros(len(rec), dtype=bool)


def adopt_algorithms(rec: pd.DataFrame) -> pd.DataFrame:
    """Trace GEMM rows without an algorithm get the cuBLASLt algorithm the other rows of the same
    kernel variant were timed under most often (ties: the smallest id), so both teach one model;
    a variant no other row has keeps '' (the op's default family)."""
    gemm = is_trace(rec) & rec["op"].isin(GEMM_OPS).to_numpy() & (rec["algo"] == "").to_numpy()
    if not gemm.any():
        return rec
    labels = rec["kernel"].fillna("").astype(str).map(lambda k: variants.classify(k).label)
    own = ~is_trace(rec) & rec["op"].isin(GEMM_OPS).to_numpy() & (rec["algo"] != "").to_numpy()
    counts = pd.DataFrame({"label": labels[own], "algo": rec.loc[own, "algo"]}).value_counts()
    best: dict[str, str] = {}
    for (label, algo), _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][1])):
        best.setdefault(str(label), str(algo))
    algo = rec["algo"].copy()
    algo[gemm] = labels[gemm].map(best).fillna("").to_numpy()
    return rec.assign(algo=algo)


@dataclass
class Launched:
    """The kernels traces of one set of library versions saw launched, per op."""

    versions: dict[str, str]
    sources: list[str]
    choosers: dict[str, Chooser] = field(default_factory=dict)  # op -> chooser over variant keys

    def choose(self, logcfg: np.ndarray, op: str, radius: float) -> np.ndarray:
        """The variant key traces saw launched for the nearest traced configuration of each row,
        '' where that configuration is farther than `radius` (log2 units) or the op has none."""
        ch = self.choosers.get(op)
        if ch is None or not len(logcfg):
            return np.full(len(logcfg), "", dtype=object)
        dist, lab = ch.nearest(logcfg, 1)
        keys = np.asarray(ch.labels, dtype=object)[lab[:, 0]]
        return np.where(dist <= radius, keys, "").astype(object)

    def to_dict(self) -> dict:
        return {
            "versions": dict(sorted(self.versions.items())),
            "sources": sorted(self.sources),
            "choosers": {op: ch.to_dict() for op, ch in sorted(self.choosers.items())},
        }

    @classmethod
    def from_dict(cls, d: dict) -> Launched:
        return cls(
            dict(d.get("versions", {})),
            list(d.get("sources", [])),
            {op: Chooser.from_dict(c) for op, c in d.get("choosers", {}).items()},
        )


def fit_launched(rec: pd.DataFrame, fitted: set[str] | None = None) -> list[Launched]:
    """One Launched per set of library versions, most traced kernels first, from prepared records
    (seer.data.prepare: `key` column) of traces taken without autotuning; `fitted`: the variant
    keys with a model (a launch no model can time teaches nothing a prediction can use)."""
    tr = rec[is_trace(rec) & rec["op"].isin(VARIANT_OPS).to_numpy() & (rec["role"] == "main").to_numpy()]
    if "autotuned" in tr:
        tr = tr[~tr["autotuned"].fillna(False).astype(bool).to_numpy()]
    if fitted is not None:
        tr = tr[tr["key"].isin(list(fitted))]
    if tr.empty:
        return []
    cols = [c for c in VERSION_COLUMNS if c in tr]
    ver = tr[cols].fillna("").astype(str) if cols else pd.DataFrame(index=tr.index)
    groups = ver.apply(lambda r: "|".join(r), axis=1) if cols else pd.Series("", index=tr.index)
    out = []
    for _, g in tr.groupby(groups.to_numpy(), sort=True):
        versions = {c: str(g[c].iat[0]) for c in cols if str(g[c].iat[0])}
        choosers = {}
        for op, o in g.groupby("op", sort=True):
            choosers[str(op)] = _chooser(o, str(op))
        out.append(Launched(versions, sorted(pd.unique(g["source"]).astype(str)), choosers))
    return sorted(out, key=lambda lc: -sum(len(c.points) for c in lc.choosers.values()))


def _chooser(rows: pd.DataFrame, op: str) -> Chooser:
    """Every traced configuration of the op with the variant launched for it most often (a trace
    repeats each step's launches; none is condensed away, so a traced shape is at distance 0)."""
    pts = configs.log_config(rows, op).astype(np.float32).astype(np.float64)
    keys = rows["key"].astype(str).to_numpy()
    table = pd.DataFrame(pts).assign(key=keys)
    top = table.groupby([*range(pts.shape[1]), "key"], sort=True).size().rename("n").reset_index()
    top = top.sort_values("n", ascending=False, kind="stable").drop_duplicates(list(range(pts.shape[1])))
    top = top.sort_values(list(range(pts.shape[1])), kind="stable")
    labels = sorted(pd.unique(top["key"]))
    idx = top["key"].map({k: i for i, k in enumerate(labels)}).to_numpy(dtype=int)
    return Chooser(op, LAUNCHED, labels, top[list(range(pts.shape[1]))].to_numpy(dtype=np.float64), idx)


def variant_of(key: str) -> str:
    """The variant label of a key ('gemm:lt:55:xmma_gemm_64x64x8_s3_tn' -> 'xmma_gemm_64x64x8_s3_tn')."""
    return key.rsplit(":", 1)[-1] if key else ""
