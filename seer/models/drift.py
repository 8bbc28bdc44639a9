"""Measurement drift: a slowdown that grows over a collection run, not with the config.

NeuSight's convolution files list configurations in random order, yet the times of the same
model's predictions drift by up to +-30% from the first row to the last on every GPU (the
GPU or the framework slowed down while the data was taken). Where a file's configurations are
independent of the measurement order, that drift can be told apart from the kernel's own
behaviour: it is fitted on training residuals as a smooth function of the row position and
divided out of the training targets, so models learn the typical state of the GPU. Where
configurations are ordered (NeuSight's bmm and linear files are sorted by size) drift and
size cannot be told apart, and nothing is done.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seer.data import configs

KNOTS = np.linspace(0.0, 1.0, 11)
MAX_ORDER_CORRELATION = 0.1  # |Spearman| between position and every config size
MIN_SPAN = 0.03  # a drift smaller than 3% end to end is left alone
MAX_P = 1e-3


@dataclass
class Drift:
    source: str
    values: np.ndarray  # log slowdown at KNOTS, median over rows = 0
    p_value: float

    @property
    def span(self) -> float:
        return float(np.exp(self.values.max() - self.values.min()) - 1)

    def factor(self, position: np.ndarray) -> np.ndarray:
        """Slowdown of each row relative to the typical state (divide measured times by it)."""
        return np.exp(np.interp(position, KNOTS, self.values))

    def to_dict(self) -> dict:
        return {
            "knots": KNOTS.tolist(),
            "log_slowdown": [round(float(v), 5) for v in self.values],
            "span": round(self.span, 4),
            "p_value": float(f"{self.p_value:.3g}"),
        }

    @classmethod
    def from_dict(cls, source: str, d: dict) -> Drift:
        return cls(source, np.asarray(d["log_slowdown"], float), float(d["p_value"]))


def position(df: pd.DataFrame) -> np.ndarray:
    """Where each row sits in its source file's measurement order, 0..1."""
    cid = df["call_id"].to_numpy(dtype="float64", na_value=np.nan)
    top = df.groupby("source")["call_id"].transform("max").to_numpy(dtype="float64", na_value=np.nan)
    return np.where(top > 0, cid / np.where(top > 0, top, 1), 0.0)


def order_is_random(df: pd.DataFrame) -> bool:
    """True where no configuration size of a file correlates with its measurement order."""
    if len(df) < 200 or df["call_id"].isna().any():
        return False
    op = str(df["op"].iloc[0])
    try:
        pts = configs.log_config(df, op)
    except Exception:
        return False
    from scipy.stats import spearmanr  # fitting only, as statsmodels below

    pos = df["call_id"].to_numpy(dtype="float64", na_value=np.nan)
    for j in range(pts.shape[1]):
        if np.ptp(pts[:, j]) == 0:
            continue
        rho = spearmanr(pos, pts[:, j]).statistic
        if abs(rho) > MAX_ORDER_CORRELATION:
            return False
    return True


def _hats(pos: np.ndarray) -> np.ndarray:
    """Piecewise-linear basis: column j is 1 at knot j, 0 at its neighbours."""
    return np.column_stack([np.interp(pos, KNOTS, np.eye(len(KNOTS))[j]) for j in range(len(KNOTS))])


def fit_drift(source: str, pos: np.ndarray, log_ratio: np.ndarray) -> Drift | None:
    """Fit log(measured / predicted) as a smooth function of position (OLS, statsmodels);
    None unless it beats a constant clearly (F test) and spans more than MIN_SPAN."""
    import statsmodels.api as sm  # fitting only: predicting never loads statsmodels (1 s)

    X = _hats(pos)
    full = sm.OLS(log_ratio, X).fit()
    flat = sm.OLS(log_ratio, np.ones((len(pos), 1))).fit()
    _, p, _ = full.compare_f_test(flat)
    values = full.params - np.median(X @ full.params)
    d = Drift(source, values, float(p))
    if p > MAX_P or d.span < MIN_SPAN:
        return None
    return d
