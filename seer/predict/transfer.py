"""Fits for a GPU seer has never measured, transferred from the GPUs it has.

A variant's time law has terms whose meaning does not depend on the GPU (waves x reduction per
block, compulsory megabytes, the helper kernels' traffic) and coefficients that do. Moving a
fitted GPU (the source) to another (the target) keeps the kernel family, its tile and launch
geometry, B_max per SM (capped by the target architecture's resident-block limit) and the
chooser, and recomputes what depends on the target:

- waves (W = ceil(blocks / B_max)) and partial waves (S) from the target's SM count;
- time per unit of per-block work (the `Kb` terms) scaled by the per-SM FP32 rate
  (datasheet TFLOP/s / SMs: clock x lanes) and by the sustained efficiency the sources reach:
  a source that runs at a smaller fraction of its datasheet peak than the sources on average
  (a power-capped card) has its per-wave time scaled down accordingly;
- per-wave overheads (W, S) by the clock; megabytes by the DRAM bandwidth;
- the launch floor and constant terms stay (they are the host's and the driver's);
- the sustained-clock law of a power-capped source is dropped (it describes that card).

Memory-bound ops take the effective fraction of datasheet bandwidth and the launch floors of
the sources. Every source that covers an op predicts it; the target's time is the median over
them (one source far off, such as a card whose host adds 20 us to every launch, does not pull
the answer). `transfer(target)` (seer.transfer) builds this from every bundled GPU but the
target's own chip; `seer.load(gpu)` does it for a GPU of seer.hardware.gpus without fits of its own.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer import fitsfile
from seer.data.configs import flops_bytes
from seer.errors import SeerError
from seer.hardware import gpus, occupancy
from seer.models import family_key
from seer.models.law import Regime
from seer.predict import Fits, _frame, load, ranking_frame

# shapes on which a source's sustained efficiency is read (large, many waves, inside the data
# range of every source): GEMMs as (batch, m, n, k), convolutions as ResNet-like layers
REFERENCE_GEMMS = {
    "linear": [(1, 4096, 4096, 4096), (1, 8192, 1024, 4096), (1, 2048, 8192, 2048)],
    "bmm": [(64, 1024, 1024, 1024), (256, 512, 512, 256), (32, 1024, 512, 1024)],
    "gemm": [(1, 4096, 4096, 4096), (1, 8192, 1024, 4096), (8, 1024, 1024, 1024)],
}
REFERENCE_CONVS = [  # batch, c_in, h, c_out, k (square, stride 1, "same" padding)
    (32, 64, 56, 64, 3),
    (32, 128, 28, 128, 3),
    (32, 256, 14, 256, 3),
    (64, 64, 56, 64, 3),
]


def chip(slug: str) -> str:
    """The chip of a GPU slug (a100-40gb and a100-80gb-pcie are one chip): the first token."""
    return slug.split("-")[0]


def _reference(op: str, algo: str) -> pd.DataFrame:
    if op == "conv_fwd":
        unit = dict(stride_h=1, stride_w=1, dil_h=1, dil_w=1, groups=1)
        rows = [
            dict(batch=b, c_in=c, h_in=h, w_in=h, c_out=k, kh=r, kw=r, pad_h=r // 2, pad_w=r // 2, algo=algo, **unit)
            for b, c, h, k, r in REFERENCE_CONVS
        ]
        return pd.DataFrame(rows).assign(op=op)
    return pd.DataFrame(REFERENCE_GEMMS[op], columns=["batch", "m", "n", "k"]).assign(op=op, algo=algo)


def efficiency(fits: Fits) -> dict[str, float]:
    """Sustained fraction of the datasheet FP32 peak each fitted (op, algorithm) family reaches
    on large reference problems (key: family key), and of datasheet DRAM bandwidth for the
    memory-bound kernels (key: 'memory'), as the fits predict them."""
    out: dict[str, float] = {}
    for ch in fits.choosers.values():
        if ch.op not in REFERENCE_GEMMS and ch.op != "conv_fwd":
            continue
        ref = _reference(ch.op, ch.algo)
        try:
            t = np.asarray(fits.predict(ref), dtype=float)
        except SeerError:
            continue
        rate = flops_bytes(ref)[0] / (t * 1e-3)
        # above the datasheet peak is a model outside its data (no kernel beats the peak)
        out[family_key(ch.op, ch.algo)] = float(min(np.median(rate) / fits.gpu.fp32_flops, 1.0))
    kernels = _memory_kernels(fits)
    bw = [k["bw_gbs"] for k in kernels.values() if k.get("bw_gbs") and k.get("bw_source") == "fit"]
    if bw:
        out["memory"] = float(np.median(bw) / fits.gpu.dram_gbs)
    return out


def _memory_kernels(fits: Fits) -> dict:
    mb = fits.memory_bound or {}
    return mb.get("gpus", {}).get(fits.gpu.slug, {}).get("kernels", {})


def _scale(name: str, compute: float, clock: float, bandwidth: float) -> float:
    """How a coefficient of the feature `name` moves from the source to the target."""
    if "Kb" in name:
        return compute
    if "MB" in name:
        return bandwidth
    if name in ("W", "S"):
        return clock
    return 1.0  # constants, launch counts


def _regime(r: Regime | None, compute: float, clock: float, bandwidth: float) -> Regime | None:
    if r is None:
        return None
    coef = r.coef * np.array([_scale(n, compute, clock, bandwidth) for n in r.names])
    return Regime(list(r.names), coef, r.n, stored=(np.asarray(r.se) * 0, float("nan")))


def retarget(fits: Fits, target: gpus.GPUSpec, eff_ratio: Mapping[str, float] | None = None) -> Fits:
    """The source's fits moved to `target` (see the module docstring). `eff_ratio` maps a family
    key (and 'memory') to source efficiency / target efficiency (1 where absent)."""
    src = fits.gpu
    eff_ratio = eff_ratio or {}
    per_sm = (src.fp32_tflops / src.sms) / (target.fp32_tflops / target.sms)
    clock = src.boost_mhz / target.boost_mhz
    bandwidth = src.dram_gbs / target.dram_gbs
    max_blocks = occupancy.arch(target.cc).max_blocks
    variants = {}
    for key, v in fits.variants.items():
        e = eff_ratio.get(family_key(v.op, v.algo), 1.0)
        args = (per_sm * e, clock, bandwidth)
        law = dataclasses.replace(
            v.law,
            compute=_regime(v.law.compute, *args),
            memory=_regime(v.law.memory, *args),
            helpers=_regime(v.law.helpers, *args) or v.law.helpers,
            under=_regime(v.law.under, *args),
            clock=None,
        )
        variants[key] = dataclasses.replace(v, law=law, sms=target.sms, blocks_per_sm=min(v.blocks_per_sm, max_blocks))
    out = copy.copy(fits)
    out.variants, out.gpu = variants, target
    out.memory_bound = _memory_params(fits, target, clock, bandwidth * eff_ratio.get("memory", 1.0))
    out.meta = {**fits.meta, "transferred_from": src.slug}
    return out


def _memory_params(fits: Fits, target: gpus.GPUSpec, clock: float, bandwidth: float) -> dict | None:
    kernels = _memory_kernels(fits)
    if not kernels:
        return None
    moved = {}
    for key, k in kernels.items():
        k = copy.deepcopy(k)
        if k.get("coef"):
            for name in list(k["coef"]):
                k["coef"][name] *= {"bytes": bandwidth, "reread_bytes": bandwidth, "rows": clock}.get(name, 1.0)
        moved[key] = k
    return {
        **(fits.memory_bound or {}),
        "gpus": {target.slug: {"kernels": moved, "cc": target.cc, "name": target.name}},
    }


@dataclass
class TransferredFits:
    """Predictions for a GPU without fits of its own: the median over source GPUs' fits moved
    to it (retarget). Same prediction API as Fits for what the sources cover."""

    gpu: gpus.GPUSpec
    sources: list[Fits]  # retargeted, one per source GPU
    efficiency: dict[str, dict[str, float]] = field(default_factory=dict)  # source slug -> family -> eff
    source: str = "transferred"

    @property
    def transferred_from(self) -> list[str]:
        return [f.meta.get("transferred_from", "") for f in self.sources]

    @property
    def ops(self) -> list[str]:
        return sorted({op for f in self.sources for op in f.ops})

    @property
    def algorithms(self) -> list[str]:
        return list(dict.fromkeys(a for f in self.sources for a in f.algorithms))

    @property
    def choosers(self) -> dict:
        return {k: c for f in self.sources for k, c in f.choosers.items()}

    @property
    def options(self):
        return self.sources[0].options

    def _each(self, fn) -> np.ndarray:
        """Stack of each source's answer (NaN rows where a source cannot answer)."""
        outs = []
        for f in self.sources:
            try:
                outs.append(np.atleast_1d(np.asarray(fn(f), dtype=float)))
            except SeerError:
                continue
        if not outs:
            raise SeerError(f"no source GPU's fits ({', '.join(self.transferred_from)}) cover this for {self.gpu.name}")
        return np.vstack(outs)

    def predict(self, configs_: pd.DataFrame | Mapping | None = None, **config) -> np.ndarray | float:
        """Time in ms of each config on the target: the median over the sources that cover its
        op (and algorithm); NaN where none does."""
        df, single = _frame(configs_, config)
        out = np.full(len(df), np.nan)
        for _, idx in df.groupby(["op", "algo"], sort=False).indices.items():
            sub = df.iloc[idx]
            times = self._each(lambda f, s=sub: f.predict(s))
            out[idx] = np.nanmedian(times, axis=0)
        return float(out[0]) if single else out

    def algorithm_times(self, configs_: pd.DataFrame, op: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """As Fits.algorithm_times, each algorithm's time the median over the sources that fit
        it, inside where any source is."""
        algos = list(dict.fromkeys(c.algo for c in self.choosers.values() if c.op == op))
        logs = np.full((len(self.sources), len(configs_), len(algos)), np.nan)
        inside = np.zeros((len(configs_), len(algos)), dtype=bool)
        for i, f in enumerate(self.sources):
            if not any(c.op == op for c in f.choosers.values()):
                continue
            got, t, ins = f.algorithm_times(configs_, op)
            for j, a in enumerate(got):
                logs[i, :, algos.index(a)] = np.log(t[:, j])
                inside[:, algos.index(a)] |= ins[:, j]
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an algorithm no source fits: NaN
            times = np.exp(np.nanmedian(logs, axis=0))
        return algos, times, inside

    def rank_algorithms(self, configs_: pd.DataFrame | Mapping | None = None, **config) -> pd.DataFrame:
        """Every algorithm some source fits, per config, ranked by the transferred time."""
        df, _ = _frame(configs_, {**config, "op": "conv_fwd"})
        algos, times, inside = self.algorithm_times(df, "conv_fwd")
        score = np.where(np.isnan(times), np.inf, times)
        rank = np.argsort(np.argsort(score, axis=1, kind="stable"), axis=1)
        return ranking_frame(algos, times, inside, rank)

    def best_algorithm(self, configs_: pd.DataFrame | Mapping | None = None, **config) -> str | np.ndarray:
        """The convolution algorithm predicted fastest on the target."""
        df, single = _frame(configs_, {**config, "op": "conv_fwd"})
        algos, times, _ = self.algorithm_times(df, "conv_fwd")
        best = np.asarray(algos, dtype=object)[np.nanargmin(np.where(np.isnan(times), np.inf, times), axis=1)]
        return str(best[0]) if single else best


def _sources(target: gpus.GPUSpec, sources: Iterable[str | Fits] | None) -> list[Fits]:
    if sources is None:
        names = [n for n in fitsfile.bundled() if chip(n) != chip(target.slug)]
        return [load(n) for n in names]
    out = [s if isinstance(s, Fits) else load(s) for s in sources]
    if any(f.gpu.slug == target.slug for f in out):
        raise SeerError(f"the sources include {target.name} itself: a transfer predicts a GPU from other GPUs")
    if not out:
        raise SeerError("no source GPUs to transfer from")
    return out


def transfer(target: str | gpus.GPUSpec, sources: Iterable[str | Fits] | None = None) -> TransferredFits:
    """Fits for `target` (a name or spec of seer.hardware.gpus) from `sources` (fits names, paths or
    Fits; default: every bundled GPU of another chip)."""
    spec = target if isinstance(target, gpus.GPUSpec) else gpus.lookup(target)
    src = _sources(spec, sources)
    eff = {f.gpu.slug: efficiency(f) for f in src}
    families = {k for e in eff.values() for k in e}
    # the target's efficiency: the geometric mean over the sources that have the family
    target_eff = {k: float(np.exp(np.mean([np.log(e[k]) for e in eff.values() if k in e]))) for k in families}
    moved = [retarget(f, spec, {k: e / target_eff[k] for k, e in eff[f.gpu.slug].items()}) for f in src]
    return TransferredFits(spec, moved, eff)


def load_or_transfer(name: str | gpus.GPUSpec) -> Fits | TransferredFits:
    """A GPU's own fits where seer has them (bundled, or a fits file's path), else fits
    transferred to it from the bundled GPUs (for any GPU of seer.hardware.gpus)."""
    if isinstance(name, gpus.GPUSpec):
        name = name.slug
    try:
        return load(name)
    except SeerError as exc:
        if not isinstance(name, str) or name.endswith(".json"):
            raise
        try:
            spec = gpus.lookup(str(name))
        except SeerError:
            raise exc from None
        return transfer(spec)
