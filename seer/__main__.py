"""python -m seer: the package's main job on the built-in data (what `make run` runs).

Fits every GPU of the built-in data, then evaluates Test-set-I, Test-set-II and the
analytical predictors. Until the project ships GPU measurements of its own, the built-in data
is NeuSight's (read in place from ../shared/datasets/neusight).
"""
from __future__ import annotations

import sys

from .errors import SeerError


def main(argv: list[str] | None = None) -> int:
    from . import evaluate, fit
    from .fitsfile import FITS_DIR

    data = fit.default_data()
    if "neusight" in str(data):
        print("seer ships no GPU measurements of its own yet (collecting them needs a GPU), so this "
              f"fits and evaluates on NeuSight's measurements from {data}.\n")
    steps = [
        ("fit", lambda: fit.main(["--quiet"])),
        ("Test-set-I", lambda: evaluate.main(["--set", "I"])),
        ("Test-set-II", lambda: evaluate.main(["--set", "II"])),
        ("analytical", lambda: evaluate.main(["--set", "analytical"])),
    ]
    for name, step in steps:
        print(f"\n===== {name} " + "=" * (70 - len(name)))
        rc = step()
        if rc:
            return rc
    print(f"\nfits written to {FITS_DIR}; predict with: python -c \"import seer; "
          "print(seer.load('t4').predict(op='bmm', batch=8, m=512, n=512, k=512))\"")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SeerError as exc:
        print(f"seer: {exc}", file=sys.stderr)
        sys.exit(2)
