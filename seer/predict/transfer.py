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
  (a power-capped card) has its per-wave time scaled down accordingly; so is a filter
  gradient's reduction chain per position (seer.models.dual), a block's work;
- per-wave overheads (W, S) by the clock; megabytes by the DRAM bandwidth;
- the launch floor and constant terms stay (they are the host's and the driver's);
- the correction a source's training rows make nearby (seer.models.local) is dropped, from the
  move and from the sources' efficiencies alike (nearest_variant): it is that GPU's own;
- the sustained-clock law of a source is kept for a target of its chip (an A100-80GB from the
  A100-40GB: the same power behaviour under load) and dropped for others, even of its
  architecture: it describes that card's power cap (a 70 W T4's law slowed every convolution of
  a 250 W RTX 2080 Ti by a further 20-37%).

Memory-bound ops take the effective fraction of datasheet bandwidth and the launch floors of
the sources. Every source that covers an op predicts it; the target's time is the median over
them (one source far off, such as a card whose host adds 20 us to every launch, does not pull
the answer). `transfer(target)` (seer.transfer) builds this from every bundled GPU but the
target's own chip; `seer.load(gpu)` does it for a GPU of seer.hardware.gpus without fits of its own.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer import fitsfile
from seer.data.configs import flops_bytes
from seer.data.records import CONV_DEFAULTS, CONV_OPS, OPS
from seer.data.variants import CONV_ALGO_ID
from seer.errors import SeerError, SeerWarning
from seer.hardware import gpus, occupancy, power
from seer.models import family_key
from seer.models.features import SCALES, Scale
from seer.models.law import Regime
from seer.predict.analytical import EMBEDDING_OPS, EmbeddingPredictor, MemoryPredictor
from seer.predict.fits import Fits, by_op
from seer.predict.load import load
from seer.predict.protocol import AlgorithmTimes, Predictor
from seer.predict.variants import VariantPredictor

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
        rows = [
            {**CONV_DEFAULTS, **dict(batch=b, c_in=c, h_in=h, w_in=h, c_out=k, kh=r, kw=r, pad_h=r // 2, pad_w=r // 2)}
            for b, c, h, k, r in REFERENCE_CONVS
        ]
        return pd.DataFrame(rows).assign(op=op, algo=algo)
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
            with warnings.catch_warnings():  # a model raised to the datasheet bound reads as efficiency 1
                warnings.simplefilter("ignore", SeerWarning)
                t = np.asarray(fits.predict(ref), dtype=float)
        except SeerError:
            continue
        rate = flops_bytes(ref)[0] / (t * 1e-3)
        # above the datasheet peak is a model outside its data (no kernel beats the peak)
        out[family_key(ch.op, ch.algo)] = float(min(np.median(rate) / fits.gpu.fp32_flops, 1.0))
    bw = _memory(fits).fit
    fraction = bw.bandwidth_fraction(fits.gpu) if bw is not None else None
    if fraction is not None:
        out["memory"] = fraction
    return out


def _memory(fits: Fits) -> MemoryPredictor:
    p = fits.predictors.get("softmax")
    assert isinstance(p, MemoryPredictor)
    return p


def _regime(r: Regime | None, ratio: Mapping[Scale, float]) -> Regime | None:
    if r is None:
        return None
    coef = r.coef * np.array([ratio[SCALES[n]] for n in r.names])
    return Regime(list(r.names), coef, r.n, stored=(np.asarray(r.se) * 0, float("nan")))


def retarget(fits: Fits, target: gpus.GPUSpec, eff_ratio: Mapping[str, float] | None = None) -> Fits:
    """One source's fits moved to `target` (see the module docstring). `eff_ratio` maps a
    family key (and 'memory') to source efficiency / target efficiency (1 where absent)."""
    src = fits.gpu
    eff_ratio = eff_ratio or {}
    per_sm = (src.fp32_tflops / src.sms) / (target.fp32_tflops / target.sms)
    clock = src.boost_mhz / target.boost_mhz
    bandwidth = src.dram_gbs / target.dram_gbs
    max_blocks = occupancy.arch(target.cc).max_blocks
    out: list[Predictor] = []
    vp = fits.variant_predictor
    if vp is not None:
        variants = {}
        for key, v in vp.variants.items():
            e = eff_ratio.get(family_key(v.op, v.algo), 1.0)
            ratio = {Scale.WORK: per_sm * e, Scale.CLOCK: clock, Scale.BANDWIDTH: bandwidth, Scale.FIXED: 1.0}
            law = dataclasses.replace(
                v.law,
                compute=_regime(v.law.compute, ratio),
                memory=_regime(v.law.memory, ratio),
                helpers=_regime(v.law.helpers, ratio) or v.law.helpers,
                under=_regime(v.law.under, ratio),
                clock=v.law.clock if chip(target.slug) == chip(src.slug) else None,  # that card's power cap
            )
            variants[key] = dataclasses.replace(
                v, law=law, sms=target.sms, blocks_per_sm=min(v.blocks_per_sm, max_blocks), local=None
            )
        # a filter gradient's reduction chain (seer.models.dual) is a block's work: per SM, as W x Kb
        duals = {
            k: dataclasses.replace(d, per_position_ns=d.per_position_ns * per_sm * eff_ratio.get(k, 1.0))
            for k, d in vp.duals.items()
        }
        out.append(vp.replace(gpu=target, variants=variants, duals=duals))
    mem = _memory(fits).fit
    moved = None
    if mem is not None and src.slug in mem.gpus:
        moved = mem.retarget(target, clock=clock, bandwidth=bandwidth * eff_ratio.get("memory", 1.0), source=src)
    out += [MemoryPredictor(target, moved), EmbeddingPredictor(target)]
    return Fits(target, by_op(out), "transferred", transferred_from=[src.slug])


THROTTLED = 0.8  # a source row above this share of the source's sustained rate ran under its power cap


@dataclass
class PowerCaps:
    """Where a power cap binds, per kernel family (family key -> FLOP/s): the target's sustained
    rate (`target`: kernel efficiency x clock fraction x peak, where the clock fraction is < 1),
    and each capped source's (`sources`: slug -> family -> its fitted rate on large problems),
    with the source's own predictor of the op (`own`) to tell which rows ran at that cap."""

    target: dict[str, float] = field(default_factory=dict)
    sources: dict[str, dict[str, float]] = field(default_factory=dict)
    own: dict[str, Predictor] = field(default_factory=dict)

    def floor(self, df: pd.DataFrame, family: str) -> np.ndarray | None:
        """The time in ms below which the target's power budget does not let a row run."""
        rate = self.target.get(family)
        return None if rate is None else flops_bytes(df)[0] / rate * 1e3

    def throttled(self, slug: str, df: pd.DataFrame, family: str) -> np.ndarray | None:
        """The rows the source `slug` ran at its power cap (their time says nothing of an
        unconstrained card); None where that source is not capped."""
        rate, own = self.sources.get(slug, {}).get(family), self.own.get(slug)
        if rate is None or own is None:
            return None
        try:
            t = np.asarray(own.predict(df), dtype=float)
        except SeerError:
            return None
        return flops_bytes(df)[0] / (t * 1e-3) >= THROTTLED * rate


@dataclass
class MedianPredictor:
    """One op's time on a GPU without fits of its own: the median over the source GPUs'
    predictors moved to it (retarget), of those that answer; with `power`, rows a source ran
    under its power cap leave that source out (where another answers) and the target's cap is
    a floor (seer.hardware.power)."""

    gpu: gpus.GPUSpec
    op: str
    sources: list[tuple[str, Predictor]]  # (source GPU slug, its retargeted predictor of `op`)
    power: PowerCaps | None = None
    extrapolates = True  # ranking compares the sources' median times wherever they answer

    def __repr__(self) -> str:
        return f"MedianPredictor({self.gpu.slug} {self.op}: median of {', '.join(s for s, _ in self.sources)})"

    @property
    def ops(self) -> tuple[str, ...]:
        return (self.op,)

    def algorithms(self, op: str) -> list[str]:
        found = {a for _, p in self.sources for a in p.algorithms(op)}
        return sorted(found, key=lambda a: (CONV_ALGO_ID.get(a, 99), a))

    def dtypes(self, op: str) -> tuple[str, ...] | None:
        """The dtypes some source learnt (None: a closed form, any dtype)."""
        per = [p.dtypes(op) for _, p in self.sources]
        if any(d is None for d in per):
            return None
        return tuple(dict.fromkeys(d for ds in per if ds is not None for d in ds))

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """The median over the sources that cover each row's algorithm."""
        return self.predict_in_range(df)[0]

    def predict_in_range(self, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """The median over the sources that cover each row's algorithm; in range where any
        source's data are."""
        out = np.full(len(df), np.nan)
        inside = np.zeros(len(df), dtype=bool)
        for algo, idx in df.groupby("algo", sort=False).indices.items():
            sub = df.iloc[idx]
            family = family_key(self.op, str(algo))
            outs, capped = [], []
            first: SeerError | None = None
            for slug, p in self.sources:
                try:
                    t, ok = p.predict_in_range(sub)
                except SeerError as exc:
                    first = first or exc
                    continue
                outs.append(np.atleast_1d(np.asarray(t, dtype=float)))
                inside[idx] |= ok
                hot = self.power.throttled(slug, sub, family) if self.power is not None else None
                capped.append(np.zeros(len(sub), dtype=bool) if hot is None else hot)
            if not outs:
                names = ", ".join(s for s, _ in self.sources)
                why = f" (the first says: {first})" if first is not None else ""
                raise SeerError(f"no source GPU's fits ({names}) cover this for {self.gpu.name}{why}")
            times, hot = np.vstack(outs), np.vstack(capped)
            free = np.where(hot & ~hot.all(axis=0), np.nan, times)  # a row every source ran capped: all of them
            t = np.nanmedian(free, axis=0)
            floor = self.power.floor(sub, family) if self.power is not None else None
            out[idx] = t if floor is None else np.maximum(t, floor)
        return out, inside

    def algorithm_times(self, df: pd.DataFrame, op: str, algos: Sequence[str] | None = None) -> AlgorithmTimes:
        """Each algorithm's time the median over the sources that fit it (of the logs), inside
        where any source is, the variant of the source nearest the median; the time ranking
        weighs (AlgorithmTimes.cautious: on grouped layers that may loop, the slowest variant
        proposed) the median of the sources' own."""
        algos = list(algos) if algos is not None else self.algorithms(op)
        unknown = set(algos) - set(self.algorithms(op))
        if unknown:
            raise SeerError(f"no models of algorithm(s) {', '.join(sorted(unknown))} on {self.gpu.name}")
        logs = np.full((len(self.sources), len(df), len(algos)), np.nan)
        ranked = np.full_like(logs, np.nan)  # of the times ranking weighs (AlgorithmTimes.ranked)
        keys = np.full((len(self.sources), len(df), len(algos)), "", dtype=object)
        inside = np.zeros((len(df), len(algos)), dtype=bool)
        for i, (_, p) in enumerate(self.sources):
            mine = [a for a in algos if a in p.algorithms(op)]
            if not mine:
                continue
            got = p.algorithm_times(df, op, mine)
            cols = [algos.index(a) for a in got.algos]
            logs[i][:, cols] = np.log(got.times)
            ranked[i][:, cols] = np.log(got.ranked)
            keys[i][:, cols] = got.variants
            inside[:, cols] |= got.inside
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an algorithm no source fits: NaN
            median = np.nanmedian(logs, axis=0)
            cautious = np.exp(np.nanmedian(ranked, axis=0))
        nearest = np.argmin(np.where(np.isnan(logs), np.inf, np.abs(logs - median)), axis=0)
        variants = np.take_along_axis(keys, nearest[None], axis=0)[0]
        times = np.exp(median)
        for j, a in enumerate(algos):
            floor = self.power.floor(df, family_key(op, a)) if self.power is not None else None
            if floor is not None:
                times[:, j] = np.maximum(times[:, j], floor)
                cautious[:, j] = np.maximum(cautious[:, j], floor)
        return AlgorithmTimes(algos, times, inside, variants, cautious)

    def call_estimates(self, df: pd.DataFrame, op: str, algos: Sequence[str]) -> np.ndarray:
        """The median of the sources' call-level estimates (seer.models.call_time): each source's
        timed calls' ratio to the roofline, read against this GPU's roofline."""
        got = [p.call_estimates(df, op, algos) for _, p in self.sources if isinstance(p, VariantPredictor)]
        if not got:
            return np.full((len(df), len(algos)), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no source timed the algorithm: NaN
            return np.exp(np.nanmedian(np.log(np.stack(got)), axis=0))


def nearest_variant(fits: Fits) -> Fits:
    """The fits with each convolution taking its nearest training config's variant, and each
    variant timed by its law alone. The fastest of the nearest configs' variants
    (seer.models.candidates) is a choice fitted on the source's own data; on another GPU the
    variants' relative speeds change and the minimum of moved models runs low (leave-one-GPU-out
    conv median APE 17.4% with the nearest's variant, 21.6% with the fastest of the fitted k).
    The correction a variant's training rows make nearby (seer.models.local) is the source GPU's
    own: moved, or read into the sources' efficiencies, it took the leave-one-GPU-out median APE
    15.3% -> 16.1-16.2% (docs/results.md, "A variant's residuals smoothed over its neighbours")."""
    vp = fits.variant_predictor
    if vp is None:
        return fits
    choosers = {k: dataclasses.replace(c, candidates=1) if c.op in CONV_OPS else c for k, c in vp.choosers.items()}
    laws = {k: dataclasses.replace(v, local=None) for k, v in vp.variants.items()}
    moved = vp.replace(choosers=choosers, variants=laws)
    return dataclasses.replace(fits, predictors={op: moved if p is vp else p for op, p in fits.predictors.items()})


def default_sources(target: gpus.GPUSpec, other_chips: bool = True) -> list[Fits]:
    """The bundled GPUs a transfer to `target` moves: those of the target's architecture
    (compute capability) where there are some, else all; never the target itself, and with
    `other_chips` none of its chip (what a transfer's evaluation needs: an A100-80GB is not
    "unseen" when the A100-40GB's fits move to it). A GPU of the same architecture differs in
    SMs, clocks and bandwidth, which the move scales; other architectures differ in their
    kernels (an H200 from the H100's fits, not from a median that Pascal cards pull)."""
    every = [
        load(n) for n in fitsfile.bundled() if n != target.slug and not (other_chips and chip(n) == chip(target.slug))
    ]
    same = [f for f in every if f.gpu.cc == target.cc]
    return same or every


def _sources(target: gpus.GPUSpec, sources: Iterable[str | os.PathLike[str] | Fits] | None) -> list[Fits]:
    if sources is None:
        return default_sources(target)
    out = [s if isinstance(s, Fits) else load(s) for s in sources]
    if any(f.gpu.slug == target.slug for f in out):
        raise SeerError(f"the sources include {target.name} itself: a transfer predicts a GPU from other GPUs")
    if any(f.source != "fitted" for f in out):
        raise SeerError("a transfer moves fitted GPUs' models; a source was itself transferred")
    if not out:
        raise SeerError("no source GPUs to transfer from")
    return out


def transfer(target: str | gpus.GPUSpec, sources: Iterable[str | os.PathLike[str] | Fits] | None = None) -> Fits:
    """Fits for `target` (a name or spec of seer.hardware.gpus) from `sources` (fits names,
    paths or Fits; default: the bundled GPUs of another chip and the target's architecture
    where there are some, else every bundled GPU of another chip): one MedianPredictor per op the
    sources cover, the embedding model on the target's datasheet."""
    spec = target if isinstance(target, gpus.GPUSpec) else gpus.lookup(target)
    src = [nearest_variant(f) for f in _sources(spec, sources)]
    eff = {f.gpu.slug: efficiency(f) for f in src}
    model = power_model(src, eff)
    target_eff = target_efficiency(eff, model, spec)
    per_op: dict[str, list[tuple[str, Predictor]]] = {}
    caps: dict[str, PowerCaps] = {}
    x_t = model.clock_fraction(_powered_spec(spec))
    for f in src:
        x_s = model.clock_fraction(_powered_spec(f.gpu))
        # a source is moved as the unconstrained card (its cap divided out), the target's cap
        # is then a floor: both per row, where they bind, not a uniform slow-down
        ratio = {k: e / (target_eff[k] if k == "memory" or k not in model.kernel else model.kernel[k] * x_s)
                 for k, e in eff[f.gpu.slug].items()}  # fmt: skip
        moved = retarget(f, spec, ratio)
        for op, p in moved.predictors.items():
            if op in EMBEDDING_OPS:  # the same closed form on the target's datasheet from every source
                continue
            per_op.setdefault(op, []).append((f.gpu.slug, p))
            c = caps.setdefault(op, PowerCaps())
            if op in REFERENCE_GEMMS:  # convolutions: their FLOPs are the direct algorithm's
                if x_t < 1:
                    c.target.update({k: model.kernel[k] * x_t * spec.fp32_flops for k in model.kernel
                                     if k.startswith(f"{op}:")})  # fmt: skip
                if x_s < 1 and op in f.predictors:
                    c.sources[f.gpu.slug] = {k: e * f.gpu.fp32_flops for k, e in eff[f.gpu.slug].items()
                                             if k.startswith(f"{op}:")}  # fmt: skip
                    c.own[f.gpu.slug] = f.predictors[op]
    medians = [
        MedianPredictor(spec, op, ps, caps.get(op))
        for op, ps in sorted(per_op.items(), key=lambda kv: _op_order(kv[0]))
    ]
    predictors = by_op([*medians, EmbeddingPredictor(spec)])
    meta = {
        "efficiency": eff,
        "target_efficiency": target_eff,
        "power": model,
        "clock_fraction": model.clock_fraction(spec),
    }
    return Fits(spec, predictors, "transferred", transferred_from=[f.gpu.slug for f in src], meta=meta)


def power_model(src: Sequence[Fits], eff: Mapping[str, Mapping[str, float]]) -> power.PowerModel:
    """The power model of seer.hardware.power fitted on the sources only, on their GEMM
    efficiencies: the cleanest full-load kernels (a convolution's FLOPs count the direct
    algorithm's, not what Winograd or FFT compute; convolutions keep the sources' mean)."""
    return power.fit(
        [(_powered_spec(f.gpu), {k: v for k, v in eff[f.gpu.slug].items() if k.split(":")[0] in REFERENCE_GEMMS})
         for f in src]
    )  # fmt: skip


def _powered_spec(g: gpus.GPUSpec) -> gpus.GPUSpec:
    """The table's row of a fits file's GPU (a fits file records no TDP or node), else the spec."""
    if power.powered(g):
        return g
    try:
        return gpus.lookup(g.slug)
    except SeerError:
        return g


def target_efficiency(
    eff: Mapping[str, Mapping[str, float]], model: power.PowerModel, target: gpus.GPUSpec
) -> dict[str, float]:
    """The sustained efficiency the target reaches per family: the family's kernel efficiency x
    the target's clock fraction under its power budget (seer.hardware.power), where the power
    model was fitted on the family; else (and for memory-bound kernels, capped by bandwidth, not
    power) the geometric mean over the sources."""
    families = {k for e in eff.values() for k in e}
    out = {k: float(np.exp(np.mean([np.log(e[k]) for e in eff.values() if k in e]))) for k in families}
    target = _powered_spec(target)
    for k in families - {"memory"}:
        v = model.efficiency(target, k)
        if v is not None:
            out[k] = min(v, 1.0)
    return out


def _op_order(op: str) -> int:
    return list(OPS).index(op)


def load_or_transfer(name: str | os.PathLike[str] | gpus.GPUSpec) -> Fits:
    """A GPU's own fits where seer has them (bundled, or a fits file's path), else fits
    transferred to it from the bundled GPUs (for any GPU of seer.hardware.gpus)."""
    if isinstance(name, gpus.GPUSpec):
        name = name.slug
    try:
        return load(name)
    except SeerError:
        if not isinstance(name, str) or not name.strip() or name.endswith(".json"):  # not a GPU name: as load said
            raise
        try:
            spec = gpus.lookup(str(name))
        except SeerError:  # neither fits nor a spec to move fits to: say what seer knows
            raise SeerError(f"no fits for GPU {name!r}, and {fitsfile.unknown_gpu(name)}") from None
        return transfer(spec, default_sources(spec, other_chips=False))  # it has no fits: its chip's are the best
