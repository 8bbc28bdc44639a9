"""`Fits`: what `seer.load` returns for any GPU, its own fits or fits transferred to it.

One facade over the GPU's predictors (seer.predict.protocol), one per op: configs are checked
once here (seer.predict.inputs), each op's rows go to its predictor, and ranking and the best
algorithm are written once, over `algorithm_times`, for every kind of predictor.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import configs as _configs
from seer.errors import SeerError, SeerWarning
from seer.hardware.dtypes import DEFAULT_DTYPE
from seer.hardware.gpus import GPUSpec
from seer.models import DEFAULT, FitOptions, VariantFit
from seer.models.chooser import Chooser
from seer.models.drift import Drift
from seer.predict.inputs import Configs, algorithm_list, frame
from seer.predict.physics import floor_ms, floors_by_algorithm
from seer.predict.protocol import AlgorithmTimes, Predictor
from seer.predict.variants import VariantPredictor

UNTRUSTED = 1e12  # ms added to an algorithm outside its fitted range where ranking may not extrapolate


def by_op(predictors: Iterable[Predictor]) -> dict[str, Predictor]:
    """The op -> predictor table: each predictor registered for the ops it covers; an op claimed
    twice is a mistake, refused (as PyTorch's flop counter refuses a second formula)."""
    table: dict[str, Predictor] = {}
    for p in predictors:
        for op in p.ops:
            if op in table:
                raise ValueError(f"op {op!r} has two predictors: {table[op]!r} and {p!r}")
            table[op] = p
    return table


@dataclass(repr=False)
class Fits:
    """Predictions of one GPU: `source` is 'fitted' (its own fits file, `path`) or 'transferred'
    (moved from the GPUs of `transferred_from`, seer.predict.transfer)."""

    gpu: GPUSpec
    predictors: dict[str, Predictor]  # op -> the predictor that times it (by_op)
    source: str = "fitted"
    path: Path | None = None
    meta: dict = field(default_factory=dict)  # dataset, date, seer_version, split (fitted)
    transferred_from: list[str] = field(default_factory=list)

    # ------------------------------------------------------------ what the fits cover
    @property
    def ops(self) -> list[str]:
        """Every op these fits time (memory-bound and embedding ops by closed forms where not fitted)."""
        return list(self.predictors)

    @property
    def algorithms(self) -> list[str]:
        """Convolution algorithms with models, in cuDNN's enum order."""
        return self.algorithms_of("conv_fwd")

    def algorithms_of(self, op: str) -> list[str]:
        """The algorithms with models of `op` (conv_fwd: cuDNN's; gemm: cuBLASLt's lt:<id>)."""
        p = self.predictors.get(op)
        return p.algorithms(op) if p is not None else []

    @property
    def variant_predictor(self) -> VariantPredictor | None:
        """The per-variant models of a fitted GPU (None for a transferred one)."""
        found = [p for p in self.predictors.values() if isinstance(p, VariantPredictor)]
        return found[0] if found else None

    @property
    def variants(self) -> dict[str, VariantFit]:
        vp = self.variant_predictor
        return vp.variants if vp is not None else {}

    @property
    def choosers(self) -> dict[str, Chooser]:
        vp = self.variant_predictor
        return vp.choosers if vp is not None else {}

    @property
    def drift(self) -> dict[str, Drift]:
        vp = self.variant_predictor
        return vp.drift if vp is not None else {}

    @property
    def options(self) -> FitOptions:
        vp = self.variant_predictor
        return vp.options if vp is not None else DEFAULT

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path is not None else ""
        if self.transferred_from:
            where = f" from {', '.join(self.transferred_from)}"
        return f"Fits({self.gpu.name}, {self.source}{where}: {', '.join(self.ops)})"

    def summary(self) -> str:
        """What each op is timed with, on a line of its own."""
        lines = [repr(self)]
        if self.meta.get("dataset"):
            ds = self.meta["dataset"]
            lines.append(
                f"  data: {ds.get('path', '?')} ({ds.get('rows', '?')} rows), fitted {self.meta.get('date', '?')}"
            )
        for op, p in self.predictors.items():
            algos = p.algorithms(op)
            what = repr(p)
            if algos:
                what += f"; algorithms {', '.join(algos)}"
            lines.append(f"  {op}: {what}")
        return "\n".join(lines)

    # ------------------------------------------------------------ prediction
    def _predictor(self, op: str) -> Predictor:
        p = self.predictors.get(op)
        if p is None:
            name = f" ({self.path.name})" if self.path is not None else ""
            raise SeerError(f"the fits for {self.gpu.name}{name} cover ops {', '.join(self.ops)}; not {op!r}")
        return p

    def _checked(self, df: pd.DataFrame, op: str) -> Predictor:
        """The predictor of `op`, after the checks every predictor's input goes through (own,
        transferred or closed form alike): the configuration's rules, and a dtype its models
        learnt."""
        p = self._predictor(op)
        _configs.check_configs(df, op)
        covered = p.dtypes(op)
        if covered is not None and "dtype" in df:
            asked = df["dtype"].replace("", DEFAULT_DTYPE)
            other = asked[~asked.isin(covered)]
            if len(other):
                raise SeerError(
                    f"config row {other.index[0]}: the {op} models of {self.gpu.name} learnt "
                    f"{', '.join(covered)} only, not {other.iat[0]} (a kernel's time in one dtype is "
                    f"not its time in another); ask for {covered[0]} or fit {other.iat[0]} data"
                )
        return p

    def _times(
        self, df: pd.DataFrame, keys: np.ndarray | None, in_range: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(time in ms, within the fitted range, the hardware's least time) of each row of a
        checked frame; a time below the least is raised to it with a SeerWarning."""
        out = np.full(len(df), np.nan)
        inside = np.ones(len(df), dtype=bool)
        least = np.zeros(len(df))
        for op, idx in df.groupby("op", sort=False).indices.items():
            sub = df.iloc[idx]
            p = self._checked(sub, op)
            sub = folded(sub, op)
            if keys is not None:
                if not isinstance(p, VariantPredictor):
                    raise SeerError(
                        f"variant keys name a fitted GPU's kernels; the {op} predictor of {self.gpu.name} has none"
                    )
                out[idx] = p.predict_variant(sub, keys[idx])
            elif in_range:
                out[idx], inside[idx] = p.predict_in_range(sub)
            else:
                out[idx] = p.predict(sub)
            least[idx] = floor_ms(sub, op, self.gpu)
        low = np.flatnonzero(out < least)
        if len(low):
            i = low[0]
            warnings.warn(
                SeerWarning(
                    f"{len(low)} of {len(df)} predictions were faster than {self.gpu.name} allows "
                    f"({self.gpu.fp32_tflops:g} FP32 TFLOP/s, {self.gpu.dram_gbs:g} GB/s beyond the L2) and "
                    f"were raised to that bound (row {i}: {out[i]:.4g} -> {least[i]:.4g} ms): a model "
                    "outside its data"
                ),
                stacklevel=3,
            )
            out[low] = least[low]
        return out, inside, least

    def predict(
        self, configs: Configs = None, *, variant: str | Iterable | None = None, **config
    ) -> np.ndarray | float:
        """Time in ms of each config: one config as keywords, or a DataFrame with an `op` column
        (conv_fwd rows also need `algo`). `variant` forces the variant key(s) instead of the
        learned choice (what Test-set-I per variant measures; fitted GPUs only).

        A time below what the GPU's datasheet allows is raised to that bound, with a
        SeerWarning; one config outside the fitted range warns too (predict_frame flags each
        row of a frame)."""
        df, single = frame(configs, config)
        out, inside, _ = self._times(df, self._variant_keys(variant, len(df)), in_range=single)
        if single and not inside[0]:
            warnings.warn(
                SeerWarning(
                    f"this {df['op'].iat[0]} config lies outside the fitted range of {self.gpu.name}'s models "
                    "(no configuration they learnt from is within the trust distance): an extrapolation"
                ),
                stacklevel=2,
            )
        return float(out[0]) if single else out

    def predict_frame(self, configs: Configs = None, **config) -> pd.DataFrame:
        """predict, with what qualifies each answer: one row per config (the input's index)
        with time_ms, extrapolated (outside the fitted range of a per-variant model), floor_ms
        (the least time the datasheet allows) and raised (the model predicted less: time_ms is
        the floor)."""
        df, _ = frame(configs, config)
        out, inside, least = self._times(df, None, in_range=True)
        index = configs.index if isinstance(configs, pd.DataFrame) else pd.RangeIndex(len(df))
        return pd.DataFrame(
            {"time_ms": out, "extrapolated": ~inside, "floor_ms": least, "raised": (out == least) & (least > 0)},
            index=index,
        )

    @staticmethod
    def _variant_keys(variant: str | Iterable | None, n: int) -> np.ndarray | None:
        if variant is None:
            return None
        keys = np.asarray([variant] * n if isinstance(variant, str) else list(variant), dtype=object)
        if len(keys) != n:
            raise SeerError("variant must be one key or one per config row")
        return keys

    def choose(self, df: pd.DataFrame, op: str) -> np.ndarray:
        """The variant key the library would launch for each row (fitted GPUs)."""
        p = self._predictor(op)
        if not isinstance(p, VariantPredictor):
            raise SeerError(f"the {op} predictor of {self.gpu.name} chooses no variants")
        return p.choose(df, op)

    def algorithm_times(
        self, configs: pd.DataFrame, op: str, algorithms: Sequence[str] | None = None
    ) -> AlgorithmTimes:
        """Every fitted algorithm of `op` (conv_fwd or gemm) for each config: predicted times,
        whether each config lies within trust distance of the algorithm's data, the variant."""
        df, _ = frame(configs.assign(op=op), {})
        p = self._checked(df, op)
        df = folded(df, op)
        return _floored(p.algorithm_times(df, op, algorithms), df, op, self.gpu)

    def _ranked(
        self, configs: Configs, config: Mapping, algorithms, extrapolate: bool | None
    ) -> tuple[AlgorithmTimes, np.ndarray, bool]:
        """(times, rank, single): rank 0 is each config's pick. Algorithms outside their fitted
        range rank after the others where the predictor may not extrapolate (fits of autotuner
        picks only) unless `extrapolate`; an algorithm no model answers ranks last."""
        df, single = frame(configs, {**config, "op": "conv_fwd"})
        if (df["op"] != "conv_fwd").any():
            raise SeerError("rank_algorithms ranks convolution algorithms: every row needs op conv_fwd")
        p = self._checked(df, "conv_fwd")
        at = _floored(p.algorithm_times(df, "conv_fwd", algorithm_list(algorithms)), df, "conv_fwd", self.gpu)
        if extrapolate is None:
            extrapolate = p.extrapolates
        score = at.times if extrapolate else np.where(at.inside, at.times, at.times + UNTRUSTED)
        score = np.where(np.isnan(score), np.inf, score)
        order = np.argsort(score, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(len(at.algos))[None, :].repeat(len(df), 0), axis=1)
        return at, rank, single

    def rank_algorithms(
        self,
        configs: Configs = None,
        *,
        algorithms: Iterable[str] | None = None,
        extrapolate: bool | None = None,
        **config,
    ) -> pd.DataFrame:
        """Predicted time of every convolution algorithm with models (or of `algorithms`) for
        every config, ranked.

        Returns one row per (config, algorithm): config (row position), algo, variant (the kernel
        it would launch), time_ms, fitted_range (whether the config lies within the fits'
        trust_distance of a configuration the algorithm was fitted on), rank (0 = the pick).
        With fits of autotuner picks only, algorithms outside their fitted range rank after the
        others unless `extrapolate`."""
        at, rank, _ = self._ranked(configs, config, algorithms, extrapolate)
        return ranking_frame(at, rank)

    def best_algorithm(
        self,
        configs: Configs = None,
        *,
        algorithms: Iterable[str] | None = None,
        extrapolate: bool | None = None,
        **config,
    ) -> str | np.ndarray:
        """The algorithm predicted fastest: a name for one config, an array for a DataFrame."""
        at, rank, single = self._ranked(configs, config, algorithms, extrapolate)
        best = np.asarray(at.algos, dtype=object)[np.argmin(rank, axis=1)]  # rank 0 of each config
        return str(best[0]) if single else best


def folded(df: pd.DataFrame, op: str) -> pd.DataFrame:
    """A linear layer's leading batch folded into its rows: PyTorch runs a linear on a
    [batch, m, k] input as one GEMM of batch * m rows (addmm on the flattened view), which is
    how the models learnt it (every linear row of the data has batch 1)."""
    if op != "linear" or "batch" not in df or (df["batch"] == 1).all():
        return df
    return df.assign(m=df["m"] * df["batch"], batch=1)


def _floored(at: AlgorithmTimes, df: pd.DataFrame, op: str, gpu: GPUSpec) -> AlgorithmTimes:
    """Each algorithm's times raised to the least the hardware allows it (seer.predict.physics):
    ranking never prefers a model's physically impossible answer."""
    if not at.algos:
        return at
    return dataclasses.replace(at, times=np.maximum(at.times, floors_by_algorithm(df, op, gpu, at.algos)))


def ranking_frame(at: AlgorithmTimes, rank: np.ndarray) -> pd.DataFrame:
    """rank_algorithms' table: one row per (config, algorithm)."""
    n, k = at.times.shape
    return pd.DataFrame(
        {
            "config": np.repeat(np.arange(n), k),
            "algo": np.tile(np.asarray(at.algos, dtype=object), n),
            "variant": at.variants.ravel(),
            "time_ms": at.times.ravel(),
            "fitted_range": at.inside.ravel(),
            "rank": rank.ravel(),
        }
    )
