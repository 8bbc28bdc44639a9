"""python -m seer.fit: fit every kernel variant of a data set and write fits/<gpu>.json.

A fits file is only ever replaced by a fit of the data it was fitted from (its dataset.path):
that is how `python -m seer.fit` refreshes the bundled fits/. A fit of other data would drop
models the user had, so without --out it goes to build/fits/<data>/ (said in one line), and an
--out whose files came from other data is refused unless --replace says to overwrite them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from seer import cluster
from seer.cli import data_path, run, writable_dir
from seer.data import paths, records
from seer.data.prepare import default_data, training_records
from seer.data.records import read_json
from seer.errors import SeerError
from seer.fit import fit_all
from seer.fitsfile import DEFAULT_OUT, write
from seer.hardware import gpus
from seer.models.chooser import Chooser
from seer.models.local import Choice
from seer.models.memory import MIN_ROWS as MEMORY_MIN_ROWS
from seer.models.options import DEFAULT, GATES

# Where the fits of other data than the bundled files' go when --out is not given: beside the
# bundled fits/, never over them (build/ is the project's scratch folder, ignored by git).
TRIAL_OUT = DEFAULT_OUT.parent / "build" / "fits"
_DATA_SUFFIXES = {".csv", ".gz", ".xz", ".bz2", ".zip", ".xlsx", ".xls", ".json", ".jsonl"}


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


def choice_lines(doc: dict) -> list[str]:
    """How each family with several variants chooses among them, one line each."""
    out = []
    for key, d in doc["choosers"].items():
        if len(d["labels"]) > 1:
            out.append(f"  {key}: {Chooser.from_dict(d).rule}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m seer.fit",
        description="Fit SEER-style per-variant time models (statsmodels WLS on relative error) "
        "and write one fits file per GPU.",
        epilog="Default data: the project's data/ once it holds measurements, else NeuSight's "
        "../shared/datasets/neusight. A fits file is replaced only by a fit of the data it was fitted "
        "from (--replace overrides). Example: python -m seer.fit --data ../shared/datasets/neusight/bmm",
    )
    ap.add_argument(
        "--data",
        type=data_path,
        action="append",
        help="records: a harness CSV, a NeuSight CSV or folder, a SEER .xlsx, a PyTorch profiler trace, a folder "
        "of traces with its traces.json, or a folder; repeat it to fit several together "
        "(--data data/h100-sxm --data data/h100-sxm/traces)",
    )
    ap.add_argument("--gpu", help="only this GPU (also names the GPU of SEER workbooks, which carry none)")
    ap.add_argument(
        "--out",
        help=f"folder for <gpu>.json (default: {DEFAULT_OUT} for the data its files were fitted from, "
        f"else {TRIAL_OUT}/<data>)",
    )
    ap.add_argument(
        "--replace",
        action="store_true",
        help="overwrite fits files fitted from other data (default: refuse, or without --out write elsewhere)",
    )
    ap.add_argument(
        "--drift",
        choices=["auto", "off"],
        default="auto",
        help="remove measurement drift where a file's order is random (default: auto)",
    )
    ap.add_argument(
        "--gates",
        choices=GATES,
        default=DEFAULT.gates,
        help="which convolution algorithms get a gate for cuDNN's direct kernel (seer.models.gate): "
        "'workspace', those whose workspace tells when it runs; 'captured', also every algorithm the "
        "census captured calls of (default); 'loops', and the FFT a gate for its loops over the "
        "frequency bins (seer.models.bin_gate)",
    )
    ap.add_argument(
        "--no-local",
        action="store_true",
        help="time each variant by its law alone, without the correction its training rows nearby make "
        "(seer.models.local)",
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
    if args.out is not None:
        writable_dir(args.out, "--out")  # before loading and fitting, not after them
    given = args.data or []
    sources = list(given) if given else [default_data()]
    if not given:
        print(f"seer.fit: data from {sources[0]}")
    path = " + ".join(str(p) for p in sources)
    rec = training_records(load_all(sources, args.gpu))
    if rec.empty:
        raise SeerError(f"no training records in {path} (Test-set-II rows are never trained on)")
    if args.gpu:
        rec = gpus.rows_of(rec, args.gpu)
        if rec.empty:
            raise SeerError(f"no records of GPU {args.gpu!r} in {path}")
    data = " + ".join(paths.shown(p) for p in sources)
    folder, note = _out_dir(args.out, data, _slugs(rec), args.replace)
    out_dir = writable_dir(folder, "--out")  # before the fit, not after it
    t0 = time.perf_counter()
    options = replace(DEFAULT, gates=args.gates, local=not args.no_local)
    docs = fit_all(rec, data_path=data, drift=args.drift == "auto", jobs=args.jobs, ray=args.ray, options=options)
    _refuse_empty(docs)
    if note:
        print(f"note: {note}", file=sys.stderr)
    written: list[Path] = []
    for slug, doc in docs.items():
        out = out_dir / f"{slug}.json"
        try:
            write(doc, out)
        except OSError as exc:  # disk full, permission: atomic_write left no temporary file
            done = f"; written before it: {', '.join(p.name for p in written)}" if written else ""
            raise SeerError(f"{out} cannot be written ({exc.strerror or exc}), so it is unchanged{done}") from None
        written.append(out)
        if not args.quiet:
            print(f"\n{doc['gpu']['name']}: {out}")
            print(variant_table(doc).to_string(index=False))
            rules = choice_lines(doc)
            if rules:
                print("variant choice (seer.models.candidates):\n" + "\n".join(rules))
        for op, c in doc.get("local", {}).items():
            said = Choice.from_dict(c).describe()
            print(f"{slug} {op}: the laws' residuals smoothed over neighbours (seer.models.local): {said}")
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


def load_all(sources: list[Path], gpu: str | None = None) -> pd.DataFrame:
    """The records of every source together (harness, NeuSight, traces: one schema)."""
    from seer.workload import trace_records  # a __main__ may reach the workload stage; seer.fit may not

    frames = [
        trace_records.read_traces(p)
        if trace_records.is_trace_folder(p) or (p.is_file() and trace_records.is_trace_file(p))
        else records.load(p, gpu=gpu)
        for p in sources
    ]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _slugs(rec: pd.DataFrame) -> list[str]:
    """The fits files' names the records will make (a GPU seer does not know is refused by the
    fit itself, with its reason)."""
    out = []
    for name in sorted(pd.unique(rec["gpu"])):
        try:
            out.append(gpus.lookup(name).slug)
        except SeerError:
            continue
    return out


def _existing(path: Path) -> tuple[str | None, str]:
    """What an existing fits file holds: the data it was fitted from (None where it does not say)
    and its models, for the message that keeps them."""
    try:
        doc = read_json(path, "a fits file")
    except SeerError:  # unreadable, special, not UTF-8, not JSON: not a fits file of this data
        return None, "not a fits file seer can read"
    if not isinstance(doc, dict):
        return None, "not a fits file"
    ds = doc.get("dataset")
    src = ds.get("path") if isinstance(ds, dict) and isinstance(ds.get("path"), str) else None
    variants = doc.get("variants")
    ops = sorted({str(k).split(":")[0] for k in variants}) if isinstance(variants, dict) else []
    if _memory_kernels(doc):
        ops.append("memory-bound")
    return src, f"models of {', '.join(ops) or 'nothing'}"


def _taken(folder: Path, slugs: Iterable[str], data: str) -> list[str]:
    """The files of `folder` a fit of `data` would replace that hold fits of other data, each
    described in a few words."""
    out = []
    for slug in slugs:
        path = folder / f"{slug}.json"
        if path.is_file():
            src, what = _existing(path)
            if src != data:
                out.append(f"{path} ({what}, fitted from {src or 'unknown data'})")
    return out


def _out_dir(out: str | None, data: str, slugs: list[str], replace: bool) -> tuple[Path, str | None]:
    """The folder the fits of `data` go to, and the note that says why where it is not the one
    asked for: a fits file fitted from other data is never replaced silently (a fit of one op
    would drop the others' models). Without --out that means the bundled folder for the data
    its files were fitted from, else TRIAL_OUT/<data>."""
    folder = Path(out) if out is not None else DEFAULT_OUT
    taken = [] if replace else _taken(folder, slugs, data)
    if not taken:
        return folder, None
    if out is not None:
        raise SeerError(
            f"not replacing {', '.join(taken)} with fits of {data}: give another --out, "
            "or --replace to overwrite (its models are then lost)"
        )
    trial = TRIAL_OUT / _data_name(data)
    if _taken(trial, slugs, data):
        raise SeerError(
            f"{', '.join(taken)} and {trial} hold fits of other data than {data}: "
            "give --out for these fits, or --replace to overwrite"
        )
    return trial, (
        f"{', '.join(taken)} kept; the fits of {data} go to {trial} "
        f"(--out to choose the folder, --replace to overwrite {folder})"
    )


def _data_name(data: str) -> str:
    """A folder name for the fits of `data`: its last two path parts without file suffixes
    (../shared/datasets/neusight/bmm/Tesla_T4.csv -> bmm-Tesla_T4)."""
    parts = [p for p in Path(data).parts if p not in ("..", ".", Path(data).anchor)]
    if parts:
        while Path(parts[-1]).suffix.lower() in _DATA_SUFFIXES:
            parts[-1] = Path(parts[-1]).stem
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts[-2:])).strip("._-")
    return name or "data"


def _memory_kernels(doc: dict) -> int:
    """How many memory-bound kernels a fits document has fitted laws for (0: datasheet only)."""
    mb = doc.get("memory_bound")
    per_gpu = mb.get("gpus") if isinstance(mb, dict) else None
    if not isinstance(per_gpu, dict):
        return 0
    return sum(len(g.get("kernels") or {}) for g in per_gpu.values() if isinstance(g, dict))


def _refuse_empty(docs: dict[str, dict]) -> None:
    """Refuse a fit that gave a GPU no model at all: its file would hold nothing to predict with
    (and, written over an older one, lose that one's models)."""
    why = []
    for doc in docs.values():
        if doc["variants"] or _memory_kernels(doc):
            continue
        name, rows, few = doc["gpu"]["name"], doc["dataset"]["rows"], doc["too_few_rows"]
        if few:
            reason = (
                f"{name}'s {rows} rows hold at most {max(few.values())} training rows per kernel variant "
                f"({len(few)} variant(s)) and a variant needs {doc['options']['min_rows']}"
            )
        else:
            reason = f"{name}'s {rows} rows hold no successful conv or GEMM training rows with kernel names"
        if doc.get("memory_bound"):
            reason += f", nor {MEMORY_MIN_ROWS} memory-bound rows of one kernel"
        why.append(reason)
    if why:
        others = " (--gpu fits the other GPUs alone)" if len(why) < len(docs) else ""
        raise SeerError(f"no model fitted, so nothing was written: {'; '.join(why)}{others}")


if __name__ == "__main__":
    sys.exit(main())
