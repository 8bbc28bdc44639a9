"""Prediction from the configuration alone, with fitted coefficients (fits/<gpu>.json).

`load` reads a fits file; a `Fits` predicts the time of configs (a DataFrame or one config
as keyword arguments), ranks the convolution algorithms it covers and picks the fastest.
Everything is vectorized: rows are grouped by the variant the library would launch and each
group is one matrix product.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from seer import fitsfile
from seer.data import configs
from seer.data.configs import ConfigBatch
from seer.data.records import MEMORY_OPS, OPS
from seer.data.variants import CONV_ALGO_ID
from seer.errors import SeerError
from seer.hardware import gpus
from seer.models import DEFAULT, FitOptions, VariantFit, family_key
from seer.models.chooser import CANDIDATES, Chooser
from seer.models.drift import Drift

_DEFAULTS = {
    "stride_h": 1,
    "stride_w": 1,
    "pad_h": 0,
    "pad_w": 0,
    "dil_h": 1,
    "dil_w": 1,
    "groups": 1,
    "dtype": "float32",
    "algo": "",
}
# cuDNN's letters for a convolution's sizes, the likeliest "misspelling" of seer's names
_CONV_LETTERS = {"N": "batch", "C": "c_in", "H": "h_in", "W": "w_in", "K": "c_out", "R": "kh", "S": "kw"}


@dataclass
class Fits:
    """Fitted models of one GPU."""

    path: Path
    gpu: gpus.GPUSpec
    meta: dict
    variants: dict[str, VariantFit]
    choosers: dict[str, Chooser]
    drift: dict[str, Drift]
    memory_bound: dict | None = None
    conv_timing: str | None = None  # "every_algorithm" or "pick_only" (see FitOptions.trust_distance)
    options: FitOptions = DEFAULT  # what the fits were made with

    # ------------------------------------------------------------ what the fits cover
    @property
    def ops(self) -> list[str]:
        ops = sorted({m.op for m in self.variants.values()})
        return ops + (list(MEMORY_OPS) if self.memory_bound else [])

    @property
    def algorithms(self) -> list[str]:
        """Convolution algorithms with fitted models, in cuDNN's enum order."""
        algos = {c.algo for c in self.choosers.values() if c.op == "conv_fwd"}
        return sorted(algos, key=lambda a: CONV_ALGO_ID.get(a, 99))

    # ------------------------------------------------------------ prediction
    def predict(
        self, configs_: pd.DataFrame | Mapping | None = None, *, variant: str | Iterable | None = None, **config
    ) -> np.ndarray | float:
        """Time in ms of each config: one config as keywords, or a DataFrame with an `op` column
        (conv_fwd rows also need `algo`). `variant` forces the variant key(s) instead of the
        learned choice (what Test-set-I per variant measures)."""
        df, single = _frame(configs_, config)
        out = np.full(len(df), np.nan)
        for op, idx in df.groupby("op", sort=False).indices.items():
            sub = df.iloc[idx]
            if op in MEMORY_OPS:
                out[idx] = self._memory(sub)
                continue
            if op not in {m.op for m in self.variants.values()}:
                raise SeerError(
                    f"the fits for {self.gpu.name} ({self.path.name}) cover ops {', '.join(self.ops)}; not {op!r}"
                )
            configs.check_configs(sub, op)
            batch = ConfigBatch.of(sub, op)
            if variant is not None:
                keys = np.asarray([variant] * len(df) if isinstance(variant, str) else list(variant), dtype=object)
                if len(keys) != len(df):
                    raise SeerError("variant must be one key or one per config row")
                out[idx] = self._by_variant(batch, keys[idx])
                continue
            for ch, rows in self._choosers(batch):
                out[idx[rows]] = self._launch(batch.take(rows), ch)[1]
        return float(out[0]) if single else out

    def _by_variant(self, batch: ConfigBatch, keys: np.ndarray) -> np.ndarray:
        """Each row's time from the model of its variant key: one matrix product per variant."""
        out = np.empty(len(batch))
        for key, rows in pd.Series(keys).groupby(keys, sort=False).indices.items():
            if key not in self.variants:
                raise SeerError(f"no fitted model for variant {key!r} on {self.gpu.name}")
            out[rows] = self.variants[key].predict(batch.take(rows))
        return out

    def _choosers(self, batch: ConfigBatch) -> list[tuple[Chooser, np.ndarray]]:
        """The chooser of each row's (op, algorithm), with the row positions it serves. A GEMM
        row may name its algorithm (the harness's cuBLASLt algorithms, `lt:<id>`) or not (the
        op's default family, as NeuSight's data have)."""
        op = batch.op
        out = []
        for algo in pd.unique(batch.algo):
            if not algo and op == "conv_fwd":
                raise SeerError(
                    f"conv_fwd configs need an 'algo' (one of {', '.join(self.algorithms)}); or use rank_algorithms"
                )
            ch = self.choosers.get(family_key(op, algo))
            if ch is None:
                raise SeerError(
                    f"the fits for {self.gpu.name} have no models of algorithm {algo!r} "
                    f"(fitted: {', '.join(self.algorithms)})"
                    if op == "conv_fwd"
                    else f"the fits for {self.gpu.name} have no models of op {op!r}"
                    + (f" with algorithm {algo!r}" if algo else "")
                )
            out.append((ch, np.flatnonzero(batch.algo == algo)))
        return out

    def _launch(self, batch: ConfigBatch, ch: Chooser) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(variant key, time, log2 distance to the nearest fitted config) of each row: among the
        variants the library launched for the nearest training configs, the fastest predicted."""
        dist, cand = ch.nearest(batch.logcfg, CANDIDATES.get(ch.op, 5))
        best_t = np.full(len(batch), np.inf)
        best = np.zeros(len(batch), dtype=int)
        for lab in np.unique(cand):
            rows = np.flatnonzero((cand == lab).any(axis=1))
            t = self.variants[ch.labels[lab]].predict(batch.take(rows))
            better = t < best_t[rows]
            best_t[rows[better]], best[rows[better]] = t[better], lab
        return np.asarray(ch.labels, dtype=object)[best], best_t, dist

    def choose(self, df: pd.DataFrame, op: str) -> np.ndarray:
        """The variant key the library would launch for each row (op is the same for all)."""
        batch = ConfigBatch.of(df, op)
        keys = np.empty(len(df), dtype=object)
        for ch, rows in self._choosers(batch):
            keys[rows] = self._launch(batch.take(rows), ch)[0]
        return keys

    def algorithm_times(self, configs_: pd.DataFrame, op: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(algorithms, times, inside) of every fitted algorithm of `op` (conv_fwd or gemm) for each
        config: configs x algorithms arrays of predicted times and of whether the config lies
        within trust_distance of a configuration the algorithm was fitted on."""
        algos = sorted({c.algo for c in self.choosers.values() if c.op == op}, key=lambda a: CONV_ALGO_ID.get(a, 99))
        df, _ = _frame(configs_.assign(op=op), {})
        times = np.empty((len(df), len(algos)))
        inside = np.empty((len(df), len(algos)), dtype=bool)
        batch = ConfigBatch.of(df, op)
        for j, a in enumerate(algos):
            _, times[:, j], dist = self._launch(batch.with_algo(a), self.choosers[family_key(op, a)])
            inside[:, j] = dist <= self.options.trust_distance
        return algos, times, inside

    def rank_algorithms(
        self,
        configs_: pd.DataFrame | Mapping | None = None,
        *,
        algorithms: Iterable[str] | None = None,
        extrapolate: bool | None = None,
        **config,
    ) -> pd.DataFrame:
        """Predicted time of every fitted convolution algorithm for every config, ranked.

        Returns one row per (config, algorithm): config (row position), algo, variant,
        time_ms, fitted_range (whether the config lies within the fits' trust_distance of a configuration
        the algorithm was fitted on), rank (0 = the pick). With fits of autotuner picks only,
        algorithms outside their fitted range rank after the others unless `extrapolate`."""
        algos, keys, times, inside, rank = self._rank(configs_, config, algorithms, extrapolate)
        return ranking_frame(algos, times, inside, rank, keys)

    def _rank(self, configs_, config: dict, algorithms: Iterable[str] | None, extrapolate: bool | None):
        """(algorithms, variant keys, times, in fitted range, rank): configs x algorithms arrays."""
        if extrapolate is None:
            extrapolate = self.conv_timing != "pick_only"
        df, _ = _frame(configs_, {**config, "op": "conv_fwd"})
        if (df["op"] != "conv_fwd").any():
            raise SeerError("rank_algorithms ranks convolution algorithms: every row needs op conv_fwd")
        configs.check_configs(df, "conv_fwd")
        if isinstance(algorithms, str):  # one name, not its letters
            algorithms = [algorithms]
        algos = list(algorithms) if algorithms is not None else self.algorithms
        unknown = [a for a in algos if family_key("conv_fwd", a) not in self.choosers]
        if unknown:
            raise SeerError(f"no models of algorithm(s) {', '.join(unknown)} on {self.gpu.name}")
        n = len(df)
        times = np.empty((n, len(algos)))
        inside = np.empty((n, len(algos)), dtype=bool)
        keys = np.empty((n, len(algos)), dtype=object)
        batch = ConfigBatch.of(df, "conv_fwd")
        for j, a in enumerate(algos):
            keys[:, j], times[:, j], dist = self._launch(batch.with_algo(a), self.choosers[family_key("conv_fwd", a)])
            inside[:, j] = dist <= self.options.trust_distance
        score = times if extrapolate else np.where(inside, times, times + 1e12)
        order = np.argsort(score, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(len(algos))[None, :].repeat(n, 0), axis=1)
        return algos, keys, times, inside, rank

    def best_algorithm(self, configs_: pd.DataFrame | Mapping | None = None, **config) -> str | np.ndarray:
        """The algorithm predicted fastest: a name for one config, an array for a DataFrame."""
        single = configs_ is None or isinstance(configs_, Mapping)
        algos, _, _, _, rank = self._rank(configs_, config, None, None)
        best = np.asarray(algos, dtype=object)[np.argmin(rank, axis=1)]  # rank 0 of each config
        return str(best[0]) if single else best

    def _memory(self, df: pd.DataFrame) -> np.ndarray:
        from seer.analytical import predict_memory_bound

        cols = [c for c in ("op", "rows", "cols", "fn", "dtype") if c in df]
        return np.asarray(
            predict_memory_bound(df[cols].reset_index(drop=True), self.memory_bound, self.gpu), dtype=float
        )


def ranking_frame(
    algos: list[str], times: np.ndarray, inside: np.ndarray, rank: np.ndarray, variants: np.ndarray | None = None
) -> pd.DataFrame:
    """rank_algorithms' table from configs x algorithms arrays: one row per (config, algorithm)."""
    n = len(times)
    cols = {
        "config": np.repeat(np.arange(n), len(algos)),
        "algo": np.tile(np.asarray(algos, dtype=object), n),
        **({"variant": variants.ravel()} if variants is not None else {}),
        "time_ms": times.ravel(),
        "fitted_range": inside.ravel(),
        "rank": rank.ravel(),
    }
    return pd.DataFrame(cols)


def _frame(configs_, config: dict) -> tuple[pd.DataFrame, bool]:
    if configs_ is None or isinstance(configs_, Mapping):
        one = {**(dict(configs_) if configs_ else {}), **config}
        if "op" not in one:
            raise SeerError("a config needs an 'op' (" + ", ".join(OPS) + ")")
        df = pd.DataFrame([one])
        single = True
    elif isinstance(configs_, pd.DataFrame):
        df = configs_.reset_index(drop=True)
        for k, v in config.items():
            if k not in df:
                df = df.assign(**{k: v})
        single = False
    else:
        raise SeerError(f"configs must be a DataFrame or a dict, not {type(configs_).__name__}")
    keywords = list(df.columns) if single else list(config)  # a DataFrame may carry other columns
    if len(df) == 0:
        raise SeerError("no configs to predict")
    if "op" not in df:
        raise SeerError("configs need an 'op' column (" + ", ".join(OPS) + ")")
    missing = {k: v for k, v in _DEFAULTS.items() if k not in df}
    if missing:
        df = df.assign(**missing)
    for k, v in _DEFAULTS.items():
        if k not in missing and df[k].hasnans:
            df[k] = df[k].fillna(v)
    if "op" in df and (df["op"] == "conv_fwd").any():
        for a, b in (("h_in", "w_in"), ("w_in", "h_in"), ("kh", "kw"), ("kw", "kh")):
            if a not in df and b in df:
                df[a] = df[b]
    unknown = sorted(set(map(str, pd.unique(df["op"]))) - set(OPS))
    if unknown:
        raise SeerError(f"unknown op {unknown[0]!r}; seer knows {', '.join(OPS)}")
    _check_keywords(keywords, [str(op) for op in pd.unique(df["op"])])
    return df, single


def _vocabulary(op: str) -> tuple[str, ...]:
    """The keywords a config of `op` may give."""
    extra = ("fn", "dtype") if op in MEMORY_OPS else ("dtype", "algo")
    return tuple(dict.fromkeys(("op", *OPS[op], *extra)))


def _check_keywords(keys: Iterable, ops: list[str]) -> None:
    """Refuse a keyword no op of the configs takes: a misspelt one (K=7, stride=2) would
    otherwise be ignored or replaced by its default. Names the closest known keyword."""
    vocab = tuple(dict.fromkeys(k for op in ops for k in _vocabulary(op)))
    for key in keys:
        if key in vocab:
            continue
        name = str(key)
        close = _CONV_LETTERS.get(name) if "conv_fwd" in ops else None
        close = close or next(iter(difflib.get_close_matches(name.lower(), vocab, n=1)), None)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise SeerError(f"unknown config keyword {key!r}{hint}; configs of {', '.join(ops)} take {', '.join(vocab)}")


def from_doc(doc: dict, path: Path) -> Fits:
    g = doc["gpu"]
    spec = gpus.GPUSpec(
        **{k: g[k] for k in ("slug", "name", "cc", "sms", "fp32_tflops", "dram_gbs", "l2_mb", "boost_mhz")},
        source=g.get("source", ""),
    )
    try:
        variants = {k: VariantFit.from_dict(v) for k, v in doc["variants"].items()}
        choosers = {k: Chooser.from_dict(v) for k, v in doc["choosers"].items()}
        drift = {s: Drift.from_dict(s, d) for s, d in doc.get("drift", {}).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise SeerError(f"fits file {path} is damaged ({type(exc).__name__}: {exc}); refit it") from None
    return Fits(
        path,
        spec,
        {k: doc[k] for k in ("dataset", "date", "seer_version", "split") if k in doc},
        variants,
        choosers,
        drift,
        doc.get("memory_bound"),
        doc.get("conv_timing"),
        FitOptions.from_dict(doc.get("options")),
    )


@lru_cache(maxsize=32)
def _load(path: str, mtime: float) -> Fits:
    return from_doc(fitsfile.read(path), Path(path))


def load(name: str | Path | None = None) -> Fits:
    """Fits of a GPU: a bundled name ('t4', 'Tesla T4', 'h100-sxm') or a fits file path."""
    if name is not None and (not isinstance(name, (str, os.PathLike)) or not str(name).strip()):
        raise SeerError(
            f"argument name: expected a GPU name (bundled: {', '.join(available())}) or the "
            f"path of a fits file, got {name!r}"
        )
    path = fitsfile.resolve(name)
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise SeerError(f"fits file {path} does not exist") from None
    return _load(str(path), mtime)


def available() -> list[str]:
    """Names of the bundled fits (fits/*.json)."""
    return fitsfile.bundled()
