"""python -m seer.fit: fit every kernel variant of a data set and write fits/<gpu>.json.

Flow: records (seer.records) -> SEER's split within each variant -> per-variant models
(seer.models) -> measurement-drift correction where the data allows it (seer.drift) ->
variant choosers (seer.chooser) and memory-bound parameters (seer.analytical) -> one fits
file per GPU (seer.fitsfile). The same data gives the same file, byte for byte.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__, cluster, gpus, records, variants
from .chooser import fit_chooser
from .cli import data_path, run, writable_dir
from .drift import Drift, fit_drift, order_is_random, position
from .errors import SeerError
from .fitsfile import DEFAULT_OUT, SCHEMA, write
from .models import DEFAULT, FitOptions, VariantFit, VariantKey, VariantModel, family_column, family_key, key_column
from .records import MEMORY_OPS, VARIANT_OPS

SPLIT_RULE = (
    "SEER's: rows of each variant (gpu, op, kernel) stably sorted by configuration; "
    "row index mod 10 < 7 is training, the rest Test-set-I"
)


def default_data() -> Path:
    """The project's own measurements once they exist, else NeuSight's beside the repo."""
    own = Path(__file__).resolve().parent.parent / "data"
    if any(own.glob("*/*.csv*")):
        return own
    ns = records.neusight_dir()
    if ns is None:
        raise SeerError(
            "no data: the project has no measurements of its own yet and NeuSight's "
            "were not found (set SEER_NEUSIGHT or pass --data)"
        )
    return ns


HELD_OUT_SUITES = ("test_set_ii",)  # never trained on: Test-set-II scores the algorithm picks


def training_records(rec: pd.DataFrame) -> pd.DataFrame:
    """The records models may learn from: everything but the Test-set-II suite."""
    return rec[~rec["suite"].isin(HELD_OUT_SUITES)] if "suite" in rec else rec


def prepare(rec: pd.DataFrame) -> pd.DataFrame:
    """Rows the models learn from: successful main kernels, with their variant and split."""
    rec = rec[(rec["status"] == "ok") & (rec["role"] == "main")]
    rec = rec[~unnamed_calls(rec)]
    # a canonical row order by configuration (not by file row or call id), so that the same
    # rows in any order give the same CV folds, staircase subsample and fits
    order = [
        c
        for c in (
            "gpu",
            "op",
            *records.CONV_FIELDS,
            "m",
            "n",
            "k",
            "dtype",
            "math",
            "algo",
            "kernel",
            "source",
            "time_ms",
            "call_id",
        )
        if c in rec
    ]
    rec = rec.sort_values(order, kind="mergesort").reset_index(drop=True)
    rec = variants.annotate(rec)
    rec["key"] = key_column(rec)
    rec["split"] = split(rec)
    return rec


_UNNAMED = (
    "{:.0%} of its calls have no usable kernel names (CUPTI did not split them into calls): "
    "no models, a fit of the rest would be biased"
)


def unnamed_calls(rec: pd.DataFrame) -> pd.Series:
    """Harness rows without a usable kernel name: calls CUPTI could not split into repetitions
    (some FFT calls vary their launches) or split at a chunk of the call. No variant to learn."""
    if "backend" not in rec or "kernel" not in rec:
        return pd.Series(False, index=rec.index)
    unnamed = rec["backend"].fillna("").astype(str).ne("") & rec["kernel"].fillna("").astype(str).eq("")
    if "span_partial" in rec:  # split at a chunk of the call, not at the call (records.span_partial)
        unnamed |= rec["span_partial"].fillna(False).astype(bool)
    return unnamed


def unnamed_shares(rec: pd.DataFrame) -> dict[str, float]:
    """Per (op, algorithm) family of the successful calls, the share whose kernels are unnamed."""
    calls = rec[(rec["status"] == "ok") & rec["op"].isin(VARIANT_OPS)]
    if calls.empty:
        return {}
    calls = calls.assign(_unnamed=unnamed_calls(calls))
    calls = calls.drop_duplicates("call_id") if "call_id" in calls else calls
    share = calls.groupby(family_column(calls), sort=True)["_unnamed"].mean()
    return {str(k): float(v) for k, v in share.items() if v > 0}


def split(rec: pd.DataFrame) -> np.ndarray:
    """Training or Test-set-I for each row, by SEER's rule within each variant."""
    return records.split_rows(rec, ["gpu", "op", "kernel"])


def content_hash(rec: pd.DataFrame) -> str:
    """The data's fingerprint: record columns that hold anything (so a schema that grows by a
    column these data lack keeps their hash), rows in a canonical order."""
    cols = [c for c in records.COLUMNS if c in rec and c not in ("source",) and rec[c].notna().any()]
    keyed = rec[cols].sort_values(["gpu", "op", "call_id", "kernel"], kind="mergesort")
    h = pd.util.hash_pandas_object(keyed.astype(str), index=False).to_numpy().tobytes()
    return hashlib.sha256(h).hexdigest()


def _fit_variants(
    rec: pd.DataFrame, target: np.ndarray, spec: gpus.GPUSpec, options: FitOptions
) -> dict[str, VariantFit]:
    out = {}
    train = rec["split"] == "train"
    for key, g in rec[train].groupby("key", sort=True):
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


def fit_gpu(rec: pd.DataFrame, spec: gpus.GPUSpec, *, drift: bool = True, options: FitOptions = DEFAULT) -> dict:
    """Fit one GPU's records: the variants, choosers and drift sections of its fits file."""
    rec = rec[rec["op"].isin(VARIANT_OPS)]
    biased = {k: v for k, v in unnamed_shares(rec).items() if v > options.max_unnamed_share}
    rec = prepare(rec)
    rec = rec[~family_column(rec).isin(list(biased))].reset_index(drop=True)
    target = rec["time_ms"].to_numpy(dtype=float)
    models = _fit_variants(rec, target, spec, options)
    drifts: dict[str, Drift] = _drift(rec, models, target, options) if drift else {}
    if drifts:  # refit from scratch the variants measured in a drifting file: drift noise
        # also misleads the choice of B_max and features, not only the coefficients
        target = rec["time_ms"].to_numpy(dtype=float) / _factor(rec, drifts)
        hit = rec["source"].isin(list(drifts))
        models.update(_fit_variants(rec[rec["key"].isin(set(rec.loc[hit, "key"]))], target, spec, options))
    choosers = {}
    train = rec[rec["split"] == "train"]
    for (op, algo), g in train.groupby(["op", "algo"], sort=True):
        g = g[g["key"].isin(list(models))]
        if len(g):
            choosers[family_key(op, algo)] = fit_chooser(g, op, algo, g["key"]).to_dict()
    few = sorted(set(train["key"]) - set(models))
    return {
        "variants": {k: m.to_dict() for k, m in sorted(models.items())},
        "choosers": choosers,
        "conv_timing": conv_timing(rec),
        "drift": {s: d.to_dict() for s, d in sorted(drifts.items())},
        "options": options.to_dict(),
        "too_few_rows": {k: int((train["key"] == k).sum()) for k in few},
        **({"unmodelled": {k: _UNNAMED.format(v) for k, v in sorted(biased.items())}} if biased else {}),
    }


def conv_timing(rec: pd.DataFrame) -> str | None:
    """ "every_algorithm" where configs were timed with several algorithms (the harness),
    "pick_only" where each was timed only with the algorithm an autotuner picked (NeuSight):
    there an algorithm's model is known only where it won, which ranking must respect."""
    conv = rec[rec["op"] == "conv_fwd"]
    if conv.empty:
        return None
    cfg = [*records.CONV_FIELDS, "math"]
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


def fit_memory(rec: pd.DataFrame) -> dict | None:
    from .analytical import fit_memory_bound

    mem = rec[rec["op"].isin(MEMORY_OPS) & (rec["status"] == "ok")]
    if mem.empty:
        return None
    train = mem[records.split_rows(mem, ["gpu", "op", "fn"]) == "train"]
    return fit_memory_bound(train)


def fit_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch else _dt.datetime.now(_dt.timezone.utc)
    return when.date().isoformat()


_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _fit_one(args: tuple) -> tuple[str, dict, float]:
    """Fit one GPU's records (a worker's job: everything it needs travels in `args`)."""
    name, g, data_path, drift, options = args
    try:
        spec = gpus.lookup(name)
    except SeerError as exc:
        raise SeerError(f"records of GPU {name!r} cannot be fitted: {exc}") from None
    t0 = time.perf_counter()
    body = fit_gpu(g, spec, drift=drift, options=options)
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
        },
        "split": SPLIT_RULE,
        "time_unit": "ms",
        **body,
        "memory_bound": fit_memory(g),
    }
    return spec.slug, doc, time.perf_counter() - t0


def fit_all(
    rec: pd.DataFrame,
    *,
    data_path: str,
    drift: bool = True,
    jobs: int = 1,
    options: FitOptions = DEFAULT,
    log: Callable[[str], None] = print,
    ray: str | None = None,
) -> dict[str, dict]:
    """One fits document per GPU in the records; `jobs` GPUs are fitted at once, or, with
    `ray` (an address, "" for this machine's cluster), every GPU as a task on a Ray cluster."""
    work = [(name, rec[rec["gpu"] == name], data_path, drift, options) for name in sorted(pd.unique(rec["gpu"]))]
    for name, g, *_ in work:
        log(f"fitting {name}: {len(g)} rows ...")
    if ray is not None:
        results = _fit_ray(work, ray)
    elif jobs > 1 and len(work) > 1:
        results = _fit_parallel(work, min(jobs, len(work)))
    else:
        results = [_fit_one(w) for w in work]
    docs = {}
    for slug, doc, took in results:
        log(f"  {slug}: {len(doc['variants'])} variants in {took:.1f} s")
        docs[slug] = doc
    return docs


def _fit_parallel(work: list[tuple], jobs: int) -> list[tuple[str, dict, float]]:
    """Fit GPUs in fresh worker processes with single-threaded BLAS: the fits are many small
    WLS problems, and BLAS threads in every worker would only fight over the cores. Workers
    start with Ctrl-C ignored (an ignored signal survives exec), so it reaches only this
    process, which stops the pool: one message, not a traceback per worker."""
    import multiprocessing
    import signal
    import threading

    saved = {k: os.environ.get(k) for k in _BLAS_THREADS}
    os.environ.update({k: "1" for k in _BLAS_THREADS})
    main = threading.current_thread() is threading.main_thread()  # signals: main thread only
    sigint = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        pool = multiprocessing.get_context("spawn").Pool(jobs)
    finally:
        if main:
            signal.signal(signal.SIGINT, sigint)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        results = pool.map(_fit_one, work, chunksize=1)
        pool.close()
        return results
    except BaseException:  # Ctrl-C or a failed fit: stop the other workers now
        pool.terminate()
        raise
    finally:
        pool.join()


def _fit_ray(work: list[tuple], address: str) -> list[tuple[str, dict, float]]:
    """Fit GPUs as tasks on a Ray cluster: one CPU and single-threaded BLAS each, as in
    `_fit_parallel`, so the fits are those of one process. Every node needs seer installed."""
    with cluster.session(address or None) as ray:
        task = ray.remote(_fit_one).options(num_cpus=1, runtime_env={"env_vars": dict.fromkeys(_BLAS_THREADS, "1")})
        refs = [task.remote(w) for w in work]
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            inner = cluster.cause(exc)
            if isinstance(inner, SeerError):
                raise inner from None
            raise
        except KeyboardInterrupt:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise


def _shown(path: Path) -> str:
    """The data path as the fits file records it: relative to the repository where it can be
    (../shared/datasets/neusight), so the file does not depend on where the clone lives."""
    root = Path(__file__).resolve().parent.parent
    try:
        return os.path.relpath(os.path.abspath(path), root)
    except ValueError:
        return str(path)


def variant_table(doc: dict) -> pd.DataFrame:
    rows = []
    for key, v in doc["variants"].items():
        first = next(v[r] for r in ("compute", "memory", "under") if v.get(r))
        rows.append(
            {
                "variant": key,
                "n": v["n"],
                "features": v["feature_set"],
                "B_max": v["b_max"],
                "compute%": round(100 * v["type"]["compute_bound_share"]),
                "R2": first["r2"],
                "train_rmspe%": round(100 * v["train_rmspe"], 1),
                "cv_rmspe%": round(100 * v["cv_rmspe"], 1),
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.fit",
        description="Fit SEER-style per-variant time models (statsmodels WLS on relative error) "
        "and write one fits file per GPU.",
        epilog="Default data: the project's data/ once it holds measurements, else NeuSight's "
        "../shared/datasets/neusight. Example: python -m seer.fit --data ../shared/datasets/neusight/bmm",
    )
    ap.add_argument(
        "--data", type=data_path, help="records: a harness CSV, a NeuSight CSV or folder, a SEER .xlsx, or a folder"
    )
    ap.add_argument("--gpu", help="only this GPU (also names the GPU of SEER workbooks, which carry none)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="folder for <gpu>.json (default: %(default)s)")
    ap.add_argument(
        "--drift",
        choices=["auto", "off"],
        default="auto",
        help="remove measurement drift where a file's order is random (default: auto)",
    )
    ap.add_argument("--quiet", action="store_true", help="no per-variant table")
    ap.add_argument(
        "--jobs",
        type=int,
        default=min(os.cpu_count() or 1, 8),
        help="GPUs fitted at once, one process each (default: %(default)s)",
    )
    cluster.add_argument(ap, "fit the GPUs as tasks (instead of --jobs)")
    args = ap.parse_args(argv)
    return run(lambda: _main(args), "seer.fit")


def _main(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise SeerError(f"--jobs must be at least 1, got {args.jobs}")
    out_dir = writable_dir(args.out, "--out")  # before the fit, not after it
    path = args.data if args.data is not None else default_data()
    if args.data is None:
        print(f"seer.fit: data from {path}")
    rec = training_records(records.load(path, gpu=args.gpu))
    if rec.empty:
        raise SeerError(f"no training records in {path} (Test-set-II rows are never trained on)")
    if args.gpu:
        rec = gpus.rows_of(rec, args.gpu)
        if rec.empty:
            raise SeerError(f"no records of GPU {args.gpu!r} in {path}")
    t0 = time.perf_counter()
    docs = fit_all(rec, data_path=_shown(path), drift=args.drift == "auto", jobs=args.jobs, ray=args.ray)
    for slug, doc in docs.items():
        out = write(doc, out_dir / f"{slug}.json")
        if not args.quiet:
            print(f"\n{doc['gpu']['name']}: {out}")
            print(variant_table(doc).to_string(index=False))
        for key, n in doc["too_few_rows"].items():
            print(
                f"warning: {slug} {key}: only {n} training rows (< {doc['options']['min_rows']}); no model, "
                "configs that choose it are predicted with the nearest variant that has one",
                file=sys.stderr,
            )
        for key, why in doc.get("unmodelled", {}).items():
            print(f"warning: {slug} {key}: {why}", file=sys.stderr)
        for src, d in doc["drift"].items():
            print(
                f"note: {src}: measurement drift of {100 * d['span']:.0f}% over the file removed "
                "from training targets (seer.drift)"
            )
    print(f"fitted {len(docs)} GPU(s) in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
