"""Gradient algorithms timed as the forward convolution of the same configuration.

cuDNN's FFT, FFT_TILING and WINOGRAD_NONFUSED gradients run the forward's pipeline on other
operands: transform two tensors, multiply them bin by bin (or tile by tile), transform the
result back. Measured on the same unstrided configurations, a gradient call takes about what the
forward call of its algorithm takes (tools/gradient_forward_ratio.py; the H100's ungrouped
configurations): backward-filter FFT over forward FFT has median 0.96 (10-90%: 0.64-1.30, 108
configurations), backward-data FFT 0.91 (0.64-1.03, 99), backward-data FFT_TILING 0.99
(0.80-1.03, 110), backward-data WINOGRAD_NONFUSED 0.99 (0.89-1.10, 52); the H200's are alike.
Strided calls are not: a strided gradient convolves a dilated or subsampled problem the forward
never runs (backward-data FFT_TILING, 68 strided configurations: 0.31-3.77), so duals time
unstrided configurations only. The forward models learnt from over 20 times the calls each
gradient direction's did (the H100's: 20,960 prepared rows against 867 and 919), so where the
gradient's own variant models extrapolate (the H100's backward-filter FFT: 13 training rows
of its one ungrouped variant, a 1x1 layer at batch 128 predicted 0.26 ms, 1.80 ms measured) the
forward's models, scaled, answer better.

A `ForwardDual` is that scale, fitted per GPU, gradient op and algorithm on the gradient's
training calls: the median of measured / forward-predicted time (a median, not a least-squares
fit: a few calls the forward model misses by 10x pulled a least-squares scale to half the
typical ratio). It is used where its typical error on those calls (`spread`) is no larger than
the gradient's own models' (seer.fit.duals), an RMSPE being a few calls' (the H200's
backward-filter Winograd: the dual's 146% against the own models' 87%, its typical error 29.4%
against their 29.6%). The own models were fitted to those very calls, so each call's error is
first scaled to what its model errs on rows it did not learn from (seer.fit.duals.held_out):
in-sample, the H200's backward-filter Winograd models erred 16.6% typically against the dual's
27.4%, and on Test-set-I's held-out calls 84.7% RMSPE, the dual 39.8%. The fits file keeps every
figure either way; a file without spreads compares RMSPEs.

Since 2026-11-30 the choice is a blend (`ForwardDual.blend`): the geometric mean of the dual's and
the own models' times, weighted `share` to the dual, the share (0, 0.05, ..., 1) whose log errors
on the training calls (the own models' held out as above) have the smallest median magnitude
(`blend_share`). Two estimates that miss apart are better averaged; one that misses where the
other does, more so, is no help. On the H200 the filter gradient's Winograd share came out 0.1:
its dual, used whole, had erred 43.3% RMSPE on Test-set-I and its own models 26.7%; blended, it
errs 25.9% (docs/results.md, "A gradient's dual and its own models blended"). A file without
shares uses the dual whole where `used`, else not at all.

A filter gradient is the forward's pipeline with one difference the forward never has: its
GEMM sums over the images and output positions (N x P x Q, in tiles or bins) and produces only
the K x C/G filter, so a layer of few channels and many positions has few blocks, each walking a
long reduction alone, and takes that chain's time whatever its channels, where the forward's
many blocks share the work. On the H100's unstrided backward-filter Winograd training calls,
measured over forward-predicted time was 0.90 (median) where its GEMM's blocks each sum below
2^5 images x tiles, 1.9 at 2^8-2^10 and 3.4 at 2^10-2^14, and VGG-16's 64-channel
224 x 224 layer at batch 128 was predicted 8.7 ms against 17.6 measured. So a filter gradient's
dual is the larger of the scaled forward and `per_position_ns` x N x P x Q, joined smoothly
(their root sum of squares, `ForwardDual.time`: a bound, not a cost added to every layer; added,
AlexNet's layers of 192-384 channels took 0.04-0.17 ms more than they run), the two fitted
together (robustly, on log ratios) and the chain kept where it lowers the dual's typical error
on the training calls (docs/results.md, "A filter gradient's reduction over positions").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from seer.data.configs import ConfigBatch

FORWARD = "conv_fwd"
GRADIENT_OPS = ("conv_bwd_data", "conv_bwd_filter")
DUAL_ALGOS = ("FFT", "FFT_TILING", "WINOGRAD_NONFUSED")  # the gradients that run the forward's pipeline
# One standard error of a dual's times, robustly: 1.4826 x the median absolute percentage error
# (a normal error's sigma). Its RMSPE is a few calls': the H100's backward-filter Winograd dual,
# 149.5% over 87 calls, 60.0% without its 3 worst (batch 1-2 layers, 4-12x over), median 30.2%.
# Ranked by that RMSPE, Winograd's times were weighed 2.5x and FFT picked in its place on 7
# Test-set-II layers (H100 backward-filter mean slowdown 14.1%; heuristic's 11.5%).
SPREAD = 1.4826
POSITIONS_OP = "conv_bwd_filter"  # the gradient whose GEMM reduces over images x output positions


@dataclass(frozen=True)
class ForwardDual:
    """A gradient algorithm's time as `scale` x the forward's of the same configuration, or, where
    longer, `per_position_ns` per image x output position (a filter gradient's reduction: `time`)."""

    op: str  # the gradient direction
    algo: str
    scale: float  # median of measured / forward-predicted time over the training calls
    rmspe: float  # of scale x forward on those calls (a fraction)
    own_rmspe: float  # of the gradient's own variant models on the same calls
    n: int  # training calls both answered
    spread: float | None = None  # its typical error there (SPREAD): the ranking weighs it; None: rmspe (older files)
    own_spread: float | None = None  # the own models' typical error on the same calls, held out (fit_dual)
    per_position_ns: float = 0.0  # the reduction's chain, ns per image x output position (N x P x Q); 0: none
    share: float | None = None  # its weight in the blend with the own models (fit_dual); None: files before

    def time(self, forward: np.ndarray, batch: ConfigBatch) -> np.ndarray:
        """The gradient's time (ms) of each config of `batch` from the forward's (`forward`, ms):
        the scaled forward and the reduction's chain joined as a root sum of squares."""
        if not self.per_position_ns:
            return self.scale * forward
        return bounded(self.scale, self.per_position_ns, forward, positions(batch))

    @property
    def risk(self) -> float:
        """The error a pick weighs this dual's times by (seer.predict.fits.RISK)."""
        return self.rmspe if self.spread is None else self.spread

    @property
    def weight(self) -> float:
        """The dual's share of a gradient's time (`blend`): `share`, fitted on the training calls
        (blend_share); in a file without shares, 1 where it is `used`, else 0."""
        if self.share is not None:
            return self.share
        return float(self.used)

    def blend(self, dual: np.ndarray, own: np.ndarray) -> np.ndarray:
        """The dual's and the own models' times of the same calls joined as a weighted geometric
        mean (`weight`)."""
        w = self.weight
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.exp(w * np.log(dual) + (1 - w) * np.log(own))

    def blended_error(self, own_error: np.ndarray) -> np.ndarray:
        """The error of the blend that a pick weighs (seer.predict.fits.RISK): the dual's `risk`
        where it times the gradient alone, else its and each row's own model's error combined as
        two independent estimates' are (inverse variances add; a rough figure, whatever the share)."""
        w = self.weight
        if w >= 1 or w <= 0:
            return np.full_like(own_error, self.risk) if w >= 1 else own_error
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1 / np.sqrt(1 / self.risk**2 + 1 / own_error**2)

    @property
    def used(self) -> bool:
        """Whether it timed the gradient in a file without shares: it errs no more on the
        training calls than the gradient's own models, typically (by RMSPE where the file has no
        spreads)."""
        if self.spread is None or self.own_spread is None:
            return self.rmspe < self.own_rmspe
        return self.spread <= self.own_spread

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.per_position_ns:
            del d["per_position_ns"]  # as files before the term
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in d.items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict) -> ForwardDual:
        optional = lambda k: None if d.get(k) is None else float(d[k])  # files before 2026-11-27 have neither
        return cls(
            str(d["op"]),
            str(d["algo"]),
            float(d["scale"]),
            float(d["rmspe"]),
            float(d["own_rmspe"]),
            int(d["n"]),
            optional("spread"),
            optional("own_spread"),
            float(d.get("per_position_ns", 0.0)),  # files before 2026-11-29 have none
            optional("share"),
        )


def unstrided(batch: ConfigBatch) -> np.ndarray:
    """The configurations a dual times: stride 1 along both axes."""
    one = lambda k: np.nan_to_num(np.asarray(batch.extra[k], dtype=float), nan=1.0) == 1
    return one("stride_h") & one("stride_w")


def positions(batch: ConfigBatch) -> np.ndarray:
    """Each config's images x output positions, N x P x Q: what a filter gradient sums over."""
    return np.asarray(batch.sizes["NPQ"], dtype=float)


def bounded(scale: float, per_position_ns: float, forward: np.ndarray, npq: np.ndarray) -> np.ndarray:
    """The scaled forward time and the reduction's chain (ms) joined as a root sum of squares."""
    return np.hypot(scale * forward, per_position_ns * 1e-6 * npq)


def fit_dual(
    op: str,
    algo: str,
    measured: np.ndarray,
    forward: np.ndarray,
    own: np.ndarray,
    held_out: np.ndarray | None = None,
    npq: np.ndarray | None = None,
) -> ForwardDual | None:
    """The dual of (op, algo) from training calls' measured times and the forward's and the
    gradient's own predictions of them (NaN where a model has no answer); None where no call
    has all three. `held_out`: for each call, how much larger the error of the own model that
    timed it is on rows it did not learn from (its variant's cross-validated over training
    RMSPE, 1 at least); the own models' spread is of their errors so scaled. `npq`: each
    call's N x P x Q, where a filter gradient's dual may bound its time by a chain per position
    (_with_positions)."""
    ok = np.isfinite(measured) & np.isfinite(forward) & np.isfinite(own) & (measured > 0) & (forward > 0)
    if not ok.any():
        return None
    t, f, o = measured[ok], forward[ok], own[ok]
    scale = float(np.exp(np.median(np.log(t / f))))
    typical = lambda e: float(SPREAD * np.median(np.abs(e)))
    per_position = 0.0
    if op == POSITIONS_OP and npq is not None:
        scale, per_position = _with_positions(t, f, npq[ok], scale, typical)
    rmspe = lambda err: float(np.sqrt(np.mean(err**2)))
    pred = bounded(scale, per_position, f, npq[ok]) if per_position and npq is not None else scale * f
    err, own_err = pred / t - 1.0, o / t - 1.0  # the dual's and the own models' relative error on each call
    held = own_err if held_out is None else own_err * np.maximum(held_out[ok], 1.0)
    own_spread = typical(held)
    share = blend_share(np.log1p(err), np.log1p(np.maximum(held, -0.99)))
    return ForwardDual(
        op, algo, scale, rmspe(err), rmspe(own_err), int(ok.sum()), typical(err), own_spread, per_position, share
    )


SHARES = np.linspace(0.0, 1.0, 21)  # the dual's weights tried in the blend


def blend_share(dual_log_err: np.ndarray, own_log_err: np.ndarray) -> float:
    """The dual's weight in the blend whose log errors on the training calls have the smallest
    median magnitude: w x the dual's + (1 - w) x the own models'."""
    scores = [float(np.median(np.abs(w * dual_log_err + (1 - w) * own_log_err))) for w in SHARES]
    return float(SHARES[int(np.argmin(scores))])


def _with_positions(
    t: np.ndarray, f: np.ndarray, npq: np.ndarray, scale: float, typical: Callable[[np.ndarray], float]
) -> tuple[float, float]:
    """(scale, ns per position) of t ~ hypot(scale x f, ns x 1e-6 x npq), fitted on log ratios with a
    soft-L1 loss (a few calls the forward misses by 10x do not pull it), where it errs less
    typically than `scale` alone; else (scale, 0). Both stay positive (fitted as logs)."""
    from scipy.optimize import least_squares  # fit time only

    def residual(x: np.ndarray) -> np.ndarray:
        return np.log(bounded(np.exp(x[0]), np.exp(x[1]), f, npq)) - np.log(t)

    start = np.array([np.log(scale), np.log(max(float(np.median(t / npq)) * 1e6 * 0.1, 1e-12))])
    x = least_squares(residual, start, loss="soft_l1", f_scale=0.1).x
    a, b = float(np.exp(x[0])), float(np.exp(x[1]))
    if typical(bounded(a, b, f, npq) / t - 1.0) < typical(scale * f / t - 1.0):
        return a, b
    return scale, 0.0
