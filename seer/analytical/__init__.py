"""Analytical predictors, next to the fitted per-variant models: embedding-bag lookups (the
DLRM performance model's forward with its L2 hit-rate model, and backward with SGD),
memory-bound kernels (a roofline with fitted effective bandwidth and launch floor), and the
roofline / efficiency of measured kernels. Times are in milliseconds unless `unit` says
otherwise; every predictor takes one config by keyword or a DataFrame of configs.
"""

from .embedding import embedding_backward_sgd, embedding_forward, forward_traffic, hit_rate
from .hardware import DLRM_MEASURED, SEED_V100, Peaks, peaks_for
from .memory import ELEMENTWISE, fit_memory_bound, fitted_table, memory_bound_detail, predict_memory_bound, work
from .roofline import kernel_work, roofline, roofline_records
from .validate import holdout, missed_targets, report, validation_table

__all__ = [
    "DLRM_MEASURED",
    "ELEMENTWISE",
    "SEED_V100",
    "Peaks",
    "embedding_backward_sgd",
    "embedding_forward",
    "fit_memory_bound",
    "fitted_table",
    "forward_traffic",
    "hit_rate",
    "holdout",
    "kernel_work",
    "memory_bound_detail",
    "missed_targets",
    "peaks_for",
    "predict_memory_bound",
    "report",
    "roofline",
    "roofline_records",
    "validation_table",
    "work",
]
