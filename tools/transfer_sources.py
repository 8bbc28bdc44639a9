"""Which sources a transfer should use: the median over every other chip, or only the fits of
the nearest architecture (closest compute capability)? A benchmark script that prints figures.

python tools/transfer_sources.py [--rows N]: on a sample of NeuSight's data (N rows per GPU and
op, default 2000), the median APE of each (target, op) both ways, and their means.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import seer
from seer import fitsfile
from seer.data import records
from seer.evaluate.transfer import predict_rows
from seer.hardware import gpus
from seer.predict.transfer import chip, transfer

OPS = ("bmm", "linear", "conv_fwd", "elementwise", "softmax", "layer_norm")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    rec = records.load(records.neusight_dir())
    rec = rec[(rec["time_ms"] > 0) & rec["op"].isin(OPS)]
    rec = pd.concat([d.sample(min(len(d), args.rows), random_state=0) for _, d in rec.groupby(["gpu", "op"])])
    rows = []
    for g, sub in rec.groupby("gpu"):
        target = gpus.lookup(str(g))
        cands = [n for n in fitsfile.bundled() if chip(n) != chip(target.slug)]
        for op, part in sub.groupby("op"):
            part = part.reset_index(drop=True)
            cover = [n for n in cands if op in seer.load(n).ops]
            if not cover:
                continue
            gap = {n: abs(float(seer.load(n).gpu.cc) - float(target.cc)) for n in cover}
            near = [n for n in cover if gap[n] == min(gap.values())]
            for how, src in (("median of all", cover), ("nearest architecture", near)):
                p = predict_rows(transfer(target, src), part)
                ok = ~np.isnan(p)
                ape = np.abs(p[ok] / part["time_ms"].to_numpy()[ok] - 1)
                rows.append({"target": target.slug, "op": op, "how": how, "median_ape": float(np.median(ape))})
    t = pd.DataFrame(rows)
    print(t.pivot_table(index=["target", "op"], columns="how", values="median_ape").round(3).to_string())
    print("\nmean over (target, op):")
    print(t.groupby("how")["median_ape"].mean().round(3).to_string())


if __name__ == "__main__":
    main()
