"""Sustained clocks from the power budget: how much of its datasheet FP32 peak a card keeps
under its power limit when compute-bound work runs long enough to reach it.

A datasheet's peak is the boost clock's. Under full load a card draws about
peak FLOP/s x energy per FLOP of its process node; where that is more than its TDP, the
driver lowers the clock until it is not, and near the voltage floor power falls about in
proportion to the clock. So the clock fraction a card sustains is

    x = min(1, TDP / (peak TFLOP/s x E(node))),  E(node) = E12 x (node / 12 nm) ^ gamma  [J per TFLOP]

and a family of kernels that reaches a fraction k of the peak on an unconstrained card reaches
k x x on this one. On the bundled GPUs this is what splits the 70-75 W cards (T4, P4: 35-46% of
their datasheet peak on large GEMMs) from the 250 W ones of the same chips' generations (V100,
P100: 64-91%). The two constants (E12, gamma) and each family's k are fitted on the source GPUs'
measured efficiencies (`fit`): a transfer fits them on its sources only, so a GPU left out of
the sources never informs its own power model.

Only compute-bound work is slowed this way: a memory-bound kernel leaves the SMs waiting on
DRAM, draws less than TDP, and is capped by bandwidth (the transfer keeps the sources'
fraction of datasheet bandwidth for those).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from seer.hardware.gpus import GPUSpec

REFERENCE_NM = 12.0  # E12's node
# the grid the constants are fitted on: gamma from 0 (energy per FLOP the same on every node)
# to 4, E12 from 2 to 200 J per TFLOP (pJ per FLOP; a V100's SGEMM draws about 17 at its boost)
GAMMAS = np.linspace(0.0, 4.0, 41)
E12S = np.logspace(np.log10(2.0), np.log10(200.0), 121)
SATURATED = 0.999  # a fitted efficiency at the datasheet bound: a model outside its data, not a rate


def powered(spec: GPUSpec) -> bool:
    """Whether the spec gives what the power model reads (TDP and process node)."""
    return bool(getattr(spec, "tdp_w", None)) and getattr(spec, "process_nm", None) is not None


@dataclass(frozen=True)
class PowerModel:
    """Energy per FP32 FLOP at the reference node (`e12`, J per TFLOP = pJ per FLOP) and its
    scaling with the node (`gamma`); `kernel`: each family's efficiency on an unconstrained
    card (fraction of datasheet peak), from the GPUs it was fitted on (`fitted_on`)."""

    e12: float
    gamma: float
    kernel: dict[str, float] = field(default_factory=dict)
    fitted_on: tuple[str, ...] = ()

    def full_load_watts(self, spec: GPUSpec) -> float | None:
        """What the card would draw at its boost clock with every FP32 lane busy (None where
        the spec has no TDP or node, or the model was fitted on nothing)."""
        if not powered(spec) or self.e12 <= 0:
            return None
        return spec.fp32_tflops * self.e12 * (float(spec.process_nm) / REFERENCE_NM) ** self.gamma  # type: ignore[arg-type]

    def clock_fraction(self, spec: GPUSpec) -> float:
        """Fraction of the boost clock the card sustains under full compute load: 1 where the
        power budget covers it (or where the spec gives no TDP or node: nothing to cap it by)."""
        watts = self.full_load_watts(spec)
        if watts is None:
            return 1.0
        return float(min(1.0, float(spec.tdp_w) / watts))  # type: ignore[arg-type]

    def efficiency(self, spec: GPUSpec, family: str) -> float | None:
        """Sustained fraction of datasheet FP32 peak of a kernel family on `spec` (None for a
        family the model was not fitted on)."""
        k = self.kernel.get(family)
        return None if k is None else k * self.clock_fraction(spec)


def _fractions(tflops: np.ndarray, tdp: np.ndarray, nm: np.ndarray) -> np.ndarray:
    """Clock fraction of each GPU (columns) at each (gamma, E12) of the grid: gamma x E12 x GPU."""
    watts = tflops[None, None, :] * E12S[None, :, None] * (nm[None, None, :] / REFERENCE_NM) ** GAMMAS[:, None, None]
    return np.minimum(1.0, tdp[None, None, :] / watts)


def fit(sources: Sequence[tuple[GPUSpec, Mapping[str, float]]]) -> PowerModel:
    """The constants that best explain the sources' efficiencies (spec, {family: fraction of
    datasheet peak}) as kernel efficiency x clock fraction, by least squares in logs over a grid.

    Families are fitted jointly: each family's kernel efficiency is the geometric mean of its
    sources' efficiencies with their power caps divided out. Efficiencies at the datasheet
    bound (a model raised to it) and sources without TDP or node are left out. Of equally good
    constants the smallest gamma is taken (energy per FLOP falls with the node no faster than
    the sources demand)."""
    used = [(s, {k: float(v) for k, v in e.items() if 0 < v < SATURATED}) for s, e in sources if powered(s)]
    used = [(s, e) for s, e in used if e]
    names = tuple(s.slug for s, _ in used)
    if not used:
        return PowerModel(e12=0.0, gamma=0.0, kernel={}, fitted_on=())
    fams = sorted({k for _, e in used for k in e})
    loge = np.full((len(fams), len(used)), np.nan)
    for j, (_, e) in enumerate(used):
        for k, v in e.items():
            loge[fams.index(k), j] = np.log(v)
    x = _fractions(
        np.array([s.fp32_tflops for s, _ in used]),
        np.array([float(s.tdp_w) for s, _ in used]),  # type: ignore[arg-type]
        np.array([float(s.process_nm) for s, _ in used]),  # type: ignore[arg-type]
    )
    resid = loge[None, None] - np.log(x)[:, :, None, :]  # gamma x E12 x family x GPU: log k each source implies
    with np.errstate(invalid="ignore"):
        logk = np.nanmean(resid, axis=3, keepdims=True)
        loss = np.nansum((resid - logk) ** 2, axis=(2, 3))
    best = np.flatnonzero(loss.ravel() <= loss.min() + 1e-9)[0]  # gamma varies slowest: its smallest
    g, e = np.unravel_index(best, loss.shape)
    kernel = {f: float(np.exp(logk[g, e, i, 0])) for i, f in enumerate(fams)}
    return PowerModel(e12=float(E12S[e]), gamma=float(GAMMAS[g]), kernel=kernel, fitted_on=names)
