"""The fits file: versioned JSON of fitted coefficients, one file per GPU (docs/data.md, Fits files).

Written atomically with sorted keys so the same data gives the same bytes; read back with a
check of the schema version.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seer.data import paths
from seer.data.records import atomic_write, read_text
from seer.errors import SeerError

# 2 since 2026-11-29: a data gradient's col2im kernel reduces over K, the FFT's gradient GEMMs
# are keyed per direction, the direct kernel pays per channel under every algorithm (docs/results.md):
# coefficients fitted under /1 time other work and are refitted, not read
SCHEMA = "seer.fits/2"


def _bundled_dir() -> Path:
    """Where the bundled fits are: the package data `seer.fits` (the repository's fits/ in a
    source checkout or editable install, a copy inside site-packages in a wheel install)."""
    try:
        from importlib.resources import files

        return Path(str(files("seer.fits")))
    except ModuleNotFoundError:  # run from a source tree that was never installed
        return paths.REPO / "fits"


FITS_DIR = _bundled_dir()
# What `python -m seer.fit` writes by default: the repository's fits/ in a source checkout
# (they are what the package bundles), else ./fits, never into an installed package.
DEFAULT_OUT = paths.REPO / "fits" if paths.in_checkout() else Path("fits")


def dumps(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n"


def write(doc: dict, path: str | Path) -> Path:
    text = dumps(doc)
    return atomic_write(path, lambda p: p.write_text(text))


def read(path: str | Path) -> dict:
    """Load and check a fits file; every problem is one SeerError sentence. Opened through the
    shared reader (seer.data.records.read_text): a FIFO or device is refused before opening (it
    would block forever), an unreadable, empty or non-UTF-8 file is one DataError line."""
    path = Path(path)
    try:
        path.stat()
    except FileNotFoundError:
        raise SeerError(f"fits file {path} does not exist") from None
    except OSError:
        pass  # read_text says why in one line
    text = read_text(path, "a JSON fits file written by python -m seer.fit")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SeerError(
            f"fits file {path} is not valid JSON (truncated or corrupt at line "
            f"{exc.lineno}); fit it again with python -m seer.fit"
        ) from None
    if not isinstance(doc, dict) or "schema" not in doc:
        raise SeerError(f"{path} is not a seer fits file (no schema field)")
    if doc["schema"] != SCHEMA:
        raise SeerError(
            f"fits file {path} has schema {doc['schema']!r} but this seer reads "
            f"{SCHEMA!r}; refit it with python -m seer.fit"
        )
    for key in ("gpu", "variants", "choosers"):
        if key not in doc:
            raise SeerError(f"fits file {path} lacks its '{key}' section; refit it with python -m seer.fit")
    from seer.fitsfile.check import check  # loads the models' feature definitions: only when reading

    check(doc, path)
    return doc


def resolve(name: str | os.PathLike[str] | None) -> Path:
    """A bundled fits name ('t4', 'NVIDIA H100 80GB HBM3') or a path -> the file's path."""
    if name is None:
        raise SeerError("name a GPU or a fits file (bundled: " + ", ".join(bundled()) + ")")
    p = Path(name)
    if p.suffix == ".json" or p.exists():
        return p
    from seer.hardware.gpus import slug_for

    cand = FITS_DIR / f"{slug_for(str(name))}.json"
    if cand.exists():
        return cand
    raise SeerError(
        f"no fits for GPU {str(name)!r}; bundled fits: {', '.join(bundled()) or 'none'} (or give a path to a fits file)"
    )


def unknown_gpu(name: str, fits_file: bool = True) -> str:
    """The sentence for a GPU seer neither has fits for nor can move fits to (not in its spec
    table): the GPUs it knows and the bundled fits, so that a typo does not end in a bare "no fits"."""
    from seer.hardware import gpus

    return (
        f"unknown GPU {name!r}: seer knows {', '.join(sorted(gpus.GPUS))} (bundled fits: "
        f"{', '.join(bundled()) or 'none'}; the others get fits moved from those)"
        + ("; or give a fits file (.json)" if fits_file else "")
    )


def bundled() -> list[str]:
    return sorted(p.stem for p in FITS_DIR.glob("*.json")) if FITS_DIR.is_dir() else []


REGIMES = ("compute", "memory", "under", "helpers")


@dataclass
class Comparison:
    """How one fits document differs from another of the same GPU (a refit vs the bundled
    file): the discrete choices must agree exactly, the coefficients within rounding."""

    added: list[str]  # variants only in the new document
    removed: list[str]  # variants only in the old one
    choices: list[str]  # variants whose feature set, B_max or its source differ
    coef_rdiff: float  # largest relative difference of any regression coefficient

    def same(self, rtol: float = 1e-6) -> bool:
        return not (self.added or self.removed or self.choices) and self.coef_rdiff <= rtol

    def describe(self) -> str:
        if self.same():
            return f"same variants and choices, coefficients within {self.coef_rdiff:.1e} (relative)"
        parts = [
            f"{len(v)} variant(s) {what}"
            for what, v in (("added", self.added), ("removed", self.removed), ("with other choices", self.choices))
            if v
        ]
        return ", ".join(parts + [f"coefficients differ by up to {self.coef_rdiff:.1e} (relative)"])


def compare(new: dict, old: dict) -> Comparison:
    """Compare the variant models of two fits documents of one GPU."""
    nv, ov = new["variants"], old["variants"]
    both = sorted(nv.keys() & ov.keys())
    choice = ("feature_set", "b_max", "b_max_source")
    changed = [k for k in both if any(nv[k].get(c) != ov[k].get(c) for c in choice)]
    worst = 0.0
    for k in both:
        if k in changed:
            continue
        for reg in REGIMES:
            a, b = nv[k].get(reg), ov[k].get(reg)
            if (a is None) != (b is None) or (a and len(a["coef"]) != len(b["coef"])):
                changed.append(k)
                break
            if a:
                x, y = np.asarray(a["coef"], float), np.asarray(b["coef"], float)
                scale = np.maximum(np.abs(x), np.abs(y))
                rd = np.divide(np.abs(x - y), scale, out=np.zeros_like(x), where=scale > 0)
                worst = max(worst, float(np.max(rd, initial=0.0)))
    return Comparison(sorted(nv.keys() - ov.keys()), sorted(ov.keys() - nv.keys()), sorted(changed), worst)
