"""How a gradient transform algorithm's time compares with the forward's of the same configuration:
the measurement behind seer.models.dual. A benchmark script that prints figures.

python tools/gradient_forward_ratio.py [DATA ...] (default data/h100-sxm data/h200): each GPU's own
records, FP32 FMA calls; every gradient call of FFT, FFT_TILING and WINOGRAD_NONFUSED paired with
the forward call of the same algorithm and configuration (median time over repeats); per
direction, algorithm, strided or not and grouped or not: the configurations paired and the
gradient / forward ratio's median and 10th-90th percentiles.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from seer.data import records
from seer.errors import SeerError
from seer.models.dual import DUAL_ALGOS, FORWARD, GRADIENT_OPS

CONFIG = list(records.CONV_FIELDS)  # a convolution's configuration


def call_times(rec: pd.DataFrame) -> pd.DataFrame:
    """One time per (op, algorithm, configuration) of the FP32 FMA calls: the median over calls."""
    rec = rec[(rec["status"] == "ok") & rec["algo"].astype(str).isin(DUAL_ALGOS)]
    rec = rec[rec["math"].fillna("fma").eq("fma") & rec["dtype"].fillna("float32").eq("float32")]
    calls = rec.groupby(["suite", "op", "algo", "call_id"]).head(1).assign(algo=lambda d: d["algo"].astype(str))
    return calls.groupby(["op", "algo", *CONFIG], dropna=False)["time_ms"].median().reset_index()


def ratios(times: pd.DataFrame) -> pd.DataFrame:
    """Each gradient configuration with its forward twin: the ratio and whether strided or grouped."""
    fwd = times[times["op"] == FORWARD].drop(columns="op")
    grad = times[times["op"].isin(GRADIENT_OPS)]
    m = grad.merge(fwd, on=["algo", *CONFIG], suffixes=("", "_forward"))
    return m.assign(
        ratio=m["time_ms"] / m["time_ms_forward"],
        strided=(m["stride_h"] > 1) | (m["stride_w"] > 1),
        grouped=m["groups"].fillna(1) > 1,
    )


def summary(m: pd.DataFrame) -> pd.DataFrame:
    q = lambda p: lambda r: float(np.quantile(r, p))
    return (
        m.groupby(["op", "algo", "strided", "grouped"])["ratio"]
        .agg(n="size", median="median", p10=q(0.1), p90=q(0.9))
        .round(2)
        .reset_index()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="*", default=["data/h100-sxm", "data/h200"], help="folders of one GPU's records")
    args = ap.parse_args()
    for folder in args.data:
        try:
            rec = records.load(Path(folder))
        except SeerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
        m = ratios(call_times(rec))
        print(f"{folder}: gradient / forward time of the same configuration")
        print(summary(m).to_string(index=False) if len(m) else "  no gradient calls with a forward twin", end="\n\n")


if __name__ == "__main__":
    main()
