"""Every setting of the fit in one place, recorded in the fits file beside what it produced."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from seer.errors import SeerError

GATES = ("workspace", "captured", "loops")  # FitOptions.gates


@dataclass(frozen=True)
class FitOptions:
    """How per-variant models are fitted (and how far a pick-only fit is trusted).

    The defaults are what every bundled fits file was made with; a fits file records its own
    under "options", so its numbers can be reproduced and its trust rule reapplied."""

    min_rows: int = 12  # fewer training rows: the variant gets no model of its own
    folds: int = 3  # deterministic k-fold cross-validation that picks the feature set
    staircase_rows: int = 2000  # rows enough to place the wave steps; more only cost time
    segment_iters: int = 8  # re-assignments of rows to the compute or memory bound
    clock_iters: int = 12  # alternations between the bounds and the sustained-clock law
    cv_clock_iters: int = 4  # enough to rank feature sets; the final fit iterates to convergence
    memory_start: float = 0.8  # quantile: rows the compute bound explains worst start as memory-bound
    row_margin: int = 3  # a regime needs this many rows beyond its coefficients
    floor_fraction: float = 0.5  # time floor = this x the fastest training row
    tie_rtol: float = 1e-6  # objectives closer than this (relative) are a tie, whatever the BLAS build
    util_bound: float = 80.0  # percent of peak: SEER's level 8 of nvprof's 0-10 utilization scale
    drift_min_rows: int = 100  # training rows of one file needed to fit its measurement drift
    # Where each convolution was timed only with the algorithm the autotuner picked (NeuSight),
    # an algorithm's model has only seen the configs it won; it is trusted within this log2
    # distance of them (a factor of about 2.8 in one size), and beyond it ranks after the others.
    trust_distance: float = 1.5
    # An algorithm whose measured calls lack kernel names for more than this share (CUPTI could
    # not split some FFT calls into repetitions: their larger calls) would be fitted on a biased
    # sample: it gets no models, and the fits file says why under "unmodelled".
    max_unnamed_share: float = 0.2
    # A variant chooser's tree may split the convolution's products (N*P*Q, C*R*S, the im2col
    # buffer: seer.data.configs.conv_products) as well as its sizes, where cross-validation says so.
    tree_products: bool = True
    # A variant's model counts its blocks' loops over outputs (features.output_loops) where that
    # cross-validates this fraction better than the best model without them, and only on a
    # variant of folds x min_rows training rows at least.
    loops_gain: float = 0.05
    # Which convolution families get a gate (seer.models.gate): "workspace", those whose timed
    # calls ask for no workspace exactly when they run cuDNN's direct kernel; "captured", those
    # and every family the census captured calls of (cudnn_bench.capture); "loops", also the FFT's
    # gate of its loops over the bins from the captures' launches (seer.models.bin_gate), which
    # lowered the H200's data-gradient FFT's Test-set-I RMSPE and raised the H100's (34.3% ->
    # 30.6%, 30.4% -> 35.2%: docs/results.md, "A forest for the direct-kernel gate").
    gates: str = "captured"
    # A variant's time is its law's times the smoothed residuals of its training rows nearest the
    # configuration (seer.models.local), each op's smoothing chosen by leave-one-out; False: the
    # law alone (fits files before 2026-12-02).
    local: bool = True

    def __post_init__(self) -> None:
        if self.gates not in GATES:
            raise SeerError(f"FitOptions.gates is one of {', '.join(GATES)}, not {self.gates!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> FitOptions:
        """Options of a fits file; keys this version does not know are ignored, missing ones default."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in known})


DEFAULT = FitOptions()
