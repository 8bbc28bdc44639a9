"""What the evaluations share: the fits they score, where their figures go, and plotting."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from seer.data import records
from seer.data.prepare import VARIANT_OPS, default_data, training_records
from seer.data.records import data_path
from seer.errors import SeerError
from seer.hardware import gpus
from seer.predict import Fits, load


def fits_for(
    slug: str, fits_dir: Path, gpu: str | None = None, log: Callable[[str], None] = print, transfer: bool = False
) -> Fits:
    """The fits of the data GPU `slug` from a folder of fits files (or the one file given),
    paired with the data by check_pairing (`gpu`: the --gpu the user gave, if any). With
    `transfer` (the whole-model evaluations), a GPU the folder has no fits for gets fits
    transferred from the folder's others (seer.predict.resolve), as seer.predict does; the
    per-kernel sets score a GPU's own fits only."""
    if fits_dir.exists() and not fits_dir.is_dir():
        data_path(fits_dir, "a fits file or a folder of them")  # a FIFO or device: refused before opening
    path = fits_dir if fits_dir.suffix == ".json" or fits_dir.is_file() else fits_dir / f"{slug}.json"
    if transfer and not path.exists() and fits_dir.is_dir():  # no fits of its own: moved, as seer.predict does
        from seer.predict.resolve import fits_for as own_or_transferred

        return own_or_transferred(slug, fits_dir)
    if not path.exists():
        raise SeerError(f"no fits for {slug} at {path}; run python -m seer.fit first")
    fits = load(path)  # read once per file version, however many evaluations ask
    check_pairing(slug, fits, path, gpu, log)
    return fits


def fitted_gpus(names: Iterable[str], fits_dir: Path, log: Callable[[str], None] = print) -> list[str]:
    """The data's GPUs (names) that a folder of fits has own fits for; each other one is said in
    a note and left out (a per-kernel set scores own fits only), unless none has fits, which
    fits_for then refuses in one sentence. A fits file (not a folder) scores all of them."""
    names = list(names)
    if not fits_dir.is_dir():
        return names
    have = [n for n in names if (fits_dir / f"{gpus.lookup(n).slug}.json").exists()]
    if not have:
        return names
    for n in names:
        if n not in have:
            slug = gpus.lookup(n).slug
            log(
                f"note: {n} ({slug}) has no fits in {fits_dir}, so its rows are not scored "
                f"(python -m seer.fit --data data/{slug} --out DIR fits them; then --fits DIR)"
            )
    return have


def check_pairing(slug: str, fits: Fits, path: Path, gpu: str | None, log: Callable[[str], None] = print) -> None:
    """Fits score the data of their own GPU: another GPU's fits would pass for this one's and
    their errors for the model's. Refused in one sentence unless --gpu named the data's GPU (the
    user chose the data on purpose); then the output says which fits score which data."""
    own = fits.gpu.slug
    if own == slug:
        return
    data_name = gpus.lookup(slug).name
    if gpu is None:
        raise SeerError(
            f"{path} holds the fits of {fits.gpu.name} ({own}) but the data is {data_name}'s ({slug}): "
            f"give --fits a folder or the {slug} fits file, or pass --gpu {slug} to score the {slug} data "
            f"with the {own} fits on purpose"
        )
    log(f"note: {data_name} data ({slug}, --gpu {gpu}) is scored with the fits of {fits.gpu.name} ({own}, {path})")


def write_out(path: Path, payload: dict, tables: dict[str, pd.DataFrame]) -> None:
    """An evaluation's figures: the payload as JSON, or the tables as one CSV (a `table` column
    names each row's table). Units as the package docstring says: ms for time, fractions for
    errors and shares."""
    if path.suffix == ".json":
        records.atomic_write(path, lambda p: p.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n"))
    elif path.suffix == ".csv":
        frames = [t.assign(table=name) for name, t in tables.items()]
        records.atomic_write(path, lambda p: pd.concat(frames, ignore_index=True).to_csv(p, index=False))
    else:
        raise SeerError(f"--out must end in .json or .csv, got {path}")


def pyplot():
    """matplotlib's pyplot on the file-only backend, or one sentence on how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SeerError("--plots needs matplotlib: pip install 'seer[plot]'") from None
    return plt


def evaluation_records(args, why: str) -> tuple[Path, pd.DataFrame]:
    """The data path (--data, else the default data) and its records that models may score:
    Test-set-II rows left out, only --gpu's if given, and at least one row of a per-variant op
    (else one sentence on `why` it is needed)."""
    path = args.data if args.data is not None else default_data()
    rec = training_records(records.load(path, gpu=args.gpu))
    rec = gpus.rows_of(rec, args.gpu)
    if not rec["op"].isin(VARIANT_OPS).any():
        of = f" of GPU {args.gpu!r}" if args.gpu else ""
        raise SeerError(f"no {', '.join(VARIANT_OPS)} rows{of} in {path}: {why}")
    return path, rec


def repeat_runs(path: Path) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """(first run, later run) records of every GPU folder with a `repeat/` (same suites, same harness)."""
    path = records.data_path(path)
    folders = [path / "repeat"] if (path / "repeat").is_dir() else sorted(path.glob("*/repeat"))
    return [(records.load(rep.parent), records.load(rep)) for rep in folders]
