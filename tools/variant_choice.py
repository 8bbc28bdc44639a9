"""How much of Test-set-I's error is the kernel choice: per algorithm, how often the fits name the
kernel variant the library ran, and the error on the rows named right and on those named wrong.

python tools/variant_choice.py [GPU_FOLDER] [--fits FITS]   # default data/h100-sxm, bundled fits

Test-set-I predicts a call from its configuration alone: the chooser names the variant (kernel)
cuDNN would launch, and that variant's model times it. Where cuDNN's choice turns on something the
sizes do not show, the variant named is wrong and the time is another kernel's. This splits each
algorithm's RMSPE into the rows whose variant was named right and the rest, and says what share
of the squared error the wrong ones carry: where that share is large, a better time model cannot
help, only a better choice (or data where the choice is visible).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.errors import SeerError, SeerWarning
from seer.evaluate.report import fits_for, training_records
from seer.evaluate.set_one import test_set_one
from seer.hardware import gpus


def split(t: pd.DataFrame, chosen: np.ndarray) -> dict:
    """One algorithm's rows: how many are timed as the forward convolution (a gradient's forward
    dual: no variant of its own to name, left out of the rest), the share named right, RMSPE on
    all, the right and the wrong rows, and the wrong rows' share of the squared error."""
    ape = t["pred_config"].to_numpy(float) / t["time_dedrifted"].to_numpy(float) - 1
    op = str(t["op"].iat[0])
    dual = np.array([not str(k).startswith(f"{op}:") for k in chosen])  # timed as the forward (seer.models.dual)
    right = chosen == t["key"].to_numpy(dtype=object)
    keep = ~dual
    ape, right = ape[keep], right[keep]
    sq = ape**2
    rmspe = lambda m: float(np.sqrt(sq[m].mean())) if m.any() else float("nan")
    return {
        "n": len(t),
        "as_forward": int(dual.sum()),
        "named_right": right.mean() if len(right) else float("nan"),
        "rmspe": rmspe(np.ones(len(right), dtype=bool)),
        "rmspe_right": rmspe(right),
        "rmspe_wrong": rmspe(~right),
        "wrong_share_of_sq_error": float(sq[~right].sum() / sq.sum()) if sq.sum() > 0 else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("data/h100-sxm"), help="one GPU's data folder")
    ap.add_argument("--fits", type=Path, default=Path("fits"), help="a folder of fits files (default: the bundled)")
    a = ap.parse_args(argv)
    try:
        rec = training_records(records.load(a.folder))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeerWarning)
            t = test_set_one(rec, a.fits, log=lambda *_: None)
            t = t[t["pred_config"].notna() & t["key"].notna()]
            fits = fits_for(gpus.lookup(str(rec["gpu"].iat[0])).slug, a.fits, log=lambda *_: None)
            rows = []
            for (op, algo), sub in t.groupby(["op", "algo"], sort=True, observed=True):
                if op == "gemm":
                    continue  # cuBLASLt's algorithms are measured one by one: no choice to name
                rows.append({"op": op, "algo": algo, **split(sub, fits.choose(sub, op))})
    except (SeerError, OSError) as exc:
        print(f"variant_choice: {exc}", file=sys.stderr)
        return 2
    out = pd.DataFrame(rows)
    for c in ("named_right", "rmspe", "rmspe_right", "rmspe_wrong", "wrong_share_of_sq_error"):
        out[c] = (100 * out[c]).map(lambda v: "-" if np.isnan(v) else f"{v:.1f}%")
    print(f"{a.folder}, fits {a.fits}: Test-set-I rows whose variant the fits name right, and the error on each part")
    print(out.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
