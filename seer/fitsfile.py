"""The fits file: versioned JSON of fitted coefficients, one file per GPU (DESIGN.md).

Written atomically with sorted keys so the same data gives the same bytes; read back with a
check of the schema version.
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import SeerError
from .records import atomic_write

SCHEMA = "seer.fits/1"
FITS_DIR = Path(__file__).resolve().parent.parent / "fits"


def dumps(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n"


def write(doc: dict, path: str | Path) -> Path:
    text = dumps(doc)
    return atomic_write(path, lambda p: p.write_text(text))


def read(path: str | Path) -> dict:
    """Load and check a fits file; every problem is one SeerError sentence."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SeerError(f"fits file {path} does not exist") from None
    except OSError as exc:
        raise SeerError(f"fits file {path} cannot be read ({exc.strerror})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SeerError(f"fits file {path} is not valid JSON (truncated or corrupt at line "
                        f"{exc.lineno}); fit it again with python -m seer.fit") from None
    if not isinstance(doc, dict) or "schema" not in doc:
        raise SeerError(f"{path} is not a seer fits file (no schema field)")
    if doc["schema"] != SCHEMA:
        raise SeerError(f"fits file {path} has schema {doc['schema']!r} but this seer reads "
                        f"{SCHEMA!r}; refit it with python -m seer.fit")
    for key in ("gpu", "variants", "choosers"):
        if key not in doc:
            raise SeerError(f"fits file {path} lacks its '{key}' section; refit it with python -m seer.fit")
    return doc


def resolve(name: str | Path | None) -> Path:
    """A bundled fits name ('t4', 'NVIDIA H100 80GB HBM3') or a path -> the file's path."""
    if name is None:
        raise SeerError("name a GPU or a fits file (bundled: " + ", ".join(bundled()) + ")")
    p = Path(name)
    if p.suffix == ".json" or p.exists():
        return p
    from .gpus import slug_for

    cand = FITS_DIR / f"{slug_for(str(name))}.json"
    if cand.exists():
        return cand
    raise SeerError(f"no fits for GPU {str(name)!r}; bundled fits: {', '.join(bundled()) or 'none'} "
                    "(or give a path to a fits file)")


def bundled() -> list[str]:
    return sorted(p.stem for p in FITS_DIR.glob("*.json")) if FITS_DIR.is_dir() else []
