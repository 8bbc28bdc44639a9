"""Which fits time a GPU, the one rule of every whole-model path (seer.predict, seer.load,
`--set models`, `--set traces`): the GPU's own fits where the fits folder has them, else fits
transferred to it from the folder's other GPUs (seer.predict.transfer). `provenance` is the
sentence each path prints so that a reader knows which of the two timed a result.
"""

from __future__ import annotations

from pathlib import Path

from seer import fitsfile
from seer.errors import SeerError
from seer.hardware import gpus
from seer.predict.fits import Fits
from seer.predict.load import load
from seer.predict.transfer import load_or_transfer, transfer


def provenance(fits: Fits) -> str:
    """'own fits (fits/t4.json)' or 'no fits of its own: transferred from t4, v100-pcie'."""
    if fits.source == "transferred":
        return f"no fits of its own: transferred from {', '.join(fits.transferred_from) or 'no GPU'}"
    return f"own fits ({fits.path})" if fits.path is not None else "own fits"


def fits_for(gpu: str | gpus.GPUSpec, fits_dir: str | Path | None = None) -> Fits:
    """Fits of `gpu` from `fits_dir` (default: the bundled fits): its own file there
    (<slug>.json), else fits transferred to it from that folder's fits of its architecture
    (compute capability) where there are some, else from all of them."""
    spec = gpu if isinstance(gpu, gpus.GPUSpec) else gpus.lookup(gpu)
    folder = Path(fits_dir) if fits_dir is not None else fitsfile.FITS_DIR
    if folder.resolve() == Path(fitsfile.FITS_DIR).resolve():
        return load_or_transfer(spec)
    own = folder / f"{spec.slug}.json"
    if own.exists():
        return load(own)
    every = [load(p) for p in sorted(folder.glob("*.json"))]
    every = [f for f in every if f.gpu.slug != spec.slug and f.source == "fitted"]
    if not every:
        raise SeerError(f"no fits for {spec.slug} in {folder}, and no other GPU's fits there to transfer from")
    same = [f for f in every if f.gpu.cc == spec.cc]
    return transfer(spec, same or every)
