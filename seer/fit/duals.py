"""Fit each gradient transform algorithm's forward dual (seer.models.dual) on its training calls.

The one place the fit stage asks the predict stage: a dual is chosen by what the models just
fitted predict of its training calls, through the same VariantPredictor that will time it, so the
scale is relative to the forward times prediction will give (tests/seer/test_layout.py allows
this module alone)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from seer.data.configs import ConfigBatch
from seer.hardware.gpus import GPUSpec
from seer.models import FitOptions, VariantFit, family_key
from seer.models.chooser import Chooser
from seer.models.dual import (
    DUAL_ALGOS,
    FORWARD,
    GRADIENT_OPS,
    POSITIONS_OP,
    ForwardDual,
    fit_dual,
    positions,
    unstrided,
)
from seer.predict.variants import VariantPredictor


def fitted_duals(
    train: pd.DataFrame,
    target: np.ndarray,
    spec: GPUSpec,
    models: dict[str, VariantFit],
    choosers: dict[str, dict],
    options: FitOptions,
    timing: str | None,
) -> dict[str, ForwardDual]:
    """fit_duals with the predictor of a GPU's fitted models and chooser documents."""
    vp = VariantPredictor(spec, models, {k: Chooser.from_dict(v) for k, v in choosers.items()}, {}, timing, options)
    return fit_duals(train, target, vp)


def fit_duals(train: pd.DataFrame, target: np.ndarray, vp: VariantPredictor) -> dict[str, ForwardDual]:
    """The dual of every gradient (op, algorithm) of DUAL_ALGOS that both the forward and the
    gradient have models of, from its unstrided training calls, keyed as the gradient's
    chooser; `train` holds prepared training rows (one per call), `target` their times, `vp`
    the GPU's fitted models without duals."""
    out = {}
    for op in GRADIENT_OPS:
        for algo in DUAL_ALGOS:
            key = family_key(op, algo)
            if key not in vp.choosers or family_key(FORWARD, algo) not in vp.choosers:
                continue
            g = train[(train["op"] == op) & (train["algo"].astype(str) == algo)]
            g = g[unstrided(ConfigBatch.of(g, op))] if len(g) else g
            if g.empty:
                continue
            own = vp.algorithm_times(g, op, [algo])
            forward = vp.algorithm_times(g.assign(op=FORWARD), FORWARD, [algo]).times[:, 0]
            dual = fit_dual(
                op,
                algo,
                target[g.index],
                forward,
                own.times[:, 0],
                held_out(vp, own.variants[:, 0]),
                positions(ConfigBatch.of(g, op)) if op == POSITIONS_OP else None,
            )
            if dual is not None:
                out[key] = dual
    return out


def held_out(vp: VariantPredictor, keys: np.ndarray) -> np.ndarray:
    """Each call's own-model error on rows it did not learn from, over its error on the rows it
    did: the cross-validated over training RMSPE of the variant model that timed it (1 where no
    model did). The own models were fitted to the very calls a dual is judged on: in-sample, the
    H100's backward-data FFT models' typical error was 23.3% against the dual's 22.8-23.8%, and on
    Test-set-I's held-out calls they erred 43.1% RMSPE against the dual's 24.8%."""
    ratio = {k: v.cv_rmspe / v.train_rmspe for k, v in vp.variants.items() if v.train_rmspe > 0}
    return np.array([ratio.get(str(k), 1.0) for k in keys], dtype=float)
