"""A GPU's own fits: a fits file (seer.fitsfile) read into the `Fits` facade, once per file version."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from seer import fitsfile
from seer.errors import SeerError
from seer.hardware import gpus
from seer.hardware.dtypes import DEFAULT_DTYPE
from seer.models import FitOptions, VariantFit, family_key
from seer.models.call_time import CallTimes
from seer.models.chooser import Chooser
from seer.models.drift import Drift
from seer.models.dual import ForwardDual
from seer.models.launched import Launched
from seer.models.lt_config import TileVariants
from seer.models.memory import MemoryBoundFit
from seer.predict.analytical import EmbeddingPredictor, MemoryPredictor
from seer.predict.fits import Fits, by_op
from seer.predict.variants import VariantPredictor


def from_doc(doc: dict, path: Path) -> Fits:
    """The facade over a fits document: per-variant models, memory-bound fits (the datasheet
    where the document has none) and the embedding model, each registered for its ops."""
    g = doc["gpu"]
    spec = gpus.spec_from_dict(g)
    try:
        variants = {k: VariantFit.from_dict(v) for k, v in doc["variants"].items()}
        choosers = {k: Chooser.from_dict(v) for k, v in doc["choosers"].items()}
        drift = {s: Drift.from_dict(s, d) for s, d in doc.get("drift", {}).items()}
        launched = tuple(Launched.from_dict(d) for d in doc.get("launched", []))
        duals = [ForwardDual.from_dict(d) for d in doc.get("forward_duals", {}).values()]
        calls = {op: CallTimes.from_dict(d) for op, d in doc.get("call_times", {}).items()}
        tiles = {k: TileVariants.from_dict(d) for k, d in doc.get("gemm_tiles", {}).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise SeerError(f"fits file {path} is damaged ({type(exc).__name__}: {exc}); refit it") from None
    vp = VariantPredictor(
        spec,
        variants,
        choosers,
        drift,
        doc.get("conv_timing"),
        FitOptions.from_dict(doc.get("options")),
        tuple(doc.get("dtypes") or (DEFAULT_DTYPE,)),  # files before dtypes were recorded: float32 data only
        launched,
        {family_key(d.op, d.algo): d for d in duals if d.weight > 0},
        calls,
        tiles,
    )
    memory = MemoryBoundFit.from_dict(doc["memory_bound"]) if doc.get("memory_bound") else None
    predictors = by_op([vp, MemoryPredictor(spec, memory), EmbeddingPredictor(spec)])
    meta = {k: doc[k] for k in ("dataset", "date", "seer_version", "split") if k in doc}
    return Fits(spec, predictors, "fitted", path, meta)


@lru_cache(maxsize=32)
def _load(path: str, mtime: float) -> Fits:
    return from_doc(fitsfile.read(path), Path(path))


def load(name: str | os.PathLike[str] | None = None) -> Fits:
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
