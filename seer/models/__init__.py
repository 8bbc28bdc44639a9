"""SEER-style per-variant time models, fitted with statsmodels (scipy's NNLS for the bounds).

SEER splits kernels into compute-bound, memory-bound and under-utilized types by their measured
FP32-pipe and DRAM utilizations and fits one linear model per type by least squares on relative
error (WLS with weights 1/t^2). Where utilizations were measured (ncu counters, SEER workbooks)
that is one of the candidate models here (feature set "types"). Where they were not (NeuSight),
a compute bound and a memory bound are fitted on every variant and a kernel's time is the
larger of the two: the rows a bound explains are re-assigned until stable (segmented
regression), so the type needs no hardware counters and follows from the configuration.

The modules, in the order a fit runs:
  keys       VariantKey (op:algo:variant) and FeatureSet ("waves+helpers+clock") as types
  options    FitOptions: every setting of the fit, recorded in the fits file
  features   the features of a variant from its configs (waves, work per block, bytes)
  solver     non-negative WLS on relative error (the one solver)
  law        Regime and TimeLaw: the fitted coefficients and the one prediction formula
  bounds     segmented compute/memory bounds and the sustained-clock law
  typed      SEER's typed regimes where utilizations were measured
  staircase  B_max from the wave steps of the training times
  crossval   the feature set, by deterministic k-fold cross-validation
  variant    VariantModel (what to fit) -> VariantFit (the results: predict, to_dict)
"""

from seer.models.bounds import Segmented, fit_bounds, fit_law
from seer.models.features import HELPERS, Design, Inputs, design, helper_names, inputs
from seer.models.keys import FeatureSet, VariantKey, family_column, family_key, key_column
from seer.models.law import TYPES, Regime, TimeLaw, type_of
from seer.models.options import DEFAULT, FitOptions
from seer.models.solver import WLSResult, nonnegative_wls, rmspe
from seer.models.staircase import Staircase, bps_candidates, near_best, staircase
from seer.models.typed import fit_typed, seer_types
from seer.models.variant import VariantFit, VariantModel

__all__ = [
    "DEFAULT",
    "HELPERS",
    "TYPES",
    "Design",
    "FeatureSet",
    "FitOptions",
    "Inputs",
    "Regime",
    "Segmented",
    "Staircase",
    "TimeLaw",
    "VariantFit",
    "VariantKey",
    "VariantModel",
    "WLSResult",
    "bps_candidates",
    "design",
    "family_column",
    "family_key",
    "fit_bounds",
    "fit_law",
    "fit_typed",
    "helper_names",
    "inputs",
    "key_column",
    "near_best",
    "nonnegative_wls",
    "rmspe",
    "seer_types",
    "staircase",
    "type_of",
]
