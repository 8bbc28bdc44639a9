"""Algorithm picks on grid configurations no fit has seen: a selection check beside Test-set-II.

python tools/grid_holdout.py [GPU_FOLDER] [--share 0.3]   # default data/h200
python tools/grid_holdout.py data/h200 --transferred       # the GPU predicted from other GPUs' fits
python tools/grid_holdout.py data/h200 --op conv_bwd_data  # a gradient's picks, on conv_bwd_grid

Test-set-II has 201 layers and a mean slowdown one layer can move by 5 points. conv_grid times
every algorithm on every configuration, so a share of its configurations (chosen by a hash of the
configuration key: the same ones every run) can be held out of a fit entirely and the fit's picks
scored on them, beside cuDNN's heuristic and the fixed default, as Test-set-II scores them. Held
out here are whole configurations, every algorithm's rows (Test-set-I holds out rows of each
variant instead, so the same configuration may train another algorithm), and their census rows:
the census captured about a third of conv_grid's configurations, whose kernels label the
choosers' gates and trees (before 2026-11-30, session 38, they reached the gates of a held-out
fit).

With --transferred nothing is fitted: the GPU's fits are moved from other GPUs' (seer.load of a
GPU without fits of its own, seer.predict.transfer), which never saw its data, and every grid
configuration is scored. Either way the grouped configurations of several channels a group
(seer.predict.variants.may_loop) are scored apart too.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd

import seer
from seer.data import records
from seer.data.configs import ConfigBatch
from seer.data.prepare import training_records
from seer.errors import SeerWarning
from seer.evaluate import selection
from seer.fit.gpu import fit_one
from seer.fitsfile import write
from seer.models import DEFAULT, FitOptions
from seer.predict.variants import may_loop

SUITES = {"conv_fwd": "conv_grid", "conv_bwd_data": "conv_bwd_grid", "conv_bwd_filter": "conv_bwd_grid"}


def held_out(keys: pd.Series, share: float) -> pd.Series:
    """Whether each configuration key is held out: a fixed hash, so a rerun holds out the same ones."""
    bucket = keys.astype(str).map(lambda k: int(hashlib.sha256(k.encode()).hexdigest()[:8], 16) % 1000)
    return bucket < round(share * 1000)


def main(
    folder: Path,
    share: float,
    transferred: bool = False,
    since: Path | None = None,
    op: str = "conv_fwd",
    options: FitOptions = DEFAULT,
) -> None:
    suite = SUITES[op]
    rec = training_records(records.load(folder))
    grid = rec["suite"] == suite
    if not grid.any():
        raise SystemExit(f"grid_holdout: no {suite} rows in {folder}")
    gpu = str(rec.loc[grid, "gpu"].iat[0])
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", SeerWarning)
        if transferred:
            out = grid
            fits = seer.load(gpu)
            if fits.source != "transferred":
                print(f"grid_holdout: {gpu} has fits of its own; --transferred scores a GPU without", file=sys.stderr)
                raise SystemExit(2)
            what = f"{suite} configurations, all of them: the GPU's fits moved from {', '.join(fits.transferred_from)}"
        else:
            out = grid & held_out(rec["config_key"], share)
            _, doc, _ = fit_one((gpu, rec[~out], str(folder), None, options), held=rec[out])
            fits = seer.load(write(doc, Path(tmp) / "fits.json"))
            what = f"{suite} configurations held out of the fit ({share:.0%} by key hash)"
        table = selection.measured_table(rec[out], op=op)
        pk, _ = selection.picks(table, {gpu: fits})
    print(f"{gpu}, {folder}, {op}: {len(table)} {what}")
    print("\n".join(selection.method_lines(table, pk, op=op)))
    print(f"  the model fell back to the heuristic on {int(pk['model_fallback'].sum())} configurations")
    loops = may_loop(ConfigBatch.of(table.assign(op=op), op))
    print(f"  of them, {int(loops.sum())} grouped configurations of several channels a group:")
    part = table[loops].reset_index(drop=True)
    print("\n".join(selection.method_lines(part, pk[loops].reset_index(drop=True), indent="    ", op=op)))
    if since is not None:
        before = set(training_records(records.load(since))["config_key"].astype(str))
        for was, label in ((True, f"in {since} too"), (False, f"new since {since}")):
            part = (table["config_key"].astype(str).isin(before) == was).to_numpy()
            print(f"  of them, {int(part.sum())} {label}:")
            sub = table[part].reset_index(drop=True)
            print("\n".join(selection.method_lines(sub, pk[part].reset_index(drop=True), indent="    ", op=op)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("data/h200"))
    ap.add_argument("--share", type=float, default=0.3, help="share of the grid's configurations held out")
    ap.add_argument("--transferred", action="store_true", help="score the GPU's transferred fits on the whole grid")
    ap.add_argument(
        "--since",
        type=Path,
        help="an earlier copy of the folder (git archive REV data/h100-sxm | tar -x -C /tmp/old): the scores "
        "also split into configurations it holds and new ones, so fits of more data compare on the same",
    )
    ap.add_argument("--op", choices=sorted(SUITES), default="conv_fwd", help="the direction whose picks are scored")
    ap.add_argument(
        "--no-local",
        action="store_true",
        help="fit the laws alone, without their local corrections (seer.models.local)",
    )
    a = ap.parse_args()
    main(a.folder, a.share, a.transferred, a.since, a.op, replace(DEFAULT, local=not a.no_local))
