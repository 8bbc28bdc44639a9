"""python -m seer.fit: fit every kernel variant of a data set and write fits/<gpu>.json."""

from __future__ import annotations

import argparse
import os
import sys
import time

import pandas as pd

from seer import cluster
from seer.cli import data_path, run, writable_dir
from seer.data import paths, records
from seer.data.prepare import default_data, training_records
from seer.errors import SeerError
from seer.fit import fit_all
from seer.fitsfile import DEFAULT_OUT, write
from seer.hardware import gpus


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
    docs = fit_all(rec, data_path=paths.shown(path), drift=args.drift == "auto", jobs=args.jobs, ray=args.ray)
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
                "from training targets (seer.models.drift)"
            )
    print(f"fitted {len(docs)} GPU(s) in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
