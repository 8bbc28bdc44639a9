"""How much of Test-set-II's pick error is the kernel choice: the picks the fits make from the
configuration alone, beside the picks the same variant models make where each call's kernels are
named as cuDNN ran them.

    python tools/variant_choice_picks.py [GPU_FOLDER] [--fits FITS]   # default data/h100-sxm, bundled fits

For each convolution direction (Test-set-II forward, its gradients), three rankings of the
algorithms each layer ran, scored against the fastest measured (as `python -m seer.evaluate
--set II`): `model`, the fits' own picks (each algorithm's variant named by its chooser);
`variants_known`, each call timed as the sum of its kernels' variant models, the kernels those
cuDNN launched; and cuDNN's heuristic, on the layers where every algorithm's call ran kernels with models (the
fits' gradient algorithms timed as the forward convolution, seer.models.dual, keep the fits'
time). Where `variants_known` scores far better than `model`, the choosers, not the time models,
lose the picks: a better choice (or data where the choice is visible: the census) is what helps.
Per algorithm: how often the chooser names the kernel a one-kernel call ran.

Refitted fits of 2026-11-29 (`python -m seer.fit --data data --out DIR`): the backward-filter
gradients, H100 63 of 102 layers, model within 10% 95.2%, mean slowdown 4.1% -> kernels named as
run 98.4%, 0.5%; H200 79 of 130, 93.7%, 6.2% -> 100.0%, 0.4%. The forward and the data gradients
gain nothing (H200 forward 96.9%, 0.8% -> 94.8%, 1.3%): there the choosers are not what loses.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.data.keys import family_key
from seer.data.prepare import prepare
from seer.errors import SeerError, SeerWarning
from seer.evaluate.report import fits_for
from seer.evaluate.selection import measured_table, op_algos, picks, selection_metrics
from seer.hardware import gpus
from seer.models.drift import position

DIRECTIONS = (("conv_fwd", "test_set_ii"), ("conv_bwd_data", "conv_bwd"), ("conv_bwd_filter", "conv_bwd"))


def known_times(table: pd.DataFrame, calls: pd.DataFrame, fits, op: str) -> np.ndarray:
    """configs x algorithms: each measured call's time as the sum of its kernels' variant models
    (NaN where the call is not among `calls` or one of its variants has no model)."""
    vp = fits.variant_predictor
    calls = calls[calls["op"] == op]
    keys = calls["key"].to_numpy(dtype=object)
    has = calls["key"].isin(list(vp.variants)).to_numpy()
    t = np.full(len(calls), np.nan)
    if has.any():
        t[has] = vp.predict_variant(calls[has], keys[has])
    summed = calls.assign(t=t).groupby(["config_key", "algo"])["t"].agg(lambda s: s.sum(skipna=False))
    wide = summed.unstack("algo").reindex(index=table["config_key"], columns=op_algos(op))
    return wide.to_numpy(dtype=float)


def named_right(table: pd.DataFrame, calls: pd.DataFrame, fits, op: str) -> pd.Series:
    """Per algorithm, the share of one-kernel calls whose kernel the fits name (not of the
    algorithms the fits time as the forward convolution)."""
    algos = [a for a in op_algos(op) if a in fits.algorithms_of(op)]
    at = fits.algorithm_times(table.assign(op=op), op, algos)
    one = calls[(calls["op"] == op)].groupby(["config_key", "algo"]).filter(lambda g: len(g) == 1)
    out = {}
    for j, a in enumerate(algos):
        if family_key(op, a) in fits.variant_predictor.duals:
            continue  # timed as the forward: the variant named is the forward's
        ran = table["config_key"].map(one[one["algo"] == a].set_index("config_key")["key"])
        have = ran.notna().to_numpy()
        if have.any():
            out[a] = float((at.variants[have, j] == ran[have].to_numpy(dtype=object)).mean())
    return pd.Series(out, dtype=float)


def line(name: str, meas: np.ndarray, pick: np.ndarray) -> str:
    r = selection_metrics(meas, pick)
    return (
        f"  {name:15s} n={r['n']} top-1 {100 * r['top1']:.1f}%, within 10% {100 * r['within_10pct']:.1f}%, "
        f"mean slowdown {100 * r['slowdown_mean']:.1f}%, max {100 * r['slowdown_max']:.0f}%"
    )


def report(rec: pd.DataFrame, fits, op: str, suite: str) -> list[str]:
    sub = rec[(rec["suite"] == suite) & (rec["op"] == op)]
    table = measured_table(sub, op=op)
    table = table[table["math"] == "fma"].reset_index(drop=True)
    if table.empty:
        return [f"{op}: no FP32 calls of suite {suite}"]
    fma = sub[sub["math"] == "fma"]
    calls = prepare(fma.assign(position=position(fma)))
    algos = op_algos(op)
    meas = table[[f"t:{a}" for a in algos]].to_numpy(float)
    pk, pred = picks(table, {table["gpu"].iat[0]: fits})
    # an algorithm the fits time as the forward convolution (seer.models.dual) keeps their time
    dual = np.array([family_key(op, a) in fits.variant_predictor.duals for a in algos])
    known = np.where(dual[None, :], pred, known_times(table, calls, fits, op))
    # the layers where every algorithm measured has a time with its kernels known (or as the forward)
    full = (np.isnan(meas) | np.isfinite(known)).all(axis=1)
    known = np.where(np.isnan(meas[full]), np.inf, known[full])
    meas = meas[full]
    right = named_right(table, calls, fits, op)
    return [
        f"{op} ({suite}): {full.sum()} of {len(table)} layers, those whose every call ran kernels with models",
        line("model", meas, pk["model"].to_numpy()[full]),
        line("variants_known", meas, np.argmin(known, axis=1)),
        line("cudnn_heuristic", meas, pk["cudnn_heuristic"].to_numpy()[full]),
        "  one-kernel calls whose kernel the fits name: " + ", ".join(f"{a} {100 * v:.0f}%" for a, v in right.items()),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("data/h100-sxm"), help="one GPU's data folder")
    ap.add_argument("--fits", type=Path, default=Path("fits"), help="a folder of fits files (default: the bundled)")
    a = ap.parse_args(argv)
    try:
        rec = records.load(a.folder)
        fits = fits_for(gpus.lookup(str(rec["gpu"].iat[0])).slug, a.fits, log=lambda *_: None)
        print(f"{a.folder}, fits {a.fits}: Test-set-II picks from the configuration, and with the kernels named as run")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeerWarning)
            for op, suite in DIRECTIONS:
                if (rec["suite"] == suite).any():
                    print("\n".join(report(rec, fits, op, suite)))
    except (SeerError, OSError) as exc:
        print(f"variant_choice_picks: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
