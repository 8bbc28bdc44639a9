"""Which convolution variants' models miss a size: each variant's log residual against each log size.

python tools/residual_scan.py [GPU_FOLDER] [--fits FITS] [--top 20]   # default data/h100-sxm, bundled fits

A variant model whose features say the wrong thing about what its kernel's blocks do (their
reduction, a per-channel step, the outputs they cover) leaves residuals that follow a size: the
residual log(predicted / measured) over the variant's rows (training and Test-set-I) correlates
with that size. This prints, per variant of at least --min-rows rows, its cross-validated RMSPE,
its RMSPE on these rows, and the correlation of its log residual with the log of each size
(batch, channels in and out, image area, filter taps, stride, groups, channels per group),
largest first. Before the corrections of 2026-11-29 (docs/results.md) on the H100's bundled fits,
the direct kernel under IMPLICIT_GEMM read +0.72 against the filter taps and -0.67 against the
output channels per group (it paid nothing per input channel there), cuDNN's backward-data
dgrad_engine -0.57 against the output channels (its reduction was K x R x S, not K); after them,
+0.27 and -0.33, and +0.27 (its RMSPE 39.9% -> 16.9%). A correlation is a place to look, not a
finding: read the variant's worst rows and its kernel's grid before changing a feature.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.data.configs import ConfigBatch
from seer.data.prepare import VARIANT_OPS, prepare
from seer.data.records import CONV_OPS
from seer.errors import SeerError, SeerWarning
from seer.evaluate.report import fits_for, training_records
from seer.hardware import gpus

SIZES = {
    "N": lambda g: g["batch"],
    "C": lambda g: g["c_in"],
    "K": lambda g: g["c_out"],
    "HW": lambda g: g["h_in"] * g["w_in"],
    "RS": lambda g: g["kh"] * g["kw"],
    "stride": lambda g: g["stride_h"],
    "G": lambda g: g["groups"],
    "C/G": lambda g: g["c_in"] / g["groups"],
    "K/G": lambda g: g["c_out"] / g["groups"],
}


def scan(rows: pd.DataFrame, variants: dict, min_rows: int) -> pd.DataFrame:
    """One line per convolution variant with a model and at least `min_rows` rows."""
    out = []
    for key, g in rows.groupby("key", sort=True):
        fit = variants.get(key)
        if fit is None or fit.op not in CONV_OPS or len(g) < min_rows:
            continue
        lr = np.log(fit.predict(ConfigBatch.of(g, fit.op)) / g["time_ms"].to_numpy(dtype=float))
        rmspe = float(np.sqrt(np.mean(np.expm1(lr) ** 2)))
        line = {"variant": key, "rows": len(g), "cv_rmspe": fit.cv_rmspe, "rmspe": rmspe}
        for name, size in SIZES.items():
            x = np.log(np.asarray(size(g), dtype=float))
            line[name] = float(np.corrcoef(x, lr)[0, 1]) if np.ptp(x) > 0 else np.nan
        out.append(line)
    table = pd.DataFrame(out)
    if table.empty:
        return table
    table["largest"] = table[list(SIZES)].abs().max(axis=1)
    return table.sort_values("largest", ascending=False).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("data/h100-sxm"), help="one GPU's data folder")
    ap.add_argument("--fits", type=Path, default=Path("fits"), help="a folder of fits files (default: the bundled)")
    ap.add_argument("--top", type=int, default=20, help="variants to print, largest correlation first")
    ap.add_argument("--min-rows", type=int, default=30, help="variants of fewer rows are left out")
    a = ap.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeerWarning)
            rec = training_records(records.load(a.folder))
            rows = prepare(rec[rec["op"].isin(VARIANT_OPS)])
            fits = fits_for(gpus.lookup(str(rec["gpu"].iat[0])).slug, a.fits, log=lambda *_: None)
            if fits.variant_predictor is None:
                raise SeerError(f"the fits in {a.fits} have no per-variant models")
            table = scan(rows, fits.variant_predictor.variants, a.min_rows)
    except (SeerError, OSError) as exc:
        print(f"residual_scan: {exc}", file=sys.stderr)
        return 2
    if table.empty:
        print(f"residual_scan: no convolution variant of {a.min_rows} rows or more has a model", file=sys.stderr)
        return 2
    shown = table.head(a.top).copy()
    for c in ("cv_rmspe", "rmspe"):
        shown[c] = (100 * shown[c]).map(lambda v: f"{v:.1f}%")
    for c in SIZES:
        shown[c] = shown[c].map(lambda v: "" if np.isnan(v) else f"{v:+.2f}")
    shown["largest"] = shown["largest"].map(lambda v: f"{v:.2f}")
    print(
        f"{a.folder}, fits {a.fits}: correlation of each variant's log(predicted / measured) with each "
        "log size, over its training and Test-set-I rows"
    )
    print(shown.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
