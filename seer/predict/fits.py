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
from seer.data.records import CONV_OPS, GEMM_OPS, VARIANT_OPS
from seer.errors import SeerError, SeerWarning
from seer.hardware.dtypes import DEFAULT_DTYPE
from seer.hardware.gpus import GPUSpec
from seer.models import DEFAULT, FitOptions, VariantFit
from seer.models.call_time import blend
from seer.models.chooser import Chooser
from seer.models.drift import Drift
from seer.models.launched import FASTEST, LAUNCHED
from seer.predict import gemms
from seer.predict.inputs import Configs, algorithm_list, frame
from seer.predict.physics import floor_ms, floors_by_algorithm
from seer.predict.protocol import AlgorithmTimes, Predictor
from seer.predict.variants import VariantPredictor

UNTRUSTED = 1e12  # ms added to an algorithm outside its fitted range where ranking may not extrapolate
# Ranking weighs each predicted time by one cross-validated RMSPE of the variant that answers
# it: t x (1 + RISK x cv). A variant predicted 40% off on its own held-out rows (the FFT
# family's complex GEMMs and transforms) must be predicted that much faster than a well-modelled
# one (the implicit GEMMs, ~10%) to be picked. Without it the FFT algorithms (fastest on 6 of
# the H100's 200 Test-set-II layers; never picking them costs 0.26% mean slowdown) were picked
# where their models extrapolated 4-20x too fast (docs/model.md#ranking).
RISK = 1.0


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
        """Convolution algorithms with models, in cuDNN's enum order (GEMMs: algorithms_of)."""
        return self.algorithms_of("conv_fwd")

    def algorithms_of(self, op: str) -> list[str]:
        """The algorithms with models of `op` (conv_fwd: cuDNN's; a GEMM: cuBLASLt's lt:<id>,
        where the data timed them, of whichever GEMM op of the fits times it)."""
        if op in GEMM_OPS:
            op = gemms.timed_as(op, 2, self.predictors) or op  # a batched GEMM: no linear stands for it
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

    def _routed(self, df: pd.DataFrame) -> pd.DataFrame:
        """Configs checked against their op's rules (fitted, transferred or closed form alike),
        and each GEMM row sent to the GEMM op of these fits that times its product."""
        for op, idx in df.groupby("op", sort=False).indices.items():
            _configs.check_configs(df.iloc[idx] if len(idx) < len(df) else df, op)
        return gemms.route(df, self.predictors, self.gpu.name)

    def _checked(self, df: pd.DataFrame, op: str) -> Predictor:
        """The predictor of `op` for rows of a routed frame, refusing a dtype its models did
        not learn."""
        p = self._predictor(op)
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

    def predict(self, configs: Configs = None, *, variant: str | Iterable | None = None, **config) -> pd.Series | float:
        """Time in ms of each config: one config as keywords (a float), or a DataFrame with an
        `op` column (a Series `time_ms` on the frame's index). conv_fwd rows also need `algo`;
        a GEMM (op gemm, bmm or linear: batch, m, n, k) without one is the kernel the library's
        heuristic launches, on any GPU (gemms: each GPU's fits time the product under the name
        their data had). `variant` forces the variant key(s) instead of the learned choice (what
        Test-set-I per variant measures; fitted GPUs only).

        A time below what the GPU's datasheet allows is raised to that bound, with a
        SeerWarning; one config outside the fitted range warns too (predict_frame flags each
        row of a frame)."""
        df, single = frame(configs, config)
        df = self._routed(df)
        out, inside, _ = self._times(df, self._variant_keys(variant, len(df)), in_range=single)
        if single and not inside[0]:
            warnings.warn(
                SeerWarning(
                    f"this {df['op'].iat[0]} config lies outside the fitted range of {self.gpu.name}'s models "
                    "(no configuration they learnt from is within the trust distance): an extrapolation"
                ),
                stacklevel=2,
            )
        return float(out[0]) if single else pd.Series(out, index=_index(configs, len(df)), name="time_ms")

    def predict_frame(self, configs: Configs = None, *, autotune: bool = False, **config) -> pd.DataFrame:
        """predict, with what qualifies each answer: one row per config (the input's index)
        with time_ms, extrapolated (outside the fitted range of a per-variant model), floor_ms
        (the least time the datasheet allows) and raised (the model predicted less: time_ms is
        the floor), timed_as (the op of the fits that timed it: a GEMM may be asked as gemm, bmm
        or linear), and, for a GEMM or convolution that names no algorithm, what it assumed:
        `assumed` is "launched" (the kernel profiler traces saw the framework launch for the
        nearest traced shape, seer.models.launched: the default where the fits learnt one within
        the trust distance) or "fastest" (the fastest fitted algorithm, what an autotuned run gets
        with torch.backends.cudnn.benchmark = True: always with `autotune`; a convolution's algorithm
        may then be left out), "given" where the row names its algorithm, "" for other ops;
        `kernel` the variant key the time is of ("" where no variant model timed it)."""
        df, _ = frame(configs, config)
        df = self._routed(df).reset_index(drop=True)
        n = len(df)
        ops = df["op"].to_numpy(dtype=object)
        algo = df["algo"].fillna("").astype(str).to_numpy(dtype=object) if "algo" in df else np.full(n, "", object)
        variant_op = np.isin(ops, VARIANT_OPS)
        free = variant_op & (algo == "")
        keys = np.full(n, "", dtype=object)
        vp = self.variant_predictor
        if not autotune and vp is not None and free.any():
            for op, idx in pd.Series(ops[free]).groupby(ops[free]).indices.items():
                rows = np.flatnonzero(free)[idx]
                keys[rows] = vp.launched_keys(df.iloc[rows], str(op))
        launched = keys != ""
        if (free & ~launched & np.isin(ops, CONV_OPS)).any():
            df = df.assign(algo=algo)
        for op in CONV_OPS:
            conv = free & ~launched & (ops == op)
            if conv.any():  # the fastest fitted algorithm: what cuDNN's autotuner picks
                df.loc[conv, "algo"] = np.asarray(self.best_algorithm(df[conv]), dtype=object)
        out, inside, least = np.full(n, np.nan), np.ones(n, dtype=bool), np.zeros(n)
        for rows, k in ((np.flatnonzero(launched), keys), (np.flatnonzero(~launched), None)):
            if len(rows):
                sub = df.iloc[rows]
                out[rows], inside[rows], least[rows] = self._times(sub, None if k is None else k[rows], in_range=True)
        rest = np.flatnonzero(variant_op & ~launched)
        if vp is not None and len(rest):
            for op, idx in pd.Series(ops[rest]).groupby(ops[rest]).indices.items():
                rows = rest[idx]
                if op in vp.ops:
                    try:
                        keys[rows] = vp.choose(df.iloc[rows], str(op))
                    except SeerError:
                        pass
        assumed = np.where(launched, LAUNCHED, np.where(free, FASTEST, np.where(variant_op, "given", "")))
        return pd.DataFrame(
            {
                "time_ms": out,
                "extrapolated": ~inside,
                "floor_ms": least,
                "raised": (out == least) & (least > 0),
                "timed_as": df["op"].to_numpy(dtype=object),
                "assumed": assumed.astype(object),
                "kernel": keys,
            },
            index=_index(configs, n),
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
        df = self._routed(frame(configs.assign(op=op), {})[0])
        op = str(df["op"].iat[0])
        p = self._checked(df, op)
        return _floored(p.algorithm_times(df, op, algorithms), df, op, self.gpu)

    def _ranked(
        self, configs: Configs, config: Mapping, algorithms, extrapolate: bool | None
    ) -> tuple[AlgorithmTimes, np.ndarray, bool, np.ndarray]:
        """(times, rank, single, cv): rank 1 is each config's pick, cv each time's model error
        (`cv_rmspe`), which weighs it in the ranking. Algorithms outside their fitted
        range rank after the others where the predictor may not extrapolate (fits of autotuner
        picks only) unless `extrapolate`; an algorithm no model answers ranks last."""
        df, single = frame(configs, {"op": "conv_fwd", **config})
        asked = [str(o) for o in pd.unique(df["op"])]
        if len(asked) > 1 or asked[0] not in VARIANT_OPS:
            raise SeerError(
                "rank_algorithms ranks the algorithms of one op at a time, a convolution's direction "
                f"({', '.join(CONV_OPS)}) or a GEMM (gemm, bmm, linear); the configs have {', '.join(asked)}"
            )
        df = self._routed(df)
        op = str(df["op"].iat[0])
        p = self._checked(df, op)
        if not p.algorithms(op):
            raise SeerError(
                f"the {op} models of {self.gpu.name} have no algorithms to rank: their data timed the "
                "kernel the library launches only (predict gives its time)"
            )
        at = _floored(p.algorithm_times(df, op, algorithm_list(algorithms)), df, op, self.gpu)
        if extrapolate is None:
            extrapolate = p.extrapolates
        cv = at.cv if at.cv is not None else self.cv_rmspe(at.variants)
        score = at.ranked * (1.0 + RISK * cv)
        estimates = getattr(p, "call_estimates", None)  # the call-level second opinion
        if estimates is not None and op in CONV_OPS:
            score = blend(score, estimates(df, op, at.algos))
        score = score if extrapolate else np.where(at.inside, score, score + UNTRUSTED)
        score = np.where(np.isnan(score), np.inf, score)
        order = np.argsort(score, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(1, len(at.algos) + 1)[None, :].repeat(len(df), 0), axis=1)
        return at, rank, single, cv

    def cv_rmspe(self, keys: np.ndarray) -> np.ndarray:
        """The cross-validated RMSPE (a fraction) of each variant key's model; 0 where a key
        names none (no variant known, or fits without per-variant models)."""
        vp = self.variant_predictor
        return vp.cv_rmspe(keys) if vp is not None else np.zeros(np.shape(keys))

    def rank_algorithms(
        self,
        configs: Configs = None,
        *,
        algorithms: Iterable[str] | None = None,
        extrapolate: bool | None = None,
        **config,
    ) -> pd.DataFrame:
        """Predicted time of every algorithm with models (or of `algorithms`) for every config,
        ranked: cuDNN's convolution algorithms (op conv_fwd, the default) or cuBLASLt's GEMM
        algorithms (op gemm, bmm or linear, where the data timed them: algorithms_of).

        Returns one row per (config, algorithm), sorted by config then rank: config (the
        input frame's index label; 0 for one config given as keywords), rank (1 = the pick),
        algo, variant (the kernel it would launch; a gradient timed as the forward of the same
        configuration, seer.models.dual, names the forward's), time_ms, ranked_ms (the time the
        rank weighs: time_ms, but on grouped convolutions of more than one channel a group the
        slowest variant the chooser proposed, seer.predict.variants.may_loop), cv_rmspe (that
        variant's cross-validated error, a forward dual's typical error on its training calls,
        ForwardDual.risk: the rank
        orders ranked_ms x (1 + RISK x cv_rmspe), or, for a convolution where the fits hold
        timed calls of the algorithm, the geometric mean of that and the call-level estimate
        of seer.models.call_time), fitted_range
        (whether the config lies within the fits' trust_distance of a configuration the
        algorithm was fitted on).
        With fits of autotuner picks only, algorithms outside their fitted range rank after the
        others unless `extrapolate`."""
        at, rank, _, cv = self._ranked(configs, config, algorithms, extrapolate)
        return ranking_frame(at, rank, _index(configs, len(rank)), cv)

    def best_algorithm(
        self,
        configs: Configs = None,
        *,
        algorithms: Iterable[str] | None = None,
        extrapolate: bool | None = None,
        **config,
    ) -> str | pd.Series:
        """The algorithm predicted fastest: a name for one config, a Series `algo` on the
        index of a DataFrame."""
        at, rank, single, _ = self._ranked(configs, config, algorithms, extrapolate)
        best = np.asarray(at.algos, dtype=object)[np.argmin(rank, axis=1)]  # rank 1 of each config
        return str(best[0]) if single else pd.Series(best, index=_index(configs, len(best)), name="algo")


def _index(configs: Configs, n: int) -> pd.Index:
    """The index answers are aligned on: a DataFrame's own, else 0..n-1."""
    return configs.index if isinstance(configs, pd.DataFrame) else pd.RangeIndex(n)


def _floored(at: AlgorithmTimes, df: pd.DataFrame, op: str, gpu: GPUSpec) -> AlgorithmTimes:
    """Each algorithm's times raised to the least the hardware allows it (seer.predict.physics):
    ranking never prefers a model's physically impossible answer."""
    if not at.algos:
        return at
    least = floors_by_algorithm(df, op, gpu, at.algos)
    cautious = None if at.cautious is None else np.maximum(at.cautious, least)
    return dataclasses.replace(at, times=np.maximum(at.times, least), cautious=cautious)


def ranking_frame(
    at: AlgorithmTimes, rank: np.ndarray, index: pd.Index | None = None, cv: np.ndarray | None = None
) -> pd.DataFrame:
    """rank_algorithms' table: one row per (config, algorithm), each config's rows by rank;
    `config` is the config's label in `index` (default: its position), cv_rmspe each variant's
    cross-validated error (`cv`, configs x algorithms; 0 where not given)."""
    n, k = at.times.shape
    order = np.argsort(rank, axis=1, kind="stable")
    take = lambda a: np.take_along_axis(a, order, axis=1).ravel()
    labels = np.arange(n) if index is None else index.to_numpy()
    return pd.DataFrame(
        {
            "config": np.repeat(labels, k),
            "rank": take(rank),
            "algo": take(np.broadcast_to(np.asarray(at.algos, dtype=object), (n, k))),
            "variant": take(at.variants),
            "time_ms": take(at.times),
            "ranked_ms": take(at.ranked),
            "cv_rmspe": take(np.zeros(at.times.shape) if cv is None else cv),
            "fitted_range": take(at.inside),
        }
    )
