"""The per-variant predictor: SEER's linear models of every kernel variant of one GPU, and the
choosers that say which variant the library launches for a configuration.

Everything is vectorized: rows are grouped by the variant the library would launch and each
group is one matrix product.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from seer.data.configs import GROUPS_COLUMN, ConfigBatch
from seer.data.records import CONV_OPS, GEMM_OPS, VARIANT_OPS
from seer.data.variants import CONV_OP_ALGOS
from seer.errors import SeerError
from seer.hardware.dtypes import DEFAULT_DTYPE
from seer.hardware.gpus import GPUSpec
from seer.models import DEFAULT, FitOptions, VariantFit, family_key
from seer.models.call_time import CallTimes, joined, roofline_of
from seer.models.chooser import Chooser
from seer.models.drift import Drift
from seer.models.dual import FORWARD, ForwardDual, unstrided
from seer.models.knn import locality_order
from seer.models.launched import Launched
from seer.models.lt_config import TileVariants
from seer.models.support import Support
from seer.predict.protocol import AlgorithmTimes


class Launch(NamedTuple):
    """What a chooser says its rows launch: the variant key, its predicted time, whether the
    nearest fitted configuration lies within trust_distance, the slowest predicted time of
    the variants it proposed (the time itself where it proposed one), and the error of the
    model that timed it (the variant's cross-validated RMSPE, a forward dual's own: a fraction)."""

    keys: np.ndarray
    times: np.ndarray
    inside: np.ndarray
    slowest: np.ndarray
    error: np.ndarray


def may_loop(batch: ConfigBatch) -> np.ndarray:
    """Grouped convolutions of more than one channel a group: cuDNN 9 runs most algorithms of
    these as a loop over the groups, and for the same sizes sometimes once a call, on nothing
    the configuration shows (of the H100's grouped calls of that kind its implicit GEMMs looped
    on 88%, its GEMM algorithm on 11%, the gradients' ALGO_0/1/3 on 58-73%; depthwise calls
    never, where FFT and Winograd always). Ranking weighs these by the slowest variant proposed
    (`Launch.slowest`): predicted as the once-a-call kernel, a looping algorithm was picked at
    10-20x the fastest time."""
    if batch.op not in CONV_OPS:
        return np.zeros(len(batch), dtype=bool)
    c, g = batch.shapes["C"], batch.shapes["G"]
    return (g > 1) & (c > g)


@dataclass
class VariantPredictor:
    """Fitted models of one GPU's kernel variants (convolutions, GEMMs)."""

    gpu: GPUSpec
    variants: dict[str, VariantFit]
    choosers: dict[str, Chooser]
    drift: dict[str, Drift] = field(default_factory=dict)
    conv_timing: str | None = None  # "every_algorithm" or "pick_only" (see FitOptions.trust_distance)
    options: FitOptions = DEFAULT  # what the fits were made with
    trained_dtypes: tuple[str, ...] = (DEFAULT_DTYPE,)  # the dtypes of the rows the models learnt
    launched: tuple[Launched, ...] = ()  # what traces saw the framework launch, per library versions (first: most)
    # gradient algorithms timed as the forward of the same configs, by chooser key (seer.models.dual)
    duals: dict[str, ForwardDual] = field(default_factory=dict)
    # each convolution direction's timed training calls, the ranking's call-level estimate
    # (seer.models.call_time); empty in files fitted before 2026-11-28
    call_times: dict[str, CallTimes] = field(default_factory=dict)
    # the kernel each cuBLASLt algorithm ran at each tile and operand layout, by chooser key
    # (seer.models.lt_config); empty in files fitted before 2026-12-01
    tile_variants: dict[str, TileVariants] = field(default_factory=dict)
    _supports: dict[str, Support | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"VariantPredictor({self.gpu.slug}: {len(self.variants)} variants of {', '.join(self.ops)})"

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(op for op in VARIANT_OPS if any(m.op == op for m in self.variants.values()))

    def algorithms(self, op: str) -> list[str]:
        """Algorithms with fitted models of `op`, in cuDNN's enum order (GEMMs: by name; not the
        op's default family, which rows without an algorithm use)."""
        algos = {c.algo for c in self.choosers.values() if c.op == op and c.algo}
        ids = {a: i for i, a in CONV_OP_ALGOS.get(op, {}).items()}
        return sorted(algos, key=lambda a: (ids.get(a, 99), a))

    def dtypes(self, op: str) -> tuple[str, ...] | None:
        return self.trained_dtypes

    @property
    def extrapolates(self) -> bool:
        return self.conv_timing != "pick_only"

    # ------------------------------------------------------------ prediction
    def predict(self, df: pd.DataFrame) -> np.ndarray:
        return self._predict(df, with_inside=False)[0]

    def predict_in_range(self, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        return self._predict(df, with_inside=True)

    def _predict(self, df: pd.DataFrame, with_inside: bool) -> tuple[np.ndarray, np.ndarray]:
        ops = df["op"].unique()
        if len(ops) > 1:  # a batch is of one op: the rows of the others would be timed as it
            raise SeerError(f"one op per call, got {', '.join(map(str, ops))}: Fits.predict groups the rows by op")
        op = str(ops[0])
        batch = ConfigBatch.of(df, op)
        out = np.empty(len(df))
        inside = np.zeros(len(df), dtype=bool)
        for ch, rows in self._choosers(batch):
            got = self._launch(batch.take(rows), ch, with_inside=with_inside)
            out[rows], inside[rows] = got.times, got.inside
        if np.isnan(out).any():
            raise SeerError(self._no_kind(batch, out))
        return out, inside

    @property
    def support(self) -> Support | None:
        """The filter shapes each convolution algorithm ran on (data timed with every algorithm
        only: an autotuner's picks say nothing of what else runs)."""
        if self.conv_timing != "every_algorithm":
            return None
        return self.support_of("conv_fwd")

    def support_of(self, op: str) -> Support | None:
        """`support` of one convolution direction (its algorithms' names are its own: the
        gradients' FFT is not the forward's)."""
        if self.conv_timing != "every_algorithm":
            return None
        if op not in self._supports:
            points = {c.algo: c.points for c in self.choosers.values() if c.op == op and c.algo}
            self._supports[op] = Support.of(points) if points else None
        return self._supports[op]

    def _no_kind(self, batch: ConfigBatch, out: np.ndarray) -> str:
        i = int(np.flatnonzero(np.isnan(out))[0])
        algo = str(batch.algo[i])
        support = self.support_of(batch.op)
        if support is not None and support.never_runs(algo, batch.logcfg[i : i + 1])[0]:
            return f"row {i}: " + support.explain(algo, batch.logcfg[i], self.gpu.name)
        kind = "grouped" if batch.logcfg[i, GROUPS_COLUMN] > 0 else "ungrouped"
        other = "ungrouped" if kind == "grouped" else "grouped"
        return (
            f"row {i}: the {batch.algo[i]} models of {self.gpu.name} learnt from {other} convolutions only, "
            f"no model of a {kind} one (rank_algorithms leaves such algorithms out)"
        )

    def launched_keys(self, df: pd.DataFrame, op: str) -> np.ndarray:
        """The variant key traces saw the framework launch for the nearest traced configuration of
        each row (seer.models.launched; the library versions with the most traced kernels), ''
        where none lies within the trust distance or its variant has no model."""
        keys = np.full(len(df), "", dtype=object)
        if not self.launched or op not in self.launched[0].choosers or not len(df):
            return keys
        batch = ConfigBatch.of(df, op)
        keys = self.launched[0].choose(batch.logcfg, op, self.options.trust_distance)
        return np.where(np.isin(keys, list(self.variants)), keys, "").astype(object)

    def predict_variant(self, df: pd.DataFrame, keys: np.ndarray) -> np.ndarray:
        """Each row's time from the model of its variant key: one matrix product per variant."""
        batch = ConfigBatch.of(df, str(df["op"].iat[0]))
        out = np.empty(len(batch))
        for key, rows in pd.Series(keys).groupby(keys, sort=False).indices.items():
            if key not in self.variants:
                raise SeerError(f"no fitted model for variant {key!r} on {self.gpu.name}")
            out[rows] = self.variants[key].predict(batch.take(rows))
        return out

    def choose(self, df: pd.DataFrame, op: str) -> np.ndarray:
        """The variant key the library would launch for each row (op is the same for all)."""
        batch = ConfigBatch.of(df, op)
        keys = np.empty(len(df), dtype=object)
        for ch, rows in self._choosers(batch):
            got = self._launch(batch.take(rows), ch, with_inside=False)
            keys[rows] = got.keys
            if np.isnan(got.times).any():
                raise SeerError(self._no_kind(batch.take(rows), got.times))
        return keys

    def algorithm_times(self, df: pd.DataFrame, op: str, algos: Sequence[str] | None = None) -> AlgorithmTimes:
        algos = list(algos) if algos is not None else self.algorithms(op)
        unknown = [a for a in algos if family_key(op, a) not in self.choosers]
        if unknown:
            raise SeerError(f"no models of algorithm(s) {', '.join(unknown)} on {self.gpu.name}")
        n = len(df)
        times = np.empty((n, len(algos)))
        cautious = np.empty((n, len(algos)))
        error = np.empty((n, len(algos)))
        inside = np.empty((n, len(algos)), dtype=bool)
        keys = np.empty((n, len(algos)), dtype=object)
        batch = ConfigBatch.of(df, op)
        loops = may_loop(batch)
        order: np.ndarray | None = None  # one order of the rows for every search that sorts them
        for j, a in enumerate(algos):
            ch = self.choosers[family_key(op, a)]
            if order is None and ch.sorts_queries:
                order = locality_order(batch.logcfg)
            got = self._launch(batch.with_algo(a), ch, order=order if ch.sorts_queries else None)
            keys[:, j], times[:, j], inside[:, j], error[:, j] = got.keys, got.times, got.inside, got.error
            cautious[:, j] = np.where(loops, got.slowest, got.times)
        return AlgorithmTimes(algos, times, inside, keys, cautious, error)

    def call_estimates(self, df: pd.DataFrame, op: str, algos: Sequence[str]) -> np.ndarray:
        """Each config's call-level time of each algorithm (configs x algos; NaN where the fits
        hold no timed calls of it: seer.models.call_time)."""
        calls = self.call_times.get(op)
        if calls is None:
            return np.full((len(df), len(algos)), np.nan)
        return calls.predict(df, self.gpu, list(algos))

    def _choosers(self, batch: ConfigBatch) -> list[tuple[Chooser, np.ndarray]]:
        """The chooser of each row's (op, algorithm), with the row positions it serves. A GEMM
        row may name its algorithm (the harness's cuBLASLt algorithms, `lt:<id>`) or not (the
        op's default family, as NeuSight's data have)."""
        op = batch.op
        out = []
        for algo in pd.unique(batch.algo):
            if not algo and op in CONV_OPS:
                raise SeerError(
                    f"{op} configs need an 'algo' (one of {', '.join(self.algorithms(op))}); or use rank_algorithms"
                )
            ch = self.choosers.get(family_key(op, algo))
            if ch is None:
                raise SeerError(
                    f"the fits for {self.gpu.name} have no models of algorithm {algo!r} "
                    f"(fitted: {', '.join(self.algorithms(op))})"
                    if op in CONV_OPS
                    else f"the fits for {self.gpu.name} have no models of op {op!r}"
                    + (f" with algorithm {algo!r}" if algo else "")
                )
            out.append((ch, np.flatnonzero(batch.algo == algo)))
        return out

    def _launch(
        self, batch: ConfigBatch, ch: Chooser, order: np.ndarray | None = None, with_inside: bool = True
    ) -> Launch:
        """As _launch_own; a gradient algorithm with a forward dual (seer.models.dual) is timed
        as the forward convolution of the same configs (ForwardDual.time: scaled, a filter gradient's
        bounded by its reduction over positions) blended with its own models' time by the dual's
        share (ForwardDual.blend; the variant named is the heavier part's), on the unstrided rows
        both answer (the gradient's support of filter shapes and kinds stands); a GEMM with timed
        calls in the fits, as _launch_gemm."""
        if ch.op in GEMM_OPS and ch.op in self.call_times:
            return self._launch_gemm(batch, ch, order)
        own = self._launch_own(batch, ch, order, with_inside)
        dual = self.duals.get(family_key(ch.op, ch.algo))
        if dual is None:
            return own
        forward = self.choosers[family_key(FORWARD, ch.algo)]
        fwd = self._launch_own(batch.as_op(FORWARD), forward, None, with_inside)
        use = np.isfinite(fwd.times) & np.isfinite(own.times) & unstrided(batch)
        heavier = use & (dual.weight >= 0.5)  # whose variant the rows name
        return Launch(
            np.where(heavier, fwd.keys, own.keys),
            np.where(use, dual.blend(dual.time(fwd.times, batch), own.times), own.times),
            np.where(heavier, fwd.inside, own.inside),
            np.where(use, dual.blend(dual.time(fwd.slowest, batch), own.slowest), own.slowest),
            np.where(use, dual.blended_error(own.error), own.error),
        )

    def _launch_gemm(self, batch: ConfigBatch, ch: Chooser, order: np.ndarray | None) -> Launch:
        """As _launch_near (the variant of a row that gives its cuBLASLt tile and layout: the one
        the training calls of that configuration ran, _by_tile), each GEMM's time joined with
        its call-level estimate (seer.models.call_time.joined: within the trust distance their
        geometric mean, beyond it the estimate where a timed call lies within that distance;
        `keys` stay the variant chosen)."""
        got, orphan = self._by_tile(batch, ch, self._launch_near(batch, ch, order, with_inside=True))
        roof = roofline_of(batch.traffic, self.gpu)
        calls = self.call_times[ch.op]
        call = calls.estimate(batch.logcfg, roof, ch.algo, reach=self.options.trust_distance)
        if orphan.any():  # another tile's model times another kernel: the nearest calls however far
            call[orphan] = calls.estimate(batch.logcfg[orphan], roof[orphan], ch.algo)
        return Launch(
            got.keys,
            joined(got.times, got.inside, call),
            got.inside,
            joined(got.slowest, got.inside, call),
            got.error,
        )

    def _by_tile(self, batch: ConfigBatch, ch: Chooser, got: Launch) -> tuple[Launch, np.ndarray]:
        """(`got` with each row that gives its cuBLASLt configuration (seer.models.lt_config)
        named and timed by the variant the training calls of its tile and layout ran, where
        that variant has a model; the rows whose tile's variant has none, beyond the trust
        distance: their time is the call-level estimate's, _launch_gemm)."""
        tiles = self.tile_variants.get(family_key(ch.op, ch.algo))
        if tiles is None:
            return got, np.zeros(len(batch), dtype=bool)
        named = tiles.named(batch.extra, len(batch))
        modelled = np.isin(named, list(self.variants))
        orphan = (named != "") & ~modelled
        got.inside[orphan] = False
        for key in pd.unique(named[modelled]):
            rows = np.flatnonzero(named == key)
            t = self.variants[key].predict(batch.take(rows))
            got.keys[rows], got.times[rows], got.slowest[rows] = key, t, t
            got.error[rows] = self.cv_rmspe(np.array([key], dtype=object))[0]
        return got, orphan

    def _launch_own(
        self, batch: ConfigBatch, ch: Chooser, order: np.ndarray | None = None, with_inside: bool = True
    ) -> Launch:
        """As _launch_near, each convolution from the training configs of its kind, grouped or
        not (Chooser.kinds): where the chooser learnt no config of a row's kind, or the algorithm
        never runs the row's filter shape (Support), no variant ("", NaN, outside the fitted
        range)."""
        if ch.op not in CONV_OPS:
            return self._launch_near(batch, ch, order, with_inside)
        got = self._launch_kind(batch, ch, order, with_inside)
        support = self.support_of(ch.op)
        if support is not None:
            never = support.never_runs(ch.algo, batch.logcfg)
            if never.any():
                got.keys[never], got.times[never], got.inside[never], got.slowest[never] = "", np.nan, False, np.nan
        return got

    def _launch_kind(
        self, batch: ConfigBatch, ch: Chooser, order: np.ndarray | None = None, with_inside: bool = True
    ) -> Launch:
        """_launch_near on the training configs of each row's kind (grouped or not)."""
        grouped = batch.logcfg[:, GROUPS_COLUMN] > 0
        learnt = ch.kinds
        if (not learnt[1] and not grouped.any()) or (not learnt[0] and grouped.all()):
            return self._launch_near(batch, ch, order, with_inside)  # one kind, the rows' own: as it is
        n = len(batch)
        out = Launch(
            np.full(n, "", dtype=object), np.full(n, np.nan), np.zeros(n, dtype=bool), np.full(n, np.nan), np.zeros(n)
        )
        for kind in (False, True):
            rows = np.flatnonzero(grouped == kind)
            if len(rows) and learnt[kind]:
                sub = ch.of_kind(kind) if all(learnt) else ch
                for whole, part in zip(out, self._launch_near(batch.take(rows), sub, None, with_inside), strict=True):
                    whole[rows] = part
        return out

    def _launch_near(
        self, batch: ConfigBatch, ch: Chooser, order: np.ndarray | None = None, with_inside: bool = True
    ) -> Launch:
        """Each row's Launch: among the variants the chooser proposes (Chooser.propose: its
        tree's, or those the library launched for the nearest training configs), the fastest
        predicted, and the slowest's time. `order`: knn.locality_order of the rows (a faster
        search)."""
        cand, inside = ch.propose(batch.logcfg, self.options.trust_distance, order, inside_too=with_inside)
        n = len(batch)
        best_t = np.full(n, np.inf)
        worst_t = np.full(n, -np.inf)
        best = np.zeros(n, dtype=int)
        for lab, rows in _rows_of_labels(cand, len(ch.labels)):
            t = self.variants[ch.labels[lab]].predict(batch.take(rows))
            if cand.shape[1] == 1 and (t < np.inf).all():  # each row's only candidate: better than none
                best_t[rows], best[rows], worst_t[rows] = t, lab, t
                continue
            better = t < best_t[rows]
            best_t[rows[better]], best[rows[better]] = t[better], lab
            worse = np.isfinite(t) & (t > worst_t[rows])
            worst_t[rows[worse]] = t[worse]
        worst_t = np.where(np.isfinite(worst_t), worst_t, best_t)
        labels = np.asarray(ch.labels, dtype=object)
        return Launch(labels[best], best_t, inside, worst_t, self.cv_rmspe(labels)[best])

    def cv_rmspe(self, keys: np.ndarray) -> np.ndarray:
        """The cross-validated RMSPE (a fraction) of each variant key's model; 0 where a key
        names none ("": no variant known)."""
        keys = np.asarray(keys, dtype=object)
        uniq, inv = np.unique(keys.astype(str), return_inverse=True)
        cv = np.array([self.variants[k].cv_rmspe if k in self.variants else 0.0 for k in uniq])
        return np.nan_to_num(cv, nan=0.0)[inv].reshape(keys.shape)

    def replace(self, **changes) -> VariantPredictor:
        return dataclasses.replace(self, **changes)


def _rows_of_labels(cand: np.ndarray, labels: int) -> list[tuple[int, np.ndarray]]:
    """Each label among the candidates (in order, as np.unique(cand)) with the rows that have it
    among their candidates (ascending positions, as np.flatnonzero). One candidate per row
    partitions the rows: one stable sort by label gives every label's rows at once."""
    count = np.bincount(cand.ravel(), minlength=labels)
    present = np.flatnonzero(count)
    if cand.shape[1] != 1:
        return [(int(lab), np.flatnonzero((cand == lab).any(axis=1))) for lab in present]
    if len(present) == 1:
        return [(int(present[0]), np.arange(len(cand)))]
    small = cand[:, 0].astype(np.int16 if labels < 2**15 else np.int64)  # a radix sort for small labels
    by = np.argsort(small, kind="stable")
    ends = np.cumsum(count)
    return [(int(lab), by[ends[lab] - count[lab] : ends[lab]]) for lab in present]
