"""One kernel variant's time model: the model (what to fit) and its results (what was fitted).

As in statsmodels, `VariantModel(key, cc=..., sms=...).fit(train)` returns the results,
a `VariantFit`: one `predict`, and its own serialization by keyword (`to_dict`/`from_dict`,
the "variants" entries of a fits file).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seer.data.configs import FFT_TILED_OPS, ConfigBatch, fft_tiles, groups, one_group, one_tile, unfolded
from seer.models.bounds import fit_law
from seer.models.chooser import Chooser
from seer.models.crossval import select
from seer.models.features import PER_SM_ROUND, Inputs, design, inputs
from seer.models.geometry import Geometry, fit_geometry
from seer.models.keys import FeatureSet, VariantKey
from seer.models.law import Regime, TimeLaw, type_of
from seer.models.local import LocalCorrection
from seer.models.options import DEFAULT, FitOptions
from seer.models.solver import rmspe
from seer.models.staircase import bps_candidates, near_best
from seer.models.typed import seer_types

OVERLAPS = (1, 2, 4, 8)  # a per-group variant's launches at once, the candidates VariantModel.fit weighs


def overlapping(g: np.ndarray, overlap: int) -> tuple[np.ndarray | None, np.ndarray]:
    """(launches run at once, rounds of them) of G launches of one group's convolution, `overlap`
    at a time: (None, G) where they run one after another. cuDNN 9 issues a grouped convolution's
    per-group launches so that they overlap (the H100's 2,277 such calls of GEMM-like kernels: their
    kernels' summed times over the call's span, median 1.59, 10-90% 1.01-4.00, up to 7.9): launches too
    small to fill the GPU share it, and G of them take about the time of one launch of G times the
    blocks where G x a launch's blocks fit at once (docs/results.md, "A grouped convolution's
    launches overlap"). How many at a time is the variant's, chosen by cross-validation."""
    g = np.asarray(g, dtype=float)
    if overlap <= 1:
        return None, g
    return np.minimum(g, overlap), np.ceil(g / overlap)


class _Times(Mapping):
    """A mapping of arrays, each read on first use (as the helper terms are) times k; a term paid
    once a round of blocks (features.PER_SM_ROUND) as it is: k launches' rounds are the design's
    S of k times the blocks."""

    def __init__(self, terms: Mapping[str, np.ndarray], k: np.ndarray):
        self.terms, self.k = terms, k

    def __getitem__(self, name: str) -> np.ndarray:
        return self.terms[name] if name in PER_SM_ROUND else self.terms[name] * self.k

    def __iter__(self) -> Iterator[str]:
        return iter(self.terms)

    def __len__(self) -> int:
        return len(self.terms)


def launched_together(x: Inputs, k: np.ndarray) -> Inputs:
    """One launch's inputs as k launches at once: k times the blocks, the bytes and the helper
    kernels' terms, each block's work unchanged."""
    return Inputs(
        x.blocks * k, x.kb, x.read_mb * k, x.write_mb * k, x.tile_mb * k, _Times(x.helpers, k), x.logcfg, x.loops
    )


@dataclass
class VariantFit:
    """A fitted variant: its launch geometry, B_max, feature set and time law, with how well
    it fits (training and cross-validated RMSPE) and notes on what the data could not tell."""

    key: VariantKey
    kernel: str
    geometry: Geometry
    blocks_per_sm: int
    bmax_source: str
    feature_set: FeatureSet
    law: TimeLaw
    n_train: int
    train_rmspe: float
    cv_rmspe: float
    compute_share: float  # training rows on the compute bound
    sms: int
    notes: list[str] = field(default_factory=list)
    tiled: bool = False  # each call timed as fft_tiles launches of one tile's convolution (VariantModel.tiled)
    binned: bool = False  # each call timed as FB launches of one frequency bin's GEMM (VariantModel.binned)
    overlap: int = 1  # a per-group variant's launches that run at once (1: one after another; see `overlapping`)
    unfolded: bool = False  # a strided data gradient timed as the unstrided one of its dx (VariantModel.fit)
    # the law's residuals at its training rows, smoothed over a configuration's neighbours
    # (seer.models.local; None: the law alone, as in files fitted before 2026-12-02)
    local: LocalCorrection | None = None

    @property
    def op(self) -> str:
        return self.key.op

    @property
    def algo(self) -> str:
        return self.key.algo

    @property
    def b_max(self) -> int:
        return self.blocks_per_sm * self.sms

    # the law's parts, as a fits file names them
    compute = property(lambda self: self.law.compute)
    memory = property(lambda self: self.law.memory)
    under = property(lambda self: self.law.under)
    helpers = property(lambda self: self.law.helpers)
    clock = property(lambda self: self.law.clock)
    floor_ms = property(lambda self: self.law.floor_ms)
    type_chooser = property(lambda self: self.law.type_chooser)

    def predict(self, configs: pd.DataFrame | ConfigBatch) -> np.ndarray:
        """Time in ms of each config (a DataFrame of this variant's op, or a ConfigBatch); a
        variant that runs once per group (key.per_group) as G launches of one group's convolution,
        `overlap` of them at once (overlapping), a tiled one (`tiled`) its tiles times one
        tile's, a binned one (`binned`) its frequency bins times one bin's GEMM; times the
        correction its training rows nearby make (`local`)."""
        batch = configs if isinstance(configs, ConfigBatch) else ConfigBatch.of(configs, self.op)
        near = self.local.factor(batch.logcfg) if self.local is not None else 1.0
        if self.unfolded:
            batch = batch.unfolded()
        reps: np.ndarray | float = 1.0
        together: np.ndarray | None = None
        if self.key.per_group:
            g, batch = batch.shapes["G"], batch.one_group()
            together, reps = overlapping(g, self.overlap)
        tiles: np.ndarray | None = None
        if self.tiled:
            tiles, batch = batch.one_tile()
            reps = reps * tiles
        if self.binned:
            reps = reps * batch.sizes["FB"]
        return near * reps * self._time(batch, together, tiles)

    def _time(
        self, batch: ConfigBatch, together: np.ndarray | None = None, tiles: np.ndarray | None = None
    ) -> np.ndarray:
        x = inputs(
            batch,
            self.geometry,
            self.algo,
            logcfg=self.law.type_chooser is not None,
            kernel=self.kernel,
            loops=self.feature_set.loops,
            tiles=tiles,
        )
        if together is not None:
            x = launched_together(x, together)
        return self.law.time(design(x, self.blocks_per_sm, self.sms, self.feature_set))

    def to_dict(self) -> dict:
        law = self.law

        def regime(r: Regime | None) -> dict | None:
            return None if r is None else r.to_dict()

        return {
            "op": self.op,
            "algo": self.algo,
            "variant": self.key.variant,
            "kernel": self.kernel,
            "geometry": self.geometry.to_dict(),
            "blocks_per_sm": self.blocks_per_sm,
            "b_max": self.b_max,
            "b_max_source": self.bmax_source,
            "feature_set": str(self.feature_set),
            "type": {"compute_bound_share": round(self.compute_share, 4)},
            "compute": regime(law.compute),
            "memory": regime(law.memory),
            "under": regime(law.under),
            "type_chooser": None if law.type_chooser is None else law.type_chooser.to_dict(),
            "helpers": law.helpers.to_dict(),
            "clock": None if law.clock is None else [float(f"{c:.9g}") for c in law.clock],
            "floor_ms": float(f"{law.floor_ms:.6g}"),
            "n": self.n_train,
            "train_rmspe": round(self.train_rmspe, 5),
            "cv_rmspe": round(self.cv_rmspe, 5),
            "sms": self.sms,
            "notes": self.notes,
            **({"per_group": True} if self.key.per_group else {}),
            **({"overlap": self.overlap} if self.overlap != 1 else {}),
            **({"tiles": True} if self.tiled else {}),
            **({"bins": True} if self.binned else {}),
            **({"unfolded": True} if self.unfolded else {}),
            **({"local": self.local.to_dict()} if self.local is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> VariantFit:
        def regime(key: str) -> Regime | None:
            return None if d.get(key) is None else Regime.from_dict(d[key])

        clock = d.get("clock")
        law = TimeLaw(
            compute=regime("compute"),
            memory=regime("memory"),
            helpers=Regime.from_dict(d["helpers"]),
            floor_ms=float(d["floor_ms"]),
            clock=None if clock is None else (float(clock[0]), float(clock[1])),
            under=regime("under"),
            type_chooser=None if d.get("type_chooser") is None else Chooser.from_dict(d["type_chooser"]),
        )
        return cls(
            key=VariantKey(d["op"], d["algo"], d["variant"], bool(d.get("per_group", False))),
            kernel=d["kernel"],
            geometry=Geometry.from_dict(d["geometry"]),
            blocks_per_sm=int(d["blocks_per_sm"]),
            bmax_source=d["b_max_source"],
            feature_set=FeatureSet.parse(d["feature_set"]),
            law=law,
            n_train=int(d["n"]),
            train_rmspe=float(d["train_rmspe"]),
            cv_rmspe=float(d["cv_rmspe"]),
            compute_share=float(d["type"]["compute_bound_share"]),
            sms=int(d["sms"]),
            notes=list(d.get("notes", [])),
            tiled=bool(d.get("tiles", False)),
            binned=bool(d.get("bins", False)),
            overlap=int(d.get("overlap", 1)),
            unfolded=bool(d.get("unfolded", False)),
            local=LocalCorrection.from_dict(d["local"]) if d.get("local") else None,
        )


@dataclass(frozen=True)
class VariantModel:
    """What to fit: one kernel variant on a GPU of compute capability `cc` with `sms` SMs
    (`known_bps`: resident blocks per SM where occupancy was measured)."""

    key: VariantKey
    cc: str
    sms: int
    options: FitOptions = DEFAULT
    known_bps: int | None = None

    @property
    def tiled(self) -> bool:
        """Whether each call is fitted as fft_tiles launches of one tile's convolution: cuDNN's
        FFT_TILING (seer.data.configs.FFT_TILE). Fitted on whole calls, its complex GEMM's
        model learnt one launch's grid, the same at every batch and image size, and answered
        ResNet-50's conv1 (224x224, 7x7, stride 2) at 0.10 ms at batch 1 and batch 128 alike.
        The data gradient's too (FFT_TILED_OPS; its tiles cover dx, each phase of a folded dy):
        fitted on whole calls, its complex GEMMs cross-validated at 40-92% RMSPE on the H100 and
        the H200, per tile at 6-38%."""
        return self.key.op in FFT_TILED_OPS and self.key.algo == "FFT_TILING"

    @property
    def binned(self) -> bool:
        """Whether each call is fitted as launches of one frequency bin's complex GEMM, one a bin
        of its square FFT (configs.fft_side: F x (F/2 + 1) bins, the launches cuDNN made on all
        but one of the H100's 105 such calls): cuDNN's FFT where it loops its GEMM over the bins
        (VariantKey.per_bin). Each launch is a small GEMM of 6-90 us, so a call's time is the
        bins' count times it: fitted on whole calls, the H100's forward model of 56 such calls
        had no term in the bins and answered 2.4 ms for a 2,112-bin call of 20.9 ms (cross-validated
        RMSPE 39.4%)."""
        return self.key.per_bin and self.key.algo == "FFT"

    def fit(self, train: pd.DataFrame) -> VariantFit:
        """Fit on the variant's training rows (time_ms = the measured kernel time).

        B_max comes from the wave staircase (training error), the feature set from a
        deterministic k-fold cross-validation inside the training rows (held-out error); a
        variant that runs once per group, how many of its launches overlap too
        (VariantFit.overlap, among OVERLAPS); a strided data gradient's FFT_TILING, whether it is
        timed unfolded (may_unfold)."""
        overlaps = OVERLAPS if self.key.per_group else (1,)
        ways = (False, True) if self.may_unfold(train) else (False,)
        fits = {(k, u): self._fit(train, k, u) for u in ways for k in overlaps}
        # the first of equals, serial launches first, folded first: counts that fit a variant's
        # rows alike (7 of the H100's 45 per-group variants) differ in the last bits of their
        # errors, which a BLAS of another build orders otherwise
        return fits[near_best({k: f.cv_rmspe for k, f in fits.items()}, self.options.tie_rtol)]

    def may_unfold(self, train: pd.DataFrame) -> bool:
        """Whether the variant is also fitted unfolded (configs.unfolded; VariantFit.unfolded), the
        way kept where it cross-validates better, folded on a tie: a data gradient's FFT_TILING
        with training calls that fold by configs._gradient_tiles (a stride below the filter's
        size). cuDNN runs a grouped strided call either way, and only its kernels tell which: the
        H100's grouped calls keyed by their genericTranspose or inverse transform all ran unfolded,
        those keyed by their forward transform either way. Fitted unfolded, 3 of the H100's 13
        data-gradient FFT_TILING variants and 3 of the H200's 14 cross-validated better (the
        inverse transform's per-group 30.2% -> 7.9% and 35.2% -> 7.1%), the per-group
        tensorTransformGeneric's among them (27.9% -> 19.5%, 34.3% -> 24.5%), whose calls' kernels
        show the fold (docs/results.md, "A strided data gradient that does not fold")."""
        if not (self.tiled and self.key.op == "conv_bwd_data"):
            return False
        s = ConfigBatch.of(train, self.key.op).shapes
        return bool((s["PH"] > 1).any())

    def _fit(self, train: pd.DataFrame, overlap: int, unfold: bool = False) -> VariantFit:
        """fit, a per-group variant's launches `overlap` at a time, `unfold`: as unfolded."""
        op, opts = self.key.op, self.options
        if unfold:
            train = unfolded(train)
        reps: np.ndarray | float = 1.0
        together: np.ndarray | None = None
        if self.key.per_group:  # each call as G calls of one group's convolution
            g, train = groups(train), one_group(train)
            together, reps = overlapping(g, overlap)
        tiles: np.ndarray | None = None
        if self.tiled:  # and of one tile's
            tiles = fft_tiles(train)
            reps, train = reps * tiles, one_tile(train)
        batch = ConfigBatch.of(train, op)
        if self.binned:  # and of one frequency bin's GEMM
            reps = reps * batch.sizes["FB"]
        y = train["time_ms"].to_numpy(dtype=float) / reps
        train = train.assign(time_ms=y)
        floor = float(opts.floor_fraction * y.min())
        geom = fit_geometry(train, op, batch)
        types = seer_types(train, opts)
        kernel = str(train["kernel"].iloc[0])
        x = inputs(batch, geom, self.key.algo, logcfg=types is not None, kernel=kernel, tiles=tiles)
        if together is not None:
            x = launched_together(x, together)
        cands = [self.known_bps] if self.known_bps else bps_candidates(train, self.cc)
        cv, fs, stair = select(x, y, cands, self.sms, floor, types, opts)
        D = design(x, stair.bps, self.sms, fs)
        fitted = fit_law(D, y, floor, clock=fs.clock, types=types if fs.typed else None, options=opts)
        law = fitted.law
        if law.type_chooser is not None:
            share = float(np.mean(type_of(law.type_chooser, D) == "compute"))
        else:
            share = float(1 - fitted.memory_rows.mean())
        notes = [
            f"{a} rule {r.describe()} reproduces {100 * r.match:.0f}% of training grids"
            for a, r in geom.axes.items()
            if r.match < 0.95
        ]
        if self.known_bps:
            source = "measured occupancy"
        elif stair.identified:
            source = "wave staircase of training rows"
        else:
            source = "not identified: the smallest candidate"
            notes.append(
                "B_max not identified: every candidate gives the training rows the same wave "
                "steps (up to a factor), so the data cannot tell them apart; the smallest "
                f"({stair.bps} block(s) per SM) is taken"
            )
        return VariantFit(
            key=self.key,
            kernel=kernel,
            geometry=geom,
            blocks_per_sm=stair.bps,
            bmax_source=source,
            feature_set=fs,
            law=law,
            n_train=len(y),
            train_rmspe=rmspe(law.time(D), y),
            cv_rmspe=cv,
            compute_share=share,
            sms=self.sms,
            notes=notes,
            tiled=self.tiled,
            binned=self.binned,
            overlap=overlap,
            unfolded=unfold,
        )
