"""One GPU's records -> its fits document: variants, choosers, drift, memory-bound parameters.

Flow: prepared records (seer.data.prepare) -> per-variant models (seer.models), and one across
the tiles of a kernel whose every tile is too rare where nothing else predicts it (pooled_tiles)
-> measurement drift removed where the data allow it (seer.models.drift) -> calls that loop
over groups, too few to model, timed as loops of their variant's model (looped_joins) ->
variant choosers (seer.models.chooser), the kernels profiler traces saw launched
(seer.models.launched), the gradients timed as the forward (seer.fit.duals) and memory-bound
fits (seer.models.memory) -> one document, which seer.fitsfile writes. The same data give the
same document, byte for byte.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from seer import __version__
from seer.data import census, configs, records
from seer.data.configs import ConfigBatch
from seer.data.keys import PER_GROUP
from seer.data.prepare import CALL_KEYS, SPLIT_RULE, UNNAMED, content_hash, prepare, unnamed_shares
from seer.data.records import GEMM_OPS, MEMORY_OPS, VARIANT_OPS
from seer.errors import SeerError
from seer.fit.census_keys import census_keys, untimed
from seer.fit.duals import fitted_duals
from seer.fit.shared import shared_variant, with_shared
from seer.fitsfile import SCHEMA
from seer.hardware import gpus
from seer.hardware.dtypes import DEFAULT_DTYPE
from seer.models import (
    DEFAULT,
    FitOptions,
    VariantFit,
    VariantKey,
    VariantModel,
    candidates,
    family_column,
    family_key,
    local,
)
from seer.models.bin_gate import LOOPING_ALGO, call_loops, census_loops
from seer.models.call_time import fit_call_times
from seer.models.chooser import fit_chooser, kind_of, points_of
from seer.models.drift import Drift, fit_drift, order_is_random, position
from seer.models.forest import Gate
from seer.models.gate import call_labels, captured_any, census_labels, fit_gate, workspace_coded
from seer.models.launched import TRACE_SUITE, adopt_algorithms, fit_launched
from seer.models.lt_config import fit_tile_variants
from seer.models.memory import MemoryBoundFit, MemoryBoundModel
from seer.models.solver import rmspe


def _fit_variants(
    rec: pd.DataFrame, target: np.ndarray, spec: gpus.GPUSpec, options: FitOptions, only: set[str] | None = None
) -> dict[str, VariantFit]:
    """A model per variant key (of the keys in `only`, where given) with `options.min_rows`
    training rows, a direct kernel's with its calls under the direction's other algorithms
    (seer.fit.shared)."""
    out = {}
    train = rec["split"] == "train"
    shared = shared_variant(rec["key"])
    for key, g in rec[train & (rec["key"].isin(only) if only is not None else True)].groupby("key", sort=True):
        if len(g) < options.min_rows:
            g = with_shared(rec, key, g, shared)
        if len(g) < options.min_rows:
            continue
        g = g.assign(time_ms=target[g.index])
        model = VariantModel(VariantKey.parse(key), cc=spec.cc, sms=spec.sms, options=options)
        out[key] = model.fit(g)
    return out


def predict_known(models: dict[str, VariantFit], rec: pd.DataFrame) -> np.ndarray:
    """Each row's time from its own variant's model (NaN where the variant has none)."""
    out = np.full(len(rec), np.nan)
    for key, g in rec.groupby("key", sort=False):
        if key in models:
            out[rec.index.get_indexer(g.index)] = models[key].predict(g)
    return out


def _drift(
    rec: pd.DataFrame, models: dict[str, VariantFit], target: np.ndarray, options: FitOptions
) -> dict[str, Drift]:
    pred = predict_known(models, rec)
    pos = position(rec)
    out = {}
    for src, g in rec.groupby("source", sort=True):
        if not order_is_random(g):
            continue
        rows = rec.index.get_indexer(g.index)
        ok = (g["split"].to_numpy() == "train") & np.isfinite(pred[rows])
        if ok.sum() < options.drift_min_rows:
            continue
        d = fit_drift(src, pos[rows][ok], np.log(target[rows][ok] / pred[rows][ok]))
        if d is not None:
            out[src] = d
    return out


def fit_gpu(
    rec: pd.DataFrame,
    spec: gpus.GPUSpec,
    *,
    drift: bool = True,
    options: FitOptions = DEFAULT,
    census_rows: pd.DataFrame | None = None,
) -> dict:
    """Fit one GPU's records: the variants, choosers and drift sections of its fits file
    (`census_rows`: the GPU's census, seer.data.census, labels for the choosers' gates and trees)."""
    rec = adopt_algorithms(rec[rec["op"].isin(VARIANT_OPS)])
    timed = rec  # every call as recorded, each kernel a row: what the call-level estimate reads
    biased = {k: v for k, v in unnamed_shares(rec).items() if v > options.max_unnamed_share}
    rec = prepare(rec)
    rec = rec[~family_column(rec).isin(list(biased))].reset_index(drop=True)
    timing = conv_timing(rec)
    # an autotuner's picks alone (NeuSight's) time each algorithm only where it won: no call-level
    # estimate of a convolution's; a GEMM's of its named algorithms (the harness's cuBLASLt ones)
    # from its training calls, since it times GEMMs (Test-set-I's held out)
    calls = fit_call_times(timed[timed["op"].isin(records.CONV_OPS)], spec) if timing == "every_algorithm" else {}
    calls.update(fit_call_times(training_calls(timed[timed["op"].isin(GEMM_OPS)], rec), spec))
    own = rec["key"].copy()
    rec["key"] = pooled_keys(rec, options.min_rows)
    target = rec["time_ms"].to_numpy(dtype=float)
    models = _fit_variants(rec, target, spec, options)
    rec["key"] = pooled_tiles(rec, target, models, spec, options)
    drifts: dict[str, Drift] = _drift(rec, models, target, options) if drift else {}
    if drifts:  # refit from scratch the variants measured in a drifting file: drift noise
        # also misleads the choice of B_max and features, not only the coefficients
        target = rec["time_ms"].to_numpy(dtype=float) / _factor(rec, drifts)
        hit = rec["source"].isin(list(drifts))
        shared = shared_variant(rec["key"])  # and the direct kernels that learn from those rows
        again = set(rec.loc[hit, "key"]) | set(rec.loc[shared.isin(set(shared[hit]) - {""}), "key"])
        models.update(_fit_variants(rec, target, spec, options, only=again))
    rec["key"] = looped_joins(rec, own, target, models)
    choosers = {}
    train = rec[rec["split"] == "train"]
    named = chooser_keys(train, set(models))  # what the choosers learn, and the corrections take
    for (op, algo), g in train.groupby(["op", "algo"], sort=True):
        g = g.assign(key=named[g.index])
        g = g[g["key"].isin(list(models))]
        if len(g):
            r = _rules(g, models, target[g.index], op, options.tree_products)
            conv = op in records.CONV_OPS
            gate = _gate(rec, op, algo, census_rows, options.gates) if conv else None
            bins = _bin_gate(rec, op, algo, census_rows) if conv and options.gates == "loops" else None
            fam = rec[(rec["op"] == op) & (rec["algo"] == algo)]
            asked = census_keys(census_rows, op, algo, g, timed, fam) if conv and r.trees else None
            chooser = fit_chooser(g, op, algo, g["key"], r.k, r.trees, r.per_group, gate, bins, asked)
            choosers[family_key(op, algo)] = chooser.to_dict()
    for op, g in library_picks(train[train["key"].isin(list(models))]).groupby("op", sort=True):
        choosers.setdefault(family_key(op, ""), fit_chooser(g, op, "", g["key"]).to_dict())
    few = sorted(set(train["key"]) - set(models))
    launched = fit_launched(rec, set(models))
    duals = fitted_duals(train, target, spec, models, choosers, options, timing)
    tiles = fit_tile_variants(train)
    chosen: dict[str, local.Choice] = {}
    if options.local:  # last: choosers, gates and duals learnt the laws' own errors
        models, chosen = with_local(train, target, models, named)
    return {
        "variants": {k: m.to_dict() for k, m in sorted(models.items())},
        "choosers": choosers,
        "conv_timing": timing,
        "dtypes": trained_dtypes(rec),
        "drift": {s: d.to_dict() for s, d in sorted(drifts.items())},
        "options": options.to_dict(),
        "too_few_rows": {k: int((train["key"] == k).sum()) for k in few},
        **({"forward_duals": {k: d.to_dict() for k, d in sorted(duals.items())}} if duals else {}),
        **({"call_times": {op: c.to_dict() for op, c in sorted(calls.items())}} if calls else {}),
        **({"gemm_tiles": {k: t.to_dict() for k, t in sorted(tiles.items())}} if tiles else {}),
        **({"local": {op: c.to_dict() for op, c in chosen.items()}} if chosen else {}),
        **({"launched": [lc.to_dict() for lc in launched]} if launched else {}),
        **({"unmodelled": {k: UNNAMED.format(v) for k, v in sorted(biased.items())}} if biased else {}),
    }


def with_local(
    train: pd.DataFrame, target: np.ndarray, models: dict[str, VariantFit], named: pd.Series
) -> tuple[dict[str, VariantFit], dict[str, local.Choice]]:
    """(the models, each with the correction its training rows make nearby, seer.models.local;
    what each op's leave-one-out chose): an op where no smoothing beats the laws alone keeps them.
    A convolution variant too few rows modelled lends its rows to the variant its chooser names
    for them (`named`, chooser_keys): a configuration there is timed by that variant's law, and its
    rows say by how much the law misses what ran there. Own rows alone, the H100's thin
    filter-gradient FFT rows (18 of its 67 Test-set-I rows) carried 80% of that algorithm's
    squared error (docs/results.md, "A thin variant's rows correct the law that times them")."""
    found: dict[str, dict[str, local.Residuals]] = {}
    lent: dict[str, int] = {}
    for (op, key), g in train[named.isin(list(models))].groupby(["op", named], sort=True):
        ratio = models[key].predict(g) / target[g.index]
        ok = np.isfinite(ratio) & (ratio > 0)
        if ok.sum() >= 2:
            found.setdefault(str(op), {})[str(key)] = local.Residuals(ConfigBatch.of(g[ok], str(op)).logcfg, ratio[ok])
            lent[str(op)] = lent.get(str(op), 0) + int((g["key"][ok] != key).sum())
    out, chosen = dict(models), {}
    for op, per_key in sorted(found.items()):
        choice = local.choose_smoothing(list(per_key.values()))
        chosen[op] = choice = dataclasses.replace(choice, lent=lent[op])
        if choice.smoothing is not None:
            for key, v in per_key.items():
                out[key] = dataclasses.replace(models[key], local=local.correction(v, choice.smoothing))
    return out, chosen


def chooser_keys(train: pd.DataFrame, modelled: set[str]) -> pd.Series:
    """Each training row's key as its family's chooser learns it: a convolution row of a variant
    too few rows modelled is keyed by the nearest modelled variant (nearest_modelled)."""
    out = train["key"].copy()
    for (op, _), g in train[train["op"].isin(records.CONV_OPS)].groupby(["op", "algo"], sort=True):
        out[g.index] = nearest_modelled(g, modelled, str(op))
    return out


def _gate(
    rec: pd.DataFrame, op: str, algo: str, census_rows: pd.DataFrame | None, gates: str = DEFAULT.gates
) -> Gate | None:
    """The gate of a convolution family (seer.models.gate), where its timed training calls ask
    for no workspace exactly when they run the direct kernel (the census labels its
    configurations, captured or not), or with `gates` "captured" or "loops" where the census captured calls
    of it: grown on those calls and the census's labelled configurations of the algorithm (less
    those the family timed, whose calls label them, training or held out)."""
    fam = rec[(rec["op"] == op) & (rec["algo"] == algo)]
    calls = call_labels(fam[fam["split"] == "train"])
    if calls.empty:
        return None
    coded = workspace_coded(calls)
    if not coded and not (gates != "workspace" and captured_any(census_rows, op, algo)):
        return None
    pts, direct = points_of(calls, op), calls["direct"].to_numpy(dtype=bool)
    if census_rows is not None:
        asked = census_labels(census_rows, op, algo, workspace=coded)
        pts, direct = _with_census(pts, direct, fam, asked, "direct", op)
    return fit_gate(pts, direct, forest=True)


def _bin_gate(rec: pd.DataFrame, op: str, algo: str, census_rows: pd.DataFrame | None) -> Gate | None:
    """The FFT's bin-loop gate of a direction (seer.models.bin_gate), where the census captured
    FFT calls of it: grown on the family's ungrouped timed training calls and the census's captured
    ungrouped configurations (less those the family timed, whose calls label them, training or
    held out)."""
    if algo != LOOPING_ALGO or census_rows is None:
        return None
    asked = census_loops(census_rows, op)
    if asked.empty:
        return None
    fam = rec[(rec["op"] == op) & (rec["algo"] == algo)]
    calls = call_loops(fam[fam["split"] == "train"])
    pts, loop = points_of(calls, op), calls["loop"].to_numpy(dtype=bool)
    return fit_gate(*_with_census(pts, loop, fam, asked, "loop", op))


def _with_census(
    pts: np.ndarray, label: np.ndarray, fam: pd.DataFrame, asked: pd.DataFrame, column: str, op: str
) -> tuple[np.ndarray, np.ndarray]:
    """A gate's labelled points: the timed calls' and the census's `asked` configurations, less
    those the family's calls (`fam`, training or held out) timed."""
    if not len(asked):
        return pts, label
    more = points_of(asked, op)
    new = untimed(more, fam, op)
    return np.vstack([pts, more[new]]), np.concatenate([label, asked[column].to_numpy(dtype=bool)[new]])


def nearest_modelled(g: pd.DataFrame, modelled: set[str], op: str) -> pd.Series:
    """Each convolution row's variant key, or, for a variant too few rows modelled, the key of
    the nearest row whose variant has a model (of its kind, grouped or not, where one has; and
    of its filter shape where the modelled variants of that shape ran on no other: cuDNN's
    Winograd non-fused runs other transforms on 3x3 and 5x5 filters, and the H200's
    backward-filter 3x3 calls of a rare GEMM tile that took a 5x5 call's key sent the tree to
    the 5x5 transform for 3x3 layers, 3-6x too slow. Not where shapes share variants: the FFT's
    tiles follow the image size, and its rare tiles keyed by shape mislabelled the H100's):
    what a configuration that chooses it is predicted with, and the filter shapes its algorithm
    ran stay in the chooser (seer.models.support; a shape whose every row fell in such variants
    was refused as never run: the H200's FFT 1x3 filters)."""
    has = g["key"].isin(list(modelled)).to_numpy()
    if has.all() or not has.any():
        return g["key"]
    pts = points_of(g, op)
    kinds = kind_of(pts, op)
    shapes = pts[:, configs.FILTER_COLUMNS]
    out = g["key"].to_numpy(dtype=object).copy()
    for kind in np.unique(kinds[~has]):
        src = has & (kinds == kind) if (has & (kinds == kind)).any() else has
        for shape in np.unique(shapes[~has & (kinds == kind)], axis=0):
            same = (shapes == shape).all(axis=1)
            dst = ~has & (kinds == kind) & same
            mine, others = set(out[src & same]), set(out[src & ~same])
            near = src & same if mine and not mine & others else src  # the shape decides the variant
            _, idx = cKDTree(pts[near]).query(pts[dst])
            out[dst] = out[near][idx]
    return pd.Series(out, index=g.index)


def pooled_keys(rec: pd.DataFrame, min_rows: int) -> pd.Series:
    """The variant keys the models are fitted by: the calls that ran a variant once per group
    (VariantKey.per_group) have their own model of one group's convolution where they have
    `min_rows` training rows, else they join the variant's other calls (a model of the whole
    convolution, as before per-group keys) where those have a model of their own. Two halves
    too small to be modelled are not pooled into one model of both: the FFT's 5 ungrouped and 7
    depthwise calls keyed by fft2d_r2c_16x16 (0.03-0.05 ms and 0.85-61 ms) made a model that
    answered 0.03 ms for every depthwise layer (291% cross-validated RMSPE), and being the fastest it
    won the chooser's competition for them. Unpooled, each half is predicted by the nearest
    variant of its kind that has a model (nearest_modelled)."""
    key = rec["key"]
    per_group = key.str.endswith(PER_GROUP)
    if not per_group.any():
        return key
    n = key[rec["split"] == "train"].value_counts()
    whole = key.str.removesuffix(PER_GROUP)
    few = per_group & (key.map(n).fillna(0) < min_rows) & (whole.map(n).fillna(0) >= min_rows)
    return key.where(~few, whole)


# The RMSPE of answering 0 ms: a fallback that errs more is worse than no answer. Only then is a
# kernel modelled across its tiles (pooled_tiles).
NO_ANSWER = 1.0


def tile_pools(rec: pd.DataFrame, min_rows: int) -> pd.Series:
    """Each convolution row's key, or where every tile variant of its kernel has fewer than
    `min_rows` training rows and together they have that many, the key of the kernel across its
    tiles (op:algo:kind, kind being the kernel's name without its tile, seer.data.variants)."""
    key = rec["key"]
    train = rec["split"] == "train"
    few = key.map(key[train].value_counts()).fillna(0) < min_rows
    suffix = key.str.endswith(PER_GROUP).map({True: PER_GROUP, False: ""})
    pooled = family_column(rec) + ":" + rec["kind"].astype(str) + suffix
    total = pooled[few & train].value_counts()
    ok = few & (pooled.map(total).fillna(0) >= min_rows) & ~pooled.isin(set(pooled[~few & train]))
    return key.where(~(ok & rec["op"].isin(records.CONV_OPS)), pooled)


def pooled_tiles(
    rec: pd.DataFrame, target: np.ndarray, models: dict[str, VariantFit], spec: gpus.GPUSpec, options: FitOptions
) -> pd.Series:
    """The keys with the tile pools (tile_pools) kept where what predicts their training rows
    otherwise (the nearest modelled variant's model, nearest_modelled) errs more than no answer
    (NO_ANSWER) and more than the pool's cross-validated RMSPE; their models join `models`.
    The H100's backward-filter ALGO_1 runs a depthwise xmma kernel at five tiles, 1 to 7 calls
    each: alone none had a model and the grouped direct kernel's, 567% off on them (RMSPE),
    answered for them; pooled, 37%. Not kept: the forward FFT's pools, whose fallbacks erred
    62-80% (the c2r and pad kernels pooled erred 13% and 21% cross-validated, yet Test-set-I's
    FFT went 31.2% -> 33.6% with them, the H200's held-out grid 64.2/89.0/12.7% -> 63.7/88.6/13.6%
    top-1/within 10%/mean slowdown), the per-group r2c kernels' (424%), and any pool of an
    algorithm with no model at all: NeuSight's T4 IMPLICIT_GEMM pooled over its tiles (21 rows,
    43% cross-validated) erred 215% on its 6 Test-set-I rows, where before it answered none."""
    key = rec["key"]
    pooled = tile_pools(rec, options.min_rows)
    new = sorted(set(pooled[pooled != key]))
    if not new:
        return key
    fitted = _fit_variants(rec.assign(key=pooled)[pooled.isin(new)], target, spec, options)
    train = rec["split"] == "train"
    out = key.copy()
    for k in new:
        if k not in fitted:
            continue
        op, algo = fitted[k].op, fitted[k].algo
        fam = rec[train & (rec["op"] == op) & (rec["algo"] == algo)]
        near = nearest_modelled(fam, set(models), op)
        rows = fam[pooled[fam.index] == k]
        got = predict_known(models, rows.assign(key=near[rows.index]))
        if not np.isfinite(got).all():  # the algorithm has no model: no pool either
            continue
        fallback = rmspe(got, target[rows.index])
        if fitted[k].cv_rmspe < fallback and fallback > NO_ANSWER:
            models[k] = fitted[k]
            out[pooled == k] = k
    return out


def looped_joins(rec: pd.DataFrame, own: pd.Series, target: np.ndarray, models: dict[str, VariantFit]) -> pd.Series:
    """The keys with the per-group calls that pooled_keys joined to their variant's other calls
    (`own`: each row's key before) keyed per group again where G launches of the joined model's
    one-group convolution (VariantKey.per_group) fit their training rows better than the joined
    model does on the whole call; the joined model, so keyed, joins `models`, its RMSPE on those
    rows as its error. The joined model learnt from them, so the comparison leans its way. A
    depthwise FFT call loops over its 512 groups: the whole-call model answered the H200's
    (moved from the H100's fits) 0.34 ms for 28.8 ms, and FFT was picked at 48x the fastest."""
    key = rec["key"]
    train = (rec["split"] == "train").to_numpy()
    joined = (
        own.str.endswith(PER_GROUP) & (key == own.str.removesuffix(PER_GROUP)) & key.isin(list(models))
    ).to_numpy()
    out = key.copy()
    for k, g in rec[joined & train].groupby(own[joined & train], sort=True):
        whole = models[key[g.index[0]]]
        looped = dataclasses.replace(whole, key=dataclasses.replace(whole.key, per_group=True))
        y = target[g.index]
        err = rmspe(looped.predict(g), y)
        if err < rmspe(whole.predict(g), y):
            models[str(k)] = dataclasses.replace(looped, n_train=len(g), train_rmspe=err, cv_rmspe=err)
            out[own == k] = k
    return out


def training_calls(timed: pd.DataFrame, prepared: pd.DataFrame) -> pd.DataFrame:
    """The rows of `timed` whose call is on the training side of the `prepared` rows' split (a
    call's side is its main row's, where the rows say which is main)."""
    keys = [c for c in CALL_KEYS if c in timed and c in prepared]
    if not keys or timed.empty:
        return timed.iloc[:0]
    train = prepared["split"] == "train"
    if "role" in prepared:
        train &= prepared["role"].fillna("main") == "main"
    held_in = pd.MultiIndex.from_frame(prepared.loc[train, keys].astype(str))
    return timed[pd.MultiIndex.from_frame(timed[keys].astype(str)).isin(held_in)]


def library_picks(rec: pd.DataFrame) -> pd.DataFrame:
    """The GEMM calls of the algorithm the library's heuristic ranks first (heuristic_rank 0):
    what a plain cuBLAS call launches, learnt as the op's default family (a GEMM without an
    algorithm), beside each timed algorithm's own family (what an autotuner compares)."""
    if "heuristic_rank" not in rec:
        return rec.iloc[:0]
    named = rec["op"].isin(GEMM_OPS) & (rec["algo"] != "")
    return rec[named & (pd.to_numeric(rec["heuristic_rank"], errors="coerce") == 0)]


def _rules(
    g: pd.DataFrame, models: dict[str, VariantFit], target: np.ndarray, op: str, products: bool = True
) -> candidates.Rules:
    """How a convolution family's chooser proposes variants (seer.models.candidates): the count
    of nearest configurations that compete, by leave-one-out; whether they are measured in
    channels per group for grouped rows, by cross-validation; the tree that replaces them within
    the data, per kind of row (grouped or not), by cross-validation (trees on the products too
    compete where `products`).
    GEMM families keep the fastest of the 5 nearest (cuBLAS's heuristic aims at the fastest
    kernel for each shape; leave-one-out picked fewer and NeuSight's held-out linear rows came
    out worse on four of five GPUs)."""
    if op not in records.CONV_OPS or g["key"].nunique() < 2:
        return candidates.Rules(None)  # one variant: nothing to choose
    keys = g["key"].to_numpy()
    rows = g.reset_index(drop=True)
    pts = points_of(rows, op)

    def predict(lab: str, idx: np.ndarray) -> np.ndarray:
        return models[lab].predict(rows.iloc[idx])

    k = candidates.choose(candidates.loo_rmspe(pts, keys, target, predict))
    if k is None:
        return candidates.Rules(None)
    kinds = kind_of(pts, op)
    pg = candidates.per_group_wins(pts, keys, target, predict, k, kinds)
    return candidates.Rules(k, candidates.tree_rules(pts, keys, target, predict, k, kinds, products, pg), pg)


def trained_dtypes(rec: pd.DataFrame) -> list[str]:
    """The dtypes of the rows the models learn from (a missing one is float32): prediction
    refuses others, whose kernels take other times."""
    if "dtype" not in rec:
        return [DEFAULT_DTYPE]
    return sorted(set(rec["dtype"].fillna("").replace("", DEFAULT_DTYPE).astype(str)))


def conv_timing(rec: pd.DataFrame) -> str | None:
    """ "every_algorithm" where configs were timed with several algorithms (the harness),
    "pick_only" where each was timed only with the algorithm an autotuner picked (NeuSight):
    there an algorithm's model is known only where it won, which ranking must respect."""
    conv = rec[rec["op"].isin(records.CONV_OPS)]
    if conv.empty:
        return None
    cfg = ["op", *records.CONV_FIELDS, "math"]
    per = conv.groupby(cfg, dropna=False)["algo"].nunique()
    return "pick_only" if per.median() <= 1 else "every_algorithm"


def _factor(rec: pd.DataFrame, drifts: dict[str, Drift]) -> np.ndarray:
    f = np.ones(len(rec))
    if not drifts:
        return f
    pos = position(rec)
    src = rec["source"].to_numpy()
    for s, d in drifts.items():
        m = src == s
        f[m] = d.factor(pos[m])
    return f


def fit_memory(rec: pd.DataFrame) -> MemoryBoundFit | None:
    """The memory-bound model fitted on the training rows (SEER's split per gpu, op, fn) of the
    memory-bound ops, None where there are none. Not on traces' memory-bound kernels: a trace
    repeats a few shapes per kernel, and this law, fitted per kernel over sizes, learnt from them
    put gpt_b1's softmax at 7x its time in the leave-one-trace-out benchmark (seer.evaluate
    .trace_loo); their records are there for kernel-level memory models."""
    mem = rec[rec["op"].isin(MEMORY_OPS) & (rec["status"] == "ok") & (rec["suite"] != TRACE_SUITE)]
    if mem.empty:
        return None
    train = mem[records.split_rows(mem, ["gpu", "op", "fn"]) == "train"]
    return MemoryBoundModel().fit(train)


def fit_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch else _dt.datetime.now(_dt.timezone.utc)
    return when.date().isoformat()


def fit_one(args: tuple, held: pd.DataFrame | None = None) -> tuple[str, dict, float]:
    """Fit one GPU's records (a worker's job: everything it needs travels in `args`); `held`:
    configurations a check holds out of the fit, whose census rows it must not read either."""
    name, g, data_path, drift, options = args
    try:
        spec = gpus.lookup(name)
    except SeerError as exc:
        raise SeerError(f"records of GPU {name!r} cannot be fitted: {exc}") from None
    t0 = time.perf_counter()
    where = census.folder_of(Path(data_path), spec.slug)
    asked = census.read(where) if where is not None else None
    if asked is not None and held is not None:
        asked = census.without(asked, held)
    body = fit_gpu(g, spec, drift=drift, options=options, census_rows=asked)
    memory = fit_memory(g)
    doc = {
        "schema": SCHEMA,
        "seer_version": __version__,
        "date": fit_date(),
        "gpu": spec.to_dict(),
        "dataset": {
            "path": data_path,
            "rows": len(g),
            "content_sha256": content_hash(g),
            "sources": sorted(pd.unique(g["source"]).tolist()),
            **({"census": {"path": str(where), "rows": len(asked)}} if where is not None and asked is not None else {}),
        },
        "split": SPLIT_RULE,
        "time_unit": "ms",
        **body,
        "memory_bound": None if memory is None else memory.to_dict(),
    }
    return spec.slug, doc, time.perf_counter() - t0
