"""Test-set-I of two versions of a GPU's data and fits, scored on the rows both held out.

python tools/held_out_both.py OLD_FOLDER OLD_FITS NEW_FOLDER NEW_FITS
    # OLD_FOLDER: git archive REV data/h100-sxm | tar -x -C /tmp/old (then /tmp/old/data/h100-sxm);
    # a FITS folder holds <gpu>.json: fits/, or `mkdir /tmp/oldfits && git show REV:fits/h100-sxm.json
    # > /tmp/oldfits/h100-sxm.json`

SEER's split holds out a variant's rows by their place in its sorted order, so rows a GPU
session adds move the places of the old ones: most rows the new split holds out were training
rows of the old fits, which then look better on it than they are. Scoring both fits on the rows
held out by both splits (the same call, algorithm and kernel) compares them on data neither saw.
Printed per op and algorithm: rows, then RMSPE and median APE of the old and the new fits.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.data.prepare import training_records
from seer.errors import SeerWarning
from seer.evaluate.set_one import test_set_one

ROW = ["op", "algo", "call_id", "key"]


def held_out(rec: pd.DataFrame, fits: Path) -> pd.DataFrame:
    """Test-set-I's rows of the training records `rec`, predicted by `fits` from the configuration alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeerWarning)
        return test_set_one(rec, fits, log=lambda *a: None)


def scores(t: pd.DataFrame) -> str:
    ape = (t["pred_config"] / t["time_dedrifted"] - 1).abs()
    return f"{np.sqrt((ape**2).mean()):7.1%} {ape.median():6.1%}"


def main(old_folder: Path, old_fits: Path, new_folder: Path, new_fits: Path) -> None:
    new_rec = training_records(records.load(new_folder))  # read once, scored by both fits
    new_rows = held_out(new_rec, new_fits)
    both = new_rows.merge(held_out(training_records(records.load(old_folder)), old_fits)[ROW], on=ROW)
    old = held_out(new_rec, old_fits).merge(both[ROW], on=ROW)  # the old fits on the same rows
    print(f"{len(both)} of the {len(new_rows)} rows {new_folder}'s split holds out were held out by {old_folder}'s too")
    print(f"{'op':16} {'algo':24} {'rows':>5}   old: rmspe median   new: rmspe median")
    groups = [([op, algo], g) for (op, algo), g in both.groupby(["op", "algo"])]
    groups += [([op, "all"], g) for op, g in both.groupby("op")]
    for (op, algo), g in groups:
        o = old[(old["op"] == op) & ((old["algo"] == algo) | (algo == "all"))]
        print(f"{op:16} {algo:24} {len(g):5d}   {scores(o)}        {scores(g)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("old_folder", "old_fits", "new_folder", "new_fits"):
        ap.add_argument(name, type=Path)
    a = ap.parse_args()
    main(a.old_folder, a.old_fits, a.new_folder, a.new_fits)
