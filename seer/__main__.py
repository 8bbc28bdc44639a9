"""python -m seer: the package's main job on the built-in data (what `make run` runs).

Fits every GPU of the built-in data into a build folder (default build/fits, so the bundled
fits are never overwritten), evaluates Test-set-I, Test-set-II and the analytical predictors
from there, predicts NeuSight's whole-model graphs where they lie beside the repo, and says how
the fresh fits compare with the bundled ones. The built-in data is the project's own
measurements (data/<gpu-slug>/, taken with cudnn_bench); without them, NeuSight's (read in place
from ../shared/datasets/neusight).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from seer.cli import run, writable_dir


def compare_with_bundled(out: Path, since: float = 0.0) -> list[str]:
    """One line per GPU fitted into `out` (files written after `since`, a time.time()): how it
    compares with the bundled fits."""
    from seer import fitsfile

    lines = []
    for path in sorted(p for p in out.glob("*.json") if p.stat().st_mtime >= since):
        bundled = fitsfile.FITS_DIR / path.name
        if not bundled.is_file():
            lines.append(f"  {path.stem}: no bundled fits to compare with")
            continue
        cmp = fitsfile.compare(fitsfile.read(path), fitsfile.read(bundled))
        lines.append(f"  {path.stem}: {cmp.describe()}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m seer", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", default="build/fits", help="folder for the fresh fits (default: %(default)s)")
    args = ap.parse_args(argv)
    from seer.data import records
    from seer.data.prepare import default_data
    from seer.evaluate.__main__ import main as evaluate
    from seer.fit.__main__ import main as fit

    out = writable_dir(args.out, "--out")
    data = default_data()
    if "neusight" in str(data):
        print(
            "seer's own GPU measurements (data/) were not found, so this fits and evaluates on "
            f"NeuSight's measurements from {data}.\n"
        )
    else:
        print(f"fitting and evaluating seer's own measurements in {data} (NeuSight's: --data of seer.fit/evaluate)\n")
    steps = [
        ("fit", lambda: fit(["--quiet", "--out", str(out)])),
        ("Test-set-I", lambda: evaluate(["--set", "I", "--fits", str(out)])),
        ("Test-set-II", lambda: evaluate(["--set", "II", "--fits", str(out)])),
        ("analytical", lambda: evaluate(["--set", "analytical"])),
    ]
    ns = records.neusight_dir()
    if ns is not None and (ns.parent / "neusight-models").is_dir():
        steps.append(("whole models (bundled fits)", lambda: evaluate(["--set", "models"])))
    t0, started = time.perf_counter(), time.time()
    for name, step in steps:
        print(f"\n===== {name} " + "=" * (70 - len(name)))
        rc = step()
        if rc:
            return rc
    print(f"\n===== fresh fits vs bundled {'=' * 51}")
    print(f"fits written to {out}; compared with the bundled ones in the package:")
    print("\n".join(compare_with_bundled(out, since=started)))
    print(
        f'\ndone in {time.perf_counter() - t0:.0f} s; predict with the bundled fits: python -c "import seer; '
        "print(seer.load('t4').predict(op='bmm', batch=8, m=512, n=512, k=512))\""
    )
    return 0


if __name__ == "__main__":
    sys.exit(run(main, "seer"))
