"""What every predictor of seer does, so that a GPU's fits, fitted or transferred, answer alike.

A `Predictor` times the configs of the ops it covers: the per-variant models (convolutions,
GEMMs), the memory-bound fits, the embedding model, and a transfer's median over other GPUs'
predictors all implement it, and the `Fits` facade (seer.predict.fits) holds one per op.
Frames reaching a predictor were checked once at the facade (seer.predict.inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from seer.hardware.gpus import GPUSpec


@dataclass(frozen=True)
class AlgorithmTimes:
    """Every algorithm's predicted time for each config: configs x algorithms arrays."""

    algos: list[str]
    times: np.ndarray  # ms; NaN where no model of the algorithm answers
    inside: np.ndarray  # bool: the config lies within trust distance of the algorithm's data
    variants: np.ndarray  # object: the variant key each algorithm would launch ("" unknown)
    # the time ranking weighs, where it is not `times`: on configurations whose variant the
    # library may choose by something the sizes do not show, the slowest one proposed
    # (seer.predict.variants.may_loop); None: `times` everywhere
    cautious: np.ndarray | None = None
    # the error of the model behind each time (a fraction), where the predictor knows it: the
    # ranking weighs it; None: each variant's cross-validated RMSPE (Fits.cv_rmspe)
    cv: np.ndarray | None = None

    @property
    def ranked(self) -> np.ndarray:
        """The times ranking weighs (`cautious` where given, else `times`)."""
        return self.times if self.cautious is None else self.cautious

    def take(self, algos: Sequence[str]) -> AlgorithmTimes:
        """The columns of `algos`, in that order."""
        cols = [self.algos.index(a) for a in algos]
        return AlgorithmTimes(
            list(algos),
            self.times[:, cols],
            self.inside[:, cols],
            self.variants[:, cols],
            None if self.cautious is None else self.cautious[:, cols],
            None if self.cv is None else self.cv[:, cols],
        )


@runtime_checkable
class Predictor(Protocol):
    """Times of configs of the ops it covers on one GPU."""

    gpu: GPUSpec

    @property
    def ops(self) -> tuple[str, ...]:
        """The ops it times."""
        ...

    def algorithms(self, op: str) -> list[str]:
        """The algorithms it has models of for `op` (empty for ops without algorithms)."""
        ...

    def dtypes(self, op: str) -> tuple[str, ...] | None:
        """The dtypes its models of `op` learnt (a kernel's time in float16 is not its float32
        time); None where any dtype is timed (closed forms scale with the element size)."""
        ...

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """Time in ms of each row of a checked frame (one op, rows with their algorithm)."""
        ...

    def predict_in_range(self, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(time in ms, whether the config lies within the fitted range) of each row: a
        per-variant model is in range within trust distance of a configuration it learnt from;
        a closed form (memory-bound, embedding) always is."""
        ...

    def algorithm_times(self, df: pd.DataFrame, op: str, algos: Sequence[str] | None = None) -> AlgorithmTimes:
        """Every algorithm of `op` (or those of `algos`) for each config."""
        ...

    @property
    def extrapolates(self) -> bool:
        """Whether ranking may trust an algorithm's model outside its data (False where each
        configuration was timed only with the algorithm an autotuner picked)."""
        ...
