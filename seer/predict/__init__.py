"""Prediction from the configuration alone, for any GPU: its own fits or fits transferred to it.

    load(name) -> Fits          a GPU's own fits file (seer.predict.load)
    transfer(target) -> Fits    fits moved from other GPUs (seer.predict.transfer)
    Fits                        the one facade: predict, rank_algorithms, best_algorithm,
                                algorithm_times, summary (seer.predict.fits)
    Predictor                   what each op's predictor implements (seer.predict.protocol):
                                per-variant models, memory-bound and embedding closed forms,
                                a transfer's median over source GPUs

`python -m seer.predict MODEL_OR_TRACE` times a whole model (seer.workload).
"""

from __future__ import annotations

from seer.predict.fits import Fits, ranking_frame
from seer.predict.load import available, from_doc, load
from seer.predict.protocol import AlgorithmTimes, Predictor
from seer.predict.transfer import load_or_transfer, transfer

__all__ = [
    "AlgorithmTimes",
    "Fits",
    "Predictor",
    "available",
    "from_doc",
    "load",
    "load_or_transfer",
    "ranking_frame",
    "transfer",
]
