"""Analytical predictors, next to the fitted per-variant models: embedding-bag lookups (the
DLRM performance model's forward with its L2 hit-rate model, and backward with SGD),
memory-bound kernels (a roofline with fitted effective bandwidth and launch floor), and the
roofline / efficiency of measured kernels. Times are in milliseconds unless `unit` says
otherwise, and ratios (shares of a peak, efficiency, hit rate) are fractions (0.5, not 50);
every predictor takes one config by keyword or a DataFrame of configs.

The fit of the memory-bound parameters is a model: seer.models.memory (MemoryBoundModel).
"""

from seer.analytical.embedding import embedding_backward_sgd, embedding_forward, forward_traffic, hit_rate
from seer.analytical.memory import (
    ELEMENTWISE,
    fitted_table,
    memory_bound_detail,
    predict_memory_bound,
    work,
)
from seer.analytical.roofline import kernel_work, roofline, roofline_records
from seer.hardware.peaks import DLRM_MEASURED, SEED_V100, Peaks, peaks_for

__all__ = [
    "DLRM_MEASURED",
    "ELEMENTWISE",
    "SEED_V100",
    "Peaks",
    "embedding_backward_sgd",
    "embedding_forward",
    "fitted_table",
    "forward_traffic",
    "hit_rate",
    "kernel_work",
    "memory_bound_detail",
    "peaks_for",
    "predict_memory_bound",
    "roofline",
    "roofline_records",
    "work",
]
